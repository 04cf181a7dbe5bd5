//go:build bench

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
)

// fleetReport is what remote sources cost the provider: the Go heap it
// keeps per remote cluster and per 1,000 remote Nodes, its CPU while the
// remote kubelets report at their default rate, and the Compute calls of an
// instance source per poll.
type fleetReport struct {
	Clusters        int     `json:"clusters"`
	NodesPerCluster int     `json:"nodesPerCluster"`
	HeapBaseMiB     float64 `json:"heapBaseMiB"`
	// HeapMiB is the heap in use after each cluster was added (the last
	// one with no Node).
	HeapMiB            []float64 `json:"heapMiB"`
	PerClusterMiB      float64   `json:"perClusterMiB"`
	PerThousandNodeMiB float64   `json:"perThousandNodesMiB"`
	EmptyClusterMiB    float64   `json:"emptyClusterMiB"`
	// FirstSync is from an AddressSet's creation to its status counting
	// every Node of its cluster, for the first cluster.
	FirstSync         string  `json:"firstSync"`
	HeartbeatsPerSec  float64 `json:"heartbeatsPerSecond"`
	IdleCores         float64 `json:"idleCores"`
	HeartbeatCores    float64 `json:"heartbeatCores"`
	Instances         int     `json:"instances"`
	Polls             float64 `json:"polls"`
	ListCalls         int64   `json:"listCalls"`
	CallsPerPoll      float64 `json:"callsPerPoll"`
	InstancesSelected int     `json:"instancesSelected"`
	// NATSources AddressSets each read one Cloud Router; NATReadsPerPoll are
	// the Compute calls each made per poll.
	NATSources      int     `json:"natSources"`
	NATReadsPerPoll float64 `json:"natReadsPerPoll"`
	Err             string  `json:"error,omitempty"`
}

// kubeletReportEvery is how often a kubelet writes its Node's status when
// nothing changes (nodeStatusReportFrequency's default): K×N Nodes cost
// K×N/300 status updates a second.
const kubeletReportEvery = 5 * time.Minute

// benchPoll is the instance source's poll in the benchmark: short, so the
// window holds several polls.
const benchPoll = 5 * time.Second

