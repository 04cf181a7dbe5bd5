// Package enqueue shapes how event handlers put requests in a controller's
// queue.
package enqueue

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Delayed returns h with every request it makes waiting after in the queue
// first. The queue holds a request once, so the requests of a burst of
// events become one reconcile.
func Delayed(h handler.EventHandler, after time.Duration) handler.EventHandler {
	return delayed{EventHandler: h, after: after}
}

// delayed is an event handler whose requests wait a while in the queue.
type delayed struct {
	handler.EventHandler
	after time.Duration
}

func (d delayed) Create(ctx context.Context, e ctrlevent.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d.EventHandler.Create(ctx, e, delayQueue{q, d.after})
}

func (d delayed) Update(ctx context.Context, e ctrlevent.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d.EventHandler.Update(ctx, e, delayQueue{q, d.after})
}

func (d delayed) Delete(ctx context.Context, e ctrlevent.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d.EventHandler.Delete(ctx, e, delayQueue{q, d.after})
}

func (d delayed) Generic(ctx context.Context, e ctrlevent.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	d.EventHandler.Generic(ctx, e, delayQueue{q, d.after})
}

// delayQueue turns Add into AddAfter.
type delayQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	after time.Duration
}

func (q delayQueue) Add(r reconcile.Request) { q.AddAfter(r, q.after) }
