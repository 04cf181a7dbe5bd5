// Package setup holds what every managed resource controller of this provider
// is wired with, so SecurityPolicy and SecurityPolicyRule controllers are set
// up the same way.
package setup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/armorplane/provider-cloudarmor/internal/controller/backlog"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/enqueue"
	"github.com/armorplane/provider-cloudarmor/internal/controller/nocopy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pollphase"
	"github.com/armorplane/provider-cloudarmor/internal/controller/predicates"
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

	// PollJitter is the width of the window in which the objects reading
	// one GCP policy are polled (see pollphase), and the ± jitter of the
	// polls of objects whose policy is not known yet.
	PollJitter time.Duration

	// Timeout bounds each reconcile's calls to GCP, operation waits included.
	Timeout time.Duration

	// Indexes are the ownership indexes both managed resource controllers
	// read; whichever starts first registers them.
	Indexes *ownership.Indexes

	// Labeler names the owner of each GCP policy in its labels.
	Labeler ownership.Labeler

	// Writes is the provider's queue of GCP writes; controllers whose
	// objects write one policy each put their reconciles off while its
	// queue is full (see backlog). Nil turns that off.
	Writes backlog.Queue

	// NodesReadable says whether the provider may list and watch Nodes,
	// which AddressSets read.
	NodesReadable bool
}

// ReconcilerOptions returns the managed.NewReconciler options every kind uses.
// group names the GCP policy an object of the kind observes: the objects of
// one policy are polled together, so they share one snapshot of it.
func (o Options) ReconcilerOptions(mgr ctrl.Manager, name string, group pollphase.GroupFn) []managed.ReconcilerOption {
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
		managed.WithPollIntervalHook(pollphase.Hook(group, o.PollJitter, o.PollJitter)),
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

// A Gate may put a reconcile off before it reaches the reconciler. A put-off
// is no outcome of the object's reconcile, so the gate also wraps the
// controller's per-object rate limiter: putting a reconcile off must not
// reset the object's error backoff.
type Gate interface {
	Reconciler(r reconcile.Reconciler) reconcile.Reconciler
	RateLimiter(rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimiter[reconcile.Request]
}

// Gates returns a Gate that asks each of gs in turn, the first first: a
// reconcile runs when none of them puts it off.
func Gates(gs ...Gate) Gate { return gates(gs) }

type gates []Gate

func (gs gates) Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	for i := len(gs) - 1; i >= 0; i-- {
		r = gs[i].Reconciler(r)
	}
	return r
}

func (gs gates) RateLimiter(rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimiter[reconcile.Request] {
	for _, g := range gs {
		rl = g.RateLimiter(rl)
	}
	return rl
}

// Complete registers the state metrics recorder for the kind and builds the
// controller for r, filtered to desired-state changes and globally rate
// limited. The gate runs before the global rate limiter, so a reconcile it
// puts off spends none of the limiter's budget.
func (o Options) Complete(mgr ctrl.Manager, name string, of client.Object, list resource.ManagedList, r reconcile.Reconciler, gate Gate, watches ...func(*ctrl.Builder) *ctrl.Builder) error {
	if o.MetricOptions != nil && o.MetricOptions.MRStateMetrics != nil {
		rec := statemetrics.NewMRStateRecorder(nocopy.Lister{Client: mgr.GetClient()}, o.Logger, o.MetricOptions.MRStateMetrics, list, o.MetricOptions.PollStateMetricInterval)
		if err := mgr.Add(rec); err != nil {
			return err
		}
	}
	co := o.ForControllerRuntime()
	co.RateLimiter = gate.RateLimiter(NewControllerRateLimiter())
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		// Only the kind's own events are filtered here: a watch of another
		// kind says which of its changes matter to this one.
		For(of, builder.WithPredicates(predicates.DesiredStateChanged())).
		// A namespace's labels decide which configs and policies admit its
		// resources (namespaceSelector, allowedRules).
		Watches(&corev1.Namespace{}, enqueue.Afresh(handler.EnqueueRequestsFromMapFunc(enqueue.NamespaceMembers(mgr.GetClient(), list))),
			builder.WithPredicates(predicate.LabelChangedPredicate{}))
	for _, w := range watches {
		b = w(b)
	}
	return b.Complete(gate.Reconciler(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)))
}

// EventCorrelatorCacheSize is how many distinct events (by object, reason and
// message) the event recorder remembers to count repeats and filter spam.
// client-go's default, 4,096 in each of its three caches, held 1.2 MiB of the
// provider's 11.5 MiB live heap in a heap profile with 1,000 rule objects in
// steady state; with 256, RssAnon there went from 32.6 to 29.8–30.5 MiB. With
// fewer entries, an object's repeated event after 256 others' becomes a new
// Event instead of a count on the old one.
const EventCorrelatorCacheSize = 256

// NewEventBroadcaster returns the event broadcaster for the manager
// (ctrl.Options.EventBroadcaster), with EventCorrelatorCacheSize. The
// manager does not stop a broadcaster it was given; the provider's lives as
// long as its process.
func NewEventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventCorrelatorCacheSize}))
}
