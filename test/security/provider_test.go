package security

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	apisv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/chaos/harness"
)

const secProject = "sec-project"

// fakeKey is a syntactically valid service-account key with a freshly
// generated RSA private key: recognisable, and worthless.
type fakeKey struct {
	json   []byte
	keyID  string
	pemKey string
}

func newFakeKey(t *testing.T, tokenURI string) fakeKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	keyID := "f00dfacecafe" + strings.Repeat("0123456789", 2) + "deadbeef"
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": secProject, "private_key_id": keyID, "private_key": pemKey,
		"client_email": "leak-test@" + secProject + ".iam.gserviceaccount.com", "client_id": "100000000000000000001",
		"token_uri": tokenURI, "auth_uri": "https://accounts.google.com/o/oauth2/auth",
	})
	if err != nil {
		t.Fatal(err)
	}
	return fakeKey{json: b, keyID: keyID, pemKey: pemKey}
}

// needles are the fragments of the key that must never appear anywhere:
// every line of the PEM body, the key id, and the JSON itself.
func (k fakeKey) needles() map[string]string {
	out := map[string]string{"private_key_id": k.keyID, "whole JSON": string(k.json)}
	for i, line := range strings.Split(k.pemKey, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out[fmt.Sprintf("PEM line %d", i)] = line
		}
	}
	return out
}

// tokenServer is the key's token_uri: it fails the first exchanges (500,
// then 400 invalid_grant), then hands out a token the emulator accepts.
func tokenServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch c := n.Add(1); {
		case c <= 2:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"internal_failure"}`))
		case c <= 4:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
		default:
			_, _ = w.Write([]byte(`{"access_token":"exchanged-token","token_type":"Bearer","expires_in":3600}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestProviderSecurity runs the provider binary with --debug, as a user
// bound only to the shipped ClusterRole, with a ClusterProviderConfig
// holding a fake service-account key, through token exchange failures and
// 20% injected GCP errors. It checks, in order:
//   - RBAC: e2e-style create, update and delete of a policy and rules
//     succeed, and nothing the provider does is forbidden;
//   - GCP-judged input: what admission cannot know is reported in
//     Synced=False with GCP's message, at a bounded number of calls, and
//     CEL-injection text reaches GCP verbatim;
//   - tenant isolation: a ProviderConfig in tenant-a naming a Secret that
//     only tenant-b has cannot use it;
//   - the key never appears in the provider's log, in any Event, or in any
//     status.
func TestProviderSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("security: skipped with -short")
	}
	ctx := context.Background()
	tok, exchanges := tokenServer(t)
	key := newFakeKey(t, tok.URL+"/token")
	e := harness.Start(t, providerBin, harness.Options{
		Emulator: emulator.Options{OpLatency: 20 * time.Millisecond, Seed: 5},
		// The key's token endpoint is this test's server, which the
		// platform team must grant.
		Args: []string{"--debug", "--poll=3s", "--poll-jitter=500ms", "--snapshot-ttl=1s", "--timeout=20s", "--allow-token-url=" + tok.URL + "/token"},
	})
	admin := e.Admin
	for _, n := range []string{"tenant-a", "tenant-b"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: sa-key, namespace: default}
stringData: {key.json: %q}`, string(key.json)))
	mustCreate(t, admin, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: default}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: Secret, secretRef: {namespace: default, name: sa-key, key: key.json}}`, secProject, e.Emu.Endpoint()))
	// A Secret whose JSON is broken mid-key: the parse error must not quote it.
	mustCreate(t, admin, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: broken-key, namespace: default}