// runFleet measures remote sources on a provider of its own: clusters
// remote API servers (kube-apiserver and etcd each) with nodes Nodes each,
// one AddressSet per cluster, then an instance source over instances
// emulated instances.
func runFleet(ctx context.Context, cfg config, bin string) (*fleetReport, error) {
	c := cfg
	c.profile = true // the heap is read from the provider's pprof endpoint
	e, err := start(ctx, c, bin, scenario{Name: "fleet", Poll: cfg.poll, SteadyPolls: 1}, "fleet")
	if e != nil {
		defer e.close()
	}
	if err != nil {
		return nil, err
	}
	rep := &fleetReport{Clusters: cfg.fleetClusters, NodesPerCluster: cfg.fleetNodes, Instances: cfg.fleetInstances}
	// Let the provider start its controllers before the base is read.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return nil, err
	}
	if rep.HeapBaseMiB, err = e.heapInuse(ctx); err != nil {
		return nil, err
	}
	var remotes []*controlplane.ControlPlane
	defer func() {
		for _, r := range remotes {
			_ = r.Stop()
		}
	}()
	for i := range cfg.fleetClusters + 1 {
		nodes := cfg.fleetNodes
		if i == cfg.fleetClusters {
			nodes = 0 // the last cluster is empty: what a cluster costs without Nodes
		}
		r, took, err := e.addRemote(ctx, i, nodes)
		if r != nil {
			remotes = append(remotes, r)
		}
		if err != nil {
			return nil, fmt.Errorf("remote cluster %d: %w", i, err)
		}
		if i == 0 {
			rep.FirstSync = took.Round(time.Millisecond).String()
		}
		h, err := e.heapInuse(ctx)
		if err != nil {
			return nil, err
		}
		rep.HeapMiB = append(rep.HeapMiB, h)
		fmt.Fprintf(os.Stderr, "   remote cluster %d (%d Nodes) read in %s: heap %.1f MiB\n", i, nodes, took.Round(time.Millisecond), h)
	}
	k := cfg.fleetClusters
	rep.PerClusterMiB = (rep.HeapMiB[k-1] - rep.HeapBaseMiB) / float64(k)
	rep.EmptyClusterMiB = rep.HeapMiB[k] - rep.HeapMiB[k-1]
	if cfg.fleetNodes > 0 {
		rep.PerThousandNodeMiB = (rep.PerClusterMiB - rep.EmptyClusterMiB) * 1000 / float64(cfg.fleetNodes)
	}
	if err := e.heartbeats(ctx, remotes[:k], rep); err != nil {
		return nil, err
	}
	if err := e.instancePolls(ctx, rep); err != nil {
		return nil, err
	}
	if err := e.natPolls(ctx, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// addRemote starts remote cluster i with n Nodes, gives the provider its
// kubeconfig in a Secret and an AddressSet reading it, and waits until the
// AddressSet counts every Node.
func (e *env) addRemote(ctx context.Context, i, n int) (*controlplane.ControlPlane, time.Duration, error) {
	r, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return nil, 0, err
	}
	rc := *r.Config
	rc.QPS, rc.Burst = 500, 1000
	kc, err := client.New(&rc, client.Options{})
	if err != nil {
		return r, 0, err
	}
	for j := range n {
		if err := kc.Create(ctx, benchNode(i, j)); err != nil {
			return r, 0, err
		}
	}
	name := fmt.Sprintf("remote-%d", i)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{"kubeconfig": r.Kubeconfig}}
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AddressSetSpec{ShrinkHoldSeconds: ptr.To[int32](0), Nodes: &v1alpha1.NodeSelector{
			MatchLabels: map[string]string{"pool": "web"},
			Cluster:     &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: name, Key: "kubeconfig"}, Identity: v1alpha1.IdentityKubeconfig}}}}
	start := time.Now()
	for _, o := range []client.Object{secret, as} {
		if err := e.kube.Create(ctx, o); err != nil {
			return r, 0, err
		}
	}
	err = e.waitSet(ctx, name, func(s v1alpha1.AddressSetStatus) bool {
		return s.NodeCount == n && readyTrue(s.Conditions)
	})
	return r, time.Since(start), err
}

// benchNode is Node j of cluster i: labelled pool web, with an internal and
// an external address (the part of a Node the provider keeps).
func benchNode(i, j int) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d-%d", i, j), Labels: map[string]string{
		"pool": "web", "kubernetes.io/hostname": fmt.Sprintf("node-%d-%d", i, j), "topology.kubernetes.io/zone": "europe-west1-b"}}}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i, j/256, j%256)},
		{Type: corev1.NodeExternalIP, Address: fmt.Sprintf("35.%d.%d.%d", 100+i, j/256, j%256)},
	}
	return n
}

func readyTrue(conds []xpv2.Condition) bool {
	for _, c := range conds {
		if c.Type == xpv2.TypeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitSet waits until AddressSet name's status satisfies ok.
func (e *env) waitSet(ctx context.Context, name string, ok func(v1alpha1.AddressSetStatus) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		as := &v1alpha1.AddressSet{}
		if err := e.kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, as); err == nil && ok(as.Status) {
			return nil
		}
		if err := e.alive(); err != nil {
			return err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("AddressSet %s: %w", name, err)
		}
	}
}

// heartbeats measures the provider's CPU over a quiet window, then over a
// window in which every remote Node's status is written once per
// kubeletReportEvery, spread evenly, as kubelets do.
func (e *env) heartbeats(ctx context.Context, remotes []*controlplane.ControlPlane, rep *fleetReport) error {
	const window = 60 * time.Second
	idle, err := e.providerCores(ctx, window, nil)
	if err != nil {
		return err
	}
	clients := make([]client.Client, 0, len(remotes))
	for _, r := range remotes {
		rc := *r.Config
		rc.QPS, rc.Burst = 200, 400
		kc, err := client.New(&rc, client.Options{})
		if err != nil {
			return err
		}
		clients = append(clients, kc)
	}
	total := len(remotes) * rep.NodesPerCluster
	rep.HeartbeatsPerSec = float64(total) / kubeletReportEvery.Seconds()
	every := time.Duration(float64(time.Second) / rep.HeartbeatsPerSec)
	beat := func(ctx context.Context) {
		for j := 0; ctx.Err() == nil; j++ {
			c := j % total
			kc, i, n := clients[c/rep.NodesPerCluster], c/rep.NodesPerCluster, c%rep.NodesPerCluster
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d-%d", i, n)}}
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
				time.Now().UTC().Format(time.RFC3339))
			_ = kc.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
			_ = sleep(ctx, every)
		}
	}
	busy, err := e.providerCores(ctx, window, beat)
	if err != nil {
		return err
	}
	rep.IdleCores, rep.HeartbeatCores = idle, busy
	return nil
}

