package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

// The emulator address and project the examples under examples/ point at.
const (
	emulatorAddr   = "127.0.0.1:8787"
	demoProject    = "demo-project"
	demoOpLatency  = time.Second
	importedPolicy = "legacy-console-policy"
	readyTimeout   = 3 * time.Minute
)

// The example folders `make run` applies, in order. examples/allowlist is
// composed by Crossplane core from the Nodes runDemo creates (through the
// AddressSet the provider keeps from them).
var demoExamples = []string{"providerconfig", "securitypolicy", "securitypolicyrule", "regional", "import", "allowlist"}

// demoNodes are the Nodes `make run` creates: three in the pool the example
// IPAllowlist selects and one outside it, with addresses as a cloud's node
// controller reports them (no kubelet runs).
var demoNodes = []struct{ name, pool, internal, external string }{
	{"gke-web-a", "web", "10.128.0.2", "34.118.10.1"},
	{"gke-web-b", "web", "10.128.0.3", "34.118.10.2"},
	{"gke-web-c", "web", "10.128.0.4", "34.118.10.3"},
	{"gke-batch-a", "batch", "10.128.0.9", "34.118.20.1"},
}

// startEmulator serves the Cloud Armor emulator with a realistic operation
// latency and seeds the policy examples/import adopts.
func startEmulator(ctx context.Context, logDir string, out io.Writer) (*emulator.Running, error) {
	logf, err := os.Create(filepath.Join(logDir, "emulator.log"))
	if err != nil {
		return nil, err
	}
	emu, err := emulator.Listen(emulatorAddr, emulator.Options{OpLatency: demoOpLatency, Auth: emulator.AuthAny,
		Logf: func(format string, args ...any) { fmt.Fprintf(logf, format+"\n", args...) }})
	if err != nil {
		return nil, fmt.Errorf("cannot start the emulator on %s (is another `make run` running?): %w", emulatorAddr, err)
	}
	fmt.Fprintf(out, "Cloud Armor emulator at %s (operations take %s)\n", emu.Endpoint(), demoOpLatency)
	svc, err := emu.NewService(ctx)
	if err != nil {
		return emu, err
	}
	_, err = svc.SecurityPolicies.Insert(demoProject, &compute.SecurityPolicy{Name: importedPolicy,
		Description: "created outside Kubernetes; examples/import observes it"}).Context(ctx).Do()
	return emu, err
}

// startPlatform runs Crossplane core, which installs the packages `make xpkg`
// built from a registry on loopback; the harness plays the package runtime
// and starts the provider and the functions as their revisions become active.
func startPlatform(ctx context.Context, cp *controlplane.ControlPlane, cfg config, out io.Writer) (*platform.Platform, error) {
	bins, err := platformBinaries(cfg)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(filepath.Dir(cp.KubeconfigPath), "platform")
	_ = os.RemoveAll(work)
	fmt.Fprintln(out, "starting Crossplane core; it installs configuration-ipallowlist and its dependencies from a local registry…")
	p, err := platform.Start(ctx, platform.Options{
		ControlPlane: cp,
		Bin:          bins,
		XpkgDir:      cfg.xpkgDir,
		WorkDir:      work,
		ProviderArgs: []string{"--poll=30s", "--poll-jitter=3s", "--snapshot-ttl=10s",
			"--metrics-bind-address=" + metricsAddr(), "--health-probe-bind-address=0"},
		// Crossplane core's defaults, as a user's cluster runs it: Node
		// changes reach it as AddressSet status writes, which its watch of
		// composed resources sees at once.
		PollInterval: time.Minute,
	})
	if err != nil {
		return p, err
	}
	for _, st := range p.Steps {
		fmt.Fprintf(out, "  %-34s %s\n", st.Name, seconds(st.Duration))
	}
	fmt.Fprintf(out, "packages installed by Crossplane (registry %s; logs %s)\n", p.Registry.Host, p.LogDir())
	return p, nil
}

// metricsAddr is where the provider serves /metrics: 127.0.0.1:8080 as in a
// cluster, or a free port when something else holds that one.
var metricsAddr = sync.OnceValue(func() string {
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:0"} {
		if l, err := net.Listen("tcp", addr); err == nil {
			defer l.Close() //nolint:errcheck // only probing
			return l.Addr().String()
		}
	}
	return "127.0.0.1:8080"
})

// platformBinaries locates the binaries `make build` and `make tools` made.
func platformBinaries(cfg config) (platform.Binaries, error) {
	var b platform.Binaries
	var errs []error
	tool := func(env, name, version string) string {
		p, err := controlplane.Tool(env, name, version)
		errs = append(errs, err)
		return p
	}
	b.Crossplane = tool("CROSSPLANE_BIN", "crossplane", "v2.5.0")
	b.Core = tool("CROSSPLANE_CORE_BIN", "crossplane-core", platform.CoreVersion)
	b.AutoReady = tool("FUNCTION_AUTO_READY_BIN", "function-auto-ready", platform.AutoReadyTag)
	b.ControllerManager = tool("KUBE_CONTROLLER_MANAGER_BIN", "kube-controller-manager", controlplane.KubernetesVersion)
	for _, name := range []string{"provider", "function"} {
		p, err := filepath.Abs(filepath.Join(cfg.binDir, name))
		if err == nil {
			_, err = os.Stat(p)
		}
		errs = append(errs, err)
		if name == "provider" {
			b.Provider = p
		} else {
			b.Function = p
		}
	}
	return b, errors.Join(errs...)
}

