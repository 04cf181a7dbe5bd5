package addressset

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

var samePrefix = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func TestCollectInstances(t *testing.T) {
	p := netip.MustParsePrefix
	run := func(zone, name string, ext, in []netip.Prefix) gcp.Instance {
		return gcp.Instance{Name: name, Zone: zone, Status: gcp.StatusRunning, External: ext, Internal: in}
	}
	cases := map[string]struct {
		in       []gcp.Instance
		internal bool
		want     Collected
	}{
		"ExternalOnly": {
			in: []gcp.Instance{
				run("us-central1-b", "b", []netip.Prefix{p("203.0.113.2/32")}, []netip.Prefix{p("10.0.0.2/32")}),
				run("us-central1-a", "a", []netip.Prefix{p("2600:1900::/96"), p("203.0.113.1/32")}, nil),
			},
			want: Collected{Nodes: 2, Addresses: []netip.Prefix{p("203.0.113.1/32"), p("203.0.113.2/32"), p("2600:1900::/96")}},
		},
		"WithInternal": {
			in:       []gcp.Instance{run("z", "a", []netip.Prefix{p("203.0.113.1/32")}, []netip.Prefix{p("10.0.0.1/32")})},
			internal: true,
			want:     Collected{Nodes: 1, Addresses: []netip.Prefix{p("10.0.0.1/32"), p("203.0.113.1/32")}},
		},
		"SharedAddressOnce": {
			in:   []gcp.Instance{run("z", "a", []netip.Prefix{p("203.0.113.1/32")}, nil), run("z", "b", []netip.Prefix{p("203.0.113.1/32")}, nil)},
			want: Collected{Nodes: 2, Addresses: []netip.Prefix{p("203.0.113.1/32")}},
		},
		"NotRunningSkipped": {
			in: []gcp.Instance{
				{Name: "stopping", Zone: "z", Status: "STOPPING", External: []netip.Prefix{p("203.0.113.9/32")}},
				{Name: "gone", Zone: "z", Status: "TERMINATED"},
				run("z", "up", []netip.Prefix{p("203.0.113.1/32")}, nil),
			},
			want: Collected{Nodes: 3, Addresses: []netip.Prefix{p("203.0.113.1/32")}, Skipped: []v1alpha1.SkippedNode{
				{Name: "z/gone", Reason: "status TERMINATED: not RUNNING, no address in use"},
				{Name: "z/stopping", Reason: "status STOPPING: not RUNNING, no address in use"},
			}},
		},
		"NoExternalSkipped": {
			in: []gcp.Instance{run("z", "private", nil, []netip.Prefix{p("10.0.0.1/32")})},
			want: Collected{Nodes: 1, Skipped: []v1alpha1.SkippedNode{
				{Name: "z/private", Reason: "no external address (accessConfigs natIP or ipv6AccessConfigs externalIpv6)"}}},
		},
		"NoAddressAtAll": {
			in:       []gcp.Instance{run("z", "none", nil, nil)},
			internal: true,
			want:     Collected{Nodes: 1, Skipped: []v1alpha1.SkippedNode{{Name: "z/none", Reason: "no external or internal address"}}},
		},
		"InvalidSkipped": {
			in:   []gcp.Instance{{Name: "bad", Zone: "z", Status: gcp.StatusRunning, External: []netip.Prefix{p("203.0.113.1/32")}, Invalid: []string{`natIP "x"`}}},
			want: Collected{Nodes: 1, Skipped: []v1alpha1.SkippedNode{{Name: "z/bad", Reason: `invalid address: natIP "x"`}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CollectInstances(tc.in, tc.internal), samePrefix, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("CollectInstances: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestKeepUnreachable(t *testing.T) {
	a := gcp.Instance{Name: "a", Zone: "us-central1-a"}
	b := gcp.Instance{Name: "b", Zone: "us-central1-b"}
	b2 := gcp.Instance{Name: "b2", Zone: "us-central1-b"}
	before := map[string][]gcp.Instance{"zones/us-central1-a": {a}, "zones/us-central1-b": {b}}
	cases := map[string]struct {
		got  gcp.Instances
		want map[string][]gcp.Instance
	}{
		"AllAnswered":   {gcp.Instances{Items: []gcp.Instance{b2}}, map[string][]gcp.Instance{"zones/us-central1-b": {b2}}},
		"ZoneKept":      {gcp.Instances{Items: []gcp.Instance{b2}, Unreachable: []string{"zones/us-central1-a"}}, map[string][]gcp.Instance{"zones/us-central1-a": {a}, "zones/us-central1-b": {b2}}},
		"NothingBefore": {gcp.Instances{Unreachable: []string{"zones/europe-west1-b"}}, map[string][]gcp.Instance{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, keepUnreachable(tc.got, before), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keepUnreachable: -want, +got:\n%s", diff)
			}
		})
	}
}

// instanceSetOf is an AddressSet that selects pool=a instances of the
// emulator's project p, polled every 30 s.
func instanceSetOf(name string) *v1alpha1.AddressSet {
	return &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: v1alpha1.AddressSetSpec{
			Instances:         &v1alpha1.InstanceSelector{MatchLabels: map[string]string{"pool": "a"}, PollSeconds: ptr.To[int32](30)},
			ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
		}}
}

func insertInstance(t *testing.T, svc *compute.Service, zone, name, pool, natIP string) {
	t.Helper()
	i := &compute.Instance{Name: name, MachineType: "e2-small", Labels: map[string]string{"pool": pool},
		NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{NatIP: natIP}}}}}
	if _, err := svc.Instances.Insert("p", zone, i).Do(); err != nil {
		t.Fatal(err)
	}
}

