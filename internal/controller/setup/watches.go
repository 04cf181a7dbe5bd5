package setup

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Delayed returns h with every request it makes waiting after in the queue
// first. The queue holds a request once, so the requests of a burst of
// events become one reconcile.
func Delayed(h handler.EventHandler, after time.Duration) handler.EventHandler {
	return queueing{EventHandler: h, wrap: func(q queue) queue { return delayQueue{q, after} }}
}

// Afresh returns h with the error backoff of every object it enqueues
// forgotten first, for events that may have removed the cause of an
// object's errors: a namespace admitted by its labels, a policy that opens
// itself to a namespace. Without it, the object's next requeue (crossplane's
// managed reconciler requeues through the rate limiter after a create) still
// waits out the backoff its refusals built up (docs/performance.md). Only such rare events may use it:
// an object that keeps failing backs off again from the base delay.
func Afresh(h handler.EventHandler) handler.EventHandler {
	return queueing{EventHandler: h, wrap: func(q queue) queue { return freshQueue{q} }}
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// queueing is an event handler that hands h a wrapped queue.
type queueing struct {
	handler.EventHandler
	wrap func(queue) queue
}

func (h queueing) Create(ctx context.Context, e ctrlevent.CreateEvent, q queue) {
	h.EventHandler.Create(ctx, e, h.wrap(q))
}

func (h queueing) Update(ctx context.Context, e ctrlevent.UpdateEvent, q queue) {
	h.EventHandler.Update(ctx, e, h.wrap(q))
}

func (h queueing) Delete(ctx context.Context, e ctrlevent.DeleteEvent, q queue) {
	h.EventHandler.Delete(ctx, e, h.wrap(q))
}

func (h queueing) Generic(ctx context.Context, e ctrlevent.GenericEvent, q queue) {
	h.EventHandler.Generic(ctx, e, h.wrap(q))
}

// delayQueue turns Add into AddAfter.
type delayQueue struct {
	queue
	after time.Duration
}

func (q delayQueue) Add(r reconcile.Request) { q.AddAfter(r, q.after) }

// freshQueue forgets a request's failures before adding it.
type freshQueue struct{ queue }

func (q freshQueue) Add(r reconcile.Request) {
	q.Forget(r)
	q.queue.Add(r)
}

// namespaceMembers maps a Namespace to a request for every object of list's
// kind in it, read from kube (the informer cache) without copying. Watching
// Namespaces with it re-reconciles a namespace's managed resources when its
// labels change, since labels decide which ClusterProviderConfigs and
// policies admit them: without it, a refused resource would wait out its
// error backoff (up to a minute) after its namespace is admitted.
func namespaceMembers(kube client.Reader, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, ns client.Object) []reconcile.Request {
		l, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return nil
		}
		if err := kube.List(ctx, l, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = apimeta.EachListItem(l, func(o runtime.Object) error {
			if m, ok := o.(client.Object); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			}
			return nil
		})
		return out
	}
}

// Related returns a MapFunc that enqueues the objects related names for an
// object of type T. Other types, and a lookup that fails, enqueue nothing:
// the poll reconciles them later.
func Related[T client.Object](kube client.Reader, related func(context.Context, client.Reader, T) ([]types.NamespacedName, error)) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		t, ok := o.(T)
		if !ok {
			return nil
		}
		names, err := related(ctx, kube, t)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(names))
		for i, n := range names {
			out[i] = reconcile.Request{NamespacedName: n}
		}
		return out
	}
}
