package setup

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
)

// A Check says whether a request's reconcile should be put off, and for how
// long: requeued after that delay, holding no controller worker meanwhile.
type Check func(ctx context.Context, req reconcile.Request) (time.Duration, bool)

// A RateLimiter is a controller's per-object requeue rate limiter.
type RateLimiter = workqueue.TypedRateLimiter[reconcile.Request]

// gateLimited returns r behind checks, asked in order (the first that puts a
// reconcile off wins), then behind crossplane-runtime's provider-wide rate
// limiter (ratelimiter.Reconciler, named name), and rl made to keep an
// object's error backoff across a put-off of either. The two are built
// together because neither is right alone: controller-runtime answers a
// reconcile's RequeueAfter with Forget on the per-object rate limiter, which
// clears the object's failures, so an object failing again and again, put off
// between its failures, would retry at the limiter's base delay instead of
// backing off (docs/performance.md). No result a reconciler can return
// requeues without either Forget or a failure, so the gate marks what it or
// the provider-wide limiter put off, and its limiter skips the Forget that
// follows.
func gateLimited(name string, r reconcile.Reconciler, global ratelimiter.RateLimiter, rl RateLimiter, checks ...Check) (reconcile.Reconciler, RateLimiter) {
	m := newMarks()
	return m.gate(m.limited(name, r, global), checks), m.limiter(rl)
}

// ranKey is the context key of the flag limited's inner reconciler sets.
type ranKey struct{}

// limited puts r behind crossplane-runtime's rate limiter and marks the
// requests it puts off: the limiter returned without running r.
func (m *marks) limited(name string, r reconcile.Reconciler, global ratelimiter.RateLimiter) reconcile.Reconciler {
	inner := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if ran, ok := ctx.Value(ranKey{}).(*bool); ok {
			*ran = true
		}
		return r.Reconcile(ctx, req)
	})
	lr := ratelimiter.NewReconciler(name, inner, global)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		ran := false
		res, err := lr.Reconcile(context.WithValue(ctx, ranKey{}, &ran), req)
		if !ran && err == nil && res.RequeueAfter > 0 {
			return m.after(req, res.RequeueAfter), nil
		}
		return res, err
	})
}

// gate puts r behind checks, asked in order, marking what they put off.
func (m *marks) gate(r reconcile.Reconciler, checks []Check) reconcile.Reconciler {
	if len(checks) == 0 {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		for _, c := range checks {
			if d, ok := c(ctx, req); ok {
				return m.after(req, d), nil
			}
		}
		return r.Reconcile(ctx, req)
	})
}

// marks are the requests whose reconcile was put off and not yet forgotten.
type marks struct {
	mu   sync.Mutex
	reqs map[reconcile.Request]struct{}
}

func newMarks() *marks {
	return &marks{reqs: map[reconcile.Request]struct{}{}}
}

// after marks req as put off and returns the result that requeues it after d.
func (m *marks) after(req reconcile.Request, d time.Duration) reconcile.Result {
	m.mu.Lock()
	m.reqs[req] = struct{}{}
	m.mu.Unlock()
	return reconcile.Result{RequeueAfter: d}
}

// take reports whether req was put off, and unmarks it.
func (m *marks) take(req reconcile.Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.reqs[req]
	delete(m.reqs, req)
	return ok
}

// limiter returns rl, skipping the Forget that follows each put-off. The
// queue runs one reconcile of a request at a time and forgets right after
// it, so the mark a put-off leaves is always taken by its own Forget.
func (m *marks) limiter(rl RateLimiter) RateLimiter {
	return &keepingLimiter{RateLimiter: rl, marks: m}
}

type keepingLimiter struct {
	RateLimiter
	marks *marks
}

func (l *keepingLimiter) Forget(req reconcile.Request) {
	if l.marks.take(req) {
		return
	}
	l.RateLimiter.Forget(req)
}