stringData: {key.json: %q}`, string(key.json[:len(key.json)/2])))
	mustCreate(t, admin, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: broken, namespace: default}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: Secret, secretRef: {name: broken-key, key: key.json}}`, secProject, e.Emu.Endpoint()))
	if err := e.Emu.SetFaults(emulator.Faults{Global: emulator.FaultRule{ErrorRate: 0.2, OpErrorRate: 0.1}, RetryAfterSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	e.Prov.Start(t)

	t.Run("RBACScenarios", func(t *testing.T) {
		p := mustCreate(t, admin, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: sec-policy, namespace: default}
spec:
  forProvider: {description: security, defaultRule: {action: "deny(403)"}}`)
		r1 := mustCreate(t, admin, secRule("sec-rule-1", "sec-policy", 100, "10.0.0.0/8"))
		r2 := mustCreate(t, admin, secRule("sec-rule-2", "sec-policy", 200, "192.0.2.0/24"))
		for _, o := range []client.Object{p, r1, r2} {
			e.Eventually(t, 90*time.Second, o.GetName()+" Ready", func() error { return readyUnstructured(admin, o) })
		}
		if err := e.Update(ctx, r1, func() {
			_ = unstructured.SetNestedStringSlice(r1.Object, []string{"10.1.0.0/16"}, "spec", "forProvider", "match", "config", "srcIpRanges")
		}); err != nil {
			t.Fatal(err)
		}
		e.Eventually(t, 90*time.Second, "rule 100 updated in GCP", func() error {
			sp, err := e.GCP.SecurityPolicies.Get(secProject, "sec-policy").Do()
			if err != nil {
				return err
			}
			for _, r := range sp.Rules {
				if r.Priority == 100 && r.Match != nil && r.Match.Config != nil && strings.Join(r.Match.Config.SrcIpRanges, ",") == "10.1.0.0/16" {
					return nil
				}
			}
			return fmt.Errorf("rule 100 not updated yet")
		})
		for _, o := range []client.Object{r2, r1, p} {
			if err := admin.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range []client.Object{r1, r2, p} {
			e.Eventually(t, 90*time.Second, o.GetName()+" gone", func() error { return e.Gone(o) })
		}
		if _, ok := e.Emu.Snapshot()["projects/"+secProject+"/global/securityPolicies/sec-policy"]; ok {
			t.Error("sec-policy still exists in GCP after its object was deleted")
		}
	})

	t.Run("GCPJudged", func(t *testing.T) {
		// What GCP refuses must reach Synced=False with GCP's message; the
		// injected faults only delay that, so they are off here (and back
		// on for the subtests after this one).
		if err := e.Emu.SetFaults(emulator.Faults{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.Emu.SetFaults(emulator.Faults{Global: emulator.FaultRule{ErrorRate: 0.2, OpErrorRate: 0.1}, RetryAfterSeconds: 1})
		})
		// judgedRule is a rule object only GCP can judge, in a policy of its
		// own so that the calls it causes can be counted.
		judgedRule := func(name, region, fields string) (string, string) {
			regionField, path := "", "projects/"+secProject+"/global/securityPolicies/"+name
			if region != "" {
				regionField, path = "\n    region: "+region, "projects/"+secProject+"/regions/"+region+"/securityPolicies/"+name
			}
			return fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: %[1]s, namespace: default}
spec:
  forProvider:
    defaultRule: {action: "deny(403)"}%[2]s
---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: %[1]s, namespace: default}
spec:
  forProvider:
    securityPolicy: %[1]s%[2]s
    priority: 100
%[3]s`, name, regionField, fields), path
		}
		cel, celPath := judgedRule("sec-cel-broken", "", `    action: "deny(403)"
    match: {expr: {expression: "this is ((( not CEL"}}`)
		subexprs, subexprsPath := judgedRule("sec-cel-six", "", `    action: "deny(403)"
    match: {expr: {expression: "origin.region_code == 'AA' || origin.region_code == 'BB' || origin.region_code == 'CC' || origin.region_code == 'DD' || origin.region_code == 'EE' || origin.region_code == 'FF'"}}`)
		waf, wafPath := judgedRule("sec-waf-unknown", "", `    action: "deny(403)"
    match: {expr: {expression: "evaluatePreconfiguredWaf('no-such-set-v33-stable')"}}`)
		redirect, redirectPath := judgedRule("sec-redirect-regional", "europe-west1", `    action: redirect
    redirectOptions: {type: EXTERNAL_302, target: "https://example.com/blocked"}
    match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["*"]}}`)

		cases := map[string]struct {
			object  string
			path    string
			wantMsg string
		}{
			// What only GCP can judge about a rule: CEL semantics, limits
			// inside an expression, rule sets, and what the policy's scope
			// supports (a rule object does not know its policy's scope at
			// admission). The path is a full resource path.
			"BrokenExpression":      {cel, celPath, "The expression is not valid"},
			"TooManySubexpressions": {subexprs, subexprsPath, "the limit is 5"},
			"UnknownWafRuleSet":     {waf, wafPath, "unknown preconfigured WAF rule set 'no-such-set-v33-stable'"},
			"RedirectInRegional":    {redirect, redirectPath, "This action is only supported in Global Security Policies of type CLOUD_ARMOR"},
			"UppercaseLabelKey": {`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: sec-labels, namespace: default}
spec:
  forProvider: {labels: {Team: Платформа}}`, "sec-labels", "Label keys must start with a lowercase letter"},
			"ExternalNameNotAPolicyName": {`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: sec-extname, namespace: default, annotations: {crossplane.io/external-name: "Bad_Name;--"}}
spec:
  forProvider: {}`, "Bad_Name;--", "Must be a match of regex"},
		}
		objs := map[string]*unstructured.Unstructured{}
		for name, tc := range cases {
			// The last document is the object judged; any before it (its
			// policy) are created first.
			docs := strings.Split(tc.object, "\n---\n")
			for _, d := range docs {
				objs[name] = mustCreate(t, admin, d)
			}
		}
		for name, tc := range cases {
			o := objs[name]
			e.Eventually(t, 60*time.Second, name+" Synced=False with GCP's message", syncedFalseWith(admin, o, tc.wantMsg))
		}
		// No retry storm: count the calls for those policies over a window.
		before := e.Emu.Stats()
		const window = 20 * time.Second
		time.Sleep(window)
		after := e.Emu.Stats()
		for name, tc := range cases {
			path := tc.path
			if !strings.HasPrefix(path, "projects/") {
				path = "projects/" + secProject + "/global/securityPolicies/" + tc.path
			}
			calls := sum(after.Policies[path]) - sum(before.Policies[path])
			// Backoff doubles from 1 s up to 60 s: at most ~6 attempts of
			// a read and a write each in 20 s, plus polls.
			if calls > 20 {
				t.Errorf("%s: %d GCP calls in %s for an input GCP rejects: a retry storm", name, calls, window)
			}
			t.Logf("%s: %d GCP calls in %s while rejected", name, calls, window)
		}

		// CEL-injection text is data: GCP receives exactly what was written.
		// Valid CEL (GCP, and the emulator, refuse expressions that do not
		// parse), with injection attempts inside its string literals.
		expr := `request.headers['x-a'] == "\" || true || \"" && origin.ip == '1.2.3.4' && request.path != '${jndi:ldap://x} /* */'`
		p := mustCreate(t, admin, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: sec-cel, namespace: default}
spec:
  forProvider: {defaultRule: {action: "deny(403)"}}`)
		r := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Name: "sec-cel-1", Namespace: "default"},
			Spec: v1beta1.SecurityPolicyRuleSpec{ForProvider: v1beta1.SecurityPolicyRuleParameters{
				SecurityPolicy: ptr("sec-cel"), Priority: 10, RuleParameters: v1beta1.RuleParameters{
					Action: "deny(403)", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: expr}}}}}}
		if err := admin.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		e.Eventually(t, 90*time.Second, "the CEL rule in GCP", func() error {
			sp, err := e.GCP.SecurityPolicies.Get(secProject, "sec-cel").Do()
			if err != nil {
				return err
			}
			for _, gr := range sp.Rules {
				if gr.Priority == 10 && gr.Match != nil && gr.Match.Expr != nil {
					if gr.Match.Expr.Expression != expr {
						return fmt.Errorf("GCP holds %q, want %q verbatim", gr.Match.Expr.Expression, expr)
					}
					return nil
				}
			}
			return fmt.Errorf("no rule 10 yet")
		})
		_ = p
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		// tenant-b has a working token Secret; tenant-a has none of that name.
		mustCreate(t, admin, `apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: tenant-b}
stringData: {token: tenant-b-token}`)
		mustCreate(t, admin, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: pc, namespace: tenant-a}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: AccessToken, secretRef: {name: creds, key: token}}`, secProject, e.Emu.Endpoint()))
		p := mustCreate(t, admin, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: tenant-policy, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: pc}
  forProvider: {}`)
		e.Eventually(t, 60*time.Second, "tenant-a's policy to fail on its own namespace's Secret",
			syncedFalseWith(admin, p, "cannot get credentials Secret tenant-a/creds"))
		time.Sleep(3 * time.Second)
		if _, ok := e.Emu.Snapshot()["projects/"+secProject+"/global/securityPolicies/tenant-policy"]; ok {
			t.Error("tenant-a's policy exists in GCP: the provider used a Secret outside tenant-a")
		}
		// The provider cannot enumerate Secrets at all, in any namespace.
		for _, ns := range []string{"tenant-b", ""} {
			if allowed := can(t, admin, authzv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "secrets"}); allowed {
				t.Errorf("the provider's ClusterRole lets it list Secrets in %q", ns)
			}
		}
		// It creates and deletes only what a SecurityPolicyAllowlist keeps in
		// its own namespace (policies, rules, groups, AddressSets), one object
		// at a time; never the organization kinds, never in bulk.
		for _, ra := range []authzv1.ResourceAttributes{
			{Verb: "deletecollection", Group: v1beta1.Group, Resource: "securitypolicies", Namespace: "default"},
			{Verb: "delete", Group: v1beta1.Group, Resource: "organizationsecuritypolicies", Namespace: "default"},
			{Verb: "create", Group: v1beta1.Group, Resource: "organizationsecuritypolicies", Namespace: "default"},
			{Verb: "watch", Resource: "secrets", Namespace: "default"},
			{Verb: "update", Resource: "secrets", Namespace: "default"},
			{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		} {
			if can(t, admin, ra) {
				t.Errorf("the provider's ClusterRole allows %s %s/%s", ra.Verb, ra.Group, ra.Resource)
			}
		}
		if !can(t, admin, authzv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "crossplane-system"}) {
			t.Error("the provider's ClusterRole does not allow leader election leases")
		}
	})

	t.Run("BrokenKeyReported", func(t *testing.T) {
		p := mustCreate(t, admin, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: broken-key-policy, namespace: default}
spec:
  providerConfigRef: {kind: ProviderConfig, name: broken}
  forProvider: {}`)
		e.Eventually(t, 60*time.Second, "the broken key reported", syncedFalseWith(admin, p, "cannot parse credentials"))
	})

	// Last: the key never appears in the log, events or status.
	t.Run("NoKeyMaterial", func(t *testing.T) {
		t.Logf("token exchanges: %d (the first 4 failed); provider starts: %d", exchanges.Load(), e.Prov.Starts)
		haystacks := map[string]string{"provider log": string(e.Prov.Log())}
		events := &corev1.EventList{}
		if err := admin.List(ctx, events); err != nil {
			t.Fatal(err)
		}
		if len(events.Items) == 0 {
			t.Error("no Events at all: the provider's errors should have produced some")
		}
		haystacks["events"] = jsonOf(t, events)
		for _, l := range []client.ObjectList{&v1beta1.SecurityPolicyList{}, &v1beta1.SecurityPolicyRuleList{},
			&apisv1beta1.ProviderConfigList{}, &apisv1beta1.ClusterProviderConfigList{}, &apisv1beta1.ProviderConfigUsageList{}} {
			if err := admin.List(ctx, l); err != nil {
				t.Fatal(err)
			}
			haystacks[fmt.Sprintf("%T", l)] = jsonOf(t, l)
		}
		for where, hay := range haystacks {
			for what, needle := range key.needles() {
				if strings.Contains(hay, needle) {
					t.Errorf("%s contains the key's %s", where, what)
				}
			}
			// JSON-escaped PEM, as a log line would quote it.
			if strings.Contains(hay, "PRIVATE KEY") {
				t.Errorf("%s contains a PEM header", where)
			}
		}
		if log := string(e.Prov.Log()); strings.Contains(log, "forbidden") {
			i := strings.Index(log, "forbidden")
			t.Errorf("the provider was refused something by its ClusterRole: ...%s...", log[max(0, i-300):min(len(log), i+200)])
		}
		t.Logf("searched %d bytes of provider log, %d events and every status for %d key fragments", len(haystacks["provider log"]), len(events.Items), len(key.needles()))
	})
}

