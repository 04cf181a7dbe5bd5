// Package addressset keeps each AddressSet's status equal to the addresses its
// source holds: the Nodes it selects (of the provider's cluster or another),
// Compute Engine instances, Cloud NAT, or objects of its own namespace
// (LoadBalancer Services, a field of any namespaced kind, a ConfigMap's
// list). It reads Nodes from an informer cache that holds only their names,
// labels and addresses, and it writes an AddressSet only when its addresses
// change, so the tens of Node status updates a second of a large cluster
// cost a map lookup each and wake nothing downstream.
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

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// Settle is how long a Node event waits in the queue before its AddressSets
// are recomputed. The queue holds a request once, so a burst of Node changes
// (a node pool scaled, a cluster started in the morning) becomes one write
// per AddressSet per Settle instead of one per Node, and one recomposition of
// each IPAllowlist downstream.
const Settle = 250 * time.Millisecond

// ReasonShrinkHeld is Ready's reason, besides Available and Unavailable,
// while a shrink is held.
const ReasonShrinkHeld xpv2.ConditionReason = "ShrinkHeld"

// Setup adds the AddressSet controller once its CRD exists. canListNodes says
// whether the provider may list and watch Nodes: Crossplane's RBAC manager
// does not grant it, so without the extra ClusterRole the controller still
// runs, to say so on every AddressSet, and keeps their last addresses.
func Setup(mgr ctrl.Manager, o setup.Options, canListNodes bool, reg *Registry, bounds Bounds) error {
	o.Gate.Register(func() {
		if err := add(mgr, o, canListNodes, reg, bounds); err != nil {
			panic(errors.Wrap(err, "cannot set up AddressSet controller"))
		}
	}, v1alpha1.AddressSetGroupVersionKind)
	return nil
}

func add(mgr ctrl.Manager, o setup.Options, canListNodes bool, reg *Registry, bounds Bounds) error {
	name := "addressset"
	//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder.
	rec := event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
	r := &Reconciler{
		kube:     mgr.GetClient(),
		log:      o.Logger.WithValues("controller", name),
		recorder: rec,
		now:      time.Now,
		nodes:    canListNodes,
		registry: reg,
		// No composite watches an AddressSet, so no breaker counts its
		// writes: they need not be kept apart.
		pacer:     pace.New(pace.DefaultQuiet, pace.DefaultMax, 0),
		held:      &holds{},
		dropAfter: bounds.DropUnreadableAfter,
	}
	cl := newClusters(mgr, o, bounds)
	r.clusters = cl
	r.instances = newInstances(cl.ctx, o.Connector, func(k types.NamespacedName) { cl.wakeSet(k) })
	r.nats = newNATs(cl.ctx, o.Connector, func(k types.NamespacedName) { cl.wakeSet(k) })
	ns, err := newNamespaceReader(cl.ctx, mgr.GetConfig(), mgr.GetRESTMapper(), cl.wakeSet, bounds)
	if err != nil {
		return err
	}
	r.namespaced = ns
	if err := addRemote(mgr, o, r, cl); err != nil {
		return err
	}
	local := *r
	local.path = pathLocal
	co := o.ForControllerRuntime()
	// A handful of AddressSets, each recomputed in microseconds: the local
	// path never waits on another cluster or on GCP, which the remote
	// controller reads on workers of its own.
	co.MaxConcurrentReconciles = 1
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		// Its own status writes need no reconcile; a spec change does.
		For(&v1alpha1.AddressSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, onPath(pathLocal)))
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
	return b.Complete(ratelimiter.NewReconciler(name, &local, o.GlobalRateLimiter))
}

// RemoteWorkers is how many AddressSets reading another cluster or GCP are
// reconciled at once: one tenant's slow cluster or project holds one of
// them, not the others, and never the local Nodes' path.
const RemoteWorkers = 4

// addRemote adds the controller of the AddressSets that read another
// cluster's Nodes, Compute Engine instances, Cloud NAT or objects of their
// namespace: r on workers of their own.
func addRemote(mgr ctrl.Manager, o setup.Options, r *Reconciler, cl *clusters) error {
	name := "addressset-remote"
	remote := *r
	remote.path = pathRemote
	co := o.ForControllerRuntime()
	co.MaxConcurrentReconciles = RemoteWorkers
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		For(&v1alpha1.AddressSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, onPath(pathRemote)))
	return cl.watch(b).Complete(ratelimiter.NewReconciler(name, &remote, o.GlobalRateLimiter))
}

// path is which controller reconciles an AddressSet.
type path int

