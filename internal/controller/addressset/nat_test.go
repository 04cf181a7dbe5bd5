package addressset

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
)

var errBoom = errors.New("boom")

// hosts are host prefixes of addresses.
func hosts(addrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(addrs))
	for i, a := range addrs {
		ip := netip.MustParseAddr(a)
		out[i] = netip.PrefixFrom(ip, ip.BitLen())
	}
	return out
}

func TestCollectNATs(t *testing.T) {
	egress := gcp.NAT{Name: "egress-nat", Active: hosts("203.0.113.1", "203.0.113.2"), Draining: hosts("203.0.113.3")}
	other := gcp.NAT{Name: "other", Active: hosts("198.51.100.1")}
	cases := map[string]struct {
		reason  string
		routers map[string][]gcp.NAT
		only    string
		want    Collected
	}{
		"ActiveAndDraining": {
			reason:  "Every NAT of the router, its draining addresses included: they still carry connections.",
			routers: map[string][]gcp.NAT{"us-central1/egress": {egress, other}},
			want:    Collected{Nodes: 2, Addresses: hosts("198.51.100.1", "203.0.113.1", "203.0.113.2", "203.0.113.3")},
		},
		"OneNAT": {
			reason:  "A named NAT alone.",
			routers: map[string][]gcp.NAT{"us-central1/egress": {egress, other}},
			only:    "other",
			want:    Collected{Nodes: 1, Addresses: hosts("198.51.100.1")},
		},
		"NamedNATMissing": {
			reason:  "A named NAT the router does not report is skipped, saying so.",
			routers: map[string][]gcp.NAT{"us-central1/egress": {other}},
			only:    "egress-nat",
			want: Collected{Skipped: []v1alpha1.SkippedNode{
				{Name: "us-central1/egress/egress-nat", Reason: "the router reports no NAT of that name"}}},
		},
		"NoAddress": {
			reason:  "A NAT without any address is skipped, saying so.",
			routers: map[string][]gcp.NAT{"us-central1/egress": {{Name: "idle"}}},
			want: Collected{Nodes: 1, Skipped: []v1alpha1.SkippedNode{
				{Name: "us-central1/egress/idle", Reason: "no address: the NAT reports none allocated or draining"}}},
		},
		"NeedsMore": {
			reason:  "minExtraNatIpsNeeded is a warning; the NAT's addresses are kept.",
			routers: map[string][]gcp.NAT{"europe-west1/r": {{Name: "n", Active: hosts("203.0.113.9"), MinExtraIPsNeeded: 2}}},
			want: Collected{Nodes: 1, Addresses: hosts("203.0.113.9"), Warnings: []string{
				"Cloud NAT europe-west1/r/n needs 2 more address(es) (minExtraNatIpsNeeded): some VMs get no NAT ports and cannot connect out; add addresses or let it allocate them"}},
		},
		"Invalid": {
			reason:  "An address that does not parse is a warning; the others are kept.",
			routers: map[string][]gcp.NAT{"us-central1/r": {{Name: "n", Active: hosts("203.0.113.9"), Invalid: []string{`autoAllocatedNatIps "x"`}}}},
			want: Collected{Nodes: 1, Addresses: hosts("203.0.113.9"), Warnings: []string{
				`Cloud NAT us-central1/r/n: invalid address left out: autoAllocatedNatIps "x"`}},
		},
		"SharedOnce": {
			reason:  "Routers of two regions, an address moved between NATs counted once.",
			routers: map[string][]gcp.NAT{"us-central1/a": {egress}, "us-east1/b": {{Name: "x", Draining: hosts("203.0.113.1")}}},
			want:    Collected{Nodes: 2, Addresses: hosts("203.0.113.1", "203.0.113.2", "203.0.113.3")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CollectNATs(tc.routers, tc.only), samePrefix, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nCollectNATs(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestKeepUnread(t *testing.T) {
	a := []gcp.NAT{{Name: "a"}}
	b := []gcp.NAT{{Name: "b"}}
	before := map[string][]gcp.NAT{"us-central1/r1": a, "us-east1/r2": b}
	cases := map[string]struct {
		reason string
		poll   natPoll
		want   map[string][]gcp.NAT
	}{
		"NotConnected": {reason: "Nothing asked: everything stands.", poll: natPoll{}, want: before},
		"AllRead": {reason: "What was read replaces what was; a router no longer listed is gone.",
			poll: natPoll{connected: true, read: map[string][]gcp.NAT{"us-central1/r1": b}},
			want: map[string][]gcp.NAT{"us-central1/r1": b}},
		"RouterUnread": {reason: "A router that did not answer keeps its NATs.",
			poll: natPoll{connected: true, read: map[string][]gcp.NAT{"us-central1/r1": b}, unread: []string{"us-east1/r2"}},
			want: map[string][]gcp.NAT{"us-central1/r1": b, "us-east1/r2": b}},
		"RegionUnlisted": {reason: "The routers of a region that could not be listed keep theirs.",
			poll: natPoll{connected: true, read: map[string][]gcp.NAT{}, unlisted: []string{"us-central1"}},
			want: map[string][]gcp.NAT{"us-central1/r1": a}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, keepUnread(tc.poll, before), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nkeepUnread(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// fakeNATs is a gcp.NATClient of canned answers, counting its calls.
type fakeNATs struct {
	RoutersFn func(region string) ([]string, error)
	NATsFn    func(region, router string) ([]gcp.NAT, error)
	lists     int
	statuses  int
}

func (f *fakeNATs) Routers(_ context.Context, _, region, _ string) ([]string, error) {
	f.lists++
	return f.RoutersFn(region)
}

func (f *fakeNATs) NATs(_ context.Context, _, region, router string) ([]gcp.NAT, error) {
	f.statuses++
	return f.NATsFn(region, router)
}

// natSetOf is an AddressSet that reads router us-central1/egress, polled
// every 30 s.
func natSetOf(name string) *v1alpha1.AddressSet {
	return &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: v1alpha1.AddressSetSpec{
			NAT:               &v1alpha1.NATSelector{Region: "us-central1", Router: "egress", PollSeconds: ptr.To[int32](30)},
			ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
		}}
}

// natRead is one Read, as a test compares it.
type natRead struct {
	Addresses []string
	Warnings  []string
	Read      []string // Unreadable.Read's addresses
	After     time.Duration
	Err       string
	Calls     int
}

// readNATs reads as with r, counting f's calls.
func readNATs(r *nats, f *fakeNATs, as *v1alpha1.AddressSet) natRead {
	before := f.lists + f.statuses
	got, after, err := r.Read(context.Background(), as)
	out := natRead{After: after, Calls: f.lists + f.statuses - before, Warnings: got.Warnings}
	for _, p := range got.Addresses {
		out.Addresses = append(out.Addresses, p.String())
	}
	var u *Unreadable
	if errors.As(err, &u) && u.Read != nil {
		for _, p := range u.Read.Addresses {
			out.Read = append(out.Read, p.String())
		}
	}
	if err != nil {
		out.Err = err.Error()
	}
	return out
}

// TestNATReader reads one router on a fake clock: one getRouterStatus per
// poll, none between polls, draining addresses kept until GCP stops
// reporting them, a warning for a NAT short of addresses, the last
// addresses held through an outage (reported from its first failure), and
// recovery on the next poll.
func TestNATReader(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	status := []gcp.NAT{{Name: "egress-nat", Active: hosts("203.0.113.1")}}
	var statusErr error
	f := &fakeNATs{NATsFn: func(region, router string) ([]gcp.NAT, error) {
		if region != "us-central1" || router != "egress" {
			return nil, errors.New("unexpected router " + region + "/" + router)
		}
		return status, statusErr
	}}
	r := newNATReader(func(context.Context, *v1alpha1.AddressSet) (gcp.NATClient, string, error) { return f, "p", nil },
		func() time.Time { return now })
	as := natSetOf("egress")
	since := now.Add(90 * time.Second)
	unreadable := "cannot read the Cloud NAT of router us-central1/egress of project p since " + since.Format(time.RFC3339) +
		": router us-central1/egress: boom; the addresses shown are the last known"

	steps := []struct {
		reason string
		at     time.Duration
		status []gcp.NAT
		err    error
		want   natRead
	}{
		{reason: "The first read polls.", want: natRead{Addresses: []string{"203.0.113.1/32"}, After: 30 * time.Second, Calls: 1}},
		{reason: "Between polls: memory, no call.", at: 10 * time.Second,
			status: []gcp.NAT{{Name: "egress-nat", Active: hosts("203.0.113.2"), Draining: hosts("203.0.113.1")}},
			want:   natRead{Addresses: []string{"203.0.113.1/32"}, After: 20 * time.Second}},
		{reason: "The poll sees the new address, and the old one draining.", at: 30 * time.Second,
			want: natRead{Addresses: []string{"203.0.113.1/32", "203.0.113.2/32"}, After: 30 * time.Second, Calls: 1}},
		{reason: "A router that cannot be read is Unreadable; nothing read, nothing added.", at: 90 * time.Second, err: errBoom,
			want: natRead{After: 30 * time.Second, Err: unreadable, Calls: 1}},
		{reason: "Still out: since its first failure.", at: 120 * time.Second, err: errBoom,
			want: natRead{After: 30 * time.Second, Err: unreadable, Calls: 1}},
		{reason: "Recovered, the drain over: the drained address goes; short of addresses is a warning.", at: 150 * time.Second,
			status: []gcp.NAT{{Name: "egress-nat", Active: hosts("203.0.113.2"), MinExtraIPsNeeded: 1}},
			want: natRead{Addresses: []string{"203.0.113.2/32"}, After: 30 * time.Second, Calls: 1, Warnings: []string{
				"Cloud NAT us-central1/egress/egress-nat needs 1 more address(es) (minExtraNatIpsNeeded): some VMs get no NAT ports and cannot connect out; add addresses or let it allocate them"}}},
	}
	start := now
	for _, st := range steps {
		now = start.Add(st.at)
		if st.status != nil {
			status = st.status
		}
		statusErr = st.err
		if diff := cmp.Diff(st.want, readNATs(r, f, as)); diff != "" {
			t.Errorf("%s\nRead: -want, +got:\n%s", st.reason, diff)
		}
	}
	as.Spec.NAT.NAT = "other"
	if got := readNATs(r, f, as); got.Calls != 1 || len(got.Addresses) != 0 {
		t.Errorf("a new selector polls at once: want one call and no address, got %+v", got)
	}
	r.Forget(types.NamespacedName{Namespace: "team", Name: "egress"})
	if got := readNATs(r, f, as); got.Calls != 1 {
		t.Errorf("forgotten: want a poll, got %+v", got)
	}
}

// TestNATReaderNetwork reads every router of a network: one list per
// region and one status per router; a router or a region that fails keeps
// its last addresses while the others' new ones come with the Unreadable.
func TestNATReaderNetwork(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	routers := map[string][]string{"us-central1": {"a", "b"}, "europe-west1": {"c"}}
	addr := map[string]string{"a": "203.0.113.1", "b": "203.0.113.2", "c": "203.0.113.3"}
	failing := map[string]bool{}
	f := &fakeNATs{
		RoutersFn: func(region string) ([]string, error) {
			if failing[region] {
				return nil, errBoom
			}
			return routers[region], nil
		},
		NATsFn: func(_, router string) ([]gcp.NAT, error) {
			if failing[router] {
				return nil, errBoom
			}
			return []gcp.NAT{{Name: "nat", Active: hosts(addr[router])}}, nil
		},
	}
	r := newNATReader(func(context.Context, *v1alpha1.AddressSet) (gcp.NATClient, string, error) { return f, "p", nil },
		func() time.Time { return now })
	as := natSetOf("vpc")
	as.Spec.NAT = &v1alpha1.NATSelector{Network: "vpc", Regions: []string{"us-central1", "europe-west1"}}
	look := func(reason string, want natRead) {
		t.Helper()
		now = now.Add(time.Minute)
		got := readNATs(r, f, as)
		got.Err = ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s\nRead: -want, +got:\n%s", reason, diff)
		}
	}
	look("Two lists, three statuses.", natRead{Addresses: []string{"203.0.113.1/32", "203.0.113.2/32", "203.0.113.3/32"}, After: 30 * time.Second, Calls: 5})

	failing["b"], addr["a"] = true, "203.0.113.4"
	look("Router b fails: it keeps its address, a's new one is read.",
		natRead{Read: []string{"203.0.113.2/32", "203.0.113.3/32", "203.0.113.4/32"}, After: 30 * time.Second, Calls: 5})

	failing["b"], failing["europe-west1"] = false, true
	look("europe-west1 cannot be listed: c keeps its address.",
		natRead{Read: []string{"203.0.113.2/32", "203.0.113.3/32", "203.0.113.4/32"}, After: 30 * time.Second, Calls: 4})

	failing["europe-west1"], routers["europe-west1"] = false, nil
	look("Listed again without c: c is gone.", natRead{Addresses: []string{"203.0.113.2/32", "203.0.113.4/32"}, After: 30 * time.Second, Calls: 4})
}

// TestNATReaderConfigRefused: a ProviderConfig that cannot be used (one
// that may not name the project) is Unreadable before any GCP call, and is
// asked again only after a poll interval.
func TestNATReaderConfigRefused(t *testing.T) {
	refused := errors.New(`ClusterProviderConfig "default" does not let namespace "team" name project "other"`)
	connects := 0
	r := newNATReader(func(context.Context, *v1alpha1.AddressSet) (gcp.NATClient, string, error) {
		connects++
		return nil, "", refused
	}, func() time.Time { return time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC) })
	as := natSetOf("egress")
	as.Spec.NAT.Project = "other"
	for range 2 {
		_, after, err := r.Read(context.Background(), as)
		var u *Unreadable
		if !errors.As(err, &u) || !errors.Is(err, refused) || u.Read != nil || after != 30*time.Second ||
			u.Source != "the Cloud NAT of router us-central1/egress of project other" {
			t.Errorf("a refused ProviderConfig: want Unreadable naming it, again in 30s; got %v, again in %s", err, after)
		}
	}
	if connects != 1 {
		t.Errorf("two reads within a poll: want one connection, got %d", connects)
	}
	as.Spec.ProviderConfigRef = nil
	if _, _, err := r.Read(context.Background(), as); err == nil || err.Error() != errNoNATConfigRef {
		t.Errorf("no providerConfigRef: want %q, got %v", errNoNATConfigRef, err)
	}
}

// partialReader is a Cloud NAT source part of which cannot be read.
type partialReader struct {
	since time.Time
	read  Collected
}

func (p partialReader) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	return Collected{}, 0, &Unreadable{Source: "the Cloud NAT of network vpc in us-central1", Since: p.since,
		Err: errors.New("router us-central1/b: boom"), After: 30 * time.Second, Read: &p.read}
}
func (partialReader) Forget(types.NamespacedName) {}

// TestReconcileNAT checks what a Cloud NAT set publishes and writes: a
// warning keeps it Available and is published; a partly unreadable source
// adds what was read to its last addresses and is held, unreadable.
func TestReconcileNAT(t *testing.T) {
	now := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)
	warning := "Cloud NAT us-central1/egress/egress-nat needs 1 more address(es)"
	type want struct {
		Addresses  []string
		Warnings   []string
		Ready      corev1.ConditionStatus
		Message    string
		Unreadable bool
	}
	cases := map[string]struct {
		reason string
		reader Reader
		want   want
	}{
		"Warning": {
			reason: "A NAT short of addresses is a warning: the set stays Available and says so.",
			reader: fixedReader{Collected{Nodes: 1, Addresses: hosts("203.0.113.1"), Warnings: []string{warning}}},
			want:   want{Addresses: []string{"203.0.113.1/32"}, Warnings: []string{warning}, Ready: corev1.ConditionTrue, Message: warning},
		},
		"PartlyUnreadable": {
			reason: "What the readable routers hold is added to the last addresses; none goes.",
			reader: partialReader{since: now.Add(-time.Minute), read: Collected{Addresses: hosts("203.0.113.9"), Warnings: []string{warning}}},
			want: want{Addresses: []string{"192.0.2.1/32", "203.0.113.9/32"}, Warnings: []string{warning}, Ready: corev1.ConditionFalse, Unreadable: true,
				Message: "cannot read the Cloud NAT of network vpc in us-central1 since 2026-12-05T01:59:00Z: router us-central1/b: boom; the addresses shown are the last known"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = v1alpha1.SchemeBuilder.AddToScheme(s)
			as := natSetOf("web")
			as.Namespace, as.Generation = "team-a", 2
			as.Status = v1alpha1.AddressSetStatus{Addresses: []string{"192.0.2.1/32"}, AddressCount: 1, NodeCount: 1}
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(as).WithStatusSubresource(&v1alpha1.AddressSet{}).Build()
			reg := NewRegistry()
			r := &Reconciler{kube: kube, log: logging.NewNopLogger(), recorder: &recorded{}, now: func() time.Time { return now },
				registry: reg, pacer: pace.New(pace.DefaultQuiet, pace.DefaultMax, 0), clusters: unusedReader{}, instances: unusedReader{}, nats: tc.reader,
				held: &holds{}}
			key := types.NamespacedName{Namespace: "team-a", Name: "web"}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			p, _ := reg.Get(key)
			got := &v1alpha1.AddressSet{}
			if err := kube.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			c := got.Status.GetCondition(xpv2.TypeReady)
			g := want{Addresses: p.Addresses, Warnings: p.Warnings, Ready: c.Status, Message: c.Message, Unreadable: p.Unreadable}
			if diff := cmp.Diff(tc.want, g, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\npublished: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(p.Addresses, got.Status.Addresses); diff != "" {
				t.Errorf("%s\nstatus addresses differ from the published ones: -published, +status:\n%s", tc.reason, diff)
			}
		})
	}
}

// fixedReader answers every Read with what it holds.
type fixedReader struct{ got Collected }

func (f fixedReader) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	return f.got, 30 * time.Second, nil
}
func (fixedReader) Forget(types.NamespacedName) {}

// slowNATs answers a router's status once released.
type slowNATs struct {
	release chan struct{}
	got     []gcp.NAT
}

func (s *slowNATs) Routers(context.Context, string, string, string) ([]string, error) {
	return nil, nil
}

func (s *slowNATs) NATs(ctx context.Context, _, _, _ string) ([]gcp.NAT, error) {
	select {
	case <-s.release:
		return s.got, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestNATsPolledInBackground checks that a poll of Cloud NAT runs outside
// the reconcile: Read returns at once (Pending before the first answer),
// and the poll's end wakes the set.
func TestNATsPolledInBackground(t *testing.T) {
	s := &slowNATs{release: make(chan struct{}), got: []gcp.NAT{{Name: "egress-nat", Active: hosts("203.0.113.1")}}}
	woken := make(chan types.NamespacedName, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newNATReader(func(context.Context, *v1alpha1.AddressSet) (gcp.NATClient, string, error) { return s, "p", nil }, time.Now)
	r.ctx, r.wake = ctx, func(k types.NamespacedName) { woken <- k }
	as := natSetOf("egress")

	start := time.Now()
	_, _, err := r.Read(ctx, as)
	var pending *Pending
	if !errors.As(err, &pending) || time.Since(start) > time.Second {
		t.Fatalf("the first Read while the poll runs: want Pending at once, got %v after %s", err, time.Since(start))
	}
	close(s.release)
	select {
	case k := <-woken:
		if k.Name != "egress" {
			t.Errorf("the poll woke %s, not the set", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the poll's end did not wake the set")
	}
	got, _, err := r.Read(ctx, as)
	if err != nil || len(got.Addresses) != 1 {
		t.Errorf("after the poll: want its one address, got %+v, %v", got, err)
	}
}
