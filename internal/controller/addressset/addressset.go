// Package addressset keeps each AddressSet's status equal to the addresses of
// the Nodes it selects. It reads Nodes from an informer cache that holds only
// their names, labels and addresses, and it writes an AddressSet only when its
// addresses change, so the tens of Node status updates a second of a large
// cluster cost a map lookup each and wake nothing downstream.
package addressset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// Settle is how long a Node event waits in the queue before its AddressSets
// are recomputed. The queue holds a request once, so a burst of Node changes
// (a node pool scaled, a cluster started in the morning) becomes one write
// per AddressSet per Settle instead of one per Node, and one recomposition of
// each IPAllowlist downstream.
const Settle = 250 * time.Millisecond

// Pace is the least time between two publications of one AddressSet's
// addresses. The first change after a quiet spell is published Settle after
// its Node event; during a burst (a pool of hundreds scaled, every Node
// event Settle apart) the set then changes at most once per Pace instead of
// once per Settle. Every publication recomposes the IPAllowlists that read
// the set, and Crossplane counts each such pass's several events against
// the IPAllowlist's circuit breaker: at once per Settle, a 500-Node burst
// in addressGroup mode opened even a breaker of 500 tokens refilled at 5 a
// second (make bench, 2026-11-26); at once per Pace a pass's events come no
// faster than such a breaker refills.
const Pace = time.Second

// Reasons of the Ready condition besides Available.
const (
	ReasonShrinkHeld    xpv2.ConditionReason = "ShrinkHeld"
	ReasonNodesUnlisted xpv2.ConditionReason = "NodesUnreadable"
)

// Setup adds the AddressSet controller once its CRD exists. canListNodes says
// whether the provider may list and watch Nodes: Crossplane's RBAC manager
// does not grant it, so without the extra ClusterRole the controller still
// runs, to say so on every AddressSet, and keeps their last addresses.
func Setup(mgr ctrl.Manager, o controller.Options, canListNodes bool) error {
	o.Gate.Register(func() {
		if err := add(mgr, o, canListNodes); err != nil {
			panic(errors.Wrap(err, "cannot set up AddressSet controller"))
		}
	}, v1alpha1.AddressSetGroupVersionKind)
	return nil
}

