package render

import (
	"bytes"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

// privateFile is the IPAllowlist of a private cluster: a LoadBalancer egress gateway, a Cloud
// NAT Address and a ConfigMap list, besides an office.
const privateFile = repoRoot + "/examples/allowlist/private-cluster/ipallowlist.yaml"

// egress is what the private cluster's sources hold, in the XR's namespace (default) and in
// another team's (team-b), which must never reach the rules.
type egress struct {
	gatewayIP string // the egress gateway Service's load balancer IP
	natIP     string // the Cloud NAT Address's status.atProvider.address
	cidrs     string // the ConfigMap's list; "" leaves the ConfigMap out
	noNAT     bool   // the Address does not exist in default
}

// otherTeam is what team-b's objects of the same names and labels would allow.
var otherTeam = []string{"34.120.9.9/32", "35.200.9.9/32", "192.0.2.0/24"}

func defaultEgress() egress {
	return egress{
		gatewayIP: "34.120.0.10",
		natIP:     "35.200.0.1",
		cidrs:     "# partner egress\n198.51.100.0/28, 198.51.100.64/28\n192.0.2.300 # typo\n",
	}
}

func lbService(namespace, name, typ string, ingress ...map[string]any) map[string]any {
	in := make([]any, 0, len(ingress))
	for _, i := range ingress {
		in = append(in, i)
	}
	spec := map[string]any{"type": typ, "ports": []any{map[string]any{"port": 443, "protocol": "TCP"}}}
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"app": "egress-gateway"}},
		"spec":     spec,
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": in}},
	}
}

func gcpAddress(namespace, name, addr string) map[string]any {
	return map[string]any{
		"apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"egress": "nat"}},
		"spec":     map[string]any{"forProvider": map[string]any{"region": "europe-west1"}},
		"status":   map[string]any{"atProvider": map[string]any{"address": addr}},
	}
}

func configMapOf(namespace, name, cidrs string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     map[string]any{"cidrs": cidrs},
	}
}

// requiredYAML is the cluster's objects as `crossplane render --required-resources` reads them:
// the XR's namespace's, and team-b's objects of the same names and labels (its Service also
// labelled tier=edge, which no Service of default is). Crossplane's own fetcher picks from them
// what the function asks for.
func requiredYAML(t *testing.T, w egress) []byte {
	t.Helper()
	theirs := lbService("team-b", "egress-gateway", "LoadBalancer", map[string]any{"ip": "34.120.9.9"})
	theirs["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] = "edge"
	objs := []map[string]any{
		lbService("default", "egress-gateway", "LoadBalancer", map[string]any{"ip": w.gatewayIP}),
		lbService("default", "egress-gateway-v6", "LoadBalancer", map[string]any{"hostname": "egress.example.com"}),
		lbService("default", "egress-gateway-internal", "ClusterIP"),
		theirs,
		gcpAddress("team-b", "cloud-nat-egress", "35.200.9.9"),
		configMapOf("team-b", "egress-ranges", "192.0.2.0/24"),
	}
	if !w.noNAT {
		objs = append(objs, gcpAddress("default", "cloud-nat-egress", w.natIP))
	}
	if w.cidrs != "" {
		objs = append(objs, configMapOf("default", "egress-ranges", w.cidrs))
	}
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// privateXR returns examples/allowlist/private-cluster/ipallowlist.yaml, changed by fn.
func privateXR(t *testing.T, fn func(spec map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile(privateFile)
	if err != nil {
		t.Fatal(err)
	}
	u := map[string]any{}
	if err := yaml.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	if fn != nil {
		fn(u["spec"].(map[string]any))
	}
	out, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// only keeps the one source list named, and no office.
func only(list string) func(spec map[string]any) {
	return func(spec map[string]any) {
		for _, l := range []string{"staticSources", "serviceSources", "objectSources", "configMapSources"} {
			if l != list {
				delete(spec, l)
			}
		}
	}
}

func (e *env) renderPrivate(t *testing.T, dir string, xrYAML, observed []byte, w egress) []*unstructured.Unstructured {
	t.Helper()
	r := e.render(t, dir, xrYAML, observed, "--required-resources="+write(t, dir, "required.yaml", requiredYAML(t, w)))
	if r.err != nil {
		t.Fatalf("crossplane render: %v\n%s", r.err, r.stderr)
	}
	return decode(t, r.stdout)
}

// allowed is the sorted set of ranges the rendered rules allow.
func allowed(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() != "SecurityPolicyRule" {
			continue
		}
		rs, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "forProvider", "match", "config", "srcIpRanges")
		out = append(out, rs...)
	}
	sort.Strings(out)
	return out
}

// warnings are the messages of our function's rendered Warning results.
func warnings(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Result" && o.Object["severity"] == "Warning" {
			m, _ := o.Object["message"].(string)
			out = append(out, strings.TrimPrefix(m, `Pipeline step "allowlist": `))
		}
	}
	sort.Strings(out)
	return out
}

