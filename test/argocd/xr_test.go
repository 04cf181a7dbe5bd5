package argocd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// renderedAllowlist returns the IPAllowlist in one of test/render's golden
// outputs: the XR exactly as Crossplane core v2.4.0's composition engine
// wrote its status (conditions from the function pipeline and
// function-auto-ready), kept current by that suite.
func renderedAllowlist(t *testing.T, golden string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "test", "render", "testdata", golden))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		if u.GetKind() == "IPAllowlist" {
			return u
		}
	}
	t.Fatalf("%s holds no IPAllowlist", golden)
	return nil
}

// TestHealthOfIPAllowlist checks the verdict on the Configuration's composite
// resource, which the argocd-cm's *.armorplane.io/* entry also matches
// (platform.armorplane.io).
func TestHealthOfIPAllowlist(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	withCondition := func(u *unstructured.Unstructured, c map[string]any) *unstructured.Unstructured {
		u = u.DeepCopy()
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		out := []any{}
		for _, old := range conds {
			if m, _ := old.(map[string]any); m["type"] != c["type"] {
				out = append(out, old)
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, append(out, c), "status", "conditions")
		return u
	}
	creating := renderedAllowlist(t, "allowlist-created.golden.yaml")
	ready := renderedAllowlist(t, "allowlist-composed.golden.yaml")
	paused := ready.DeepCopy()
	paused.SetAnnotations(map[string]string{"crossplane.io/paused": "true"})
	cases := map[string]struct {
		reason string
		xr     *unstructured.Unstructured
		want   health
	}{
		"ComposedResourcesNotReady": {reason: "An IPAllowlist whose composed allowlist is not Ready yet is Progressing and names it.",
			xr: creating, want: health{Status: "Progressing", Message: "Unready resources: allowlist"}},
		"Ready": {reason: "An IPAllowlist whose composed resources are all Ready is Healthy.",
			xr: ready, want: health{Status: "Healthy", Message: "Available"}},
		// Crossplane core writes Synced=False with ReconcileError when the
		// pipeline fails (our function refusing an overlapping priority range,
		// for instance): Degraded with the function's message.
		"PipelineFailed": {reason: "An IPAllowlist whose composition pipeline fails is Degraded, with the message.",
			xr: withCondition(ready, map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError",
				"message": "cannot compose resources: function armorplane-function-ipallowlist returned a fatal result"}),
			want: health{Status: "Degraded", Message: "cannot compose resources: function armorplane-function-ipallowlist returned a fatal result"}},
		"FleetFirstPass": {reason: "A fleet's IPAllowlist (Nodes of two clusters, instances) whose allowlist has not reported is Progressing.",
			xr: renderedAllowlist(t, "fleet-first-pass.golden.yaml"), want: health{Status: "Progressing", Message: "Unready resources: allowlist"}},
		"SourceUnreadable": {reason: "An IPAllowlist holding the last addresses of a cluster it cannot read is Degraded, saying which and why.",
			xr: renderedAllowlist(t, "fleet-cluster-unreachable.golden.yaml"),
			want: health{Status: "Degraded", Message: `node source "workload-eu": AddressSet fleet-web-nodes-workload-eu: cannot read the cluster of Secret ` +
				`default/workload-eu-kubeconfig (https://10.0.0.2:6443) since 2026-01-01T00:00:00Z: Get "https://10.0.0.2:6443/api/v1/nodes": ` +
				`dial tcp 10.0.0.2:6443: connect: connection refused; the addresses shown are the last known`}},
		"NATNeedsAddresses": {reason: "An IPAllowlist whose Cloud NAT needs more addresses is Healthy: the warning blocks nothing.",
			xr: renderedAllowlist(t, "nat-needs-addresses.golden.yaml"), want: health{Status: "Healthy", Message: "Available"}},
		"NATRouterUnreadable": {reason: "An IPAllowlist holding the last addresses of a Cloud Router it cannot read is Degraded, saying which and why.",
			xr: renderedAllowlist(t, "nat-router-unreadable.golden.yaml"),
			want: health{Status: "Degraded", Message: `nat source "egress": AddressSet nat-egress-nodes-egress: cannot read Cloud NAT egress-nat of router ` +
				`us-central1/egress of project demo-project since 2026-01-01T00:00:00Z: router us-central1/egress: googleapi: Error 503: ` +
				`The service is currently unavailable., backendError; the addresses shown are the last known`}},
		"SourceHeld": {reason: "An IPAllowlist holding back a shrink is Progressing: the hold ends by itself.",
			xr: renderedAllowlist(t, "allowlist-source-held.golden.yaml"), want: health{Status: "Progressing", Message: "Unready resources: allowlist"}},
		"Paused": {reason: "A paused IPAllowlist is Suspended.",
			xr: paused, want: health{Status: "Suspended", Message: `Reconciliation is paused (crossplane.io/paused: "true")`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := evalHealth(script, tc.xr)
			if err != nil {
				t.Fatalf("health.lua: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
