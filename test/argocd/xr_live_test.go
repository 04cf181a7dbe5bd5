package argocd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const xrAPIVersion = "platform.armorplane.io/v1alpha1"

// TestHealthOfLiveIPAllowlist runs Crossplane core with our packages installed
// (test/framework/platform), composes examples/allowlist/ipallowlist.yaml
// against the emulator and checks health.lua on the IPAllowlist in each state
// Crossplane wrote: composed resources not ready yet, Ready, an edit not yet
// reconciled, paused.
func TestHealthOfLiveIPAllowlist(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Crossplane core and the packages; skipped with -short")
	}
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	tool := func(env, name, version string) string {
		p, err := controlplane.Tool(env, name, version)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bins := platform.Binaries{
		Crossplane:        tool("CROSSPLANE_BIN", "crossplane", "v2.5.0"),
		Core:              tool("CROSSPLANE_CORE_BIN", "crossplane-core", platform.CoreVersion),
		AutoReady:         tool("FUNCTION_AUTO_READY_BIN", "function-auto-ready", platform.AutoReadyTag),
		ControllerManager: tool("KUBE_CONTROLLER_MANAGER_BIN", "kube-controller-manager", controlplane.KubernetesVersion),
	}
	if bins.Provider, err = buildProvider(); err != nil {
		t.Fatal(err)
	}
	bins.Function = filepath.Join(filepath.Dir(bins.Provider), "function")
	if _, err := os.Stat(bins.Function); err != nil {
		t.Fatalf("the function binary beside the provider: %v (make build)", err)
	}
	if _, err := os.Stat(repo.Path("_output", "xpkg", "configuration-ipallowlist.xpkg")); err != nil {
		t.Fatalf("the packages: %v (make xpkg)", err)
	}

	begin := time.Now()
	cp := controlplane.StartT(t, controlplane.Options{Scheme: kube.SchemeT(t)})
	emu := emulator.Start(t, emulator.Options{})
	kc, err := client.NewWithWatch(cp.Config, client.Options{Scheme: kube.SchemeT(t)})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plat, err := platform.Start(ctx, platform.Options{
		ControlPlane: cp, Bin: bins, XpkgDir: repo.Path("_output", "xpkg"), WorkDir: work,
		ProviderArgs: []string{"--debug", "--poll=5s", "--metrics-bind-address=0", "--health-probe-bind-address=0"},
		PollInterval: 10 * time.Second, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		plat.Stop()
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(plat.LogDir(), "*.log"))
			for _, l := range logs {
				p := provider.Process{LogPath: l}
				t.Logf("--- %s, last 30 lines:\n%s", filepath.Base(l), p.Tail(30))
			}
		}
	})

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
	e.create(t,
		obj("v1", "Secret", "emulator-token", map[string]any{"stringData": map[string]any{"token": "t"}}),
		obj(pcGroup, "ClusterProviderConfig", "default", map[string]any{"spec": map[string]any{
			"projectID": "argocd-project", "endpoint": emu.Endpoint(),
			"credentials": map[string]any{"source": "AccessToken",
				"secretRef": map[string]any{"name": "emulator-token", "key": "token", "namespace": namespace}}}}),
	)
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