// TestInstancesReader reads instances from the emulator through the
// official client on a fake clock: exactly one aggregatedList per poll,
// none between polls, the last addresses held through an outage, which
// is reported from its first failure, and recovery on the next poll.
func TestInstancesReader(t *testing.T) {
	ctx := context.Background()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := gcp.NewCallCounter()
	c := gcp.NewClient(svc, nil, nil, gcp.WithCallCounter(calls))
	connects := 0
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		connects++
		return c.Instances(), "p", nil
	}, func() time.Time { return now })
	as := instanceSetOf("web")
	insertInstance(t, svc, "us-central1-a", "a1", "a", "203.0.113.1")
	insertInstance(t, svc, "us-central1-b", "b1", "b", "203.0.113.2")

	lists := func() int64 { return em.Stats().Methods["instances.aggregatedList"] }
	type read struct {
		Addresses []string
		Nodes     int
		After     time.Duration
		Err       string
		Lists     int64
	}
	look := func() read {
		before := lists()
		got, after, err := r.Read(ctx, as)
		out := read{Nodes: got.Nodes, After: after, Lists: lists() - before}
		for _, p := range got.Addresses {
			out.Addresses = append(out.Addresses, p.String())
		}
		if err != nil {
			out.Err = err.Error()
		}
		return out
	}
	step := func(what string, d time.Duration, want read) {
		t.Helper()
		now = now.Add(d)
		if diff := cmp.Diff(want, look()); diff != "" {
			t.Errorf("%s: -want, +got:\n%s", what, diff)
		}
	}

	step("first read polls", 0, read{Addresses: []string{"203.0.113.1/32"}, Nodes: 1, After: 30 * time.Second, Lists: 1})
	insertInstance(t, svc, "europe-west1-b", "a2", "a", "203.0.113.3")
	step("between polls: memory, no call", 10*time.Second, read{Addresses: []string{"203.0.113.1/32"}, Nodes: 1, After: 20 * time.Second})
	step("just before the poll", 19*time.Second, read{Addresses: []string{"203.0.113.1/32"}, Nodes: 1, After: time.Second})
	step("the poll sees the new instance", time.Second, read{Addresses: []string{"203.0.113.1/32", "203.0.113.3/32"}, Nodes: 2, After: 30 * time.Second, Lists: 1})

	if err := em.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"instances.aggregatedList": {ErrorRate: 1, ErrorCodes: []int{503}}}}); err != nil {
		t.Fatal(err)
	}
	since := now.Add(30 * time.Second)
	unreadable := "cannot read the instances of project p labelled pool=a since " + since.Format(time.RFC3339) +
		": googleapi: Error 503: The service is currently unavailable., backendError; the addresses shown are the last known"
	step("an outage is Unreadable", 30*time.Second, read{After: 30 * time.Second, Err: unreadable, Lists: 1})
	_, _, err = r.Read(ctx, as)
	var u *Unreadable
	if !errors.As(err, &u) || !u.Since.Equal(since) || u.After != 30*time.Second {
		t.Errorf("Unreadable: want since %s, after 30s, got %#v", since, err)
	}
	step("between polls of an outage: no call", 15*time.Second, read{After: 15 * time.Second, Err: unreadable})
	step("still out: since its first failure", 15*time.Second, read{After: 30 * time.Second, Err: unreadable, Lists: 1})

	if err := em.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Instances.Delete("p", "us-central1-a", "a1").Do(); err != nil {
		t.Fatal(err)
	}
	step("recovers by itself on the next poll", 30*time.Second, read{Addresses: []string{"203.0.113.3/32"}, Nodes: 1, After: 30 * time.Second, Lists: 1})

	as.Spec.Instances.MatchLabels = map[string]string{"pool": "b"}
	step("a new selector polls at once", time.Second, read{Addresses: []string{"203.0.113.2/32"}, Nodes: 1, After: 30 * time.Second, Lists: 1})
	r.Forget(types.NamespacedName{Namespace: "team", Name: "web"})
	step("forgotten: polls again", time.Second, read{Addresses: []string{"203.0.113.2/32"}, Nodes: 1, After: 30 * time.Second, Lists: 1})

	if n := calls.Count(gcp.MethodInstanceAggregatedList); n != 7 || connects != 7 {
		t.Errorf("7 polls: want 7 aggregatedList calls and connections, got %d calls, %d connections", n, connects)
	}
}

