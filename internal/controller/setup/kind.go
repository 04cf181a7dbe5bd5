package setup

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A Kind is how one managed resource kind's controller is wired. Add turns
// it into a controller; the fields that take an Env are called once, then.
type Kind[T resource.Managed] struct {
	// GVK is the kind. Requires are the other kinds its controller reads or
	// watches: AddGated waits for all of their CRDs.
	GVK      schema.GroupVersionKind
	Requires []schema.GroupVersionKind

	// New returns an empty object of the kind, List an empty list of it.
	New  func() T
	List resource.ManagedList

	// Connector connects the managed reconciler to the external system.
	Connector func(Env) managed.TypedExternalConnector[T]

	// PollGroup names the GCP object the kind's objects observe, so the
	// objects observing one are polled together (see pollHook).
	PollGroup PollGroupFn

	// Indexes registers the field indexes the kind's functions read.
	Indexes func(ctx context.Context, o Options, idx client.FieldIndexer) error

	// Resolver resolves the kind's references; nil is crossplane-runtime's.
	Resolver func(Env) managed.ReferenceResolver

	// NamedBySpec says the external name comes from the spec, not from
	// metadata.name: the reconciler runs no initializers.
	NamedBySpec bool

	// Status saves the status Observe set across the finalizer's update
	// (see keepStatus).
	Status StatusFn[T]

	// KeepConditions are condition types kept across the critical
	// annotation update after Create (see keepConditions).
	KeepConditions []xpv2.ConditionType

	// Gates may put a reconcile off, after read-your-writes has not.
	Gates func(Env) []Check

	// Watches enqueue the kind's objects on changes of other objects.
	Watches func(Env) []Watch
}

// Env is what a Kind's functions are built with.
type Env struct {
	Options

	// Client is the manager's client, recording the kind's writes for
	// read-your-writes: use it for every write of the kind's objects.
	Client client.Client

	// Recorder records the controller's events.
	Recorder event.Recorder
}

// A Watch enqueues a kind's objects on events of another kind's objects,
// or on what a Source sends (then Of, Handler and Predicates are unused).
type Watch struct {
	Of         client.Object
	Handler    handler.EventHandler
	Predicates []predicate.Predicate
	Source     source.Source
}

// AddGated registers Add to run once the CRDs of k.GVK and k.Requires exist
// (safe-start: with Crossplane's ManagedResourceActivationPolicy a CRD may
// appear long after the provider starts).
func AddGated[T resource.Managed](mgr ctrl.Manager, o Options, k Kind[T]) error {
	o.Gate.Register(func() {
		if err := Add(mgr, o, k); err != nil {
			if managerStopping(err) {
				// The CRD appeared as the provider stops: nothing to run.
				return
			}
			panic(errors.Wrapf(err, "cannot set up %s controller", k.GVK.Kind))
		}
	}, append([]schema.GroupVersionKind{k.GVK}, k.Requires...)...)
	return nil
}

// Add adds k's controller to mgr, connecting to o.External when it is set.
// The order of its steps matters: indexes before any informer starts; the
// manager's client swapped for one that records the kind's writes before
// anything takes a client from it; the reconciler, then the gates in front
// of it (read-your-writes first, then k.Gates, then the global rate
// limiter), and the watches.
func Add[T resource.Managed](mgr ctrl.Manager, o Options, k Kind[T]) error {
	k = WithExternal(k, o.External)
	name := managed.ControllerName(k.GVK.GroupKind().String())
	if k.Indexes != nil {
		if err := k.Indexes(context.Background(), o, mgr.GetFieldIndexer()); err != nil {
			return err
		}
	}
	ryw := newReadYourWrites(mgr.GetClient(), k.New)
	mgr = ryw.Manager(mgr)
	//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder; the new events API is not wired through it yet.
	env := Env{Options: o, Client: mgr.GetClient(), Recorder: event.NewAPIRecorder(mgr.GetEventRecorderFor(name))}
	r := managed.NewReconciler(mgr, resource.ManagedKind(k.GVK), k.reconcilerOptions(name, env)...)
	checks := []Check{ryw.Check}
	if k.Gates != nil {
		checks = append(checks, k.Gates(env)...)
	}
	var watches []Watch
	if k.Watches != nil {
		watches = k.Watches(env)
	}
	list, ok := k.List.DeepCopyObject().(resource.ManagedList)
	if !ok {
		return errors.Errorf("%T is not a managed resource list", k.List)
	}
	return o.complete(mgr, name, k.New(), list, r, checks, watches)
}

