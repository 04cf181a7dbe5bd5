package addressset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
)

type recorded struct{ events []event.Event }

func (r *recorded) Event(_ runtime.Object, e event.Event)    { r.events = append(r.events, e) }
func (r *recorded) WithAnnotations(...string) event.Recorder { return r }

func labelled(n corev1.Node, l map[string]string) *corev1.Node {
	n.Labels = l
	return &n
}

func set(hold int32, status v1alpha1.AddressSetStatus) *v1alpha1.AddressSet {
	return &v1alpha1.AddressSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", Generation: 2},
		Spec:       v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{MatchLabels: map[string]string{"pool": "web"}}, ShrinkHoldSeconds: ptr.To(hold)},
		Status:     status,
	}
}

func TestReconcile(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	web := map[string]string{"pool": "web"}
	four := []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32"}
	ready := func(c xpv2.Condition) xpv2.Condition { return c.WithObservedGeneration(2) }

	cases := map[string]struct {
		nodes      []client.Object
		as         *v1alpha1.AddressSet
		canList    bool
		want       v1alpha1.AddressSetStatus
		wantResult reconcile.Result
		wantEvents int
	}{
		"PublishesSelectedNodes": {
			nodes: []client.Object{
				labelled(node("a", ext("192.0.2.1")), web),
				labelled(node("b", ext("192.0.2.2")), web),
				labelled(node("other", ext("198.51.100.1")), map[string]string{"pool": "batch"}),
			},
			as:      set(120, v1alpha1.AddressSetStatus{}),
			canList: true,
			want: v1alpha1.AddressSetStatus{
				ConditionedStatus:  xpv2.ConditionedStatus{Conditions: []xpv2.Condition{ready(xpv2.Available()), ready(xpv2.ReconcileSuccess())}},
				Addresses:          []string{"192.0.2.1/32", "192.0.2.2/32"},
				AddressCount:       2,
				NodeCount:          2,
				Peak:               &v1alpha1.AddressPeak{Count: 2, Since: metav1.NewTime(now)},
				ObservedGeneration: 2,
			},
		},
		"SkipsMalformedNodeWithEvent": {
			nodes: []client.Object{
				labelled(node("a", ext("192.0.2.1")), web),
				labelled(node("bad", ext("192.0.2.x")), web),
			},
			as:      set(120, v1alpha1.AddressSetStatus{}),
			canList: true,
			want: v1alpha1.AddressSetStatus{
				ConditionedStatus:  xpv2.ConditionedStatus{Conditions: []xpv2.Condition{ready(xpv2.Available()), ready(xpv2.ReconcileSuccess())}},
				Addresses:          []string{"192.0.2.1/32"},
				AddressCount:       1,
				NodeCount:          2,
				Skipped:            []v1alpha1.SkippedNode{{Name: "bad", Reason: `invalid address: ExternalIP "192.0.2.x"`}},
				SkippedCount:       1,
				Peak:               &v1alpha1.AddressPeak{Count: 1, Since: metav1.NewTime(now)},
				ObservedGeneration: 2,
			},
			wantEvents: 1,
		},
		"HoldsSuddenEmptying": {
			as:      set(120, v1alpha1.AddressSetStatus{Addresses: four, AddressCount: 4, NodeCount: 4}),
			canList: true,
			want: v1alpha1.AddressSetStatus{
				ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{
					ready(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonShrinkHeld, LastTransitionTime: metav1.NewTime(now),
						Message: "holding back a shrink from 4 to 0 addresses, seen since 2026-11-25T08:00:00Z: applied at 2026-11-25T08:02:00Z unless the Nodes come back; shrinkHoldSeconds: 0 applies shrinks at once"}),
					ready(xpv2.ReconcileSuccess()),
				}},
				Addresses:          four,
				AddressCount:       4,
				HeldShrink:         &v1alpha1.HeldShrink{From: 4, To: 0, Since: metav1.NewTime(now)},
				Peak:               &v1alpha1.AddressPeak{Count: 4, Since: metav1.NewTime(now)},
				ObservedGeneration: 2,
			},
			wantResult: reconcile.Result{RequeueAfter: 2 * time.Minute},
		},
		"NodesUnreadableKeepsAddresses": {
			as: set(120, v1alpha1.AddressSetStatus{Addresses: four, AddressCount: 4, NodeCount: 4}),
			want: v1alpha1.AddressSetStatus{
				ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{
					ready(xpv2.Unavailable().WithMessage(MsgNodesUnreadable)),
					ready(xpv2.ReconcileError(errNodesUnreadable)),
				}},
				Addresses:    four,
				AddressCount: 4,
				NodeCount:    4,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = corev1.AddToScheme(s)
			_ = v1alpha1.SchemeBuilder.AddToScheme(s)
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(append(tc.nodes, tc.as)...).WithStatusSubresource(&v1alpha1.AddressSet{}).Build()
			rec := &recorded{}
			r := &Reconciler{kube: kube, log: logging.NewNopLogger(), recorder: rec, now: func() time.Time { return now }, nodes: tc.canList,
				registry: NewRegistry(), pacer: pace.New(pace.DefaultQuiet, pace.DefaultMax, 0), clusters: unusedReader{}, instances: unusedReader{}, nats: unusedReader{}}

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}})
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.wantResult, res); diff != "" {
				t.Errorf("Reconcile result: -want, +got:\n%s", diff)
			}
			got := &v1alpha1.AddressSet{}
			if err := kube.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "web"}, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Status, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime"),
				cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
				t.Errorf("status: -want, +got:\n%s", diff)
			}
			if len(rec.events) != tc.wantEvents {
				t.Errorf("events: want %d, got %d: %v", tc.wantEvents, len(rec.events), rec.events)
			}

			// A second look at unchanged Nodes writes nothing.
			before := got.ResourceVersion
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}}); err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if err := kube.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "web"}, got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != before {
				t.Errorf("second Reconcile wrote the AddressSet again (resourceVersion %s -> %s)", before, got.ResourceVersion)
			}
			if len(rec.events) != tc.wantEvents {
				t.Errorf("second Reconcile repeated its event: %d events", len(rec.events))
			}
		})
	}
}