// TestInstancesReaderProject: the selector's project wins over the
// ProviderConfig's.
func TestInstancesReaderProject(t *testing.T) {
	ctx := context.Background()
	em := emulator.Start(t, emulator.Options{})
	svc, _ := em.NewService(ctx)
	c := gcp.NewClient(svc, nil, nil)
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		return c.Instances(), "config-project", nil
	}, time.Now)
	insertInstance(t, svc, "us-central1-a", "a1", "a", "203.0.113.1")
	as := instanceSetOf("web")
	if got, _, err := r.Read(ctx, as); err != nil || got.Nodes != 0 {
		t.Errorf("the config's project has no instances: got %+v, %v", got, err)
	}
	as.Spec.Instances.Project = "p"
	if got, _, err := r.Read(ctx, as); err != nil || got.Nodes != 1 {
		t.Errorf("spec.instances.project p: want its instance, got %+v, %v", got, err)
	}
	as.Spec.ProviderConfigRef = nil
	if _, _, err := r.Read(ctx, as); err == nil || err.Error() != errNoConfigRef {
		t.Errorf("no providerConfigRef: want %q, got %v", errNoConfigRef, err)
	}
}

// TestInstancesReaderConfigRefused: a ProviderConfig that cannot be used
// (one that does not admit the namespace) is Unreadable, naming why, so the
// allowlist says so instead of waiting for a set that never reports; and it
// is asked again only after a poll interval.
func TestInstancesReaderConfigRefused(t *testing.T) {
	refused := errors.New(`ClusterProviderConfig "tenant-a-only" does not admit namespace "tenant-b"`)
	connects := 0
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		connects++
		return nil, "", refused
	}, func() time.Time { return time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC) })
	for range 2 {
		_, after, err := r.Read(context.Background(), instanceSetOf("web"))
		var u *Unreadable
		if !errors.As(err, &u) || !errors.Is(err, refused) || u.Source != "the instances labelled pool=a" || after != 30*time.Second {
			t.Errorf("a refused ProviderConfig: want Unreadable naming it, again in 30s; got %v, again in %s", err, after)
		}
	}
	if connects != 1 {
		t.Errorf("two reads within a poll: want one connection, got %d", connects)
	}
}