// reconcilerOptions are every kind's options and then k's.
func (k Kind[T]) reconcilerOptions(name string, env Env) []managed.ReconcilerOption {
	opts := append(env.sharedReconcilerOptions(name, env.Recorder, k.PollGroup), managed.WithTypedExternalConnector[T](k.Connector(env)))
	if k.NamedBySpec {
		opts = append(opts, managed.WithInitializers())
	}
	if k.Resolver != nil {
		opts = append(opts, managed.WithReferenceResolver(k.Resolver(env)))
	}
	if len(k.KeepConditions) > 0 {
		opts = append(opts, managed.WithCriticalAnnotationUpdater(keepConditions(managed.NewRetryingCriticalAnnotationUpdater(env.Client), k.KeepConditions...)))
	}
	if k.Status != nil {
		opts = append(opts, managed.WithFinalizer(keepStatus(env.Client, k.Status)))
	}
	return opts
}

// complete registers the state metrics recorder for the kind and builds the
// controller for r, filtered to desired-state changes and globally rate
// limited. The gates run before the global rate limiter, so a reconcile
// they put off spends none of the limiter's budget.
func (o Options) complete(mgr ctrl.Manager, name string, of client.Object, list resource.ManagedList, r reconcile.Reconciler, checks []Check, watches []Watch) error {
	if o.MetricOptions != nil && o.MetricOptions.MRStateMetrics != nil {
		// A list of its own: the recorder lists into the one it is given on
		// every poll, while the Namespace watch copies list as a prototype
		// (a data race the race detector found once the integration env ran
		// the provider's own wiring, metrics included).
		own, ok := list.DeepCopyObject().(resource.ManagedList)
		if !ok {
			return errors.Errorf("%T is not a managed resource list", list)
		}
		rec := statemetrics.NewMRStateRecorder(lister{Client: mgr.GetClient()}, o.Logger, o.MetricOptions.MRStateMetrics, own, o.MetricOptions.PollStateMetricInterval)
		if err := mgr.Add(rec); err != nil {
			return err
		}
	}
	gated, rl := gateLimited(name, r, o.GlobalRateLimiter, newControllerRateLimiter(), checks...)
	co := o.ForControllerRuntime()
	co.RateLimiter = rl
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		// Only the kind's own events are filtered here: a watch of another
		// kind says which of its changes matter to this one.
		For(of, builder.WithPredicates(desiredStateChanged())).
		// A namespace's labels decide which configs and policies admit its
		// resources (namespaceSelector, allowedRules).
		Watches(&corev1.Namespace{}, Afresh(handler.EnqueueRequestsFromMapFunc(namespaceMembers(mgr.GetClient(), list))),
			builder.WithPredicates(predicate.LabelChangedPredicate{}))
	for _, w := range watches {
		if w.Source != nil {
			b = b.WatchesRawSource(w.Source)
			continue
		}
		b = b.Watches(w.Of, w.Handler, builder.WithPredicates(w.Predicates...))
	}
	return b.Complete(gated)
}

// OwnershipIndexes registers the ownership indexes (once, whichever kind
// asks first).
func OwnershipIndexes(ctx context.Context, o Options, idx client.FieldIndexer) error {
	return o.Indexes.Setup(ctx, idx)
}

// managerStopping says whether err is controller-runtime refusing a
// controller because the manager is stopping (its error is not exported,
// hence the text): a gate that opens during a shutdown must not panic.
func managerStopping(err error) bool {
	return strings.Contains(err.Error(), "stop procedure is already engaged")
}