const (
	// pathAny reconciles every AddressSet (a Reconciler alone, in tests).
	pathAny path = iota
	// pathLocal: the Nodes of the provider's own cluster.
	pathLocal
	// pathRemote: another cluster's Nodes, instances, Cloud NAT, or
	// objects of the set's namespace, each read by an informer or a poll
	// of its own.
	pathRemote
)

// pathOf is the path of as.
func pathOf(as *v1alpha1.AddressSet) path {
	if as.Spec.Instances != nil || as.Spec.NAT != nil || (as.Spec.Nodes != nil && as.Spec.Nodes.Cluster != nil) || as.Spec.ReadsNamespace() {
		return pathRemote
	}
	return pathLocal
}

// onPath passes the events of the AddressSets of path p. A set whose spec
// moves to the other path is that one's to reconcile; its reads forget
// what the other read for it (read).
func onPath(p path) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		as, ok := o.(*v1alpha1.AddressSet)
		return !ok || pathOf(as) == p
	})
}

// Reconciler recomputes one AddressSet.
type Reconciler struct {
	kube     client.Client
	log      logging.Logger
	recorder event.Recorder
	now      func() time.Time
	nodes    bool
	// path is the AddressSets it reconciles; another path's are left to
	// their controller (a request queued before the spec moved).
	path path

	// held remembers the outages past HeldLong; shared by both paths.
	held *holds
	// dropAfter, when positive, drops an unreadable source's addresses
	// once it has been unreadable this long.
	dropAfter time.Duration

	// registry is where the addresses go at once, for the controllers that
	// write them to GCP; the status follows at the pacer's bounded rate.
	registry *Registry
	pacer    *pace.Pacer

	// clusters reads the Nodes of other clusters, instances Compute
	// Engine instances, nats Cloud NAT, namespaced the objects of the
	// set's own namespace. A Reconciler of a test may leave those it does
	// not use nil.
	clusters   Reader
	instances  Reader
	nats       Reader
	namespaced Reader
}

// Reconcile publishes the addresses of what an AddressSet selects: to the
// registry at once, to its status at a bounded rate.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	as := &v1alpha1.AddressSet{}
	if err := r.kube.Get(ctx, req.NamespacedName, as); err != nil {
		if kerrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if as.GetDeletionTimestamp() != nil {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if r.path != pathAny && pathOf(as) != r.path {
		return reconcile.Result{}, nil
	}
	prev := r.previous(as)
	want := as.Status.DeepCopy()

	got, again, err := r.read(ctx, as)
	var pending *Pending
	var unread *Unreadable
	switch {
	case errors.As(err, &pending):
		return reconcile.Result{RequeueAfter: pending.After}, nil
	case errors.As(err, &unread):
		return r.holdUnreadable(ctx, as, prev, want, unread)
	case errors.Is(err, errNodesUnreadable):
		// The last addresses stay: an allowlist must not empty because a
		// permission is missing.
		return r.hold(ctx, as, prev, want, MsgNodesUnreadable, 0)
	case err != nil:
		want.SetConditions(xpv2.ReconcileError(err).WithObservedGeneration(as.GetGeneration()))
		_ = r.write(ctx, as, want)
		return reconcile.Result{}, err
	}
	r.held.readable(req.NamespacedName)
	d := Decide(prev.Addresses, prev.peak, prev.heldShrink, got.Addresses, time.Duration(as.Spec.ShrinkHold())*time.Second, r.now())

	setDecided(want, as.GetGeneration(), got, d)
	ready := readyCondition(as, d, got.Warnings)
	result := reconcile.Result{RequeueAfter: again}
	if d.Held != nil {
		result.RequeueAfter = sooner(result.RequeueAfter, d.RetryAfter)
	}
	want.SetConditions(ready.WithObservedGeneration(as.GetGeneration()), xpv2.ReconcileSuccess().WithObservedGeneration(as.GetGeneration()))

	now := Published{
		UID: as.GetUID(), Generation: as.GetGeneration(), Addresses: d.Addresses, Nodes: got.Nodes,
		Skipped: want.Skipped, SkippedCount: want.SkippedCount, Warnings: want.Warnings, peak: d.Peak, heldShrink: d.Held,
	}
	if d.Held != nil {
		now.Held = ready.Message
	}
	r.tellNew(as, prev, got)
	r.registry.publish(req.NamespacedName, now)

	return r.writePaced(ctx, as, want, result)
}

// tellNew records an event for what got leaves out or warns of that prev
// did not: each finding once, not once per reconcile.
func (r *Reconciler) tellNew(as *v1alpha1.AddressSet, prev Published, got Collected) {
	if newlySkipped(prev.Skipped, got.Skipped[:min(len(got.Skipped), MaxSkippedListed)]) {
		r.recorder.Event(as, event.Warning("NodesSkipped", errors.New(skippedMessage(got.Skipped))))
	}
	for _, w := range got.Warnings {
		if !slices.Contains(prev.Warnings, w) {
			r.recorder.Event(as, event.Warning("SourceWarning", errors.New(w)))
		}
	}
}

// setDecided sets the status's addresses, counts and hold to what d
// decided from got.
func setDecided(want *v1alpha1.AddressSetStatus, generation int64, got Collected, d Decision) {
	want.Addresses = d.Addresses
	want.AddressCount = len(d.Addresses)
	want.NodeCount = got.Nodes
	want.SkippedCount = len(got.Skipped)
	want.Warnings = got.Warnings
	want.Skipped = got.Skipped[:min(len(got.Skipped), MaxSkippedListed)]
	want.HeldShrink = d.Held
	want.Peak = d.Peak
	want.ObservedGeneration = generation
}

// writePaced writes want as as's status: a new spec or condition at once,
// addresses and counts that change with the source at the pacer's rate.
func (r *Reconciler) writePaced(ctx context.Context, as *v1alpha1.AddressSet, want *v1alpha1.AddressSetStatus, result reconcile.Result) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(as)
	fp := fingerprint(want)
	if as.Status.ObservedGeneration == want.ObservedGeneration && equality.Semantic.DeepEqual(as.Status.Conditions, want.Conditions) {
		due, after := r.pacer.Due(key, fp, equality.Semantic.DeepEqual(&as.Status, want), r.now())
		if !due {
			result.RequeueAfter = sooner(result.RequeueAfter, after)
			return result, nil
		}
	}
	if err := r.write(ctx, as, want); err != nil {
		return result, err
	}
	r.pacer.Written(key, fp, r.now())
	return result, nil
}

