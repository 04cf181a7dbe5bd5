//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/test/framework/fakekube"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
)

// fleetSimReport is what reading many remote clusters costs the provider,
// the clusters simulated by one fake API server (test/framework/fakekube)
// of realistic GKE Nodes: its resident memory at peak and once synced, and
// its CPU for the first sync and while the kubelets report, each also per
// 1,000 remote Nodes.
type fleetSimReport struct {
	Clusters        int `json:"clusters"`
	NodesPerCluster int `json:"nodesPerCluster"`
	Namespaces      int `json:"namespaces"`
	// NodeBytes is the JSON size of one simulated Node.
	NodeBytes int `json:"nodeBytes"`
	// BaseRSSMiB is the provider's resident memory before any remote
	// source; SyncedRSSMiB once every set counts all its Nodes; PeakRSSMiB
	// its high-water mark (VmHWM) at the end of the run.
	BaseRSSMiB   float64 `json:"baseRSSMiB"`
	SyncedRSSMiB float64 `json:"syncedRSSMiB"`
	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	// PeakPerThousandMiB and SyncedPerThousandMiB are the growth over the
	// base per 1,000 remote Nodes.
	PeakPerThousandMiB float64 `json:"peakRSSPerThousandNodesMiB"`
	// BaseHeapMiB and SyncedHeapMiB are the Go heap in use after a
	// collection (what the provider keeps; the RSS adds the garbage of
	// the first lists, which the runtime returns lazily).
	BaseHeapMiB          float64 `json:"baseHeapMiB"`
	SyncedHeapMiB        float64 `json:"syncedHeapMiB"`
	HeapPerThousandMiB   float64 `json:"heapPerThousandNodesMiB"`
	SyncedPerThousandMiB float64 `json:"syncedRSSPerThousandNodesMiB"`
	// FirstSync is from the AddressSets' creation (all at once) to every
	// one counting all its Nodes; SyncCPUSeconds the provider's CPU over it.
	FirstSync               string  `json:"firstSync"`
	SyncCPUSeconds          float64 `json:"syncCPUSeconds"`
	SyncCPUPerThousandMilli float64 `json:"syncCPUPerThousandNodesMilliseconds"`
	// Heartbeats: every Node's status written once per HeartbeatPeriod,
	// over Window; IdleCores over the same window without them.
	HeartbeatPeriod         string  `json:"heartbeatPeriod"`
	Window                  string  `json:"window"`
	HeartbeatsPerSec        float64 `json:"heartbeatsPerSecond"`
	IdleCores               float64 `json:"idleCores"`
	HeartbeatCores          float64 `json:"heartbeatCores"`
	HeartbeatMilliPerThousd float64 `json:"heartbeatMillicoresPerThousandNodes"`
	// What the fake API server answered.
	Lists   int64  `json:"lists"`
	Watches int64  `json:"watches"`
	Events  int64  `json:"events"`
	Err     string `json:"error,omitempty"`
}

// simToken is the bearer token of the simulated clusters' kubeconfigs.
const simToken = "fleet-sim-token"

// simLabel marks the simulated fleet's AddressSets.
const simLabel = "bench.armorplane.io/fleet-sim"

