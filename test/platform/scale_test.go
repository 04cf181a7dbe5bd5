package platformsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// TestScale is the IPAllowlist in a big cluster, for `make bench`: for each
// Node count in PLATFORM_SCALE (e.g. "1000,5000", ascending) the cluster
// holds that many Nodes with a kubelet's full status (addresses, four
// conditions, 30 images, node info: about 14 KB each as JSON), 100 of them in
// the allowlisted pool, and every Node's status is patched once per 5
// minutes, spread evenly, as kubelets report. The suite measures the steady
// state (CPU and memory of core, the function, the provider and the API
// server over 30 s of heartbeats, and the size of what a function request
// carries), then bursts of 20, 100 and 500 pool Nodes added and removed, all
// at once and trickled, in both modes, with Crossplane's defaults: each
// burst's latency beside what GCP alone needs, and the events Crossplane saw.
// Skipped unless PLATFORM_SCALE is set: it takes minutes and gigabytes.
func TestScale(t *testing.T) {
	spec := os.Getenv("PLATFORM_SCALE")
	if spec == "" {
		t.Skip("set PLATFORM_SCALE=1000,5000 (make bench does)")
	}
	var counts []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < scalePool {
			t.Fatalf("PLATFORM_SCALE=%q: want Node counts of at least %d", spec, scalePool)
		}
		counts = append(counts, n)
	}
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	// Address groups need Cloud Armor Enterprise: the bursts run in both modes.
	if err := e.emu.SetTier(project, "CA_ENTERPRISE_PAYGO"); err != nil {
		t.Fatal(err)
	}
	kc := fastClient(t, e)

	c := newCluster(e)
	c.realistic = true
	for range scalePool {
		c.addNode(ctx, t, pool)
	}
	e.applyXR(ctx, t)
	// Bursts of removals are measured as they happen, not after the
	// shrink hold that would keep them back for two minutes.
	e.setShrinkHold(ctx, t, 0)
	e.waitAllowlist(t, c.want())

	hb := newHeartbeats(kc)
	defer hb.stop()
	var b strings.Builder
	fmt.Fprintf(&b, "\nIPAllowlist at scale (%d Nodes in the allowlisted pool; every Node's status patched once per 5 minutes):\n\n", scalePool)
	fmt.Fprintf(&b, "| Nodes | heartbeats/s | core CPU | function CPU | provider CPU | API server CPU | core RSS | function RSS | provider RSS | API server RSS | function request ≈ | function calls/min |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var bursts []string
	have := scalePool
	for _, n := range counts {
		begin := time.Now()
		have += createBackground(ctx, t, kc, have, n-have)
		t.Logf("%d Nodes in the cluster (%.0fs to create)", have, time.Since(begin).Seconds())
		hb.set(nodeNames(ctx, t, kc), float64(n)/300)

		time.Sleep(10 * time.Second) // the informers catch up with the creations
		before, callsBefore := e.sampleProcs(t), e.functionCalls(t)
		const window = 30 * time.Second
		time.Sleep(window)
		after, calls := e.sampleProcs(t), e.functionCalls(t)-callsBefore
		cpu := func(exe string) string {
			return fmt.Sprintf("%.3f cores", (after[exe].CPU-before[exe].CPU).Seconds()/window.Seconds())
		}
		rss := func(exe string) string { return fmt.Sprintf("%d MiB", after[exe].RSSKiB>>10) }
		fmt.Fprintf(&b, "| %d | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %d KiB | %.1f |\n", n, float64(n)/300,
			cpu("crossplane"), cpu("function-ipallowlist"), cpu("provider-cloudarmor"), cpu("kube-apiserver"),
			rss("crossplane"), rss("function-ipallowlist"), rss("provider-cloudarmor"), rss("kube-apiserver"), requestBytes(ctx, t, e)>>10,
			float64(calls)/window.Minutes())

		m := e.newMeter(t)
		runBursts(ctx, t, e, c, kc, m, n, []int{20, 100, 500})
		m.stop()
		bursts = append(bursts, m.table())
		m.targets(t)
		for k, g := range m.gaps {
			if g > 0 {
				t.Errorf("%s: %d samples found a still-wanted source refused by GCP (e.g. %s)", k, g, m.lost[k])
			}
		}
	}
	b.WriteString("\nBursts with Crossplane's defaults (from the first Node write of the burst until GCP allows exactly the wanted sources; " +
		"the GCP floor is what the change needs, not what we wrote: ceil(changed sources / 10) rule writes in mode rules, one call in mode addressGroup, " +
		"one operation at a time, less what the burst's own time allowed; composed-object events are what Crossplane's circuit breaker counts):\n\n")
	for _, tbl := range bursts {
		b.WriteString(tbl)
	}
	t.Log(b.String())
	if out := os.Getenv("PLATFORM_LATENCY_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() //nolint:errcheck // checked below by the write
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
}

// scalePool is how many Nodes the allowlisted pool holds in TestScale.
const scalePool = 100

// fastClient is a client without client-go's default 5 requests a second:
// the suite writes thousands of Nodes.
func fastClient(t *testing.T, e *env) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	kc, err := client.New(cfg, client.Options{Scheme: kube.SchemeT(t)})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// realisticStatus gives n what a kubelet reports besides its addresses.
func realisticStatus(n *corev1.Node) {
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	for i := range 30 {
		repo := fmt.Sprintf("europe-docker.pkg.dev/prod-platform/services/service-%02d", i)
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("%s@sha256:%064x", repo, i*7919+1),
				fmt.Sprintf("%s:v1.%d.%d", repo, i, i*3),
			},
			SizeBytes: int64(20_000_000 + i*1_000_003),
		})
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("%032x", len(n.Name)*104729), SystemUUID: "4c4c4544-0042-3510-8052-b4c04f4e4d32", BootID: "8a7b9c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d",
		KernelVersion: "6.1.100+", OSImage: "Container-Optimized OS from Google", ContainerRuntimeVersion: "containerd://1.7.24",
		KubeletVersion: "v1.35.4", KubeProxyVersion: "v1.35.4", OperatingSystem: "linux", Architecture: "amd64",
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("13604964Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("47060071478"),
	}
	n.Status.Capacity, n.Status.Allocatable = res, res
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
}