// createNodes creates demoNodes and writes their addresses.
func createNodes(ctx context.Context, c client.Client, out io.Writer) error {
	for _, n := range demoNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"cloud.google.com/gke-nodepool": n.pool}}}
		if err := c.Create(ctx, node); err != nil {
			return err
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.internal}, {Type: corev1.NodeExternalIP, Address: n.external}}
		if err := c.Status().Update(ctx, node); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "created %d Nodes (3 in pool web)\n", len(demoNodes))
	return nil
}

// applyExamples applies the example folders and returns the managed resources
// among the objects, the ones that must become Ready.
func applyExamples(ctx context.Context, cp *controlplane.ControlPlane, dir string, out io.Writer) ([]*unstructured.Unstructured, error) {
	var paths []string
	for _, d := range demoExamples {
		paths = append(paths, filepath.Join(dir, d))
	}
	// The kinds come from the packages: the activation policy makes the
	// provider's CRDs a moment after the package is Healthy.
	var objs []*unstructured.Unstructured
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		if objs, err = cp.Apply(ctx, paths...); err == nil {
			break
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(250 * time.Millisecond)
	}
	var managed []*unstructured.Unstructured
	for _, o := range objs {
		if g := o.GroupVersionKind().Group; g == "cloudarmor.armorplane.io" || g == "platform.armorplane.io" {
			managed = append(managed, o)
		}
	}
	fmt.Fprintf(out, "applied %d objects from %s (%d managed resources and IPAllowlists)\n", len(objs), strings.Join(paths, ", "), len(managed))
	return managed, nil
}

// waitReady polls until every object is Ready=True and Synced=True, printing
// progress, or fails with the conditions of those that are not.
func waitReady(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, alive func() error, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	start := time.Now()
	for last := -1; ; {
		pending := notReady(ctx, c, objs)
		if len(pending) == 0 {
			fmt.Fprintf(out, "all %d managed resources and IPAllowlists Ready and Synced after %s\n", len(objs), seconds(time.Since(start)))
			return nil
		}
		if err := alive(); err != nil {
			return err
		}
		if len(pending) != last {
			fmt.Fprintf(out, "waiting for %d of %d objects to become Ready…\n", len(pending), len(objs))
			last = len(pending)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not Ready after %s:\n  %s", readyTimeout, strings.Join(pending, "\n  "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func notReady(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) []string {
	var pending []string
	for _, o := range objs {
		ready, synced, msg := conditions(ctx, c, o)
		if ready != "True" || synced != "True" {
			pending = append(pending, fmt.Sprintf("%s/%s: Ready=%s Synced=%s %s", o.GetKind(), o.GetName(), ready, synced, msg))
		}
	}
	return pending
}

// conditions returns the Ready and Synced status of o as the API server has it
// now, and the message of the first one that is not True.
func conditions(ctx context.Context, c client.Client, o *unstructured.Unstructured) (ready, synced, msg string) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return "?", "?", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
	ready, synced = string(corev1.ConditionUnknown), string(corev1.ConditionUnknown)
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		status, _ := cond["status"].(string)
		switch cond["type"] {
		case "Ready":
			ready = status
		case "Synced":
			synced = status
		default:
			continue
		}
		if m, _ := cond["message"].(string); status != "True" && msg == "" {
			msg = m
		}
	}
	return ready, synced, msg
}

// printTable shows each IPAllowlist with its counts, then every managed
// resource in the cluster (those composed for an IPAllowlist too) with the
// rule count GCP (the emulator) holds for its policy.
func printTable(ctx context.Context, c client.Client, emu *emulator.Running, out io.Writer) {
	rules := ruleCounts(emu)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKIND\tNAME\tREADY\tSYNCED\tGCP POLICY\tGCP RULES\tCOMPOSED FOR")
	for _, o := range listAll(ctx, c, schema.GroupVersionKind{Group: "platform.armorplane.io", Version: "v1alpha1", Kind: "IPAllowlist"}) {
		ready, synced, _ := conditions(ctx, c, o)
		policy, _, _ := unstructured.NestedString(o.Object, "status", "policyName")
		ips, _, _ := unstructured.NestedInt64(o.Object, "status", "ipCount")
		n, _, _ := unstructured.NestedInt64(o.Object, "status", "ruleCount")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\tglobal/%s\t%s\t(%d IPs in %d rules)\n", o.GetKind(), o.GetName(), ready, synced, policy, rules["global/"+policy], ips, n)
	}
	for _, kind := range []string{"SecurityPolicy", "SecurityPolicyRule"} {
		for _, o := range listAll(ctx, c, schema.GroupVersionKind{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: kind}) {
			ready, synced, _ := conditions(ctx, c, o)
			policy := gcpPolicyOf(ctx, c, o)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.GetKind(), o.GetName(), ready, synced, policy, rules[policy], o.GetLabels()["crossplane.io/composite"])
		}
	}
	_ = w.Flush()
}