// runFleetSim measures the provider reading cfg.simClusters simulated
// remote clusters of cfg.simNodes Nodes: one AddressSet per cluster, its
// kubeconfig Secret beside it, cfg.simPerNamespace clusters per namespace
// (within the provider's bound on remote clusters per namespace).
func runFleetSim(ctx context.Context, cfg config, bin string) (*fleetSimReport, error) {
	k, n := cfg.simClusters, cfg.simNodes
	rep := &fleetSimReport{Clusters: k, NodesPerCluster: n, Namespaces: (k + cfg.simPerNamespace - 1) / cfg.simPerNamespace,
		HeartbeatPeriod: cfg.simBeat.String(), Window: cfg.simWindow.String()}
	fk, err := fakekube.Start(fakekube.Options{Clusters: k, Nodes: n, Token: simToken})
	if err != nil {
		return rep, err
	}
	defer fk.Close()
	rep.NodeBytes = len(fk.NodeJSON(0, 0))
	c := cfg
	c.profile = true // the live heap is read from the provider's pprof endpoint
	e, err := start(ctx, c, bin, scenario{Name: "fleet-sim", Poll: cfg.poll, SteadyPolls: 1}, "fleet-sim")
	if e != nil {
		defer e.close()
	}
	if err != nil {
		return rep, err
	}
	// Let the provider start its controllers before the base is read.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return rep, err
	}
	base, err := procstat.Read(e.provider.Pid())
	if err != nil {
		return rep, err
	}
	rep.BaseRSSMiB = mib(base.RSSKiB)
	if rep.BaseHeapMiB, err = e.heapInuse(ctx); err != nil {
		return rep, err
	}

	var sets []client.Object
	for ns := range rep.Namespaces {
		o := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fleet-%d", ns)}}
		if err := e.kube.Create(ctx, o); err != nil {
			return rep, err
		}
	}
	for i := range k {
		ns, name := fmt.Sprintf("fleet-%d", i/cfg.simPerNamespace), fmt.Sprintf("cluster-%d", i)
		kc, err := fk.Kubeconfig(i)
		if err != nil {
			return rep, err
		}
		sets = append(sets,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": kc}},
			&v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{simLabel: "true"}},
				Spec: v1alpha1.AddressSetSpec{ShrinkHoldSeconds: ptr.To[int32](0), Nodes: &v1alpha1.NodeSelector{
					MatchLabels: map[string]string{"cloud.google.com/gke-nodepool": "default-pool"},
					Cluster:     &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: name, Key: "kubeconfig"}, Identity: v1alpha1.IdentityKubeconfig}}}})
	}
	// Every set at once, as after a provider restart.
	began := time.Now()
	for _, o := range sets {
		if err := e.kube.Create(ctx, o); err != nil {
			return rep, err
		}
	}
	if err := e.waitFleet(ctx, cfg.timeout, k, n); err != nil {
		return rep, err
	}
	rep.FirstSync = time.Since(began).Round(time.Millisecond).String()
	synced, err := procstat.Read(e.provider.Pid())
	if err != nil {
		return rep, err
	}
	thousands := float64(k*n) / 1000
	rep.SyncedRSSMiB = mib(synced.RSSKiB)
	rep.SyncCPUSeconds = (synced.CPU - base.CPU).Seconds()
	if rep.SyncedHeapMiB, err = e.heapInuse(ctx); err != nil {
		return rep, err
	}
	fmt.Fprintf(os.Stderr, "   %d simulated clusters of %d Nodes synced in %s: RSS %.0f MiB (peak %.0f), %.1f CPU seconds\n",
		k, n, rep.FirstSync, rep.SyncedRSSMiB, mib(synced.HWMKiB), rep.SyncCPUSeconds)

	if rep.IdleCores, err = e.providerCores(ctx, cfg.simWindow, nil); err != nil {
		return rep, err
	}
	rep.HeartbeatsPerSec = float64(k*n) / cfg.simBeat.Seconds()
	if rep.HeartbeatCores, err = e.providerCores(ctx, cfg.simWindow, func(ctx context.Context) { fk.Heartbeats(ctx, cfg.simBeat) }); err != nil {
		return rep, err
	}
	// Still every Node counted: the heartbeats changed no address.
	if err := e.waitFleet(ctx, time.Minute, k, n); err != nil {
		return rep, fmt.Errorf("after the heartbeats: %w", err)
	}
	end, err := procstat.Read(e.provider.Pid())
	if err != nil {
		return rep, err
	}
	rep.PeakRSSMiB = mib(end.HWMKiB)
	if thousands > 0 {
		rep.PeakPerThousandMiB = (rep.PeakRSSMiB - rep.BaseRSSMiB) / thousands
		rep.SyncedPerThousandMiB = (rep.SyncedRSSMiB - rep.BaseRSSMiB) / thousands
		rep.HeapPerThousandMiB = (rep.SyncedHeapMiB - rep.BaseHeapMiB) / thousands
		rep.SyncCPUPerThousandMilli = rep.SyncCPUSeconds * 1000 / thousands
		rep.HeartbeatMilliPerThousd = rep.HeartbeatCores * 1000 / thousands
	}
	st := fk.Stats()
	rep.Lists, rep.Watches, rep.Events = st.Lists, st.Watches, st.Events
	return rep, nil
}

// waitFleet waits until all k simulated sets count their n Nodes and are
// Ready.
func (e *env) waitFleet(ctx context.Context, timeout time.Duration, k, n int) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := 0
	for {
		l := &v1alpha1.AddressSetList{}
		if err := e.kube.List(ctx, l, client.HasLabels{simLabel}); err == nil {
			done = 0
			for _, s := range l.Items {
				if s.Status.NodeCount == n && readyTrue(s.Status.Conditions) {
					done++
				}
			}
			if done == k {
				return nil
			}
		}
		if err := e.alive(); err != nil {
			return err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("%d of %d simulated clusters synced: %w", done, k, err)
		}
	}
}

// print writes the simulated fleet's table.
func (f *fleetSimReport) print(out io.Writer) {
	fmt.Fprintf(out, "\nRemote sources, simulated (%d remote clusters of %d GKE Nodes of %.1f KB, one fake API server, one AddressSet each over %d namespaces)\n",
		f.Clusters, f.NodesPerCluster, float64(f.NodeBytes)/1000, f.Namespaces)
	if f.Err != "" {
		fmt.Fprintln(out, "  error:", f.Err)
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "figure\tvalue\tper 1,000 remote Nodes\n")
	fmt.Fprintf(w, "provider RSS, no remote source\t%.0f MiB\t\n", f.BaseRSSMiB)
	fmt.Fprintf(w, "provider RSS, every Node counted\t%.0f MiB\t%.2f MiB\n", f.SyncedRSSMiB, f.SyncedPerThousandMiB)
	fmt.Fprintf(w, "provider peak RSS (VmHWM)\t%.0f MiB\t%.2f MiB\n", f.PeakRSSMiB, f.PeakPerThousandMiB)
	fmt.Fprintf(w, "provider heap in use after a collection, no remote source\t%.1f MiB\t\n", f.BaseHeapMiB)
	fmt.Fprintf(w, "provider heap in use after a collection, every Node counted\t%.1f MiB\t%.2f MiB\n", f.SyncedHeapMiB, f.HeapPerThousandMiB)
	fmt.Fprintf(w, "first sync, all AddressSets at once\t%s\t\n", f.FirstSync)
	fmt.Fprintf(w, "provider CPU over the first sync\t%.1f s\t%.0f ms\n", f.SyncCPUSeconds, f.SyncCPUPerThousandMilli)
	fmt.Fprintf(w, "provider CPU, kubelets quiet (%s)\t%.3f cores\t\n", f.Window, f.IdleCores)
	fmt.Fprintf(w, "provider CPU, every Node's status every %s (%.0f updates/s, %s)\t%.3f cores\t%.1f millicores\n",
		f.HeartbeatPeriod, f.HeartbeatsPerSec, f.Window, f.HeartbeatCores, f.HeartbeatMilliPerThousd)
	fmt.Fprintf(w, "fake API server: lists, watches, watch events\t%d, %d, %d\t\n", f.Lists, f.Watches, f.Events)
	_ = w.Flush()
}