// TestRenderSources renders the IPAllowlist of a private cluster with the real `crossplane
// render`, whose Crossplane core fetches the Services, Address and ConfigMap the function asks
// for from --required-resources: each source kind alone and together, the cases that hold the
// rules, and a change to a Service and to a ConfigMap followed.
func TestRenderSources(t *testing.T) {
	e := setup(t)
	t.Run("Fixtures", func(t *testing.T) { testSourceFixtures(t, e) })
	t.Run("Held", func(t *testing.T) { testSourcesHeld(t, e) })
	t.Run("ChangesFollowed", func(t *testing.T) { testSourceChanges(t, e) })
}

func testSourceFixtures(t *testing.T, e *env) {
	hostname := `service source "egress-gateway": Service default/egress-gateway-v6: ingress host name "egress.example.com" left out: Cloud Armor matches IP addresses, not names`
	typo := `configMap source "partner-egress": ConfigMap default/egress-ranges key cidrs line 3 left out: "192.0.2.300" is neither a CIDR nor an IP address`
	cases := map[string]struct {
		reason       string
		xr           func(spec map[string]any)
		want         []string
		wantWarnings []string
	}{
		"private-cluster": {
			reason:       "Every source of the example: the office, the gateway's load balancer IP, the NAT Address and the ConfigMap's CIDRs; a host name and a typo are left out with warnings; nothing of team-b's.",
			want:         []string{"198.51.100.0/28", "198.51.100.64/28", "203.0.113.0/26", "34.120.0.10/32", "35.200.0.1/32"},
			wantWarnings: []string{typo, hostname},
		},
		"service-source": {
			reason:       "LoadBalancer Services labelled app=egress-gateway in default: their ingress IPs; the ClusterIP Service is ignored.",
			xr:           only("serviceSources"),
			want:         []string{"34.120.0.10/32"},
			wantWarnings: []string{hostname},
		},
		"object-source-by-label": {
			reason: "Addresses selected by label in default (not team-b's): their status.atProvider.address.",
			xr: func(spec map[string]any) {
				only("objectSources")(spec)
				src := spec["objectSources"].([]any)[0].(map[string]any)
				delete(src, "objectName")
				src["matchLabels"] = map[string]any{"egress": "nat"}
			},
			want: []string{"35.200.0.1/32"},
		},
		"configmap-source": {
			reason:       "The CIDRs of the ConfigMap's key, comments ignored, the typo left out with a warning naming its line.",
			xr:           only("configMapSources"),
			want:         []string{"198.51.100.0/28", "198.51.100.64/28"},
			wantWarnings: []string{typo},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			objs := e.renderPrivate(t, dir, privateXR(t, tc.xr), nil, defaultEgress())
			golden(t, name, objs)
			e.validate(t, dir, objs)
			if diff := cmp.Diff(tc.want, allowed(objs)); diff != "" {
				t.Errorf("%s\nallowed ranges: -want, +got:\n%s", tc.reason, diff)
			}
			for _, r := range otherTeam {
				if slices.Contains(allowed(objs), r) {
					t.Errorf("%s\n%s, from an object of namespace team-b, is allowed", tc.reason, r)
				}
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings(objs)); diff != "" {
				t.Errorf("%s\nwarnings: -want, +got:\n%s", tc.reason, diff)
			}
			if st, reason, msg := platform.ConditionOf(objs[0], "Current"); st != "True" {
				t.Errorf("%s\nCurrent condition: %s %s %s, want True", tc.reason, st, reason, msg)
			}
		})
	}
}

