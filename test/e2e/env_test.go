package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	// exampleToken is the token in the examples' Secret; the emulator
	// accepts only it, so a request without it fails.
	exampleToken = "local-emulator-token"

	// poll is the provider's --poll on the shared node (hack/shared-node.sh
	// sets it in the provider's DeploymentRuntimeConfig): drift must be
	// corrected within it. setup fails if the node runs another.
	poll = 5 * time.Second
	// pollJitter is the node's --poll-jitter, checked the same way.
	pollJitter = 500 * time.Millisecond
	// opLatency keeps the emulator's operations RUNNING for a while, as GCP
	// does, so writes overlap and the restart test kills in-flight work.
	opLatency = 200 * time.Millisecond

	// waitFor bounds every wait for convergence.
	waitFor = 60 * time.Second
)

// suite is the shared node's provider pod and one emulator the test runs,
// for one test; scenarios use distinct object names.
type suite struct {
	plat *platform.Platform // nil in TestGCP, which runs its own provider
	kube client.Client
	emu  *emulator.Running
	gcp  *compute.Service // talks to the emulator directly, behind the provider's back
	// project is the examples' ClusterProviderConfig projectID.
	project string
	// ns is the test's namespace: what the suite creates or applies in
	// armor.Namespace ("default") goes there instead.
	ns string
	// namespaces are every namespace the test made, ns first; its cleanup
	// deletes them.
	namespaces []string
	// expose makes a host loopback address reachable from the provider's
	// pod and returns the address the pod uses.
	expose func(t *testing.T, hostAddr string) string
	// endpoint is the emulator's compute API as the provider's pod reaches
	// it, for ProviderConfigs.
	endpoint string
	// abort reports a failure no wait should sit out (a crashed provider).
	abort func() error
	// metricsURL is the provider pod's /metrics through a forwarder, and
	// metricsBase what it served when TestMetrics began.
	metricsURL  string
	metricsBase scrape
}

// setup runs the test against the provider pod on the shared node
// (platform.Attach: skipped when there is none), with args (each --flag=value)
// set on it through its DeploymentRuntimeConfig for the test's duration, and
// an emulator in this process exposed to the node. See the package comment.
func setup(t *testing.T, args ...string) *suite {
	t.Helper()
	return setupRuntime(t, func(_ *platform.Platform, spec map[string]any) {
		a := platform.ArgsIn(spec)
		for _, arg := range args {
			flag, value, _ := strings.Cut(arg, "=")
			a = platform.WithArg(a, flag, value)
		}
		platform.SetArgsIn(spec, a)
	}, nil)
}

// setupRuntime is setup with the provider's DeploymentRuntimeConfig spec
// changed by edit instead (given the node, e.g. to push an image). servers,
// when set, returns the other servers (as the provider's pod reaches them)
// that the test's namespaced ProviderConfigs name, once the emulator runs:
// they are granted with it, before the provider's pod the test uses starts.
func setupRuntime(t *testing.T, edit func(p *platform.Platform, spec map[string]any), servers func(s *suite) []string) *suite {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped with -short")
	}
	start := time.Now()
	ctx := context.Background()
	plat := platform.Attach(t, kube.SchemeT(t))
	s := &suite{plat: plat, kube: plat.Kube.Client, abort: plat.Err}
	s.ns = "e2e-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))

	// The bounds of the scenarios follow the node's flags.
	nodeArgs, err := plat.ProviderArgs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--poll=" + poll.String(), "--poll-jitter=" + pollJitter.String()} {
		if !slices.Contains(nodeArgs, want) {
			t.Fatalf("the shared node's provider runs with %v; this suite's bounds assume %s (hack/shared-node.sh)", nodeArgs, want)
		}
	}

	opts := emulator.Options{OpLatency: opLatency, Auth: emulator.AuthToken, Token: exampleToken}
	s.emu = emulator.Start(t, opts)
	if s.gcp, err = s.emu.NewService(ctx); err != nil {
		t.Fatal(err)
	}
	s.expose = func(t *testing.T, hostAddr string) string {
		t.Helper()
		addr, err := plat.Node.Expose(hostAddr)
		if err != nil {
			t.Fatal(err)
		}
		return addr
	}
	s.endpoint = "http://" + s.expose(t, strings.TrimPrefix(s.emu.URL(), "http://")) + "/compute/v1/"
	t.Logf("emulator at %s, %s from the provider's pod", s.emu.Endpoint(), s.endpoint)

	// Restored after the cleanup below, which needs the provider as the
	// test ran it.
	// With the platform team's grant: namespaced ProviderConfigs may name
	// this test's emulator as their endpoint.
	granted := []string{s.endpoint}
	if servers != nil {
		granted = append(granted, servers(s)...)
	}
	plat.ReconfigureProvider(t, func(spec map[string]any) {
		edit(plat, spec)
		args := platform.ArgsIn(spec)
		for _, ep := range granted {
			args = append(args, "--namespaced-endpoint="+ep)
		}
		platform.SetArgsIn(spec, args)
	})

	s.namespace(t, s.ns)
	t.Cleanup(func() { s.cleanup(t) })

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
	// Registered last, so it runs first: the log of the pod that failed,
	// before the cleanup changes anything.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("emulator stats: %+v", s.emu.Stats())
			t.Logf("provider log, last 80 lines:\n%s", plat.ProviderLog(context.Background(), 80))
		}
	})
	pod, _, err := plat.ProviderPod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("suite ready in %s: provider pod %s, namespace %s", time.Since(start).Round(time.Millisecond), pod, s.ns)
	return s
}

// namespace creates namespace name for the test; its cleanup deletes it.
func (s *suite) namespace(t *testing.T, name string) {
	t.Helper()
	if err := s.kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("namespace %s: %v (left by an earlier run?)", name, err)
	}
	s.namespaces = append(s.namespaces, name)
}

// cleanup leaves the node as the test found it, for the suites after it: the
// managed resources go first, through the provider, while the emulator still
// answers its deletes and their ProviderConfigs and Secrets are still there;
// then the ClusterProviderConfig "default" (test/argocd makes one of its own)
// and the namespaces.
func (s *suite) cleanup(t *testing.T) {
	start := time.Now()
	if forced := s.plat.DeleteManaged(t, s.namespaces...); len(forced) > 0 {
		t.Errorf("cleanup: the provider could not delete %v", forced)
	}
	// The config goes once the provider sees no usage of it; the usages go
	// with their managed resources, through the node's garbage collector.
	// If one stays (a managed kind the cleanup did not delete did that
	// once), the failure names it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := s.kube.Delete(ctx, cpc); err != nil && !kerrors.IsNotFound(err) {
		t.Errorf("cleanup: %v", err)
	}
	for {
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(cpc), cpc)
		if kerrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			usages := &pcv1beta1.ProviderConfigUsageList{}
			_ = s.kube.List(context.Background(), usages)
			var left []string
			for _, u := range usages.Items {
				left = append(left, fmt.Sprintf("%s/%s (of %s %s)", u.Namespace, u.Name, u.ResourceReference.Kind, u.ResourceReference.Name))
			}
			t.Errorf("cleanup: ClusterProviderConfig default still there after 3 minutes: %v, finalizers %v, usages %v", err, cpc.Finalizers, left)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if forced := s.plat.DeleteNamespaces(t, s.namespaces...); len(forced) > 0 {
		t.Errorf("cleanup: deleting the namespaces forced out %v", forced)
	}
	t.Logf("cleanup: %v and what was in them deleted in %s", s.namespaces, time.Since(start).Round(100*time.Millisecond))
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
