package render

import (
	"bytes"
	"fmt"
	"slices"
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
// another team's (team-b), which must never reach the allowlist.
type egress struct {
	gatewayIP string // the egress gateway Service's load balancer IP; "" for none yet
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
	gateway := lbService("default", "egress-gateway", "LoadBalancer")
	if w.gatewayIP != "" {
		gateway = lbService("default", "egress-gateway", "LoadBalancer", map[string]any{"ip": w.gatewayIP})
	}
	theirs := lbService("team-b", "egress-gateway", "LoadBalancer", map[string]any{"ip": "34.120.9.9"})
	theirs["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] = "edge"
	objs := []map[string]any{
		gateway,
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
	return example(t, privateFile, fn)
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
	return e.renderOK(t, dir, xrYAML, observed, "--required-resources="+write(t, dir, "required.yaml", requiredYAML(t, w)))
}

// sources are the rendered allowlist's sources, by name.
func sources(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	list, _, _ := unstructured.NestedSlice(allowlist(t, objs).Object, "spec", "sources")
	for _, s := range list {
		m := s.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

// allowedCIDRs are every CIDR the rendered allowlist's sources list.
func allowedCIDRs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, s := range sources(t, objs) {
		for _, c := range s.(map[string]any)["cidrs"].([]any) {
			out = append(out, c.(string))
		}
	}
	return out
}

// The private example's sources, as the allowlist lists them.
const (
	officeSource  = "{name: office-paris, cidrs: [203.0.113.0/26]}"
	gatewaySource = "{name: egress-gateway, cidrs: [34.120.0.10/32]}"
	natSource     = "{name: cloud-nat, cidrs: [35.200.0.1/32], required: true}"
	partnerSource = "{name: partner-egress, cidrs: [198.51.100.0/28, 198.51.100.64/28]}"
)

// Warnings of the private example's sources.
const (
	hostnameWarn = `service source "egress-gateway": Service default/egress-gateway-v6: ingress host name "egress.example.com" left out: Cloud Armor matches IP addresses, not names`
	typoWarn     = `configMap source "partner-egress": ConfigMap default/egress-ranges key cidrs line 3 left out: "192.0.2.300" is neither a CIDR nor an IP address`
)

const (
	privatePolicy = "private-web-allowlist"
	privateReport = "every source's ranges are in the allow rules of policy private-web-allowlist, priorities 2000-2009"
)

// sourceList parses YAML flow sources into the allowlist's sources by name.
func sourceList(t *testing.T, srcs ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, s := range srcs {
		m := fromYAML(t, s)
		out[m["name"].(string)] = m
	}
	return out
}

// privateStatus is the private example XR's status once its allowlist reported its 5 ranges.
func privateStatus() map[string]any {
	return map[string]any{"ipCount": float64(5), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": privatePolicy}
}

// privateReported is the private example's allowlist as the provider reports its 5 ranges.
func privateReported() *report {
	return &report{ipCount: 5, ruleCount: 1, current: "True", reason: "Composed", message: privateReport}
}

// TestRenderSources renders the IPAllowlist of a private cluster with the real `crossplane
// render`, whose Crossplane core fetches the Services, Address and ConfigMap the function asks
// for from --required-resources: each source kind alone and together as CIDR sources of the
// allowlist, the cases that hold the allowlist as it is, and a change to a Service and to a
// ConfigMap followed.
func TestRenderSources(t *testing.T) {
	e := setup(t)
	t.Run("Fixtures", func(t *testing.T) { testSourceFixtures(t, e) })
	t.Run("Unmatched", func(t *testing.T) { testSourceUnmatched(t, e) })
	t.Run("Held", func(t *testing.T) { testSourcesHeld(t, e) })
	t.Run("ChangesFollowed", func(t *testing.T) { testSourceChanges(t, e) })
}

func testSourceFixtures(t *testing.T, e *env) {
	cases := map[string]struct {
		reason       string
		xr           func(spec map[string]any)
		want         []string
		wantWarnings []string
	}{
		"private-cluster": {
			reason: "Every source of the example: the office, the gateway's load balancer IP, the NAT Address (required) and the " +
				"ConfigMap's CIDRs; a host name and a typo are left out with warnings; nothing of team-b's.",
			want:         []string{officeSource, gatewaySource, natSource, partnerSource},
			wantWarnings: []string{typoWarn, hostnameWarn},
		},
		"service-source": {
			reason:       "LoadBalancer Services labelled app=egress-gateway in default: their ingress IPs; the ClusterIP Service is ignored.",
			xr:           only("serviceSources"),
			want:         []string{gatewaySource},
			wantWarnings: []string{hostnameWarn},
		},
		"object-source-by-label": {
			reason: "Addresses selected by label in default (not team-b's): their status.atProvider.address.",
			xr: func(spec map[string]any) {
				only("objectSources")(spec)
				src := spec["objectSources"].([]any)[0].(map[string]any)
				delete(src, "objectName")
				src["matchLabels"] = map[string]any{"egress": "nat"}
			},
			want: []string{natSource},
		},
		"configmap-source": {
			reason:       "The CIDRs of the ConfigMap's key, comments ignored, the typo left out with a warning naming its line.",
			xr:           only("configMapSources"),
			want:         []string{partnerSource},
			wantWarnings: []string{typoWarn},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			objs := e.renderPrivate(t, dir, privateXR(t, tc.xr), nil, defaultEgress())
			golden(t, name, objs)
			e.validate(t, dir, objs)
			if diff := cmp.Diff(sourceList(t, tc.want...), sources(t, objs)); diff != "" {
				t.Errorf("%s\nallowlist sources: -want, +got:\n%s", tc.reason, diff)
			}
			for _, r := range otherTeam {
				if slices.Contains(allowedCIDRs(t, objs), r) {
					t.Errorf("%s\n%s, from an object of namespace team-b, is allowed", tc.reason, r)
				}
			}
			want{current: "False", reason: "SourcesPending", message: pending, ready: "False", warnings: tc.wantWarnings}.check(t, tc.reason, objs)
		})
	}
}

// testSourceUnmatched renders the example when the gateway Service has no load balancer IP yet:
// the optional source is left out of the allowlist, with a warning, and the XR lists it as
// unmatched beside what the allowlist reports unmatched itself.
func testSourceUnmatched(t *testing.T, e *env) {
	dir := t.TempDir()
	w := defaultEgress()
	w.gatewayIP = ""
	first := e.renderPrivate(t, dir, privateXR(t, nil), nil, w)
	msg := privateReport
	objs := e.renderPrivate(t, dir, privateXR(t, nil), observedFrom(t, first, &report{ipCount: 4, ruleCount: 1, current: "True", reason: "Composed", message: msg}), w)
	golden(t, "service-source-unmatched", objs)
	e.validate(t, dir, objs)
	if diff := cmp.Diff(sourceList(t, officeSource, natSource, partnerSource), sources(t, objs)); diff != "" {
		t.Errorf("allowlist sources: -want, +got:\n%s", diff)
	}
	want{
		status:  map[string]any{"ipCount": float64(4), "ruleCount": float64(1), "unmatchedSources": []any{"egress-gateway"}, "policyName": privatePolicy},
		current: "True", reason: "Composed", message: msg, ready: "True",
		warnings: []string{
			typoWarn, hostnameWarn,
			`service source "egress-gateway": Service default/egress-gateway has no load balancer address yet`,
			`service source "egress-gateway": no address: 3 Service(s) match labels {app=egress-gateway} in namespace default, 2 of type LoadBalancer`,
		},
	}.check(t, "gateway without an IP", objs)
}

// testSourcesHeld renders over the live allowlist of the example when a source cannot be
// followed: the allowlist is composed exactly as observed, every composed resource is not
// ready, the XR keeps its status and says why.
func testSourcesHeld(t *testing.T, e *env) {
	dir := t.TempDir()
	live := e.renderPrivate(t, dir, privateXR(t, nil), nil, defaultEgress())
	observed := observedFrom(t, live, privateReported())

	cases := map[string]struct {
		golden  string
		xr      func(spec map[string]any)
		w       func(w *egress)
		wantMsg string
	}{
		"NamedAddressMissing": {
			golden:  "named-address-missing",
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
			dir := t.TempDir()
			objs := e.renderPrivate(t, dir, withStatus(t, privateXR(t, tc.xr), privateStatus()), observed, w)
			if tc.golden != "" {
				golden(t, tc.golden, objs)
			}
			e.validate(t, dir, objs)
			if diff := cmp.Diff(specOf(allowlist(t, live)), specOf(allowlist(t, objs))); diff != "" {
				t.Errorf("held allowlist differs from the live one: -live, +rendered:\n%s", diff)
			}
			// Every resource is marked not ready, which the Ready condition's message lists.
			_, ready := platform.Condition(objs[0], "Ready")
			if wantReady := "Unready resources: allowlist"; ready != wantReady {
				t.Errorf("XR Ready message %q, want %q", ready, wantReady)
			}
			want{status: privateStatus(), current: "False", reason: "CannotCompose", message: tc.wantMsg, ready: "False",
				warnings: []string{tc.wantMsg}}.check(t, name, objs)
		})
	}
}

// testSourceChanges renders the example, then renders again with the previous output as
// observed and one source changed, as Crossplane does when the Service or ConfigMap it watches
// changes: the allowlist follows, and only the changed source's CIDRs change.
func testSourceChanges(t *testing.T, e *env) {
	dir := t.TempDir()
	before := e.renderPrivate(t, dir, privateXR(t, nil), nil, defaultEgress())
	observed := observedFrom(t, before, privateReported())

	cases := map[string]struct {
		w       func(w *egress)
		changed string
		want    string
	}{
		"service-ip-changed": {
			w:       func(w *egress) { w.gatewayIP = "34.120.0.11" },
			changed: "egress-gateway",
			want:    "{name: egress-gateway, cidrs: [34.120.0.11/32]}",
		},
		"configmap-edited": {
			w:       func(w *egress) { w.cidrs = "198.51.100.0/28\n2001:db8:20::/48\n" },
			changed: "partner-egress",
			want:    `{name: partner-egress, cidrs: [198.51.100.0/28, "2001:db8:20::/48"]}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := defaultEgress()
			tc.w(&w)
			dir := t.TempDir()
			after := e.renderPrivate(t, dir, withStatus(t, privateXR(t, nil), privateStatus()), observed, w)
			golden(t, name, after)
			e.validate(t, dir, after)
			wantSources := sources(t, before)
			wantSources[tc.changed] = fromYAML(t, tc.want)
			if diff := cmp.Diff(wantSources, sources(t, after)); diff != "" {
				t.Errorf("allowlist sources after the change: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(listNames(t, before), listNames(t, after)); diff != "" {
				t.Errorf("source order changed: -before, +after:\n%s", diff)
			}
		})
	}
}

// listNames are the allowlist's source names in order.
func listNames(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	list, _, _ := unstructured.NestedSlice(allowlist(t, objs).Object, "spec", "sources")
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, fmt.Sprint(s.(map[string]any)["name"]))
	}
	return out
}