// testSourcesHeld renders over the live rules of the example when a source cannot be followed:
// the rules are rendered exactly as they were, not Ready, and Current says why.
func testSourcesHeld(t *testing.T, e *env) {
	dir := t.TempDir()
	live := e.renderPrivate(t, dir, privateXR(t, nil), nil, defaultEgress())
	observed := observedFrom(t, live)

	cases := map[string]struct {
		xr      func(spec map[string]any)
		w       func(w *egress)
		wantMsg string
	}{
		"NamedAddressMissing": {
			w:       func(w *egress) { w.noNAT = true },
			wantMsg: `object source "cloud-nat": Address default/cloud-nat-egress not found; the rules are left as they are`,
		},
		"NamedConfigMapMissing": {
			w:       func(w *egress) { w.cidrs = "" },
			wantMsg: `configMap source "partner-egress": ConfigMap default/egress-ranges not found; the rules are left as they are`,
		},
		"RequiredServiceSelectorMatchesOnlyAnotherNamespace": {
			xr: func(spec map[string]any) {
				spec["serviceSources"] = []any{map[string]any{"name": "egress-gateway", "matchLabels": map[string]any{"app": "egress-gateway", "tier": "edge"}, "required": true}}
			},
			wantMsg: `service source "egress-gateway": no address: 0 Service(s) match labels {app=egress-gateway,tier=edge} in namespace default, 0 of type LoadBalancer, and the source is required; the rules are left as they are`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := defaultEgress()
			if tc.w != nil {
				tc.w(&w)
			}
			objs := e.renderPrivate(t, t.TempDir(), privateXR(t, tc.xr), observed, w)
			if diff := cmp.Diff(rules(live), rules(objs)); diff != "" {
				t.Errorf("held rules differ from the live ones: -live, +rendered:\n%s", diff)
			}
			if st, reason, msg := platform.ConditionOf(objs[0], "Current"); st != "False" || reason != "CannotCompose" || msg != tc.wantMsg {
				t.Errorf("Current condition: %s %s %q, want False, CannotCompose, %q", st, reason, msg, tc.wantMsg)
			}
			if c := readyOf(objs[0]); c == "True" {
				t.Errorf("XR Ready while its rules are held")
			}
		})
	}
}

// testSourceChanges renders the example, then renders again with the previous output as
// observed and one source changed, as Crossplane does when the Service or ConfigMap it watches
// changes: the rules follow, and only the rule holding the change is rewritten.
func testSourceChanges(t *testing.T, e *env) {
	dir := t.TempDir()
	before := e.renderPrivate(t, dir, privateXR(t, nil), nil, defaultEgress())
	observed := observedFrom(t, before)

	cases := map[string]struct {
		w    func(w *egress)
		want []string
	}{
		"service-ip-changed": {
			w:    func(w *egress) { w.gatewayIP = "34.120.0.11" },
			want: []string{"198.51.100.0/28", "198.51.100.64/28", "203.0.113.0/26", "34.120.0.11/32", "35.200.0.1/32"},
		},
		"configmap-edited": {
			w:    func(w *egress) { w.cidrs = "198.51.100.0/28\n2001:db8:20::/48\n" },
			want: []string{"198.51.100.0/28", "2001:db8:20::/48", "203.0.113.0/26", "34.120.0.10/32", "35.200.0.1/32"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := defaultEgress()
			tc.w(&w)
			after := e.renderPrivate(t, t.TempDir(), privateXR(t, nil), observed, w)
			golden(t, name, after)
			if diff := cmp.Diff(tc.want, allowed(after)); diff != "" {
				t.Errorf("allowed ranges after the change: -want, +got:\n%s", diff)
			}
			if n := changedRules(rules(before), rules(after)); n != 1 {
				t.Errorf("the change rewrote %d rules, want 1", n)
			}
			if st, reason, msg := platform.ConditionOf(after[0], "Current"); st != "True" {
				t.Errorf("Current condition: %s %s %s, want True", st, reason, msg)
			}
		})
	}
}