// createBackground creates count Nodes of other pools, realistic like the
// pool's, four at a time, and returns how many it created.
func createBackground(ctx context.Context, t *testing.T, kc client.Client, from, count int) int {
	t.Helper()
	var next, failed atomic.Int64
	next.Store(int64(from))
	end := int64(from + count)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= end {
					return
				}
				nd := node(fmt.Sprintf("gke-batch-%05d", i), "batch", fmt.Sprintf("10.%d.%d.%d", 64+i/65536, (i/256)%256, i%256), fmt.Sprintf("35.%d.%d.%d", 100+i/65536, (i/256)%256, i%256))
				realisticStatus(nd)
				if err := createNode(ctx, kc, nd); err != nil {
					failed.Add(1)
					t.Errorf("Node %s: %v", nd.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	return count
}

func nodeNames(ctx context.Context, t *testing.T, kc client.Client) []string {
	t.Helper()
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := kc.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(l.Items))
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	return out
}

// heartbeats patches one Node's Ready condition heartbeat at a time, at a
// steady rate, round robin over the names it was given.
type heartbeats struct {
	kc    client.Client
	mu    sync.Mutex
	names []string
	every time.Duration
	quit  chan struct{}
	done  chan struct{}
}

func newHeartbeats(kc client.Client) *heartbeats {
	h := &heartbeats{kc: kc, quit: make(chan struct{}), done: make(chan struct{}), every: time.Hour}
	go h.run()
	return h
}

func (h *heartbeats) set(names []string, perSecond float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names = names
	h.every = time.Duration(float64(time.Second) / perSecond)
}

func (h *heartbeats) stop() {
	close(h.quit)
	<-h.done
}

func (h *heartbeats) run() {
	defer close(h.done)
	i := 0
	for {
		h.mu.Lock()
		names, every := h.names, h.every
		h.mu.Unlock()
		select {
		case <-h.quit:
			return
		case <-time.After(every):
		}
		if len(names) == 0 {
			continue
		}
		name := names[i%len(names)]
		i++
		now := time.Now().UTC().Format(time.RFC3339)
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":%q}]}}`, now)
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		// A Node the suite deleted meanwhile is simply not found.
		_ = h.kc.Status().Patch(context.Background(), nd, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
	}
}

// sampleProcs reads the CPU time and memory of the node's processes (the
// containers' too: they share its PID namespace's ancestry), by executable
// name.
func (e *env) sampleProcs(t *testing.T) map[string]procstat.Stats {
	t.Helper()
	out, err := procstat.InNamespace(e.plat.Node.Holder)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requestBytes is about what a function request for the IPAllowlist carries:
// the XR and its composed resources as JSON.
func requestBytes(ctx context.Context, t *testing.T, e *env) int {
	t.Helper()
	total := 0
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: e.xr}, xr); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(xr.Object)
	total += len(b)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicyList"},
		{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAllowlistList"},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := e.cp.Client.List(ctx, l, client.InNamespace("default"), client.MatchingLabels{"crossplane.io/composite": e.xr}); err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			unstructured.RemoveNestedField(it.Object, "metadata", "managedFields")
			b, _ := json.Marshal(it.Object)
			total += len(b)
		}
	}
	return total
}

// trickleEvery is how far apart a trickled burst's Node writes are, as
// registrations arrive when a pool scales.
const trickleEvery = 100 * time.Millisecond

// addNodes adds count pool Nodes through kc: eight writers at once, or one
// write every trickleEvery.
func (c *cluster) addNodes(ctx context.Context, t *testing.T, kc client.Client, pool string, count int, trickle bool) {
	t.Helper()
	c.burst(t, count, trickle, func() error { return c.createPoolNode(ctx, kc, pool) })
}

