// Package enqueue shapes how event handlers put requests in a controller's
// queue.
package enqueue

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
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

// NamespaceMembers maps a Namespace to a request for every object of list's
// kind in it, read from kube (the informer cache) without copying. Watching
// Namespaces with it re-reconciles a namespace's managed resources when its
// labels change, since labels decide which ClusterProviderConfigs and
// policies admit them: without it, a refused resource would wait out its
// error backoff (up to a minute) after its namespace is admitted.
func NamespaceMembers(kube client.Reader, list client.ObjectList) handler.MapFunc {
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
