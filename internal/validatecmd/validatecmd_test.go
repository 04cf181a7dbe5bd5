package validatecmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/validatecmd"
)

const (
	project = "validate-project"
	token   = "validate-token"
)

// tooComplex has six subexpressions; GCP allows five. Admission cannot
// count them, so only GCP refuses it.
const tooComplex = "request.path == '/a' || request.path == '/b' || request.path == '/c' || " +
	"request.path == '/d' || request.path == '/e' || request.path == '/f'"

const tooComplexPolicy = `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: too-complex
  namespace: default
spec:
  forProvider:
    rules:
      - priority: 1000
        action: deny(403)
        match:
          expr:
            expression: "` + tooComplex + `"
`

// refusedMessage is the emulator's refusal of tooComplex at rules[i]
// (insert) or at the rule itself (addRule, patchRule).
func refusedMessage(field string) string {
	return "Invalid value for field '" + field + "': '" + tooComplex[:100] + "...'. The expression has 6 subexpressions; the limit is 5."
}

const existingRules = `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata:
  name: good
  namespace: default
spec:
  forProvider:
    securityPolicy: existing
    priority: 10
    action: deny(404)
    match:
      expr:
        expression: request.path.startsWith('/admin')
---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata:
  name: too-complex
  namespace: default
spec:
  forProvider:
    securityPolicy: existing
    priority: 1000
    action: deny(403)
    match:
      expr:
        expression: "` + tooComplex + `"
---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: existing
  namespace: default
spec:
  forProvider:
    description: changed
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata:
  name: default-deny
  namespace: default
spec:
  forProvider:
    securityPolicy: existing
    priority: 2147483647
    action: deny(502)
`

