// Package putoff lets a gate in front of a reconciler put a reconcile off
// (requeue it after a delay, holding no worker) without resetting the
// object's error backoff.
//
// controller-runtime answers a reconcile's RequeueAfter with Forget on the
// controller's per-object rate limiter, which clears the object's failures:
// an object failing again and again, put off between its failures, would
// retry at the limiter's base delay instead of backing off. No result a
// reconciler can return requeues without either Forget or a failure, so the
// gate marks what it put off and its limiter skips the Forget that follows.
package putoff

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Marks are the requests whose reconcile was put off and not yet forgotten.
// The zero value is not usable; a nil *Marks puts off without marking.
type Marks struct {
	mu   sync.Mutex
	reqs map[reconcile.Request]struct{}
}

// NewMarks returns empty Marks.
func NewMarks() *Marks {
	return &Marks{reqs: map[reconcile.Request]struct{}{}}
}

// After marks req as put off and returns the result that requeues it after d.
func (m *Marks) After(req reconcile.Request, d time.Duration) reconcile.Result {
	if m != nil {
		m.mu.Lock()
		m.reqs[req] = struct{}{}
		m.mu.Unlock()
	}
	return reconcile.Result{RequeueAfter: d}
}

// take reports whether req was put off, and unmarks it.
func (m *Marks) take(req reconcile.Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.reqs[req]
	delete(m.reqs, req)
	return ok
}

// Limiter returns rl, skipping the Forget that follows each put-off. The
// queue runs one reconcile of a request at a time and forgets right after
// it, so the mark a put-off leaves is always taken by its own Forget.
func (m *Marks) Limiter(rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimiter[reconcile.Request] {
	return &keepingLimiter{TypedRateLimiter: rl, marks: m}
}

type keepingLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	marks *Marks
}

func (l *keepingLimiter) Forget(req reconcile.Request) {
	if l.marks.take(req) {
		return
	}
	l.TypedRateLimiter.Forget(req)
}