// listAll lists every object of gvk, sorted by namespace and name.
func listAll(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) []*unstructured.Unstructured {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, l); err != nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out
}

// ruleCounts maps "region/name" ("global/name") to the number of rules the
// emulator holds.
func ruleCounts(emu *emulator.Running) map[string]string {
	counts := map[string]string{}
	for path, p := range emu.Snapshot() {
		parts := strings.Split(path, "/") // projects/p/global/securityPolicies/n or projects/p/regions/r/securityPolicies/n
		scope := parts[2]
		if scope == "regions" {
			scope = parts[3]
		}
		n := 0
		if rs, ok := p["rules"].([]any); ok {
			n = len(rs)
		}
		counts[scope+"/"+parts[len(parts)-1]] = fmt.Sprint(n)
	}
	return counts
}

// gcpPolicyOf names the GCP policy a managed resource manages or belongs to.
func gcpPolicyOf(ctx context.Context, c client.Client, o *unstructured.Unstructured) string {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return "?"
	}
	region, ok, _ := unstructured.NestedString(cur.Object, "spec", "forProvider", "region")
	if !ok {
		region = "global"
	}
	if cur.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "cloudarmor.armorplane.io", Kind: "SecurityPolicyRule"}) {
		name, _, _ := unstructured.NestedString(cur.Object, "spec", "forProvider", "securityPolicy")
		return region + "/" + name
	}
	if name := cur.GetAnnotations()["crossplane.io/external-name"]; name != "" {
		return region + "/" + name
	}
	return region + "/" + cur.GetName()
}

func printNext(out io.Writer, kubeconfig string) {
	kubectl, err := controlplane.Tool("KUBECTL_BIN", "kubectl", controlplane.KubernetesVersion)
	if err != nil {
		kubectl = "kubectl" // not built: `make tools` builds it; any kubectl works
	}
	fmt.Fprintf(out, `
Try next (in another terminal):
  export KUBECONFIG=%[1]s
  alias kubectl=%[3]s
  kubectl get ipallowlists,addresssets,securitypolicies,securitypolicyrules -A
  kubectl edit securitypolicyrule api-edge-office      # change srcIpRanges or action
  kubectl get securitypolicyrule api-edge-office -w    # watch it converge

  # Add a node to the pool the IPAllowlist "web" follows, and watch the policy follow:
  kubectl create -f - <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"gke-web-d","labels":{"cloud.google.com/gke-nodepool":"web"}}}'
  kubectl patch node gke-web-d --subresource=status --type=merge -p '{"status":{"addresses":[{"type":"ExternalIP","address":"34.118.10.4"}]}}'
  kubectl get ipallowlist web -n default -w            # IPS goes from 6 to 7
  curl -s http://%[2]s/compute/v1/projects/demo-project/global/securityPolicies/web-allowlist | grep -o '"srcIpRanges":[^]]*]'
  kubectl delete node gke-web-a                        # and back

  curl -s http://%[2]s/_emulator/stats | head -c 600   # what GCP (the emulator) holds and was asked
  curl -s http://%[4]s/metrics | grep -E 'managed_resource|cloudarmor_gcp'   # MR states, GCP calls and caches
Press Ctrl-C to stop everything.
`, kubeconfig, emulatorAddr, kubectl, metricsAddr())
}

// runDemo starts the emulator and the provider, applies the examples and
// waits until they are Ready. The processes it starts stop when ctx ends;
// the returned stop waits for that, and is never nil.
func runDemo(ctx context.Context, cp *controlplane.ControlPlane, cfg config, out io.Writer) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	emu, err := startEmulator(ctx, cp.LogDir, out)
	if emu != nil {
		stops = append(stops, func() { _ = emu.Close() })
	}
	if err != nil {
		return stop, err
	}
	plat, err := startPlatform(ctx, cp, cfg, out)
	if plat != nil {
		stops = append(stops, func() { plat.Stop(); fmt.Fprintln(out, "Crossplane, provider and functions stopped") })
	}
	if err != nil {
		return stop, err
	}
	if err := createNodes(ctx, cp.Client, out); err != nil {
		return stop, err
	}
	objs, err := applyExamples(ctx, cp, cfg.examples, out)
	if err != nil {
		return stop, err
	}
	if err := waitReady(ctx, cp.Client, objs, plat.Err, out); err != nil {
		return stop, fmt.Errorf("%w\nlogs: %s", err, plat.LogDir())
	}
	printTable(ctx, cp.Client, emu, out)
	printNext(out, cp.KubeconfigPath)
	return stop, nil
}
