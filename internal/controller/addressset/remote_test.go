package addressset

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// informerOf is an informer of nodes; synced when it has listed them.
func informerOf(t *testing.T, synced bool, nodes ...corev1.Node) cache.SharedIndexInformer {
	t.Helper()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.NodeList{Items: nodes}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	// As the provider's: a list first, not a watch streaming the list.
	inf := cache.NewSharedIndexInformer(&nodeListWatch{ListWatch: lw}, &corev1.Node{}, 0, cache.Indexers{})
	if !synced {
		return inf
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	return inf
}

func TestRemoteRead(t *testing.T) {
	started := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	refused := errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	web := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"pool": "web"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "198.51.100.1"}}}}
	batch := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Labels: map[string]string{"pool": "batch"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "198.51.100.2"}}}}
	source := "the cluster of Secret team-a/eu-1 (https://10.0.0.1)"

	cases := map[string]struct {
		reason    string
		synced    bool
		failSince time.Time
		now       time.Time
		want      Collected
		wantErr   error
	}{
		"NewCluster": {
			reason:  "A cluster not listed yet is Pending: the set publishes nothing, keeping what it held.",
			now:     started.Add(2 * time.Second),
			wantErr: &Pending{After: remotePoll},
		},
		"NewClusterFailing": {
			reason:    "A new cluster that fails is Pending for a while: a first connection may take a few tries.",
			failSince: started.Add(time.Second),
			now:       started.Add(5 * time.Second),
			wantErr:   &Pending{After: remotePoll},
		},
		"NewClusterAlmostDue": {
			reason:  "Pending looks again no later than when it becomes Unreadable.",
			now:     started.Add(RemoteFirstSync - 300*time.Millisecond),
			wantErr: &Pending{After: 300 * time.Millisecond},
		},
		"NeverListedFailing": {
			reason:    "A new cluster still failing after RemoteFirstSync is Unreadable with the server's error, since its first failure.",
			failSince: started.Add(time.Second),
			now:       started.Add(RemoteFirstSync),
			wantErr:   &Unreadable{Source: source, Since: started.Add(time.Second), Err: refused, After: RemoteRetry},
		},
		"NeverAnswered": {
			reason:  "A new cluster that neither answers nor fails is Unreadable after RemoteFirstSync, since it was first read.",
			now:     started.Add(RemoteFirstSync),
			wantErr: &Unreadable{Source: source, Since: started, Err: errors.New(errNeverListed), After: RemoteRetry},
		},
		"Outage": {
			reason:    "A listed cluster that fails is Unreadable at once: its last addresses are held.",
			synced:    true,
			failSince: started.Add(time.Minute),
			now:       started.Add(time.Minute),
			wantErr:   &Unreadable{Source: source, Since: started.Add(time.Minute), Err: refused, After: RemoteRetry},
		},
		"Listed": {
			reason: "A listed cluster yields the addresses of the Nodes the selector matches.",
			synced: true,
			now:    started.Add(time.Minute),
			want:   Collected{Addresses: []netip.Prefix{netip.MustParsePrefix("198.51.100.1/32")}, Nodes: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &remote{source: source, started: started, informer: informerOf(t, tc.synced, web, batch)}
			if !tc.failSince.IsZero() {
				r.outage = outage{since: tc.failSince, err: refused}
			}
			got, err := r.read(&v1alpha1.NodeSelector{MatchLabels: map[string]string{"pool": "web"}}, tc.now)
			if diff := cmp.Diff(tc.wantErr, err, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); diff != "" {
				t.Errorf("%s\nread(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("%s\nread(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSeen checks that an outage's start and end wake the cluster's sets
// once each, and that an outage keeps the time of its first failure.
func TestSeen(t *testing.T) {
	now := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	c := testClusters(t, now)
	r := &remote{key: "k", users: map[types.NamespacedName]bool{{Namespace: "team-a", Name: "fleet"}: true}}
	c.remotes["k"] = r
	refused := errors.New("connection refused")

	type want struct {
		Wakes     int
		FailSince time.Time
	}
	steps := []struct {
		reason string
		err    error
		at     time.Time
		want   want
	}{
		{reason: "A healthy call wakes nobody.", at: now, want: want{}},
		{reason: "The first failure wakes the set and starts the outage.", err: refused, at: now.Add(time.Second), want: want{Wakes: 1, FailSince: now.Add(time.Second)}},
		{reason: "A later failure of the same outage wakes nobody and keeps its start.", err: refused, at: now.Add(2 * time.Second), want: want{FailSince: now.Add(time.Second)}},
		{reason: "A call that succeeds again ends the outage and wakes the set.", at: now.Add(3 * time.Second), want: want{Wakes: 1}},
	}
	for _, s := range steps {
		c.now = func() time.Time { return s.at }
		c.seen(context.Background(), r, "list", s.err)
		got := want{Wakes: len(c.wake), FailSince: r.outage.since}
		for len(c.wake) > 0 {
			<-c.wake
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s\n-want, +got:\n%s", s.reason, diff)
		}
	}
}
