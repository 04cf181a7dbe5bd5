package argocd

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const xrAPIVersion = "platform.armorplane.io/v1alpha1"

// TestHealthOfLiveIPAllowlist attaches to the real node with Crossplane and our
// packages installed (test/framework/platform), composes examples/allowlist/ipallowlist.yaml
// against the emulator and checks health.lua on the IPAllowlist in each state
// Crossplane wrote: composed resources not ready yet, Ready, an edit not yet
// reconciled, paused.
func TestHealthOfLiveIPAllowlist(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on the real node with Crossplane; skipped with -short")
	}
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	plat := platform.Attach(t, kube.SchemeT(t))
	cp := plat.Kube
	emu := emulator.Start(t, emulator.Options{})
	exposed, err := plat.Node.Expose(strings.TrimSuffix(strings.TrimPrefix(emu.Endpoint(), "http://"), "/compute/v1/"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plat.Cleanup(t) })
	kc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: kube.SchemeT(t)})
	if err != nil {
		t.Fatal(err)
	}

	rec := newRecorder(map[string]func(*unstructured.Unstructured) bool{
		"unready": func(u *unstructured.Unstructured) bool {
			_, r, msg := condition(u, "Ready")
			return r == "Creating" && strings.HasPrefix(msg, "Unready resources")
		},
		"ready": func(u *unstructured.Unstructured) bool { s, _, _ := condition(u, "Ready"); return s == "True" },
		// Crossplane writes the XR's spec too (composition and resource
		// references), so its generation is past 1 before our edit.
		"stale": func(u *unstructured.Unstructured) bool {
			return edited(u) && syncedGeneration(u) > 0 && syncedGeneration(u) < u.GetGeneration()
		},
		"edited-ready": func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Ready")
			return edited(u) && syncedGeneration(u) == u.GetGeneration() && s == "True"
		},
		"paused": syncedReason("ReconcilePaused"),
	})
	rec.watch(t, kc, xrAPIVersion, "IPAllowlist")

	e := &env{cp: cp, emu: emu, kube: kc}
	// Applied, not created: the shared node may hold them from an earlier suite.
	for _, o := range []*unstructured.Unstructured{
		obj("v1", "Secret", "emulator-token", map[string]any{"stringData": map[string]any{"token": "t"}}),
		obj(pcGroup, "ClusterProviderConfig", "default", map[string]any{"spec": map[string]any{
			"projectID": "argocd-project", "endpoint": "http://" + exposed + "/compute/v1/",
			"credentials": map[string]any{"source": "AccessToken",
				"secretRef": map[string]any{"name": "emulator-token", "key": "token", "namespace": namespace}}}}),
	} {
		if err := kc.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("argocd-suite"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cp.Apply(context.Background(), repo.Path("examples", "allowlist", "ipallowlist.yaml")); err != nil {
		t.Fatal(err)
	}
	const xrLimit = 2 * time.Minute
	rec.wait(t, "unready", xrLimit)
	rec.wait(t, "ready", xrLimit)
	xr := obj(xrAPIVersion, "IPAllowlist", "web", nil)
	e.patch(t, xr, `{"spec":{"policy":{"description":"edited"}}}`)
	rec.wait(t, "stale", xrLimit)
	rec.wait(t, "edited-ready", xrLimit)
	e.patch(t, xr, `{"metadata":{"annotations":{"crossplane.io/paused":"true"}}}`)
	rec.wait(t, "paused", xrLimit)
	t.Logf("captured %d IPAllowlist states from Crossplane in %s", len(rec.got), time.Since(begin).Round(100*time.Millisecond))

	cases := map[string]capturedCase{
		"ComposedResourcesNotReady": {reason: "An IPAllowlist whose composed policy and rules are not Ready yet is Progressing and names them.",
			capture: "unready", want: health{Status: "Progressing", Message: "Unready resources"}},
		"Ready": {reason: "An IPAllowlist whose composed resources are all Ready is Healthy.",
			capture: "ready", want: health{Status: "Healthy", Message: "Available"}},
		"StaleAfterEdit": {reason: "Right after an edit Crossplane has not composed yet: Progressing.",
			capture: "stale", want: health{Status: "Progressing", Message: "Waiting for generation "}},
		"ReadyAfterEdit": {reason: "Once recomposed, Healthy again.",
			capture: "edited-ready", want: health{Status: "Healthy", Message: "Available"}},
		"Paused": {reason: "A paused IPAllowlist is Suspended.",
			capture: "paused", want: health{Status: "Suspended", Message: `Reconciliation is paused (crossplane.io/paused: "true")`}},
	}
	checkCaptured(t, script, rec.got, cases)
}

// edited reports whether u carries the test's edit of spec.policy.description.
func edited(u *unstructured.Unstructured) bool {
	d, _, _ := unstructured.NestedString(u.Object, "spec", "policy", "description")
	return d == "edited"
}
