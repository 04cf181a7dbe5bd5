// Package platform_test runs the platform team's path end to end with the real
// parts: Crossplane core v2.4.0 installs this repository's Configuration from
// an OCI registry, resolving the provider and the two functions it depends on;
// the harness plays the package runtime (package test/framework/platform); the
// provider writes to the Cloud Armor emulator. An IPAllowlist is composed from
// Node objects (through the AddressSet the provider keeps from them) that the
// suite changes the way a cluster changes them, and each change is timed from
// the Node write to the emulator holding the right rules.
package platform_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	// token is what the suite's ProviderConfig sends and the emulator accepts.
	token = "platform-suite-token"
	// project is the ProviderConfig's project.
	project = "platform-project"
	// opLatency keeps each GCP operation RUNNING this long, as GCP does.
	opLatency = 100 * time.Millisecond
)

// coreArgs raise Crossplane's XR circuit breaker from its defaults, as the
// chart values docs/allowlist.md recommends for clusters whose IPAllowlists
// see bursts of Node changes. Crossplane counts every update of every
// composed resource (an AddressSet, each rule the provider writes) and of the
// XR itself against a bucket of 100 tokens refilled at 1 a second, two tokens
// per update; a Node change updates the AddressSet, the rules it touches (as
// applied, then as the provider reports) and the XR's status. This suite makes
// 25 changes back to back; with the defaults the breaker opened after the
// fourth single-Node add and the fifth reached GCP only about a minute later.
// PLATFORM_CORE_DEFAULTS=1 runs with the defaults.
var coreArgs = func() []string {
	if os.Getenv("PLATFORM_CORE_DEFAULTS") != "" {
		return nil
	}
	return []string{"--circuit-breaker-burst=500", "--circuit-breaker-refill-rate=5"}
}()

// env is one control plane, one emulator and one platform for the suite.
type env struct {
	cp   *controlplane.ControlPlane
	emu  *emulator.Running
	gcp  *compute.Service
	plat *platform.Platform
}

func setup(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("platform: runs Crossplane core and four processes; skipped with -short")
	}
	bins := platform.Binaries{
		Crossplane:        tool(t, "CROSSPLANE_BIN", "crossplane", "v2.5.0"),
		Core:              tool(t, "CROSSPLANE_CORE_BIN", "crossplane-core", platform.CoreVersion),
		AutoReady:         tool(t, "FUNCTION_AUTO_READY_BIN", "function-auto-ready", platform.AutoReadyTag),
		ControllerManager: tool(t, "KUBE_CONTROLLER_MANAGER_BIN", "kube-controller-manager", controlplane.KubernetesVersion),
	}
	var err error
	if bins.Provider, err = provider.FromEnv(provider.BinEnv); err != nil || bins.Provider == "" {
		t.Fatalf("set %s to the built provider (make build): %v", provider.BinEnv, err)
	}
	bins.Function = filepath.Join(filepath.Dir(bins.Provider), "function")
	if _, err := os.Stat(bins.Function); err != nil {
		t.Fatalf("the function binary beside the provider: %v (make build)", err)
	}

	e := &env{}
	// No CRDs up front: they must come from the packages.
	e.cp = controlplane.StartT(t, controlplane.Options{Scheme: kube.SchemeT(t)})
	e.emu = emulator.Start(t, emulator.Options{OpLatency: opLatency, Auth: emulator.AuthToken, Token: token})
	if e.gcp, err = e.emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp("", "provider-cloudarmor-platform-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.plat, err = platform.Start(ctx, platform.Options{
		ControlPlane: e.cp,
		Bin:          bins,
		XpkgDir:      repo.Path("_output", "xpkg"),
		WorkDir:      work,
		ProviderArgs: []string{"--debug", "--poll=10s", "--max-reconcile-rate=20",
			"--metrics-bind-address=0", "--health-probe-bind-address=0"},
		CoreArgs: coreArgs,
		Logf:     t.Logf,
	})
	if err != nil {
		tails(t, work)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.plat.Stop()
		if t.Failed() {
			tails(t, work)
			return
		}
		if os.Getenv("PLATFORM_KEEP_LOGS") != "" {
			t.Logf("logs kept in %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})
	for _, s := range e.plat.Steps {
		t.Logf("%-32s %5.1fs", s.Name, s.Duration.Seconds())
	}
	return e
}

// tails logs the end of every process log under work.
func tails(t *testing.T, work string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(work, "logs", "*.log"))
	for _, l := range logs {
		p := provider.Process{LogPath: l}
		t.Logf("--- %s, last 40 lines:\n%s", filepath.Base(l), p.Tail(40))
	}
}

// tool is the cached tool binary named by env, or the one `make tools` builds.
func tool(t *testing.T, env, name, version string) string {
	t.Helper()
	p, err := controlplane.Tool(env, name, version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// node returns a Node of pool with an internal and (when external is not empty)
// an external address, as a cloud's node controller reports them.
func node(name, pool, internal, external string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"cloud.google.com/gke-nodepool": pool,
	}}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internal}}
	if external != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external})
	}
	return n
}