// TestInstancesReaderTimeout: a list slower than the reader's timeout is
// an outage, so a slow project does not hold up the controller's worker.
func TestInstancesReaderTimeout(t *testing.T) {
	ctx := context.Background()
	em := emulator.Start(t, emulator.Options{})
	svc, _ := em.NewService(ctx)
	c := gcp.NewClient(svc, nil, nil)
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		return c.Instances(), "p", nil
	}, time.Now)
	r.timeout = 100 * time.Millisecond
	if err := em.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"instances.aggregatedList": {Latency: emulator.Duration(2 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := r.Read(ctx, instanceSetOf("slow"))
	var u *Unreadable
	if !errors.As(err, &u) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("a list slower than the timeout: want Unreadable (deadline exceeded) within about 100ms, got %v after %s", err, time.Since(start))
	}
}

// TestInstancesReaderUnreachableZone: the instances of a zone GCP cannot
// list for a while are kept, even one deleted meanwhile, until the zone
// answers again.
func TestInstancesReaderUnreachableZone(t *testing.T) {
	ctx := context.Background()
	em := emulator.Start(t, emulator.Options{})
	svc, _ := em.NewService(ctx)
	c := gcp.NewClient(svc, nil, nil)
	now := time.Now()
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		return c.Instances(), "p", nil
	}, func() time.Time { return now })
	insertInstance(t, svc, "us-central1-a", "a1", "a", "203.0.113.1")
	insertInstance(t, svc, "us-central1-b", "b1", "a", "203.0.113.2")
	as := instanceSetOf("web")
	addresses := func() []string {
		t.Helper()
		now = now.Add(time.Minute)
		got, _, err := r.Read(ctx, as)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range got.Addresses {
			out = append(out, p.String())
		}
		return out
	}
	both := []string{"203.0.113.1/32", "203.0.113.2/32"}
	if diff := cmp.Diff(both, addresses()); diff != "" {
		t.Fatalf("both zones: -want, +got:\n%s", diff)
	}
	em.SetUnreachableZones("us-central1-a")
	if _, err := svc.Instances.Delete("p", "us-central1-a", "a1").Do(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(both, addresses()); diff != "" {
		t.Errorf("us-central1-a unreachable: its instance kept, -want, +got:\n%s", diff)
	}
	em.SetUnreachableZones()
	if diff := cmp.Diff([]string{"203.0.113.2/32"}, addresses()); diff != "" {
		t.Errorf("us-central1-a back: its deleted instance gone, -want, +got:\n%s", diff)
	}
}

// slowLister answers a list once released.
type slowLister struct {
	release chan struct{}
	got     gcp.Instances
}

func (l *slowLister) List(ctx context.Context, _ string, _ map[string]string) (gcp.Instances, error) {
	select {
	case <-l.release:
		return l.got, nil
	case <-ctx.Done():
		return gcp.Instances{}, ctx.Err()
	}
}

// TestInstancesPolledInBackground checks that a poll runs outside the
// reconcile: Read returns at once (Pending before the first answer, the
// last answer while a later poll runs), and the poll's end wakes the set.
func TestInstancesPolledInBackground(t *testing.T) {
	l := &slowLister{release: make(chan struct{}), got: gcp.Instances{Items: []gcp.Instance{
		{Name: "a", Zone: "z", Status: gcp.StatusRunning, External: []netip.Prefix{netip.MustParsePrefix("203.0.113.1/32")}}}}}
	woken := make(chan types.NamespacedName, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newInstanceReader(func(context.Context, *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) { return l, "p", nil }, time.Now)
	r.ctx, r.wake = ctx, func(k types.NamespacedName) { woken <- k }
	as := instanceSetOf("web")

	start := time.Now()
	_, _, err := r.Read(ctx, as)
	var pending *Pending
	if !errors.As(err, &pending) || time.Since(start) > time.Second {
		t.Fatalf("the first Read while the poll runs: want Pending at once, got %v after %s", err, time.Since(start))
	}
	close(l.release)
	select {
	case k := <-woken:
		if k.Name != "web" {
			t.Errorf("the poll woke %s, not the set", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the poll's end did not wake the set")
	}
	got, _, err := r.Read(ctx, as)
	if err != nil || got.Nodes != 1 {
		t.Errorf("after the poll: want its one instance, got %+v, %v", got, err)
	}
}
