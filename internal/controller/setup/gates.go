package setup

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A Check says whether a request's reconcile should be put off, and for how
// long: requeued after that delay, holding no controller worker meanwhile.
type Check func(ctx context.Context, req reconcile.Request) (time.Duration, bool)

// A RateLimiter is a controller's per-object requeue rate limiter.
type RateLimiter = workqueue.TypedRateLimiter[reconcile.Request]

// Gate returns r behind checks, asked in order (the first that puts a
// reconcile off wins), and rl made to keep an object's error backoff across
// a put-off. The two are built together because neither is right alone:
// controller-runtime answers a reconcile's RequeueAfter with Forget on the
// per-object rate limiter, which clears the object's failures, so an object
// failing again and again, put off between its failures, would retry at the
// limiter's base delay instead of backing off. No result a reconciler can
// return requeues without either Forget or a failure, so the gate marks what
// it put off and its limiter skips the Forget that follows.
func Gate(r reconcile.Reconciler, rl RateLimiter, checks ...Check) (reconcile.Reconciler, RateLimiter) {
	if len(checks) == 0 {
		return r, rl
	}
	m := newMarks()
	gated := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		for _, c := range checks {
			if d, ok := c(ctx, req); ok {
				return m.after(req, d), nil
			}
		}
		return r.Reconcile(ctx, req)
	})
	return gated, m.limiter(rl)
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