// readyCondition is Available, or ShrinkHeld while d holds a shrink back.
// Warnings leave the set Available: they block nothing.
func readyCondition(as *v1alpha1.AddressSet, d Decision, warnings []string) xpv2.Condition {
	if d.Held == nil && len(warnings) > 0 {
		return xpv2.Available().WithMessage(strings.Join(warnings, "; "))
	}
	if d.Held == nil {
		return xpv2.Available()
	}
	hold := time.Duration(as.Spec.ShrinkHold()) * time.Second
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonShrinkHeld, LastTransitionTime: d.Held.Since,
		Message: fmt.Sprintf("holding back a shrink from %d to %d addresses, seen since %s: applied at %s unless the Nodes come back; shrinkHoldSeconds: 0 applies shrinks at once",
			d.Held.From, d.Held.To, d.Held.Since.UTC().Format(time.RFC3339), d.Held.Since.Add(hold).UTC().Format(time.RFC3339))}
}

// read reads what as selects: the Nodes of the provider's own cluster from
// the manager's cache, anything else from its Reader. The readers it does
// not use forget as: it may have read another source before.
func (r *Reconciler) read(ctx context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	key := client.ObjectKeyFromObject(as)
	switch {
	case as.Spec.ReadsNamespace():
		forgetIn(key, r.clusters, r.instances, r.nats)
		return r.namespaced.Read(ctx, as)
	case as.Spec.Instances != nil:
		forgetIn(key, r.clusters, r.nats, r.namespaced)
		return r.instances.Read(ctx, as)
	case as.Spec.NAT != nil:
		forgetIn(key, r.clusters, r.instances, r.namespaced)
		return r.nats.Read(ctx, as)
	case as.Spec.Nodes != nil && as.Spec.Nodes.Cluster != nil:
		forgetIn(key, r.instances, r.nats, r.namespaced)
		return r.clusters.Read(ctx, as)
	}
	forgetIn(key, r.clusters, r.instances, r.nats, r.namespaced)
	if as.Spec.Nodes == nil {
		return Collected{}, 0, errors.New("the AddressSet selects none of nodes, instances, nat, services, object and configMap")
	}
	if !r.nodes {
		return Collected{}, 0, errNodesUnreadable
	}
	// Read-only: the cache's own objects, not a copy of every selected Node per look.
	nodes := &corev1.NodeList{}
	if err := r.kube.List(ctx, nodes, client.MatchingLabels(as.Spec.Nodes.MatchLabels), client.UnsafeDisableDeepCopy); err != nil {
		return Collected{}, 0, errors.Wrap(err, "cannot list Nodes")
	}
	return Collect(nodes.Items, as.Spec.Nodes.IncludeInternalIP), 0, nil
}