func add(mgr ctrl.Manager, o controller.Options, canListNodes bool) error {
	name := "addressset"
	//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder.
	rec := event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
	r := &Reconciler{
		kube:     mgr.GetClient(),
		log:      o.Logger.WithValues("controller", name),
		recorder: rec,
		now:      time.Now,
		nodes:    canListNodes,
	}
	co := o.ForControllerRuntime()
	// A handful of AddressSets, each recomputed in microseconds.
	co.MaxConcurrentReconciles = 1
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		// Its own status writes need no reconcile; a spec change does.
		For(&v1alpha1.AddressSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if canListNodes {
		b = b.Watches(&corev1.Node{}, setup.Delayed(handler.Funcs{
			CreateFunc: func(ctx context.Context, e ctrlevent.CreateEvent, q queue) {
				r.enqueueSelecting(ctx, q, e.Object.GetLabels())
			},
			UpdateFunc: func(ctx context.Context, e ctrlevent.UpdateEvent, q queue) {
				r.enqueueSelecting(ctx, q, e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
			},
			DeleteFunc: func(ctx context.Context, e ctrlevent.DeleteEvent, q queue) {
				r.enqueueSelecting(ctx, q, e.Object.GetLabels())
			},
		}, Settle), builder.WithPredicates(nodeChanged()))
	}
	return b.Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}

// Reconciler recomputes one AddressSet.
type Reconciler struct {
	kube     client.Client
	log      logging.Logger
	recorder event.Recorder
	now      func() time.Time
	nodes    bool

	// published is when each AddressSet's addresses last changed, for Pace.
	// Reconciles of this controller run one at a time.
	published map[types.NamespacedName]time.Time
}

// Reconcile publishes the addresses of the Nodes an AddressSet selects.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	as := &v1alpha1.AddressSet{}
	if err := r.kube.Get(ctx, req.NamespacedName, as); err != nil {
		if kerrors.IsNotFound(err) {
			delete(r.published, req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if as.GetDeletionTimestamp() != nil {
		delete(r.published, req.NamespacedName)
		return reconcile.Result{}, nil
	}
	want := as.Status.DeepCopy()
	var result reconcile.Result

	if !r.nodes {
		// The last addresses stay: an allowlist must not empty because a
		// permission is missing.
		want.SetConditions(xpv2.Unavailable().WithMessage(MsgNodesUnreadable).WithObservedGeneration(as.GetGeneration()),
			xpv2.ReconcileError(errNodesUnreadable).WithObservedGeneration(as.GetGeneration()))
		return result, r.publish(ctx, as, want)
	}

	// Read-only: the cache's own objects, not a copy of every selected Node per look.
	nodes := &corev1.NodeList{}
	if err := r.kube.List(ctx, nodes, client.MatchingLabels(as.Spec.Nodes.MatchLabels), client.UnsafeDisableDeepCopy); err != nil {
		err = errors.Wrap(err, "cannot list Nodes")
		want.SetConditions(xpv2.ReconcileError(err).WithObservedGeneration(as.GetGeneration()))
		_ = r.publish(ctx, as, want)
		return reconcile.Result{}, err
	}
	got := Collect(nodes.Items, as.Spec.Nodes.IncludeInternalIP)
	d := Decide(as.Status.Addresses, as.Status.Peak, as.Status.HeldShrink, got.Addresses, time.Duration(as.Spec.ShrinkHold())*time.Second, r.now())

	want.Addresses = d.Addresses
	want.AddressCount = len(d.Addresses)
	want.NodeCount = got.Nodes
	want.SkippedCount = len(got.Skipped)
	want.Skipped = got.Skipped[:min(len(got.Skipped), MaxSkippedListed)]
	want.HeldShrink = d.Held
	want.Peak = d.Peak
	want.ObservedGeneration = as.GetGeneration()
	ready := xpv2.Available()
	if d.Held != nil {
		ready = xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonShrinkHeld, LastTransitionTime: d.Held.Since,
			Message: fmt.Sprintf("holding back a shrink from %d to %d addresses, seen since %s: applied at %s unless the Nodes come back; shrinkHoldSeconds: 0 applies shrinks at once",
				d.Held.From, d.Held.To, d.Held.Since.UTC().Format(time.RFC3339), d.Held.Since.Add(time.Duration(as.Spec.ShrinkHold())*time.Second).UTC().Format(time.RFC3339))}
		result.RequeueAfter = d.RetryAfter
	}
	want.SetConditions(ready.WithObservedGeneration(as.GetGeneration()), xpv2.ReconcileSuccess().WithObservedGeneration(as.GetGeneration()))

	changed := !slices.Equal(as.Status.Addresses, want.Addresses)
	if changed && as.Status.ObservedGeneration == as.GetGeneration() {
		// A new spec is published at once; new addresses no sooner than
		// Pace after the last ones.
		if wait := r.published[req.NamespacedName].Add(Pace).Sub(r.now()); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if newlySkipped(as.Status.Skipped, want.Skipped) {
		r.recorder.Event(as, event.Warning("NodesSkipped", errors.New(skippedMessage(got.Skipped))))
	}
	if err := r.publish(ctx, as, want); err != nil {
		return result, err
	}
	if changed {
		if r.published == nil {
			r.published = map[types.NamespacedName]time.Time{}
		}
		r.published[req.NamespacedName] = r.now()
	}
	return result, nil
}

// MsgNodesUnreadable tells an admin what to grant.
const MsgNodesUnreadable = "the provider may not list and watch Nodes: grant its ServiceAccount get, list and watch on nodes (Crossplane's RBAC manager does not; see the provider's security documentation), then restart it; the addresses shown are the last known"

var errNodesUnreadable = errors.New(MsgNodesUnreadable)

// publish writes want as as's status when it differs from what as holds.
// Conditions are compared without their transition times, which
// SetConditions keeps for an unchanged condition.
func (r *Reconciler) publish(ctx context.Context, as *v1alpha1.AddressSet, want *v1alpha1.AddressSetStatus) error {
	if equality.Semantic.DeepEqual(&as.Status, want) {
		return nil
	}
	as.Status = *want
	return errors.Wrap(client.IgnoreNotFound(r.kube.Status().Update(ctx, as)), "cannot update AddressSet status")
}

// enqueueSelecting adds every AddressSet whose selector matches one of sets.
func (r *Reconciler) enqueueSelecting(ctx context.Context, q queue, sets ...map[string]string) {
	// Runs for every Node event: read the cache's objects, do not copy them.
	list := &v1alpha1.AddressSetList{}
	if err := r.kube.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		r.log.Debug("Cannot list AddressSets for a Node event", "error", err)
		return
	}
	for i := range list.Items {
		as := &list.Items[i]
		sel := labels.SelectorFromSet(as.Spec.Nodes.MatchLabels)
		if slices.ContainsFunc(sets, func(l map[string]string) bool { return sel.Matches(labels.Set(l)) }) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(as)})
		}
	}
}

// newlySkipped reports whether now names a Node before did not.
func newlySkipped(before, now []v1alpha1.SkippedNode) bool {
	for _, s := range now {
		if !slices.Contains(before, s) {
			return true
		}
	}
	return false
}

func skippedMessage(s []v1alpha1.SkippedNode) string {
	parts := make([]string, 0, min(len(s), MaxSkippedListed))
	for _, n := range s[:min(len(s), MaxSkippedListed)] {
		parts = append(parts, n.Name+" ("+n.Reason+")")
	}
	more := ""
	if len(s) > MaxSkippedListed {
		more = fmt.Sprintf(" and %d more", len(s)-MaxSkippedListed)
	}
	return fmt.Sprintf("%d selected Node(s) left out, the others kept: %s%s", len(s), strings.Join(parts, ", "), more)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// nodeChanged passes Node creations and deletions, and updates that change
// what an AddressSet reads: labels (selection) or addresses. A kubelet's
// status updates (conditions, images, heartbeats) change neither.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			return !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
				!equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
		},
	}
}
