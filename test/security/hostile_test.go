package security

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// These cases extend test/integration's TestAdmission (whose 21 cases are
// not repeated here): invalid or malicious objects the API server must
// refuse with a message that says what is wrong. They are created with
// strict field validation, as kubectl and server-side apply do, so an
// unknown field (such as a namespace on a namespaced ProviderConfig's
// secretRef) is an error rather than silently dropped.
var hostileCreates = map[string]struct {
	object  string
	wantErr string
}{
	// Source ranges.
	"CIDRWithLetters":     {rule("r1", srcRanges("10.0.0.x/24")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"CIDRLeadingSpace":    {rule("r2", srcRanges(" 10.0.0.0/8")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"IPv6PrefixTooLong":   {rule("r3", srcRanges("2001:db8::/129")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"ShellInjectionRange": {rule("r4", srcRanges("10.0.0.0/8; rm -rf /")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"EmptyRange":          {rule("r5", srcRanges("")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"NegativePrefix":      {rule("r6", srcRanges("0.0.0.0/-1")), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"HugeRange":           {rule("r7", srcRanges(strings.Repeat("1", 5000))), "Too long: may not be more than 50 bytes"},
	"NoRanges":            {rule("r8", `match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: []}}`), "should have at least 1 items"},
	"ElevenInlineRanges": {policy("p-eleven", `rules: [{priority: 1, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.0.0.1","10.0.0.2","10.0.0.3","10.0.0.4","10.0.0.5","10.0.0.6","10.0.0.7","10.0.0.8","10.0.0.9","10.0.0.10","10.0.0.11"]}}}]`),
		"spec.forProvider.rules[0].match.config.srcIpRanges: Too many: 11: must have at most 10 items"},
	"BadInlineCIDR":         {policy("p-badcidr", `rules: [{priority: 1, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["300.0.0.0/8"]}}}]`), "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"},
	"UnknownVersionedExpr":  {rule("r9", `match: {versionedExpr: SRC_IPS_V2, config: {srcIpRanges: ["10.0.0.0/8"]}}`), `Unsupported value: "SRC_IPS_V2"`},
	"VersionedExprNoConfig": {rule("r10", `match: {versionedExpr: SRC_IPS_V1}`), "versionedExpr and config must be set together"},
	// Actions and priorities.
	"ActionWrongCase":        {ruleAction("r11", "ALLOW"), `Unsupported value: "ALLOW"`},
	"ActionTrailingSpace":    {ruleAction("r12", "deny(403) "), `Unsupported value: "deny(403) "`},
	"ActionUnknownStatus":    {ruleAction("r13", "deny(500)"), `Unsupported value: "deny(500)"`},
	"ActionEmpty":            {ruleAction("r14", ""), `Unsupported value: ""`},
	"InlineUnknownAction":    {policy("p-action", `rules: [{priority: 1, action: "accept", match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["*"]}}}]`), `Unsupported value: "accept"`},
	"DefaultRuleBadAction":   {policy("p-default", `defaultRule: {action: "allow-all"}`), `spec.forProvider.defaultRule.action: Unsupported value: "allow-all"`},
	"PriorityHuge":           {ruleYAML("r15", `priority: 99999999999999`, `action: allow`, srcRanges("*")), "should be less than or equal to 2147483647"},
	"PriorityString":         {ruleYAML("r16", `priority: "1; DROP TABLE"`, `action: allow`, srcRanges("*")), `spec.forProvider.priority: Invalid value: "string"`},
	"InlinePriorityNegative": {policy("p-neg", `rules: [{priority: -5, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["*"]}}}]`), "should be greater than or equal to 0"},
	// Rate limits and redirects.
	"BothEnforceOnKeyNameAndConfigs": {rule("r17", srcRanges("*"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, enforceOnKeyName: x-user, enforceOnKeyConfigs: [{enforceOnKeyType: IP}]}`, "throttle"), "set enforceOnKey/enforceOnKeyName or enforceOnKeyConfigs, not both"},
	// enforceOnKey takes any value of GCP's form (GCP adds keys; an unknown
	// one gets a Warning condition), but nothing else.
	"EnforceOnKeyInjection":    {rule("r18", srcRanges("*"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, enforceOnKey: "IP; DROP"}`, "throttle"), "spec.forProvider.rateLimitOptions.enforceOnKey in body should match '^[A-Z][A-Z0-9_]*$'"},
	"FourEnforceOnKeyConfigs":  {rule("r19", srcRanges("*"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, enforceOnKeyConfigs: [{enforceOnKeyType: IP}, {enforceOnKeyType: ASN}, {enforceOnKeyType: SNI}, {enforceOnKeyType: ALL}]}`, "throttle"), "must have at most 3 items"},
	"ZeroThreshold":            {rule("r20", srcRanges("*"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 0, intervalSec: 60}}`, "throttle"), "should be greater than or equal to 1"},
	"BanWithoutRateLimit":      {ruleAction("r21", "rate_based_ban"), "rateLimitOptions must be set when action is throttle, rate_based_ban or fairshare, and only then"},
	"RedirectWithoutOptions":   {ruleAction("r22", "redirect"), "redirectOptions must be set when action is redirect"},
	"RedirectOptionsOnAllow":   {rule("r23", srcRanges("*"), `redirectOptions: {type: GOOGLE_RECAPTCHA}`, "allow"), "redirectOptions may only be set when action is redirect"},
	"External302WithoutTarget": {rule("r24", srcRanges("*"), `redirectOptions: {type: EXTERNAL_302}`, "redirect"), "target is required for EXTERNAL_302 redirects"},
	// Huge strings and expressions.
	"HugeDescription":       {rule("r25", srcRanges("*"), `description: "`+strings.Repeat("A", 100000)+`"`, "allow"), "Too long: may not be more than 64 bytes"},
	"LongRuleDescription":   {rule("r25b", srcRanges("*"), `description: "`+strings.Repeat("A", 65)+`"`, "allow"), "Too long: may not be more than 64 bytes"},
	"HugeExpression":        {rule("r26", `match: {expr: {expression: "`+strings.Repeat("origin.ip == '1.2.3.4' || ", 200)+`true"}}`, "", "allow"), "Too long: may not be more than 2048 bytes"},
	"EmptyExpression":       {rule("r27", `match: {expr: {expression: ""}}`, "", "allow"), "should be at least 1 chars long"},
	"HugePolicyDescription": {policy("p-huge", `description: "`+strings.Repeat("B", 5000)+`"`), "Too long: may not be more than 2048 bytes"},
	"TooManyLabels":         {policy("p-labels", "labels: {"+manyLabels(65)+"}"), "must have at most 58 items"},
	"ProvenanceLabel":       {policy("p-provenance", "labels: {crossplane-namespace: tenant-b}"), "labels are set by the provider: remove them from labels"},
	"EmptyHeaderName":       {rule("r28", srcRanges("*"), `headerAction: {requestHeadersToAdds: [{headerName: "", headerValue: x}]}`, "allow"), "should be at least 1 chars long"},
	// Policy fields.
	"PolicyTypeNotGCPs":  {policy("p-type", `type: "cloud_armor; evil"`), "spec.forProvider.type in body should match '^[A-Z][A-Z0-9_]*$'"},
	"RegionUppercase":    {policy("p-region", `region: US-CENTRAL1`), "spec.forProvider.region in body should match"},
	"ProjectInjection":   {policy("p-project", `project: "p/../../other-project"`), "spec.forProvider.project in body should match"},
	"PolicyNameTooLong":  {policyNamed(strings.Repeat("a", 64)), "metadata.name must be a valid Cloud Armor policy name"},
	"PolicyNameTraverse": {policyNamed("a..b"), "metadata.name must be a valid Cloud Armor policy name"},
	"DDoSLevelNotGCPs":   {policy("p-ddos", `ddosProtectionConfig: {ddosProtection: "advanced "}`), "spec.forProvider.ddosProtectionConfig.ddosProtection in body should match '^[A-Z][A-Z0-9_]*$'"},
	// References.
	"RuleNoPolicy":            {strings.Replace(rule("r29", srcRanges("*")), "    securityPolicy: some-policy\n", "", 1), "one of securityPolicy, securityPolicyRef or securityPolicySelector is required"},
	"RulePolicyNameInjection": {strings.Replace(rule("r30", srcRanges("*")), "securityPolicy: some-policy", `securityPolicy: "p/addRule?priority=1"`, 1), "spec.forProvider.securityPolicy in body should match"},
	"RuleSelectorOtherNS":     {strings.Replace(rule("r31", srcRanges("*")), "securityPolicy: some-policy", "securityPolicySelector: {namespace: tenant-b, matchLabels: {a: b}}", 1), "securityPolicySelector must select a SecurityPolicy in this rule's namespace"},
	"RuleProjectInjection":    {rule("r32", srcRanges("*"), `project: "other;project"`, "allow"), "spec.forProvider.project in body should match"},
	"UnknownFieldSmuggled":    {rule("r33", srcRanges("*"), `evil: {priority: 0}`, "allow"), `unknown field "spec.forProvider.evil"`},
	// ProviderConfigs.
	"ProviderConfigOtherNamespaceSecret": {providerConfig(`{source: Secret, secretRef: {namespace: tenant-b, name: creds, key: key}}`), `unknown field "spec.credentials.secretRef.namespace"`},
	"ProviderConfigFileEndpoint":         {providerConfig(`{source: AccessToken, secretRef: {name: creds, key: token}}`, `endpoint: "file:///etc/passwd"`), "spec.endpoint in body should match '^https?://'"},
	"ProviderConfigUnknownSource":        {providerConfig(`{source: Vault}`), `Unsupported value: "Vault"`},
	"ProviderConfigEmptyProject":         {strings.Replace(providerConfig(`{source: AccessToken, secretRef: {name: creds, key: token}}`), "projectID: p", `projectID: ""`, 1), "spec.projectID in body should be at least 1 chars long"},
	"ProviderConfigAmbientIdentity":      {providerConfig(`{source: InjectedIdentity}`), "a namespaced ProviderConfig may only use credentials.source Secret or AccessToken"},
	"ProviderConfigAmbientFilesystem":    {providerConfig(`{source: Filesystem, fs: {path: /var/run/secrets/kubernetes.io/serviceaccount/token}}`), "a namespaced ProviderConfig may only use credentials.source Secret or AccessToken"},
	"ProviderConfigImpersonate":          {providerConfig(`{source: ImpersonateServiceAccount, impersonateServiceAccount: {name: admin@p.iam.gserviceaccount.com}}`), "a namespaced ProviderConfig may only use credentials.source Secret or AccessToken"},
	"ClusterProviderConfigImpersonateNoTarget": {`apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: hostile-cpc-impersonate}
spec: {projectID: p, credentials: {source: ImpersonateServiceAccount}}`, "credentials.impersonateServiceAccount is required when credentials.source is ImpersonateServiceAccount"},
	"ClusterProviderConfigNoSecretRef": {`apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: hostile-cpc}
spec: {projectID: p, credentials: {source: AccessToken}}`, "credentials.secretRef is required when credentials.source is Secret or AccessToken"},
}

// hostileUpdates change fields GCP cannot change in place.
var hostileUpdates = map[string]struct {
	object  string
	path    []string
	value   any // nil removes the field
	wantErr string
}{
	"RuleRegionAdded":      {rule("u1", srcRanges("*")), []string{"spec", "forProvider", "region"}, "us-central1", "region is immutable"},
	"RuleProjectChanged":   {rule("u2", srcRanges("*"), "project: first-project", "allow"), []string{"spec", "forProvider", "project"}, "other-project", "project is immutable"},
	"PolicyProjectChanged": {policy("u3", "project: first-project"), []string{"spec", "forProvider", "project"}, "other-project", "project is immutable"},
	"PolicyTypeRemoved":    {policy("u4", "type: CLOUD_ARMOR"), []string{"spec", "forProvider", "type"}, nil, "type is immutable"},
	"RulePolicyRemoved":    {rule("u5", srcRanges("*")), []string{"spec", "forProvider", "securityPolicy"}, nil, "securityPolicy is immutable"},
}

// TestHostileInput applies every hostile object to the real API server and
// asserts it is refused with the expected message.
func TestHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("security: skipped with -short")
	}
	e := startAdmissionOnly(t)
	ctx := context.Background()
	n := 0
	for name, tc := range hostileCreates {
		n++
		t.Run("Create/"+name, func(t *testing.T) {
			u := decode(t, tc.object)
			err := e.Create(ctx, u, client.FieldValidation("Strict"))
			switch {
			case err == nil:
				t.Errorf("Create: want rejected with %q, got accepted", tc.wantErr)
			case !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("Create: want error containing\n  %q\ngot\n  %q", tc.wantErr, clip(err.Error()))
			}
		})
	}
	for name, tc := range hostileUpdates {
		n++
		t.Run("Update/"+name, func(t *testing.T) {
			u := decode(t, tc.object)
			if err := e.Create(ctx, u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("Create: %v", err)
			}
			if tc.value == nil {
				unstructured.RemoveNestedField(u.Object, tc.path...)
			} else if err := unstructured.SetNestedField(u.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			err := e.Update(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Update: want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
	if n < 40 {
		t.Errorf("only %d hostile objects; the promise is at least 40", n)
	}
	t.Logf("%d hostile objects refused at admission", n)
}

// startAdmissionOnly starts a control plane with our CRDs: admission needs
// no provider.
func startAdmissionOnly(t *testing.T) client.Client {
	t.Helper()
	return controlplane.StartT(t, controlplane.Options{
		CRDDirs: []string{repo.CRDDir()},
		Scheme:  kube.SchemeT(t),
	}).Client
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

func decode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatalf("bad test object: %v\n%s", err, clip(s))
	}
	return u
}

func manyLabels(n int) string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("l%d: v", i))
	}
	return strings.Join(out, ", ")
}

func policyNamed(name string) string {
	return "apiVersion: cloudarmor.armorplane.io/v1beta1\nkind: SecurityPolicy\nmetadata: {name: " + name + ", namespace: default}\nspec:\n  forProvider: {}\n"
}

func policy(name, field string) string {
	return "apiVersion: cloudarmor.armorplane.io/v1beta1\nkind: SecurityPolicy\nmetadata: {name: " + name + ", namespace: default}\nspec:\n  forProvider:\n    " + field + "\n"
}

func ruleYAML(name string, fields ...string) string {
	s := "apiVersion: cloudarmor.armorplane.io/v1beta1\nkind: SecurityPolicyRule\nmetadata: {name: " + name + ", namespace: default}\nspec:\n  forProvider:\n    securityPolicy: some-policy\n"
	for _, f := range fields {
		if f != "" {
			s += "    " + f + "\n"
		}
	}
	return s
}

// rule is a rule at priority 1 with match and optional extra field and
// action (default allow).
func rule(name, match string, extra ...string) string {
	action, field := "allow", ""
	if len(extra) > 0 {
		field = extra[0]
	}
	if len(extra) > 1 {
		action = extra[1]
	}
	return ruleYAML(name, "priority: 1", "action: "+quote(action), match, field)
}

func ruleAction(name, action string) string {
	return ruleYAML(name, "priority: 1", "action: "+quote(action), srcRanges("*"))
}

func quote(s string) string { return `"` + s + `"` }

func srcRanges(ranges ...string) string {
	return `match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["` + strings.Join(ranges, `", "`) + `"]}}`
}

func providerConfig(credentials string, extra ...string) string {
	s := "apiVersion: armorplane.io/v1beta1\nkind: ProviderConfig\nmetadata: {name: hostile, namespace: default}\nspec:\n  projectID: p\n  credentials: " + credentials + "\n"
	for _, f := range extra {
		s += "  " + f + "\n"
	}
	return s
}