// hold keeps the addresses as published last, because the source cannot be
// read, and says why in Ready.
func (r *Reconciler) hold(ctx context.Context, as *v1alpha1.AddressSet, prev Published, want *v1alpha1.AddressSetStatus, why string, after time.Duration) (reconcile.Result, error) {
	g := as.GetGeneration()
	want.SetConditions(xpv2.Unavailable().WithMessage(why).WithObservedGeneration(g), xpv2.ReconcileError(errors.New(why)).WithObservedGeneration(g))
	prev.UID, prev.Generation, prev.Held, prev.Unreadable = as.GetUID(), g, why, true
	r.registry.publish(client.ObjectKeyFromObject(as), prev)
	return reconcile.Result{RequeueAfter: after}, r.write(ctx, as, want)
}

// holdUnreadable holds as's last addresses while its source cannot be
// read: says so once the outage passes HeldLong (an event, and the
// sources_held_long metric), and drops them once it passes dropAfter, when
// the platform team set that.
func (r *Reconciler) holdUnreadable(ctx context.Context, as *v1alpha1.AddressSet, prev Published, want *v1alpha1.AddressSetStatus, u *Unreadable) (reconcile.Result, error) {
	held := r.now().Sub(u.Since)
	r.held.unreadable(client.ObjectKeyFromObject(as), as.GetLabels()[labelAllowlist], u.Since)
	if r.held.longNow(client.ObjectKeyFromObject(as), u.Since, held) {
		r.recorder.Event(as, event.Warning("SourceHeldLong", errors.Errorf("%s; held longer than %s", u.Error(), HeldLong)))
	}
	if r.dropAfter <= 0 || held < r.dropAfter {
		addRead(&prev, want, u.Read)
		after := u.After
		if r.dropAfter > 0 {
			after = sooner(after, r.dropAfter-held)
		}
		return r.hold(ctx, as, prev, want, u.Error(), after)
	}
	prev.Addresses, prev.peak, prev.heldShrink = nil, nil, nil
	want.Addresses, want.AddressCount, want.Peak, want.HeldShrink = nil, 0, nil, nil
	return r.hold(ctx, as, prev, want, droppedMessage(u, r.dropAfter), u.After)
}

// addRead adds to the held addresses those of read, the parts of a source
// that answered while others could not: a new address is allowed at once,
// none goes until the whole source answers.
func addRead(prev *Published, want *v1alpha1.AddressSetStatus, read *Collected) {
	if read == nil {
		return
	}
	prev.Addresses = union(prev.Addresses, read.Addresses)
	prev.Warnings = read.Warnings
	want.Addresses, want.AddressCount, want.Warnings = prev.Addresses, len(prev.Addresses), read.Warnings
}

// sooner is the sooner of two requeue delays, 0 being none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// previous is what the AddressSet published last: the registry's, or after a
// restart its status.
func (r *Reconciler) previous(as *v1alpha1.AddressSet) Published {
	if p, ok := r.registry.Get(client.ObjectKeyFromObject(as)); ok && p.UID == as.GetUID() {
		return p
	}
	return Published{
		UID: as.GetUID(), Generation: as.Status.ObservedGeneration, Addresses: as.Status.Addresses,
		Nodes: as.Status.NodeCount, Skipped: as.Status.Skipped, SkippedCount: as.Status.SkippedCount,
		Warnings: as.Status.Warnings, peak: as.Status.Peak, heldShrink: as.Status.HeldShrink,
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	forgetIn(key, r.clusters, r.instances, r.nats, r.namespaced)
	r.registry.forget(key)
	r.pacer.Forget(key)
	r.held.readable(key)
}

// forgetIn makes each of readers forget key; a nil one has nothing to forget.
func forgetIn(key types.NamespacedName, readers ...Reader) {
	for _, rd := range readers {
		if rd != nil {
			rd.Forget(key)
		}
	}
}

// fingerprint identifies the status fields that change with the source.
func fingerprint(s *v1alpha1.AddressSetStatus) string {
	return fmt.Sprintf("%v|%d|%d|%v|%v|%v", s.Addresses, s.NodeCount, s.SkippedCount, s.Skipped, s.Peak, s.Warnings)
}

// MsgNodesUnreadable tells an admin what to grant.
const MsgNodesUnreadable = "the provider may not list and watch Nodes: grant its ServiceAccount get, list and watch on nodes (Crossplane's RBAC manager does not; see the provider's security documentation), then restart it; the addresses shown are the last known"

var errNodesUnreadable = errors.New(MsgNodesUnreadable)

// write writes want as as's status when it differs from what as holds.
// Conditions are compared without their transition times, which
// SetConditions keeps for an unchanged condition.
func (r *Reconciler) write(ctx context.Context, as *v1alpha1.AddressSet, want *v1alpha1.AddressSetStatus) error {
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
		if as.Spec.Nodes == nil || as.Spec.Nodes.Cluster != nil {
			continue
		}
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
