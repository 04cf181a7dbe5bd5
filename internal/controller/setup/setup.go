// Package setup holds what every managed resource controller of this provider
// is wired with, so SecurityPolicy and SecurityPolicyRule controllers are set
// up the same way.
package setup

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
)

// CreationGracePeriod is how long after a successful create an observation
// that the external resource does not exist is not trusted. GCP is
// read-after-write consistent, so none.
const CreationGracePeriod = time.Duration(0)

// Per-object requeue backoff: crossplane-runtime's controllers start at 1 s.
// Every create ends with a rate-limited requeue to observe the result, and a
// rule applied together with its policy fails a few times until the policy
// exists, so a 1 s base doubled into several seconds between a rule's
// creation in GCP and its Ready condition. The global rate limiter still
// bounds the total, and errors still back off to MaxRequeueDelay.
const (
	BaseRequeueDelay = 100 * time.Millisecond
	MaxRequeueDelay  = 60 * time.Second
)

// NewControllerRateLimiter returns the per-object requeue rate limiter.
func NewControllerRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](BaseRequeueDelay, MaxRequeueDelay)
}

// Options configure the managed resource controllers.
type Options struct {
	controller.Options

	// Connector resolves ProviderConfigs into GCP clients.
	Connector *connector.Connector

	// PollJitter spreads polls by up to ±PollJitter.
	PollJitter time.Duration

	// Timeout bounds each reconcile's calls to GCP, operation waits included.
	Timeout time.Duration
}

// ReconcilerOptions returns the managed.NewReconciler options every kind uses.
func (o Options) ReconcilerOptions(mgr ctrl.Manager, name string) []managed.ReconcilerOption {
	opts := []managed.ReconcilerOption{
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder; the new events API is not wired through it yet.
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))),
		managed.WithPollInterval(o.PollInterval),
		managed.WithMinPollInterval(time.Second),
		// Names are chosen by users (policy) or derived from the spec
		// (rule), so a lost external-create-pending annotation must not wedge
		// an object: creating again is safe.
		managed.WithDeterministicExternalName(true),
		// Create returns only once GCP's operation is DONE, and GCP reads
		// are consistent with it, so "not found" right after a create is
		// the truth (a rule removed by someone else, or an object deleted
		// at once), not lag. crossplane-runtime's default 30 s grace period
		// for eventually consistent APIs made such objects wait until 30 s
		// after their create: deletes hung and removed rules came back late.
		managed.WithCreationGracePeriod(CreationGracePeriod),
	}
	if o.PollJitter > 0 {
		opts = append(opts, managed.WithPollJitterHook(o.PollJitter))
	}
	if o.Timeout > 0 {
		opts = append(opts, managed.WithTimeout(o.Timeout))
	}
	if o.Features != nil && o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil && o.MetricOptions.MRMetrics != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	return opts
}

// A Gate may put a reconcile off before it reaches the reconciler.
type Gate interface {
	Reconciler(r reconcile.Reconciler) reconcile.Reconciler
}

// Complete registers the state metrics recorder for the kind and builds the
// controller for r, filtered to desired-state changes and globally rate
// limited. The gate runs before the global rate limiter, so a reconcile it
// puts off spends none of the limiter's budget.
func (o Options) Complete(mgr ctrl.Manager, name string, of client.Object, list resource.ManagedList, r reconcile.Reconciler, gate Gate, watches ...func(*ctrl.Builder) *ctrl.Builder) error {
	if o.MetricOptions != nil && o.MetricOptions.MRStateMetrics != nil {
		rec := statemetrics.NewMRStateRecorder(NoCopyLister{mgr.GetClient()}, o.Logger, o.MetricOptions.MRStateMetrics, list, o.MetricOptions.PollStateMetricInterval)
		if err := mgr.Add(rec); err != nil {
			return err
		}
	}
	co := o.ForControllerRuntime()
	co.RateLimiter = NewControllerRateLimiter()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		// Only the kind's own events are filtered here: a watch of another
		// kind says which of its changes matter to this one.
		For(of, builder.WithPredicates(DesiredStateChanged()))
	for _, w := range watches {
		b = w(b)
	}
	return b.Complete(gate.Reconciler(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)))
}

// NoCopyLister lists from the informer cache without deep-copying what it
// lists, for readers that only look. The state metrics recorder lists every
// managed resource of its kind every few seconds (--poll-state-metric, 5 s)
// to count Ready and Synced conditions: with a copy each time, a thousand
// rules made megabytes of garbage every 5 s, which set the heap's peak and
// a good part of the provider's steady-state CPU. What it lists must not be
// modified: it is the cache's own objects.
type NoCopyLister struct{ client.Client }

// List lists with client.UnsafeDisableDeepCopy.
func (c NoCopyLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}

// DesiredStateChanged passes events that may change what the reconciler
// should do: creates, deletes, and updates of the spec (generation), labels
// or annotations. It is crossplane-runtime's resource.DesiredStateChanged
// except that it also ignores the annotations the managed reconciler writes
// to itself around a Create (external-create-succeeded, and the external name
// it records with it); the reconciler requeues after a Create anyway. Letting
// that write through started a second reconcile at once, before the
// informer had the status written after it, so the second reconcile's status
// update failed with a conflict: about one wasted write per object created.
func DesiredStateChanged() predicate.Predicate {
	return predicate.Or(
		userAnnotationsChanged{},
		predicate.LabelChangedPredicate{},
		predicate.GenerationChangedPredicate{},
	)
}

// userAnnotationsChanged passes updates that change an annotation other than
// the ones the managed reconciler writes for its own bookkeeping.
type userAnnotationsChanged struct {
	predicate.Funcs
}

func (userAnnotationsChanged) Update(e ctrlevent.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	oa, na := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	// The reconciler records the external name in the same write as
	// external-create-succeeded; any other change of it is the user's.
	createRecorded := oa[meta.AnnotationKeyExternalCreateSucceeded] != na[meta.AnnotationKeyExternalCreateSucceeded]
	ignored := func(k string) bool {
		switch k {
		case meta.AnnotationKeyExternalCreatePending, meta.AnnotationKeyExternalCreateSucceeded, meta.AnnotationKeyExternalCreateFailed:
			return true
		case meta.AnnotationKeyExternalName:
			return createRecorded && oa[k] == ""
		}
		return false
	}
	for k, v := range na {
		if !ignored(k) && oa[k] != v {
			return true
		}
	}
	for k := range oa {
		if _, ok := na[k]; !ok && !ignored(k) {
			return true
		}
	}
	return false
}

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
