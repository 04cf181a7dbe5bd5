package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

// The emulator address and project the examples under examples/ point at.
const (
	emulatorAddr    = "127.0.0.1:8787"
	demoProject     = "demo-project"
	demoOpLatency   = time.Second
	importedPolicy  = "legacy-console-policy"
	readyTimeout    = 3 * time.Minute
	providerLogName = "provider.log"
)

// The example folders `make run` applies. examples/allowlist needs Crossplane
// core and the allowlist function (docs/allowlist.md), which `make run` does
// not start.
var demoExamples = []string{"providerconfig", "securitypolicy", "securitypolicyrule", "regional", "import"}

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

// startProvider runs the provider binary as its own process, as a user would.
func startProvider(ctx context.Context, bin, kubeconfig, logDir string, out io.Writer) (*exec.Cmd, error) {
	logFile, err := os.Create(filepath.Join(logDir, providerLogName))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--poll=30s", "--poll-jitter=3s", "--snapshot-ttl=10s",
		"--metrics-bind-address=127.0.0.1:8080", "--health-probe-bind-address=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s (run `make build`): %w", bin, err)
	}
	fmt.Fprintf(out, "provider running (pid %d, log %s)\n", cmd.Process.Pid, logFile.Name())
	return cmd, nil
}

// applyExamples applies the example folders and returns the managed resources
// among the objects, the ones that must become Ready.
func applyExamples(ctx context.Context, cp *controlplane.ControlPlane, dir string, out io.Writer) ([]*unstructured.Unstructured, error) {
	var paths []string
	for _, d := range demoExamples {
		paths = append(paths, filepath.Join(dir, d))
	}
	objs, err := cp.Apply(ctx, paths...)
	if err != nil {
		return nil, err
	}
	var managed []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().Group == "cloudarmor.armorplane.io" {
			managed = append(managed, o)
		}
	}
	fmt.Fprintf(out, "applied %d objects from %s (%d managed resources)\n", len(objs), strings.Join(paths, ", "), len(managed))
	return managed, nil
}

// waitReady polls until every object is Ready=True and Synced=True, printing
// progress, or fails with the conditions of those that are not.
func waitReady(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	start := time.Now()
	for last := -1; ; {
		pending := notReady(ctx, c, objs)
		if len(pending) == 0 {
			fmt.Fprintf(out, "all %d managed resources Ready and Synced after %s\n", len(objs), seconds(time.Since(start)))
			return nil
		}
		if len(pending) != last {
			fmt.Fprintf(out, "waiting for %d of %d managed resources to become Ready…\n", len(pending), len(objs))
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

// printTable shows each managed resource with the rule count GCP (the
// emulator) holds for its policy.
func printTable(ctx context.Context, c client.Client, emu *emulator.Running, objs []*unstructured.Unstructured, out io.Writer) {
	rules := ruleCounts(emu)
	sort.Slice(objs, func(i, j int) bool {
		return objs[i].GetKind()+objs[i].GetName() < objs[j].GetKind()+objs[j].GetName()
	})
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKIND\tNAME\tREADY\tSYNCED\tGCP POLICY\tGCP RULES")
	for _, o := range objs {
		ready, synced, _ := conditions(ctx, c, o)
		policy := gcpPolicyOf(ctx, c, o)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", o.GetKind(), o.GetName(), ready, synced, policy, rules[policy])
	}
	_ = w.Flush()
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
	fmt.Fprintf(out, `
Try next (in another terminal):
  export KUBECONFIG=%[1]s
  kubectl get securitypolicies,securitypolicyrules -A
  kubectl edit securitypolicyrule api-edge-office      # change srcIpRanges or action
  kubectl get securitypolicyrule api-edge-office -w    # watch it converge
  curl -s http://%[2]s/_emulator/stats | head -c 600   # what GCP (the emulator) holds and was asked
  curl -s http://127.0.0.1:8080/metrics | grep -E 'managed_resource|cloudarmor_gcp'   # MR states, GCP calls and caches
Press Ctrl-C to stop everything.
`, kubeconfig, emulatorAddr)
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
	bin, err := filepath.Abs(filepath.Join(cfg.binDir, "provider"))
	if err != nil {
		return stop, err
	}
	provider, err := startProvider(ctx, bin, cp.KubeconfigPath, cp.LogDir, out)
	if err != nil {
		return stop, err
	}
	exited := make(chan error, 1)
	go func() { exited <- provider.Wait() }()
	stops = append(stops, func() { <-exited; fmt.Fprintln(out, "provider stopped") })

	objs, err := applyExamples(ctx, cp, cfg.examples, out)
	if err != nil {
		return stop, err
	}
	if err := waitReady(ctx, cp.Client, objs, out); err != nil {
		return stop, fmt.Errorf("%w\nprovider log: %s", err, filepath.Join(cp.LogDir, providerLogName))
	}
	printTable(ctx, cp.Client, emu, objs, out)
	printNext(out, cp.KubeconfigPath)
	return stop, nil
}
