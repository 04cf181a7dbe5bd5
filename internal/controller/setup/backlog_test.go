package setup

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// fixedQueue is a write queue with a fixed backlog.
type fixedQueue struct {
	writes   int
	perWrite time.Duration
}

func (q fixedQueue) Backlog(gcp.PolicyKey) (int, time.Duration) { return q.writes, q.perWrite }

func TestBacklog(t *testing.T) {
	policy := gcp.PolicyKey{Project: "p", Name: "allowlist"}
	known := func(context.Context, reconcile.Request) (gcp.PolicyKey, bool) { return policy, true }
	unknown := func(context.Context, reconcile.Request) (gcp.PolicyKey, bool) { return gcp.PolicyKey{}, false }

	type want struct {
		Reconciled bool
		Result     reconcile.Result
	}
	cases := map[string]struct {
		reason string
		queue  fixedQueue
		key    KeyFn[gcp.PolicyKey]
		want   want
	}{
		"IdlePolicy": {
			reason: "An object whose policy has no writes queued is reconciled.",
			queue:  fixedQueue{},
			key:    known,
			want:   want{Reconciled: true},
		},
		"RoomInQueue": {
			reason: "An object whose policy has fewer than maxQueuedWrites writes running or waiting is reconciled.",
			queue:  fixedQueue{writes: maxQueuedWrites - 1, perWrite: 100 * time.Millisecond},
			key:    known,
			want:   want{Reconciled: true},
		},
		"QueueFull": {
			reason: "An object whose policy has maxQueuedWrites writes is put off until one of them should have run.",
			queue:  fixedQueue{writes: maxQueuedWrites, perWrite: 100 * time.Millisecond},
			key:    known,
			want:   want{Result: reconcile.Result{RequeueAfter: 100 * time.Millisecond}},
		},
		"LongQueue": {
			reason: "With more writes queued (objects that passed before the queue filled) it waits for all beyond maxQueuedWrites.",
			queue:  fixedQueue{writes: maxQueuedWrites + 5, perWrite: 100 * time.Millisecond},
			key:    known,
			want:   want{Result: reconcile.Result{RequeueAfter: 600 * time.Millisecond}},
		},
		"NoEstimateYet": {
			reason: "Before any write has finished there is no estimate: it comes back after minBacklogRetry.",
			queue:  fixedQueue{writes: maxQueuedWrites},
			key:    known,
			want:   want{Result: reconcile.Result{RequeueAfter: minBacklogRetry}},
		},
		"SlowGCP": {
			reason: "However slow the operations, a put-off object comes back within maxBacklogRetry.",
			queue:  fixedQueue{writes: 40, perWrite: 10 * time.Second},
			key:    known,
			want:   want{Result: reconcile.Result{RequeueAfter: maxBacklogRetry}},
		},
		"PolicyUnknown": {
			reason: "An object whose policy is not known (not resolved, or not in the cache) is reconciled.",
			queue:  fixedQueue{writes: 10, perWrite: 100 * time.Millisecond},
			key:    unknown,
			want:   want{Reconciled: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{}
			r, _ := gated(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				got.Reconciled = true
				return reconcile.Result{}, nil
			}), newControllerRateLimiter(), Backlog(tc.queue, tc.key))
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}})
			if err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			got.Result = res
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPutOffKeepsBackoff checks that an object put off between two failures
// keeps backing off: controller-runtime forgets a request after a reconcile
// that returns RequeueAfter, which would reset its failures.
func TestPutOffKeepsBackoff(t *testing.T) {
	full := fixedQueue{writes: maxQueuedWrites, perWrite: 100 * time.Millisecond}
	r, rl := gated(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute),
		Backlog(&full, func(context.Context, reconcile.Request) (gcp.PolicyKey, bool) { return gcp.PolicyKey{Name: "p"}, true }))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}

	rl.When(req) // the object failed twice
	rl.When(req)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	rl.Forget(req) // what controller-runtime does after a RequeueAfter
	if diff := cmp.Diff(4*time.Second, rl.When(req)); diff != "" {
		t.Errorf("after a put-off the object's third failure should back off as its third: -want, +got:\n%s", diff)
	}

	full.writes = 0
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	rl.Forget(req) // a reconcile that ran and succeeded
	if diff := cmp.Diff(time.Second, rl.When(req)); diff != "" {
		t.Errorf("after a reconcile that ran, Forget should clear the object's failures: -want, +got:\n%s", diff)
	}
}
