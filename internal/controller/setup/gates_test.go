package setup

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestLimiterForget(t *testing.T) {
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "other", Name: "a"}}

	type want struct {
		result reconcile.Result
		// next is the delay of the object's next failure after Forget;
		// it failed twice before, so 4s means its failures were kept.
		next time.Duration
	}
	cases := map[string]struct {
		reason string
		putOff []reconcile.Request
		forget []reconcile.Request
		want   want
	}{
		"NotPutOff": {
			reason: "A Forget after a reconcile that ran clears the object's failures.",
			forget: []reconcile.Request{a},
			want:   want{next: time.Second},
		},
		"PutOff": {
			reason: "The Forget that follows a put-off keeps the object's failures.",
			putOff: []reconcile.Request{a},
			forget: []reconcile.Request{a},
			want:   want{result: reconcile.Result{RequeueAfter: 3 * time.Second}, next: 4 * time.Second},
		},
		"MarkTakenOnce": {
			reason: "A put-off skips one Forget only: the next, after a reconcile that ran, clears the failures.",
			putOff: []reconcile.Request{a},
			forget: []reconcile.Request{a, a},
			want:   want{result: reconcile.Result{RequeueAfter: 3 * time.Second}, next: time.Second},
		},
		"OtherNamespace": {
			reason: "A put-off of the same name in another namespace does not keep this object's failures.",
			putOff: []reconcile.Request{b},
			forget: []reconcile.Request{a},
			want:   want{result: reconcile.Result{RequeueAfter: 3 * time.Second}, next: time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newMarks()
			rl := m.limiter(workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute))
			rl.When(a) // a failed twice
			rl.When(a)
			var got want
			for _, req := range tc.putOff {
				got.result = m.after(req, 3*time.Second)
			}
			for _, req := range tc.forget {
				rl.Forget(req)
			}
			got.next = rl.When(a)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGate(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	pass := func(context.Context, reconcile.Request) (time.Duration, bool) { return 0, false }
	putOff := func(d time.Duration) Check {
		return func(context.Context, reconcile.Request) (time.Duration, bool) { return d, true }
	}
	type want struct {
		Reconciled bool
		Result     reconcile.Result
	}
	cases := map[string]struct {
		reason string
		checks []Check
		want   want
	}{
		"NoChecks": {
			reason: "A kind without checks is reconciled.",
			want:   want{Reconciled: true},
		},
		"AllPass": {
			reason: "A reconcile no check puts off runs.",
			checks: []Check{pass, pass},
			want:   want{Reconciled: true},
		},
		"FirstPutOffWins": {
			reason: "Checks are asked in order: the first that puts the reconcile off says for how long.",
			checks: []Check{pass, putOff(time.Second), putOff(time.Minute)},
			want:   want{Result: reconcile.Result{RequeueAfter: time.Second}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{}
			r, _ := gated(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				got.Reconciled = true
				return reconcile.Result{}, nil
			}), newControllerRateLimiter(), tc.checks...)
			res, err := r.Reconcile(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got.Result = res
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGateLimitedKeepsBackoff: a reconcile the provider-wide rate limiter
// puts off is marked, so the Forget controller-runtime follows it with keeps
// the object's failures; one that ran is forgotten as usual.
func TestGateLimitedKeepsBackoff(t *testing.T) {
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	type want struct {
		result reconcile.Result
		ran    bool
		// next is the delay of a's next failure after Forget; it failed
		// twice before, so 4s means its failures were kept.
		next time.Duration
	}
	cases := map[string]struct {
		reason string
		global time.Duration // what the provider-wide limiter says
		want   want
	}{
		"PutOff": {
			reason: "Over the provider's budget: not run, requeued after the limiter's delay, failures kept.",
			global: 2 * time.Second,
			want:   want{result: reconcile.Result{RequeueAfter: 2 * time.Second}, next: 4 * time.Second},
		},
		"Ran": {
			reason: "Within budget: run, and its Forget clears the failures.",
			want:   want{result: reconcile.Result{RequeueAfter: time.Minute}, ran: true, next: time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				got.ran = true
				return reconcile.Result{RequeueAfter: time.Minute}, nil
			})
			gated, rl := gateLimited("test", r, fixedLimiter(tc.global), workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute))
			rl.When(a) // a failed twice
			rl.When(a)
			var err error
			got.result, err = gated.Reconcile(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			rl.Forget(a)
			got.next = rl.When(a)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// fixedLimiter is a provider-wide limiter that always says d.
type fixedLimiter time.Duration

func (d fixedLimiter) When(string) time.Duration { return time.Duration(d) }
func (fixedLimiter) Forget(string)               {}
func (fixedLimiter) NumRequeues(string) int      { return 0 }

// gated is r behind checks alone, without the provider-wide rate limiter,
// and rl keeping the backoff across their put-offs: gateLimited's gate.
func gated(r reconcile.Reconciler, rl RateLimiter, checks ...Check) (reconcile.Reconciler, RateLimiter) {
	if len(checks) == 0 {
		return r, rl
	}
	m := newMarks()
	return m.gate(r, checks), m.limiter(rl)
}