func ptr[T any](v T) *T { return &v }

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func secRule(name, policy string, priority int64, cidr string) string {
	return fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: %s, namespace: default}
spec:
  forProvider:
    securityPolicy: %s
    priority: %d
    action: allow
    match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [%q]}}`, name, policy, priority, cidr)
}

func mustCreate(t *testing.T, c client.Client, s string) *unstructured.Unstructured {
	t.Helper()
	u := decode(t, s)
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return u
}

type condition struct{ Status, Message string }

// syncedFalseWith is a condition for Eventually: o is Synced=False with a
// message holding msg.
func syncedFalseWith(c client.Client, o client.Object, msg string) func() error {
	return func() error {
		cs, err := conditionsOf(c, o)
		if err != nil {
			return err
		}
		if cs["Synced"].Status != "False" || !strings.Contains(cs["Synced"].Message, msg) {
			return fmt.Errorf("Synced=%s: %s", cs["Synced"].Status, cs["Synced"].Message)
		}
		return nil
	}
}

func conditionsOf(c client.Client, o client.Object) (map[string]condition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), u); err != nil {
		return nil, err
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := map[string]condition{}
	for _, x := range list {
		m, _ := x.(map[string]any)
		typ, _ := m["type"].(string)
		st, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		out[typ] = condition{Status: st, Message: msg}
	}
	return out, nil
}

func readyUnstructured(c client.Client, o client.Object) error {
	cs, err := conditionsOf(c, o)
	if err != nil {
		return err
	}
	for _, ct := range []string{"Ready", "Synced"} {
		if cs[ct].Status != "True" {
			return fmt.Errorf("%s=%s: %s", ct, cs[ct].Status, cs[ct].Message)
		}
	}
	return nil
}

// can asks the API server whether the provider's user may do ra.
func can(t *testing.T, admin client.Client, ra authzv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: harness.ProviderUser, ResourceAttributes: &ra}}
	if err := admin.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}
