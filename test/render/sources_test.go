package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// privateFile is the IPAllowlist of a private cluster: a LoadBalancer egress gateway, a Cloud
// NAT Address and a ConfigMap list, besides an office.
const privateFile = repoRoot + "/examples/allowlist/private-cluster/ipallowlist.yaml"

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

// The private example's sources, as the allowlist lists them for the provider to read.
const (
	officeSource  = "{name: office-paris, cidrs: [203.0.113.0/26]}"
	gatewaySource = "{name: egress-gateway, services: {matchLabels: {app: egress-gateway}}}"
	natSource     = "{name: cloud-nat, required: true, object: {apiVersion: compute.gcp.m.upbound.io/v1beta1, kind: Address, objectName: cloud-nat-egress, fieldPath: status.atProvider.address}}"
	partnerSource = "{name: partner-egress, configMap: {name: egress-ranges, key: cidrs}}"
)

// What the provider reports of the private example's sources.
const (
	hostnameWarn = `service source "egress-gateway": Service default/egress-gateway-v6: ingress host name "egress.example.com" left out: Cloud Armor matches IP addresses, not names`
	typoWarn     = `configMap source "partner-egress": ConfigMap default/egress-ranges key cidrs line 3 left out: "192.0.2.300" is neither a CIDR nor an IP address`
	natMissing   = `object source "cloud-nat": AddressSet private-web-nodes-cloud-nat: cannot read Address default/cloud-nat-egress since 2026-01-01T00:00:00Z: Address default/cloud-nat-egress not found; the addresses shown are the last known`
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

// TestRenderSources renders the IPAllowlist of a private cluster with the real `crossplane
// render`. The function composes its Service, object and ConfigMap sources as sources of the
// allowlist, which the provider reads in the IPAllowlist's namespace; it asks Crossplane to
// fetch nothing, so an edit of one of those objects changes nothing it composes. What the
// provider reads of them reaches the IPAllowlist as the allowlist reports it.
func TestRenderSources(t *testing.T) {
	e := setup(t)
	t.Run("Fixtures", func(t *testing.T) { testSourceFixtures(t, e) })
	t.Run("Reported", func(t *testing.T) { testSourcesReported(t, e) })
}

func testSourceFixtures(t *testing.T, e *env) {
	cases := map[string]struct {
		reason string
		xr     func(spec map[string]any)
		want   []string
	}{
		"private-cluster": {
			reason: "Every source of the example: the office's CIDRs, and the gateway Services, the NAT Address (required) and " +
				"the ConfigMap as sources the provider reads.",
			want: []string{officeSource, gatewaySource, natSource, partnerSource},
		},
		"service-source": {
			reason: "LoadBalancer Services labelled app=egress-gateway, read by the provider.",
			xr:     only("serviceSources"),
			want:   []string{gatewaySource},
		},
		"object-source-by-label": {
			reason: "Addresses selected by label, read by the provider.",
			xr: func(spec map[string]any) {
				only("objectSources")(spec)
				src := spec["objectSources"].([]any)[0].(map[string]any)
				delete(src, "objectName")
				src["matchLabels"] = map[string]any{"egress": "nat"}
			},
			want: []string{"{name: cloud-nat, required: true, object: {apiVersion: compute.gcp.m.upbound.io/v1beta1, kind: Address, matchLabels: {egress: nat}, fieldPath: status.atProvider.address}}"},
		},
		"configmap-source": {
			reason: "The ConfigMap's key, read by the provider.",
			xr:     only("configMapSources"),
			want:   []string{partnerSource},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			objs := e.renderOK(t, dir, privateXR(t, tc.xr), nil)
			golden(t, name, objs)
			// The allowlist the function composes is valid against the provider's CRD.
			e.validate(t, dir, objs)
			if diff := cmp.Diff(sourceList(t, tc.want...), sources(t, objs)); diff != "" {
				t.Errorf("%s\nallowlist sources: -want, +got:\n%s", tc.reason, diff)
			}
			want{current: "False", reason: "SourcesPending", message: pending, ready: "False"}.check(t, tc.reason, objs)
		})
	}
}

// testSourcesReported renders over the live allowlist of the example as the provider reports
// what it read: its warnings and unmatched sources, and a named object that is gone, whose
// addresses the provider holds.
func testSourcesReported(t *testing.T, e *env) {
	dir := t.TempDir()
	live := e.renderOK(t, dir, privateXR(t, nil), nil)
	cases := map[string]struct {
		golden string
		report *report
		want   want
	}{
		"service-source-unmatched": {
			report: &report{ipCount: 4, ruleCount: 1, current: "True", reason: "Composed", message: privateReport,
				unmatched: []string{"egress-gateway"},
				warnings:  []string{hostnameWarn, typoWarn, `service source "egress-gateway": no address: 2 Service(s) match labels {app=egress-gateway}`}},
			want: want{
				status:  map[string]any{"ipCount": float64(4), "ruleCount": float64(1), "unmatchedSources": []any{"egress-gateway"}, "policyName": privatePolicy},
				current: "True", reason: "Composed", message: privateReport, ready: "True",
				warnings: []string{hostnameWarn, typoWarn, `service source "egress-gateway": no address: 2 Service(s) match labels {app=egress-gateway}`},
			},
		},
		"named-address-missing": {
			report: &report{ipCount: 5, ruleCount: 1, current: "False", reason: "SourceUnreadable", message: natMissing},
			want: want{status: map[string]any{"ipCount": float64(5), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": privatePolicy},
				current: "False", reason: "SourceUnreadable", message: natMissing, ready: "False", warnings: []string{natMissing}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			objs := e.renderOK(t, dir, withStatus(t, privateXR(t, nil), privateStatus()), observedFrom(t, live, tc.report))
			golden(t, name, objs)
			e.validate(t, dir, objs)
			if diff := cmp.Diff(specOf(allowlist(t, live)), specOf(allowlist(t, objs))); diff != "" {
				t.Errorf("what the provider reports changed the allowlist's spec: -before, +after:\n%s", diff)
			}
			tc.want.check(t, name, objs)
		})
	}
}