// deleteNodes deletes count pool Nodes, the oldest first, as addNodes adds.
func (c *cluster) deleteNodes(ctx context.Context, t *testing.T, kc client.Client, count int, trickle bool) {
	t.Helper()
	c.mu.Lock()
	names := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		names = append(names, n)
	}
	c.mu.Unlock()
	slices.Sort(names)
	if len(names) < count {
		t.Fatalf("%d pool Nodes to delete, %d exist", count, len(names))
	}
	var next atomic.Int64
	c.burst(t, count, trickle, func() error {
		name := names[next.Add(1)-1]
		// Forgotten first: the meter stops requiring a source once it is being removed.
		c.forget(name, false)
		return kc.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// burst runs write count times: by eight writers at once, or one at a time
// every trickleEvery.
func (c *cluster) burst(t *testing.T, count int, trickle bool, write func() error) {
	t.Helper()
	if trickle {
		tick := time.NewTicker(trickleEvery)
		defer tick.Stop()
		for i := range count {
			if i > 0 {
				<-tick.C
			}
			if err := write(); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var left atomic.Int64
	left.Store(int64(count))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := write(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// beyondFloor and writesOverFloor are the targets of a burst: GCP holds what
// the Nodes call for at most beyondFloor after GCP's own floor (floorOf), and
// Nodes added in mode rules, at once or trickled, cost at most
// writesOverFloor times the floor's writes, or two writes more than the
// floor where that is more (writesAllowed). Removals are not held to it: a
// removal waits at most the batch window (2 s) to share a rule's write, as a
// departed Node's address must not stay allowed for long, so a trickle that
// empties rules more slowly than that writes them more than once (200
// trickled over 20 s: 32 writes for a floor of 20).
const (
	beyondFloor     = 5 * time.Second
	writesOverFloor = 1.3
)

// TestBursts is TestScale's bursts in short, run by make test and held to
// the targets: 200 pool Nodes added and removed, at once and trickled, in
// both modes, with Crossplane's defaults. The long one, with thousands of
// Nodes and their heartbeats, is make bench's.
func TestBursts(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	if err := e.emu.SetTier(project, "CA_ENTERPRISE_PAYGO"); err != nil {
		t.Fatal(err)
	}
	kc := fastClient(t, e)
	c := newCluster(e)
	c.realistic = true
	for range scalePool {
		c.addNode(ctx, t, pool)
	}
	e.applyXR(ctx, t)
	e.setShrinkHold(ctx, t, 0)
	e.waitAllowlist(t, c.want())

	m := e.newMeter(t)
	runBursts(ctx, t, e, c, kc, m, scalePool, []int{200})
	m.stop()
	m.report(t)
	m.targets(t)
}

// runBursts measures bursts of each size of pool Nodes added and removed, all
// at once (eight writers, as kubectl -f with a list) and trickled (one Node
// write every trickleEvery, as registrations arrive), first in mode
// addressGroup, then in mode rules. Crossplane runs with its defaults: a
// burst that opened its circuit breaker fails the measurement.
func runBursts(ctx context.Context, t *testing.T, e *env, c *cluster, kc client.Client, m *meter, n int, sizes []int) {
	t.Helper()
	m.limit = 5 * time.Minute
	for _, mode := range []string{"addressGroup", "rules"} {
		patch := `{"spec":{"mode":"rules"}}`
		if mode == "addressGroup" {
			patch = fmt.Sprintf(`{"spec":{"mode":"addressGroup","addressGroup":{"name":%q}}}`, groupName)
		}
		e.patchXR(ctx, t, patch)
		if mode == "addressGroup" {
			e.waitRuleKinds(t, m.limit, map[string]int{"groups": 1})
		} else {
			e.waitRuleKinds(t, m.limit, map[string]int{"ranges": (len(c.want()) + 9) / 10})
			// The switch deletes the address groups once their rule is gone:
			// their deletes are the switch's writes, not the first burst's
			// (they were two of the 24-27 writes measured for 200 Nodes added
			// at once).
			wait.Eventually(t, m.limit, "the address groups to be deleted", func() error {
				if g := e.groups(); len(g) > 0 {
					return fmt.Errorf("%d groups left", len(g))
				}
				return nil
			})
		}
		e.waitAllowlist(t, c.want())
		m.rules = mode == "rules"
		for _, size := range sizes {
			for _, trickle := range []bool{false, true} {
				how := "at once"
				if trickle {
					how = "trickled"
				}
				m.measure(t, fmt.Sprintf("%d Nodes, %s: add %d %s", n, mode, size, how), c, func() {
					c.addNodes(ctx, t, kc, pool, size, trickle)
				})
				m.measure(t, fmt.Sprintf("%d Nodes, %s: remove %d %s", n, mode, size, how), c, func() {
					c.deleteNodes(ctx, t, kc, size, trickle)
				})
			}
		}
	}
}