func TestRun(t *testing.T) {
	examples := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = filepath.Join("..", "..", "examples", n)
		}
		return out
	}
	type args struct {
		files    []string
		manifest string // written to a temporary file appended to files
		project  string
		creds    func(dir string) validatecmd.Credentials
	}
	type want struct {
		status int
		out    []string
		errOut string // a substring of what goes to errOut
		// asked counts the dry runs the emulator answered, by method.
		asked map[string]int64
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ExamplesPass": {
			reason: "The examples' policies and rules, none of which GCP has yet, are accepted by insert validateOnly.",
			args:   args{files: examples("securitypolicy/allowlist-inline.yaml", "securitypolicyrule/policy-with-rules.yaml", "regional/regional-policy.yaml")},
			want: want{status: validatecmd.ExitOK, out: []string{
				"../../examples/securitypolicy/allowlist-inline.yaml:1: SecurityPolicy/office-allowlist: ok",
				"../../examples/securitypolicyrule/policy-with-rules.yaml:1: SecurityPolicy/api-edge: ok",
				"../../examples/securitypolicyrule/policy-with-rules.yaml:2: SecurityPolicyRule/api-edge-office: ok",
				"../../examples/securitypolicyrule/policy-with-rules.yaml:3: SecurityPolicyRule/api-edge-block-scanners: ok",
				"../../examples/securitypolicyrule/policy-with-rules.yaml:4: SecurityPolicyRule/api-edge-ban-abusers: ok",
				"../../examples/regional/regional-policy.yaml:1: SecurityPolicy/regional-backend: ok",
			}, asked: map[string]int64{"securityPolicies.insert?validateOnly": 5, "regionSecurityPolicies.insert?validateOnly": 1}},
		},
		"FeatureExamples": {
			reason: "The feature examples pass; other kinds and an observe-only policy are skipped.",
			args: args{files: examples("features/adaptive-protection.yaml", "features/edge.yaml", "features/header-action.yaml",
				"features/network-udf.yaml", "features/rate-limit-keys.yaml", "features/recaptcha.yaml", "features/waf-exclusions.yaml",
				"import/observe-only.yaml", "providerconfig/emulator.yaml")},
			want: want{status: validatecmd.ExitOK, out: []string{
				"../../examples/features/adaptive-protection.yaml:1: SecurityPolicy/storefront-adaptive: ok",
				"../../examples/features/edge.yaml:1: SecurityPolicy/static-assets-edge: ok",
				"../../examples/features/header-action.yaml:1: SecurityPolicy/tagged-backend: ok",
				"../../examples/features/network-udf.yaml:1: SecurityPolicy/game-udp-filter: ok",
				"../../examples/features/rate-limit-keys.yaml:1: SecurityPolicy/partner-api-limits: ok",
				"../../examples/features/recaptcha.yaml:1: SecurityPolicy/login-recaptcha: ok",
				"../../examples/features/waf-exclusions.yaml:1: SecurityPolicy/shop-waf: ok",
				"../../examples/import/observe-only.yaml:1: SecurityPolicy/legacy-console-policy: skipped: its managementPolicies let the provider write nothing",
				"../../examples/providerconfig/emulator.yaml:1: Secret/cloudarmor-emulator-token: skipped: not a SecurityPolicy or SecurityPolicyRule",
				"../../examples/providerconfig/emulator.yaml:2: ClusterProviderConfig/default: skipped: not a SecurityPolicy or SecurityPolicyRule",
			}, asked: map[string]int64{"securityPolicies.insert?validateOnly": 6, "regionSecurityPolicies.insert?validateOnly": 1}},
		},
		"AddressGroupNeedsEnterprise": {
			reason: "A rule using an address group, checked inside its new policy's insert, is refused in a project on the standard tier.",
			args:   args{files: examples("features/address-group.yaml")},
			want: want{status: validatecmd.ExitRefused, out: []string{
				"../../examples/features/address-group.yaml:1: AddressGroup/partners: skipped: not a SecurityPolicy or SecurityPolicyRule",
				"../../examples/features/address-group.yaml:2: SecurityPolicy/partner-api: ok",
				"../../examples/features/address-group.yaml:3: SecurityPolicyRule/partner-api-partners: GCP refuses: " +
					"Invalid value for field 'resource.rules[1].match.expr.expression': 'evaluateAddressGroup('partners', origin.ip)'. " +
					"Address groups (evaluateAddressGroup, evaluateOrganizationAddressGroup) need Cloud Armor Enterprise; " +
					"project 'validate-project' is on CA_STANDARD. (insert with the rule)",
			}, asked: map[string]int64{"securityPolicies.insert?validateOnly": 2}},
		},
		"TooComplexExpression": {
			reason: "A CEL expression with six subexpressions is refused with GCP's message.",
			args:   args{manifest: tooComplexPolicy},
			want: want{status: validatecmd.ExitRefused, out: []string{
				"MANIFEST:1: SecurityPolicy/too-complex: GCP refuses: " + refusedMessage("resource.rules[0].match.expr.expression") + " (insert)",
			}, asked: map[string]int64{"securityPolicies.insert?validateOnly": 1}},
		},
		"ExistingPolicy": {
			reason: "Rules of a policy GCP has are asked about with addRule or (the default rule) patchRule validateOnly; a change of the policy's own fields cannot be asked about and says so; other kinds are skipped.",
			args:   args{manifest: existingRules},
			want: want{status: validatecmd.ExitRefused, out: []string{
				"MANIFEST:1: SecurityPolicyRule/good: ok",
				"MANIFEST:2: SecurityPolicyRule/too-complex: GCP refuses: " + refusedMessage("resource.match.expr.expression") + " (addRule priority 1000)",
				"MANIFEST:3: SecurityPolicy/existing: ok; not asked: the change of the policy's own fields: securityPolicies.patch has no validateOnly",
				"MANIFEST:4: ConfigMap/other: skipped: not a SecurityPolicy or SecurityPolicyRule",
				"MANIFEST:5: SecurityPolicyRule/default-deny: ok",
			}, asked: map[string]int64{"securityPolicies.addRule?validateOnly": 2, "securityPolicies.patchRule?validateOnly": 1}},
		},
		"TypeChange": {
			reason: "A type GCP's policy cannot change to is reported as the provider reports it, and nothing is asked.",
			args: args{manifest: "apiVersion: cloudarmor.armorplane.io/v1beta1\nkind: SecurityPolicy\nmetadata: {name: existing}\n" +
				"spec: {forProvider: {type: CLOUD_ARMOR_EDGE}}\n"},
			want: want{status: validatecmd.ExitRefused, out: []string{
				`MANIFEST:1: SecurityPolicy/existing: the provider would not write it: spec.forProvider.type is "CLOUD_ARMOR_EDGE" but GCP policy "existing" has type "CLOUD_ARMOR"; ` +
					`type is immutable in GCP: delete the policy to recreate it with the new type, or set type to "CLOUD_ARMOR"`,
			}},
		},
		"NoFiles": {
			reason: "No manifests is a usage error.",
			want:   want{status: validatecmd.ExitUsage, errOut: "no manifests"},
		},
		"NoProject": {
			reason: "An object without a project, and no --project, is a usage error before GCP is asked.",
			args:   args{manifest: tooComplexPolicy, project: "-"},
			want:   want{status: validatecmd.ExitUsage, errOut: "MANIFEST:1: SecurityPolicy/too-complex: no GCP project"},
		},
		"TwoCredentialSources": {
			reason: "An access token and a credentials file at once is a usage error.",
			args: args{manifest: tooComplexPolicy, creds: func(dir string) validatecmd.Credentials {
				return validatecmd.Credentials{AccessTokenFile: write(t, dir, "token", token), CredentialsFile: write(t, dir, "key.json", "{}")}
			}},
			want: want{status: validatecmd.ExitUsage, errOut: "--access-token-file cannot be combined"},
		},
		"WrongToken": {
			reason: "A token GCP does not accept means the question could not be asked; the token is not printed.",
			args: args{manifest: tooComplexPolicy, creds: func(dir string) validatecmd.Credentials {
				return validatecmd.Credentials{AccessTokenFile: write(t, dir, "token", "not-the-token")}
			}},
			want: want{status: validatecmd.ExitUsage, out: []string{
				"MANIFEST:1: SecurityPolicy/too-complex: cannot ask GCP: 401 Request had invalid authentication credentials. " +
					"Expected OAuth 2 access token, login cookie or other valid authentication credential. " +
					"See https://developers.google.com/identity/sign-in/web/devconsole-project.",
			}},
		},
		"BadManifest": {
			reason: "A document that does not decode into its kind is a usage error naming the file and document.",
			args:   args{manifest: "apiVersion: cloudarmor.armorplane.io/v1beta1\nkind: SecurityPolicy\nmetadata: {name: x}\nspec: {forProvider: {nope: 1}}\n"},
			want:   want{status: validatecmd.ExitUsage, errOut: `MANIFEST:1: SecurityPolicy/x: cannot decode: error unmarshaling JSON: while decoding JSON: json: unknown field "nope"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := emulator.Start(t, emulator.Options{Auth: emulator.AuthToken, Token: token})
			svc, err := em.NewService(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			insertExisting(t, svc)
			before := em.Snapshot()

			dir := t.TempDir()
			files := tc.args.files
			manifest := ""
			if tc.args.manifest != "" {
				manifest = write(t, dir, "manifest.yaml", tc.args.manifest)
				files = append(files, manifest)
			}
			cfg := validatecmd.Config{Files: files, Project: project, Endpoint: em.URL(),
				Credentials: validatecmd.Credentials{AccessTokenFile: write(t, dir, "token", token)}}
			if tc.args.project == "-" {
				cfg.Project = ""
			}
			if tc.args.creds != nil {
				cfg.Credentials = tc.args.creds(dir)
			}
			var out, errOut bytes.Buffer
			status := validatecmd.Run(context.Background(), cfg, &out, &errOut)

			named := func(s string) string {
				if manifest == "" {
					return s
				}
				return strings.ReplaceAll(s, manifest, "MANIFEST")
			}
			var lines []string
			for l := range strings.Lines(out.String()) {
				lines = append(lines, named(strings.TrimSuffix(l, "\n")))
			}
			gotErr := named(errOut.String())
			if diff := cmp.Diff(tc.want.out, lines); diff != "" {
				t.Errorf("%s\noutput: -want, +got:\n%s", tc.reason, diff)
			}
			if status != tc.want.status || (tc.want.errOut == "") != (gotErr == "") || !strings.Contains(gotErr, tc.want.errOut) {
				t.Errorf("%s\nstatus %d, want %d; errOut %q, want it to contain %q", tc.reason, status, tc.want.status, gotErr, tc.want.errOut)
			}
			if strings.Contains(out.String()+errOut.String(), token) || strings.Contains(out.String()+errOut.String(), "not-the-token") {
				t.Errorf("%s\nthe output shows a token", tc.reason)
			}
			if diff := cmp.Diff(before, em.Snapshot()); diff != "" {
				t.Errorf("%s\nGCP's state changed: -before, +after:\n%s", tc.reason, diff)
			}
			st := em.Stats()
			if st.Mutations != 1 {
				t.Errorf("%s\n%d mutations, want only the fixture's insert", tc.reason, st.Mutations)
			}
			asked := map[string]int64{}
			for m, n := range st.Methods {
				if strings.HasSuffix(m, "?validateOnly") {
					asked[m] = n
				}
			}
			if diff := cmp.Diff(tc.want.asked, asked, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndry runs: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// insertExisting creates the policy "existing" with the default rule only.
func insertExisting(t *testing.T, svc *compute.Service) {
	t.Helper()
	op, err := svc.SecurityPolicies.Insert(project, &compute.SecurityPolicy{Name: "existing"}).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GlobalOperations.Wait(project, op.Name).Do(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