func TestNodeChanged(t *testing.T) {
	base := node("a", ext("192.0.2.1"))
	base.Labels = map[string]string{"pool": "web"}
	relabelled := *base.DeepCopy()
	relabelled.Labels = map[string]string{"pool": "batch"}
	readdressed := *base.DeepCopy()
	readdressed.Status.Addresses = []corev1.NodeAddress{ext("192.0.2.2")}
	heartbeat := *base.DeepCopy()
	heartbeat.ResourceVersion = "9"
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	heartbeat.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}}

	cases := map[string]struct {
		now  corev1.Node
		want bool
	}{
		"Heartbeat":   {now: heartbeat, want: false},
		"Relabelled":  {now: relabelled, want: true},
		"Readdressed": {now: readdressed, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := nodeChanged().Update(ctrlevent.UpdateEvent{ObjectOld: &base, ObjectNew: &tc.now})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodeChanged: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestTransformNodeToAddresses(t *testing.T) {
	full := node("a", ext("192.0.2.1"), in("10.0.0.1"))
	full.Labels = map[string]string{"pool": "web"}
	full.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
	full.ResourceVersion = "42"
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	full.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}}}
	full.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	full.Spec.PodCIDR = "10.244.0.0/24"

	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "42", Labels: map[string]string{"pool": "web"}},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{ext("192.0.2.1"), in("10.0.0.1")}},
	}
	got, err := TransformNodeToAddresses(&full)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TransformNodeToAddresses: -want, +got:\n%s", diff)
	}
}

func TestPublishThenPace(t *testing.T) {
	web := map[string]string{"pool": "web"}
	start := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.SchemeBuilder.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).
		WithObjects(labelled(node("a", ext("192.0.2.1")), web), set(0, v1alpha1.AddressSetStatus{})).
		WithStatusSubresource(&v1alpha1.AddressSet{}).Build()
	now := start
	reg := NewRegistry()
	var told []string
	reg.Subscribe(func(k types.NamespacedName) { told = append(told, k.Name) })
	r := &Reconciler{kube: kube, log: logging.NewNopLogger(), recorder: &recorded{}, now: func() time.Time { return now }, nodes: true,
		registry: reg, pacer: pace.New(pace.DefaultQuiet, pace.DefaultMax, 0), clusters: unusedReader{}, instances: unusedReader{}, nats: unusedReader{}}
	status := func() []string {
		got := &v1alpha1.AddressSet{}
		if err := kube.Get(context.Background(), req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		return got.Status.Addresses
	}
	one := []string{"192.0.2.1/32"}
	two := []string{"192.0.2.1/32", "192.0.2.2/32"}
	three := []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"}

	// Each step: a Node added, the clock moved, a reconcile.
	steps := []struct {
		reason        string
		add           string
		at            time.Duration
		wantPublished []string
		wantStatus    []string
		wantTold      int
		requeue       time.Duration
	}{
		{reason: "A new spec is published and written at once.", at: 0, wantPublished: one, wantStatus: one, wantTold: 1},
		{reason: "A Node added is published at once; the status waits for the data to be quiet.", add: "192.0.2.2", at: 250 * time.Millisecond,
			wantPublished: two, wantStatus: one, wantTold: 2, requeue: pace.DefaultQuiet},
		{reason: "Another Node meanwhile: published, the status waits longer.", add: "192.0.2.3", at: time.Second,
			wantPublished: three, wantStatus: one, wantTold: 3, requeue: pace.DefaultQuiet},
		{reason: "Once quiet, the status is written with both.", at: time.Second + pace.DefaultQuiet,
			wantPublished: three, wantStatus: three, wantTold: 3},
		{reason: "Nothing changed: no publication, no write.", at: 10 * time.Second,
			wantPublished: three, wantStatus: three, wantTold: 3},
	}
	for i, st := range steps {
		if st.add != "" {
			if err := kube.Create(context.Background(), labelled(node(fmt.Sprintf("n%d", i), ext(st.add)), web)); err != nil {
				t.Fatal(err)
			}
		}
		now = start.Add(st.at)
		res, err := r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if diff := cmp.Diff(st.requeue, res.RequeueAfter); diff != "" {
			t.Errorf("step %d: %s\nrequeue after: -want, +got:\n%s", i, st.reason, diff)
		}
		p, _ := reg.Get(req.NamespacedName)
		if diff := cmp.Diff(st.wantPublished, p.Addresses); diff != "" {
			t.Errorf("step %d: %s\npublished addresses: -want, +got:\n%s", i, st.reason, diff)
		}
		if diff := cmp.Diff(st.wantStatus, status()); diff != "" {
			t.Errorf("step %d: %s\nstatus addresses: -want, +got:\n%s", i, st.reason, diff)
		}
		if diff := cmp.Diff(st.wantTold, len(told)); diff != "" {
			t.Errorf("step %d: %s\nsubscriber calls: -want, +got:\n%s", i, st.reason, diff)
		}
	}

	// Deleted: forgotten, and the subscribers told.
	as := &v1alpha1.AddressSet{}
	_ = kube.Get(context.Background(), req.NamespacedName, as)
	if err := kube.Delete(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get(req.NamespacedName); ok {
		t.Errorf("a deleted AddressSet is still published")
	}
	if len(told) != 4 {
		t.Errorf("subscriber calls after delete: want 4, got %d", len(told))
	}
}

// unusedReader is the Reader of sources a test does not use.
type unusedReader struct{}

func (unusedReader) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	return Collected{}, 0, errors.New("this test reads no remote source")
}