// providerCores is the provider's CPU over window, in cores, while load
// runs (nil: nothing).
func (e *env) providerCores(ctx context.Context, window time.Duration, load func(context.Context)) (float64, error) {
	before, err := procstat.Read(e.provider.Pid())
	if err != nil {
		return 0, err
	}
	lctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	if load != nil {
		go load(lctx)
	}
	<-lctx.Done()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	after, err := procstat.Read(e.provider.Pid())
	if err != nil {
		return 0, err
	}
	return (after.CPU - before.CPU).Seconds() / window.Seconds(), nil
}

// instancePolls inserts instances in three zones, half of them in pool
// batch, gives the provider an instance source over pool batch and counts
// the Compute calls it makes over several polls.
func (e *env) instancePolls(ctx context.Context, rep *fleetReport) error {
	svc, err := e.emu.NewService(ctx)
	if err != nil {
		return err
	}
	zones := []string{"us-central1-a", "us-central1-b", "europe-west1-b"}
	for i := range rep.Instances {
		pool := "batch"
		if i%2 == 1 {
			pool = "other"
		} else {
			rep.InstancesSelected++
		}
		in := &compute.Instance{Name: fmt.Sprintf("gke-pool-%d", i), MachineType: "zones/" + zones[i%3] + "/machineTypes/e2-medium",
			Labels: map[string]string{"goog-k8s-node-pool-name": pool},
			NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT", Name: "external-nat",
				NatIP: fmt.Sprintf("34.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)}}}}}
		if _, err := svc.Instances.Insert(project, zones[i%3], in).Context(ctx).Do(); err != nil {
			return fmt.Errorf("insert instance %d: %w", i, err)
		}
	}
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "instances"},
		Spec: v1alpha1.AddressSetSpec{ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
			Instances: &v1alpha1.InstanceSelector{MatchLabels: map[string]string{"goog-k8s-node-pool-name": "batch"}, PollSeconds: ptr.To(int32(benchPoll.Seconds()))}}}
	if err := e.kube.Create(ctx, as); err != nil {
		return err
	}
	want := rep.InstancesSelected
	if err := e.waitSet(ctx, "instances", func(s v1alpha1.AddressSetStatus) bool { return s.NodeCount == want && s.AddressCount == want }); err != nil {
		return err
	}
	const polls = 6
	before := e.emu.Stats().Methods["instances.aggregatedList"]
	if err := sleep(ctx, polls*benchPoll); err != nil {
		return err
	}
	rep.ListCalls = e.emu.Stats().Methods["instances.aggregatedList"] - before
	rep.Polls = polls
	rep.CallsPerPoll = float64(rep.ListCalls) / polls
	return nil
}

// heapInuse is the provider's Go heap in use after a collection, in MiB,
// from its pprof endpoint: steadier than its RSS, which the runtime returns
// to the system lazily.
func (e *env) heapInuse(ctx context.Context) (float64, error) {
	resp, err := get(ctx, http.DefaultClient, "http://"+e.pprof+"/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n / (1 << 20), err
		}
	}
	return 0, fmt.Errorf("no HeapInuse in the provider's heap profile")
}

