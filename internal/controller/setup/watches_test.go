package setup

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// queued is one request put in the queue, and after how long.
type queued struct {
	Request reconcile.Request
	After   time.Duration
}

// recordingQueue records what is added to it.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	got []queued
}

func (q *recordingQueue) Add(r reconcile.Request) { q.got = append(q.got, queued{Request: r}) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.got = append(q.got, queued{Request: r, After: d})
}

func TestDelayed(t *testing.T) {
	const after = 2 * time.Second
	obj := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rule"}}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}}
	cases := map[string]struct {
		reason string
		send   func(h handler.EventHandler, q *recordingQueue)
		want   []queued
	}{
		"Create": {
			reason: "A create's request waits in the queue first.",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Create(context.Background(), ctrlevent.CreateEvent{Object: obj}, q)
			},
			want: []queued{{Request: req, After: after}},
		},
		"Update": {
			reason: "An update's requests (old and new object) wait in the queue first.",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Update(context.Background(), ctrlevent.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
			},
			want: []queued{{Request: req, After: after}},
		},
		"Delete": {
			reason: "A delete's request waits in the queue first.",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Delete(context.Background(), ctrlevent.DeleteEvent{Object: obj}, q)
			},
			want: []queued{{Request: req, After: after}},
		},
		"Generic": {
			reason: "A generic event's request waits in the queue first.",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Generic(context.Background(), ctrlevent.GenericEvent{Object: obj}, q)
			},
			want: []queued{{Request: req, After: after}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &recordingQueue{}
			tc.send(Delayed(&handler.EnqueueRequestForObject{}, after), q)
			if diff := cmp.Diff(tc.want, q.got); diff != "" {
				t.Errorf("\n%s\nDelayed(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNamespaceMembers(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	policy := func(ns, name string) *v1beta1.SecurityPolicy {
		return &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		policy("team-a", "one"), policy("team-a", "two"), policy("team-b", "three"),
		&v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rule"}},
	).Build()
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	cases := map[string]struct {
		reason string
		ns     string
		want   []reconcile.Request
	}{
		"Members":      {reason: "Every object of the kind in the namespace is enqueued, and nothing of other kinds.", ns: "team-a", want: []reconcile.Request{req("team-a", "one"), req("team-a", "two")}},
		"OtherMembers": {reason: "Another namespace enqueues its own objects only.", ns: "team-b", want: []reconcile.Request{req("team-b", "three")}},
		"Empty":        {reason: "A namespace without objects of the kind enqueues nothing.", ns: "team-c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := namespaceMembers(kube, &v1beta1.SecurityPolicyList{})(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}})
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b reconcile.Request) bool { return a.String() < b.String() }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nNamespaceMembers(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAfresh(t *testing.T) {
	obj := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gated"}}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "gated"}}
	cases := map[string]struct {
		reason string
		h      func(handler.EventHandler) handler.EventHandler
		want   int
	}{
		"Afresh": {
			reason: "An event that may have removed the cause of an object's errors forgets its backoff.",
			h:      Afresh,
			want:   0,
		},
		"Plain": {
			reason: "Other events leave the backoff alone: five failures stay five.",
			h:      func(h handler.EventHandler) handler.EventHandler { return h },
			want:   5,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Minute))
			defer q.ShutDown()
			for range 5 {
				q.AddRateLimited(req)
			}
			tc.h(&handler.EnqueueRequestForObject{}).Update(context.Background(), ctrlevent.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
			if got := q.NumRequeues(req); got != tc.want {
				t.Errorf("\n%s\nNumRequeues after the event: want %d, got %d", tc.reason, tc.want, got)
			}
			if q.Len() != 1 {
				t.Errorf("\n%s\nthe event must enqueue the object at once: queue length %d", tc.reason, q.Len())
			}
		})
	}
}

func TestRelated(t *testing.T) {
	names := []types.NamespacedName{{Namespace: "team-a", Name: "edge"}, {Namespace: "team-b", Name: "edge"}}
	found := func(context.Context, client.Reader, *v1beta1.SecurityPolicyRule) ([]types.NamespacedName, error) {
		return names, nil
	}
	failed := func(context.Context, client.Reader, *v1beta1.SecurityPolicyRule) ([]types.NamespacedName, error) {
		return nil, errors.New("boom")
	}
	rule := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "r"}}
	cases := map[string]struct {
		reason  string
		related func(context.Context, client.Reader, *v1beta1.SecurityPolicyRule) ([]types.NamespacedName, error)
		obj     client.Object
		want    []reconcile.Request
	}{
		"Found": {reason: "Every related object is enqueued.", related: found, obj: rule,
			want: []reconcile.Request{{NamespacedName: names[0]}, {NamespacedName: names[1]}}},
		"Failed":    {reason: "A lookup that fails enqueues nothing.", related: failed, obj: rule},
		"OtherType": {reason: "An object of another type enqueues nothing.", related: found, obj: &v1beta1.SecurityPolicy{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Related(nil, tc.related)(context.Background(), tc.obj)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nRelated(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