func (unusedReader) Forget(types.NamespacedName) {}

// failingReader is a source unreadable since a given time.
type failingReader struct{ since time.Time }

func (f failingReader) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	return Collected{}, 0, &Unreadable{Source: "the cluster of Secret team-a/eu-1", Since: f.since, Err: errors.New("the list of Nodes timed out"), After: RemoteRetry}
}
func (failingReader) Forget(types.NamespacedName) {}

// TestHoldUnreadable checks what an unreadable source's set publishes as
// its outage lasts: its last addresses, an event once past HeldLong, and
// no addresses once past --drop-unreadable-after, when set.
func TestHoldUnreadable(t *testing.T) {
	now := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)
	four := []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32"}
	type want struct {
		Addresses []string
		Events    int
		Dropped   bool
	}
	cases := map[string]struct {
		reason    string
		held      time.Duration
		dropAfter time.Duration
		want      want
	}{
		"Held": {reason: "A short outage keeps the last addresses, quietly.", held: time.Minute, want: want{Addresses: four}},
		"HeldLong": {reason: "An outage past an hour keeps them, and says so once in an event.", held: 2 * time.Hour,
			want: want{Addresses: four, Events: 1}},
		"NotYetDropped": {reason: "With --drop-unreadable-after, an outage shorter than it keeps them.", held: time.Minute, dropAfter: time.Hour,
			want: want{Addresses: four}},
		"Dropped": {reason: "An outage past --drop-unreadable-after drops them, and says so.", held: 3 * time.Hour, dropAfter: 2 * time.Hour,
			want: want{Events: 1, Dropped: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = corev1.AddToScheme(s)
			_ = v1alpha1.SchemeBuilder.AddToScheme(s)
			as := set(0, v1alpha1.AddressSetStatus{Addresses: four, AddressCount: 4, NodeCount: 4})
			as.Spec.Nodes.Cluster = &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1"}}
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(as).WithStatusSubresource(&v1alpha1.AddressSet{}).Build()
			rec := &recorded{}
			reg := NewRegistry()
			r := &Reconciler{kube: kube, log: logging.NewNopLogger(), recorder: rec, now: func() time.Time { return now },
				registry: reg, pacer: pace.New(pace.DefaultQuiet, pace.DefaultMax, 0), clusters: failingReader{since: now.Add(-tc.held)}, instances: unusedReader{}, nats: unusedReader{},
				held: &holds{}, dropAfter: tc.dropAfter}
			key := types.NamespacedName{Namespace: "team-a", Name: "web"}
			for range 2 {
				if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			p, _ := reg.Get(key)
			got := want{Addresses: p.Addresses, Events: len(rec.events), Dropped: strings.Contains(p.Held, FlagDropUnreadableAfter)}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			if !p.Unreadable {
				t.Errorf("%s\nthe set does not publish that its source is unreadable", tc.reason)
			}
		})
	}
}