// print writes the fleet table.
func (f *fleetReport) print(out io.Writer) {
	fmt.Fprintf(out, "\nRemote sources (%d remote clusters of %d Nodes, one AddressSet each, and an instance source)\n", f.Clusters, f.NodesPerCluster)
	if f.Err != "" {
		fmt.Fprintln(out, "  error:", f.Err)
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "figure\tvalue\n")
	fmt.Fprintf(w, "provider heap, no remote source\t%.1f MiB\n", f.HeapBaseMiB)
	fmt.Fprintf(w, "heap per remote cluster of %d Nodes\t%.2f MiB\n", f.NodesPerCluster, f.PerClusterMiB)
	fmt.Fprintf(w, "heap per remote cluster without Nodes\t%.2f MiB\n", f.EmptyClusterMiB)
	fmt.Fprintf(w, "heap per 1,000 remote Nodes\t%.2f MiB\n", f.PerThousandNodeMiB)
	fmt.Fprintf(w, "first remote cluster: AddressSet created to all %d Nodes counted\t%s\n", f.NodesPerCluster, f.FirstSync)
	fmt.Fprintf(w, "provider CPU, remote kubelets quiet\t%.3f cores\n", f.IdleCores)
	fmt.Fprintf(w, "provider CPU, %d remote Nodes reporting every %s (%.1f updates/s)\t%.3f cores\n", f.Clusters*f.NodesPerCluster, kubeletReportEvery, f.HeartbeatsPerSec, f.HeartbeatCores)
	fmt.Fprintf(w, "instance source: aggregatedList calls per poll (%d instances, %d selected, %.0f polls)\t%.2f\n", f.Instances, f.InstancesSelected, f.Polls, f.CallsPerPoll)
	perMinute := float64(f.NATSources) * f.NATReadsPerPoll * float64(time.Minute/natDefaultPoll)
	fmt.Fprintf(w, "NAT source: Compute reads per router per poll (%d sources)\t%.2f\n", f.NATSources, f.NATReadsPerPoll)
	fmt.Fprintf(w, "%d NAT sources at the default %s poll: reads a minute (default Compute read quota %d a minute per project)\t%.0f (%.0f%%)\n",
		f.NATSources, natDefaultPoll, computeReadQuota, perMinute, 100*perMinute/computeReadQuota)
	_ = w.Flush()
}

// natDefaultPoll is a NAT source's default pollSeconds; computeReadQuota the
// default "Read requests" per minute and project of Compute Engine's rate
// quotas (ReadRequestsPerMinutePerProject, Google's Compute Engine API rate
// limits page).
const (
	natDefaultPoll   = 30 * time.Second
	natBenchSources  = 100
	computeReadQuota = 1500
)

// natPolls seeds natBenchSources Cloud Routers with one AUTO_ONLY NAT each,
// gives the provider one NAT source per router and counts the Compute calls
// they make over several polls.
func (e *env) natPolls(ctx context.Context, rep *fleetReport) error {
	const region = "us-central1"
	for i := range natBenchSources {
		name := fmt.Sprintf("egress-%d", i)
		r := &compute.Router{Name: name, Network: fmt.Sprintf("global/networks/vpc-%d", i),
			Nats: []*compute.RouterNat{{Name: "nat", NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"}}}
		if err := e.emu.SeedRouter(project, region, r, map[string]int{"nat": 2}); err != nil {
			return fmt.Errorf("seed router %s: %w", name, err)
		}
		as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "nat-" + name},
			Spec: v1alpha1.AddressSetSpec{ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
				NAT: &v1alpha1.NATSelector{Region: region, Router: name, PollSeconds: ptr.To(int32(benchPoll.Seconds()))}}}
		if err := e.kube.Create(ctx, as); err != nil {
			return err
		}
	}
	for i := range natBenchSources {
		if err := e.waitSet(ctx, fmt.Sprintf("nat-egress-%d", i), func(s v1alpha1.AddressSetStatus) bool { return s.AddressCount == 2 }); err != nil {
			return err
		}
	}
	const polls = 6
	reads := func() int64 {
		m := e.emu.Stats().Methods
		return m["routers.getRouterStatus"] + m["routers.list"] + m["routers.get"]
	}
	before := reads()
	if err := sleep(ctx, polls*benchPoll); err != nil {
		return err
	}
	rep.NATSources = natBenchSources
	rep.NATReadsPerPoll = float64(reads()-before) / polls / natBenchSources
	return nil
}
