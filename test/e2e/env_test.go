package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	// exampleAddr is where examples/providerconfig expects the emulator.
	exampleAddr = "127.0.0.1:8787"
	// exampleToken is the token in the examples' Secret; the emulator
	// accepts only it, so a request without it fails.
	exampleToken = "local-emulator-token"

	// poll is the provider's --poll: drift must be corrected within it.
	poll = 3 * time.Second
	// pollJitter is the provider's --poll-jitter.
	pollJitter = 500 * time.Millisecond
	// opLatency keeps the emulator's operations RUNNING for a while, as GCP
	// does, so writes overlap and the restart test kills in-flight work.
	opLatency = 200 * time.Millisecond

	// waitFor bounds every wait for convergence.
	waitFor = 60 * time.Second
)

// suite is one control plane, one emulator and one provider process shared
// by every scenario; scenarios use distinct object names.
type suite struct {
	cp      *controlplane.ControlPlane
	kube    client.Client
	emu     *emulator.Running
	gcp     *compute.Service // talks to the emulator directly, behind the provider's back
	prov    *provider.Process
	project string // the examples' ClusterProviderConfig projectID
	// metricsURL is the provider's Prometheus endpoint, on a free loopback
	// port.
	metricsURL string
}

// setup starts the control plane (CRDs from package/crds), the emulator
// (on 127.0.0.1:8787 when free) and the provider binary, with args after
// its usual flags, and applies the examples' ProviderConfigs pointed at the
// emulator.
func setup(t *testing.T, args ...string) *suite {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped with -short")
	}
	start := time.Now()
	s := &suite{}
	s.cp = controlplane.StartT(t, controlplane.Options{
		CRDDirs: []string{repo.CRDDir()},
		Scheme:  kube.SchemeT(t),
	})
	s.kube = s.cp.Client
	t.Logf("control plane up in %s at %s", s.cp.StartDuration.Round(time.Millisecond), s.cp.URL)

	opts := emulator.Options{OpLatency: opLatency, Auth: emulator.AuthToken, Token: exampleToken}
	emu, err := emulator.Listen(exampleAddr, opts)
	if err != nil {
		t.Logf("emulator: %s is taken (%v): using a random port and rewriting ProviderConfig endpoints", exampleAddr, err)
		emu = emulator.Start(t, opts)
	} else {
		t.Cleanup(func() { _ = emu.Close() })
	}
	s.emu = emu
	if s.gcp, err = emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("emulator at %s", emu.Endpoint())

	logDir, err := os.MkdirTemp("", "provider-cloudarmor-e2e-logs-")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := freeLoopbackAddr(t)
	s.metricsURL = "http://" + metricsAddr + "/metrics"
	s.prov = &provider.Process{
		Bin:        providerBin,
		Kubeconfig: s.cp.KubeconfigPath,
		LogPath:    filepath.Join(logDir, "provider.log"),
		Label:      "e2e",
		Args: append([]string{
			"--debug",
			"--poll=" + poll.String(),
			"--poll-jitter=" + pollJitter.String(),
			"--snapshot-ttl=1s",
			"--max-reconcile-rate=10",
			"--timeout=30s",
			"--metrics-bind-address=" + metricsAddr,
			"--health-probe-bind-address=0",
		}, args...),
	}
	// Registered after the control plane's and the emulator's cleanups, so
	// it runs before them: the provider never outlives its API server.
	t.Cleanup(func() {
		s.prov.Kill()
		if t.Failed() {
			t.Logf("emulator stats: %+v", s.emu.Stats())
			t.Logf("provider log (%s), last 80 lines:\n%s", s.prov.LogPath, s.prov.Tail(80))
			return
		}
		_ = os.RemoveAll(logDir)
	})

	objs := readObjects(t, repo.Path("examples", "providerconfig"))
	s.apply(t, objs)
	s.project = clusterProviderConfigProject(t, objs, "default")
	// Some examples use address groups, which need Cloud Armor Enterprise.
	// The project is enrolled in the emulator directly: enrolling it through
	// the API would be a call the provider never made, which TestMetrics,
	// comparing the provider's counts with the emulator's, would not explain.
	if err := s.emu.SetTier(s.project, emulator.TierEnterprisePaygo); err != nil {
		t.Fatal(err)
	}
	s.prov.Start(t)
	t.Logf("suite ready in %s (provider log: %s)", time.Since(start).Round(time.Millisecond), s.prov.LogPath)
	return s
}

// clusterProviderConfigProject returns spec.projectID of the named
// ClusterProviderConfig among objs.
func clusterProviderConfigProject(t *testing.T, objs []*unstructuredObject, name string) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ClusterProviderConfig" && o.GetName() == name {
			if p, ok := o.Object["spec"].(map[string]any)["projectID"].(string); ok && p != "" {
				return p
			}
		}
	}
	t.Fatalf("no ClusterProviderConfig %q with spec.projectID in examples/providerconfig", name)
	return ""
}

// policyPath is the emulator's key for a policy in Stats and Snapshot.
func policyPath(project, region, name string) string {
	if region == "" {
		return fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, name)
	}
	return fmt.Sprintf("projects/%s/regions/%s/securityPolicies/%s", project, region, name)
}
