package platformsuite

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// The fleet example's names (examples/allowlist/fleet/ipallowlist.yaml), in a
// namespace of the test's own.
const (
	fleetNamespace = "fleet"
	fleetXRName    = "fleet-web"
	fleetPolicy    = "fleet-web-allowlist"
	fleetFirst     = 3000
	fleetLast      = 3049
	fleetSecret    = "workload-eu-kubeconfig"
	fleetZone      = "us-central1-a"
	// fleetPoll is the instance source's pollSeconds in the test: the
	// example's 30 s would make each instance change a 30 s wait.
	fleetPoll = 5 * time.Second
	// followWithin is how soon after a change GCP must follow it: a Node of
	// either cluster, or an instance once its poll has seen it.
	followWithin = 5 * time.Second
)

// TestFleet: one IPAllowlist on the real node follows the Nodes of the node's
// own cluster, of a second cluster (its own kube-apiserver and etcd on this
// machine, which the provider's pod reaches only through a forward the test
// owns) and a labelled instance group in the emulator's Compute API; holds
// the addresses of a cluster or project it cannot read and says so; and
// resumes by itself.
func TestFleet(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	if err := e.cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	w := startWorkload(ctx, t, e)
	f := &fleet{e: e, w: w}

	// Two Nodes of pool web in each cluster, two instances of pool batch.
	f.localNode(ctx, t, "mgmt-web-1", "35.10.0.1")
	f.localNode(ctx, t, "mgmt-web-2", "35.10.0.2")
	f.workloadNode(ctx, t, "eu-web-1", "web", "35.20.0.1")
	f.workloadNode(ctx, t, "eu-web-2", "web", "35.20.0.2")
	f.workloadNode(ctx, t, "eu-db-1", "db", "35.20.9.1") // another pool: never allowed
	f.instance(ctx, t, "gke-batch-1", "batch", "35.30.0.1")
	f.instance(ctx, t, "gke-batch-2", "batch", "35.30.0.2")
	f.instance(ctx, t, "gke-other-1", "other", "35.30.9.1") // another pool: never allowed
	never := []string{"35.20.9.1/32", "35.30.9.1/32"}
	want := []string{"203.0.113.0/26", "35.10.0.1/32", "35.10.0.2/32", "35.20.0.1/32", "35.20.0.2/32", "35.30.0.1/32", "35.30.0.2/32"}

	t.Run("Compose", func(t *testing.T) {
		start := time.Now()
		f.applyXR(ctx, t)
		f.wait(t, want, never)
		f.waitReady(ctx, t, len(want))
		t.Logf("IPAllowlist %s/%s Ready and GCP allowing both clusters and the instance group %.1fs after it was applied", fleetNamespace, fleetXRName, time.Since(start).Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("ChangesFollowed", func(t *testing.T) {
		changes := []struct {
			what  string
			do    func()
			add   []string
			drop  []string
			limit time.Duration
		}{
			{"workload Node added", func() { f.workloadNode(ctx, t, "eu-web-3", "web", "35.20.0.3") }, []string{"35.20.0.3/32"}, nil, followWithin},
			{"workload Node deleted", func() { f.deleteWorkloadNode(ctx, t, "eu-web-1") }, nil, []string{"35.20.0.1/32"}, followWithin},
			{"workload Node relabelled out of the pool", func() { f.relabelWorkloadNode(ctx, t, "eu-web-2", "db") }, nil, []string{"35.20.0.2/32"}, followWithin},
			{"local Node added", func() { f.localNode(ctx, t, "mgmt-web-3", "35.10.0.3") }, []string{"35.10.0.3/32"}, nil, followWithin},
			{"instance inserted", func() { f.instance(ctx, t, "gke-batch-3", "batch", "35.30.0.3") }, []string{"35.30.0.3/32"}, nil, fleetPoll + followWithin},
			{"instance deleted", func() { f.deleteInstance(ctx, t, "gke-batch-1") }, nil, []string{"35.30.0.1/32"}, fleetPoll + followWithin},
		}
		for _, ch := range changes {
			start := time.Now()
			ch.do()
			want = withOut(append(want, ch.add...), ch.drop...)
			f.wait(t, want, never)
			d := time.Since(start)
			t.Logf("%-42s reached GCP in %.2fs (limit %s)", ch.what, d.Seconds(), ch.limit)
			if d > ch.limit {
				t.Errorf("%s reached GCP in %.2fs, over %s", ch.what, d.Seconds(), ch.limit)
			}
		}
		f.waitReady(ctx, t, len(want))
	})
	if t.Failed() {
		return
	}

	t.Run("WorkloadClusterDownHolds", func(t *testing.T) {
		defer f.logProviderOnFailure(ctx, t)
		start := time.Now()
		w.forward.down()
		wantMsg := fmt.Sprintf("cannot read the cluster of Secret %s/%s", fleetNamespace, fleetSecret)
		f.waitHeld(ctx, t, wantMsg)
		t.Logf("workload cluster down: the IPAllowlist said so in %.2fs", time.Since(start).Seconds())
		// Its Nodes' addresses stay allowed; a Node deleted meanwhile is
		// unseen until the cluster is back. The other sources still move.
		f.deleteWorkloadNode(ctx, t, "eu-web-3")
		start = time.Now()
		f.localNode(ctx, t, "mgmt-web-4", "35.10.0.4")
		want = append(want, "35.10.0.4/32")
		f.wait(t, want, never)
		t.Logf("local Node added while the workload cluster is down: GCP followed in %.2fs", time.Since(start).Seconds())
		f.holds(t, 3*time.Second, want, never)

		start = time.Now()
		w.forward.up()
		want = withOut(want, "35.20.0.3/32")
		f.wait(t, want, never)
		f.waitReady(ctx, t, len(want))
		t.Logf("workload cluster back: the Node deleted meanwhile left GCP and the IPAllowlist was Ready %.2fs later", time.Since(start).Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("ComputeDownHolds", func(t *testing.T) {
		defer f.logProviderOnFailure(ctx, t)
		start := time.Now()
		if err := e.emu.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{
			"instances.aggregatedList": {ErrorRate: 1, ErrorCodes: []int{503}},
		}}); err != nil {
			t.Fatal(err)
		}
		f.waitHeld(ctx, t, "cannot read the instances of project "+project)
		t.Logf("instance listing failing: the IPAllowlist said so in %.2fs", time.Since(start).Seconds())
		f.deleteInstance(ctx, t, "gke-batch-2")
		f.holds(t, fleetPoll+time.Second, want, never)

		start = time.Now()
		if err := e.emu.SetFaults(emulator.Faults{}); err != nil {
			t.Fatal(err)
		}
		want = withOut(want, "35.30.0.2/32")
		f.wait(t, want, never)
		f.waitReady(ctx, t, len(want))
		t.Logf("instance listing back: the instance deleted meanwhile left GCP %.2fs later", time.Since(start).Seconds())
	})
	if s, reason, msg := platform.ConditionOf(f.xr(ctx, t), "Responsive"); s == "False" {
		t.Errorf("Crossplane's circuit breaker opened for the fleet IPAllowlist: Responsive=False %s %q", reason, msg)
	}
}

// fleet is what TestFleet drives: the node's cluster, the workload cluster
// and the emulator's instances.
type fleet struct {
	e *env
	w *workload
}

// workload is the second cluster: its own API server and etcd, reached by
// the node's pods at exposed through forward.
type workload struct {
	cp      *controlplane.ControlPlane
	forward *forward
	exposed string
}

// startWorkload starts the second cluster and writes the Secret that names
// it, as Cluster API writes <cluster>-kubeconfig (key value): its server is
// the forward's address on the node, verified as the API server's own name.
func startWorkload(ctx context.Context, t *testing.T, e *env) *workload {
	t.Helper()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	fw, err := newForward(strings.TrimPrefix(cp.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fw.close)
	exposed, err := e.plat.Node.Expose(fw.addr())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + exposed
		c.TLSServerName = "localhost"
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleetSecret, Namespace: fleetNamespace}, Data: map[string][]byte{"value": b}}
	if err := e.cp.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cp.Client.Delete(context.Background(), s) })
	return &workload{cp: cp, forward: fw, exposed: exposed}
}

// applyXR applies the fleet example in the test's namespace, its instance
// source polled every fleetPoll.
func (f *fleet) applyXR(ctx context.Context, t *testing.T) {
	t.Helper()
	f.e.createExample(ctx, t, fleetNamespace, func(u *unstructured.Unstructured) {
		srcs, _, _ := unstructured.NestedSlice(u.Object, "spec", "instanceSources")
		srcs[0].(map[string]any)["pollSeconds"] = int64(fleetPoll.Seconds())
		if err := unstructured.SetNestedSlice(u.Object, srcs, "spec", "instanceSources"); err != nil {
			t.Fatal(err)
		}
	}, "fleet", "ipallowlist.yaml")
}

func (f *fleet) xr(ctx context.Context, t *testing.T) *unstructured.Unstructured {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	if err := f.e.cp.Client.Get(ctx, types.NamespacedName{Namespace: fleetNamespace, Name: fleetXRName}, xr); err != nil {
		t.Fatal(err)
	}
	return xr
}

func (f *fleet) localNode(ctx context.Context, t *testing.T, name, ip string) {
	t.Helper()
	if err := createNode(ctx, f.e.cp.Client, node(name, "web", "10.0.0.1", ip)); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) workloadNode(ctx context.Context, t *testing.T, name, pool, ip string) {
	t.Helper()
	if err := createNode(ctx, f.w.cp.Client, node(name, pool, "10.1.0.1", ip)); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) deleteWorkloadNode(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := f.w.cp.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) relabelWorkloadNode(ctx context.Context, t *testing.T, name, pool string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"cloud.google.com/gke-nodepool":%q}}}`, pool)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.w.cp.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// instance inserts a running instance of a GKE node pool, with a static
// external address, through the official client.
func (f *fleet) instance(ctx context.Context, t *testing.T, name, pool, natIP string) {
	t.Helper()
	in := &compute.Instance{
		Name:        name,
		MachineType: "zones/" + fleetZone + "/machineTypes/e2-medium",
		Labels:      map[string]string{"goog-k8s-node-pool-name": pool},
		NetworkInterfaces: []*compute.NetworkInterface{{
			AccessConfigs: []*compute.AccessConfig{{Name: "external-nat", Type: "ONE_TO_ONE_NAT", NatIP: natIP}},
		}},
	}
	op, err := f.e.gcp.Instances.Insert(project, fleetZone, in).Context(ctx).Do()
	if err != nil {
		t.Fatalf("insert instance %s: %v", name, err)
	}
	f.waitOp(ctx, t, op)
}

func (f *fleet) deleteInstance(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	op, err := f.e.gcp.Instances.Delete(project, fleetZone, name).Context(ctx).Do()
	if err != nil {
		t.Fatalf("delete instance %s: %v", name, err)
	}
	f.waitOp(ctx, t, op)
}

func (f *fleet) waitOp(ctx context.Context, t *testing.T, op *compute.Operation) {
	t.Helper()
	for op.Status != "DONE" {
		var err error
		if op, err = f.e.gcp.ZoneOperations.Wait(project, fleetZone, op.Name).Context(ctx).Do(); err != nil {
			t.Fatal(err)
		}
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		t.Fatalf("operation %s: %s", op.Name, op.Error.Errors[0].Message)
	}
}

// wait waits until GCP allows exactly want in the fleet allowlist's range,
// failing at once if it ever allows one of never.
func (f *fleet) wait(t *testing.T, want, never []string) {
	t.Helper()
	want = sortedCopy(want)
	wait.Eventually(t, converge, "GCP to allow exactly the fleet's addresses", func() error {
		return f.allows(t, want, never)
	}, wait.Every(20*time.Millisecond))
}

// holds checks that GCP keeps allowing exactly want for d.
func (f *fleet) holds(t *testing.T, d time.Duration, want, never []string) {
	t.Helper()
	want = sortedCopy(want)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := f.allows(t, want, never); err != nil {
			t.Fatalf("while a source is unreadable: %v", err)
		}
	}
}

func (f *fleet) allows(t *testing.T, want, never []string) error {
	if err := f.e.plat.Err(); err != nil {
		t.Fatal(err)
	}
	sp := f.e.snapshotOf(fleetPolicy)
	if sp == nil {
		return fmt.Errorf("no policy %s in GCP yet", fleetPolicy)
	}
	got := allowedIn(sp, fleetFirst, fleetLast)
	for _, n := range never {
		if slices.Contains(got, n) {
			t.Fatalf("GCP allows %s, which no source selects: %v", n, got)
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("GCP allows %v, want %v", got, want)
	}
	return nil
}

func (f *fleet) waitReady(ctx context.Context, t *testing.T, ips int) {
	t.Helper()
	wait.Eventually(t, converge, "the fleet IPAllowlist to be Ready with its counts", func() error {
		xr := f.xr(ctx, t)
		if s, reason, msg := platform.ConditionOf(xr, "Current"); s != "True" {
			return fmt.Errorf("Current=%s %s %s", s, reason, msg)
		}
		if s, msg := platform.Condition(xr, "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s %s", s, msg)
		}
		if got, _, _ := unstructured.NestedInt64(xr.Object, "status", "ipCount"); int(got) != ips {
			return fmt.Errorf("status.ipCount=%d, want %d", got, ips)
		}
		return nil
	})
}

// waitHeld waits until the IPAllowlist says a source cannot be read, with msg
// in the message, and is not Ready.
func (f *fleet) waitHeld(ctx context.Context, t *testing.T, msg string) {
	t.Helper()
	wait.Eventually(t, converge, "the IPAllowlist to say a source is held", func() error {
		xr := f.xr(ctx, t)
		s, reason, m := platform.ConditionOf(xr, "Current")
		if s != "False" || reason != "SourceUnreadable" || !strings.Contains(m, msg) {
			return fmt.Errorf("Current=%s %s %q, want False SourceUnreadable with %q; its sets say: %s", s, reason, m, msg, f.setsSay(ctx))
		}
		if s, _ := platform.Condition(xr, "Ready"); s == "True" {
			return fmt.Errorf("Ready=True while a source is held")
		}
		return nil
	})
}

// logProviderOnFailure logs the end of the provider's log if t failed:
// what its readers saw of an outage.
func (f *fleet) logProviderOnFailure(ctx context.Context, t *testing.T) {
	if t.Failed() {
		t.Logf("provider log:\n%s", f.e.plat.ProviderLog(ctx, 200))
	}
}

// setsSay is the Ready condition of each AddressSet of the fleet's
// namespace, for a failure's message.
func (f *fleet) setsSay(ctx context.Context) string {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cloudarmor.armorplane.io/v1alpha1")
	l.SetKind("AddressSetList")
	if err := f.e.cp.Client.List(ctx, l, client.InNamespace(fleetNamespace)); err != nil {
		return err.Error()
	}
	var says []string
	for i := range l.Items {
		s, reason, msg := platform.ConditionOf(&l.Items[i], "Ready")
		says = append(says, fmt.Sprintf("%s Ready=%s %s %q", l.Items[i].GetName(), s, reason, msg))
	}
	return strings.Join(says, "; ")
}

// withOut is s without drop.
func withOut(s []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(v string) bool { return slices.Contains(drop, v) })
}

// forward is a TCP forward to the workload cluster's API server that the
// test can take down: down refuses new connections and cuts the open ones,
// as a control plane that stopped answering does for its clients.
type forward struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	off   bool
	conns map[net.Conn]bool
}

func newForward(target string) (*forward, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &forward{l: l, target: target, conns: map[net.Conn]bool{}}
	go f.serve()
	return f, nil
}

func (f *forward) addr() string { return f.l.Addr().String() }

func (f *forward) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		go f.handle(c)
	}
}

func (f *forward) handle(c net.Conn) {
	f.mu.Lock()
	if f.off {
		f.mu.Unlock()
		_ = c.Close()
		return
	}
	f.mu.Unlock()
	u, err := net.Dial("tcp", f.target)
	if err != nil {
		_ = c.Close()
		return
	}
	f.mu.Lock()
	if f.off {
		f.mu.Unlock()
		_ = c.Close()
		_ = u.Close()
		return
	}
	f.conns[c], f.conns[u] = true, true
	f.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = u.Close()
	f.mu.Lock()
	delete(f.conns, c)
	delete(f.conns, u)
	f.mu.Unlock()
}

// down cuts every open connection and refuses new ones.
func (f *forward) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.off = true
	for c := range f.conns {
		_ = c.Close()
	}
}

func (f *forward) up() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.off = false
}

func (f *forward) close() {
	f.down()
	_ = f.l.Close()
}
