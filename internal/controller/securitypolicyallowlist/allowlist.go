// Package securitypolicyallowlist keeps each SecurityPolicyAllowlist's
// ranges in GCP: in allow rules of at most ten ranges inside its priority
// range, or in an address group allowed by one rule, switching between the two
// without a gap.
//
// It writes no GCP object itself. It keeps SecurityPolicyRule, AddressGroup
// and AddressSet objects that it owns, which their own controllers write to
// GCP with the ownership, tenancy and error reporting every such object has.
// What moves fast, Node addresses, reaches it from the AddressSet controller
// in memory (addressset.Registry) the moment they change; what Crossplane
// sees, its status, changes at a bounded rate (pace). Crossplane composes the
// allowlist and never the objects that follow the Nodes, so a burst of Nodes
// never spends a composite's circuit breaker.
package securitypolicyallowlist

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// finalizer holds an allowlist until the objects it keeps are gone, so that
// its rules leave GCP even where no garbage collector runs.
const finalizer = "cloudarmor.armorplane.io/allowlist"

// retry is how soon an allowlist waiting for its sources looks again, should
// no event wake it first.
const retry = 5 * time.Second

// Setup adds the SecurityPolicyAllowlist controller once its CRD and those of
// the objects it keeps exist.
func Setup(mgr ctrl.Manager, o controller.Options, reg *addressset.Registry) error {
	o.Gate.Register(func() {
		if err := add(mgr, o, reg); err != nil {
			panic(errors.Wrap(err, "cannot set up SecurityPolicyAllowlist controller"))
		}
	}, v1alpha1.SecurityPolicyAllowlistGroupVersionKind, v1beta1.SecurityPolicyRuleGroupVersionKind,
		v1alpha1.AddressGroupGroupVersionKind, v1alpha1.AddressSetGroupVersionKind, v1beta1.SecurityPolicyGroupVersionKind)
	return nil
}

func add(mgr ctrl.Manager, o controller.Options, reg *addressset.Registry) error {
	name := "securitypolicyallowlist"
	//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder.
	rec := event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
	r := NewReconciler(mgr.GetClient(), reg, o.Logger.WithValues("controller", name), rec)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		For(&v1alpha1.SecurityPolicyAllowlist{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A kept object's status says when GCP has it: a switch goes on, the
		// status follows.
		Owns(&v1beta1.SecurityPolicyRule{}).
		Owns(&v1alpha1.AddressGroup{}).
		Owns(&v1beta1.SecurityPolicy{}).
		Owns(&v1alpha1.AddressSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Func(func(_ context.Context, q queue) error {
			reg.Subscribe(func(set types.NamespacedName) {
				if al, ok := r.readerOf(set); ok {
					q.Add(reconcile.Request{NamespacedName: al})
				}
			})
			return nil
		})).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}

// Reconciler keeps one SecurityPolicyAllowlist's objects.
type Reconciler struct {
	kube     client.Client
	sets     sets
	log      logging.Logger
	recorder event.Recorder
	pacer    *pace.Pacer
	batch    *batcher
	now      func() time.Time

	// readers maps each AddressSet to the allowlist that reads it, for the
	// registry's news.
	mu      sync.Mutex
	readers map[types.NamespacedName]types.NamespacedName
	// wrote is the generation each object of an allowlist reached by the
	// allowlist's last write of its spec, by UID, while the cache shows it
	// older (catchUp).
	wrote map[types.NamespacedName]map[types.UID]int64
}

// NewReconciler returns a Reconciler reading Node addresses from sets.
func NewReconciler(kube client.Client, sets sets, log logging.Logger, rec event.Recorder) *Reconciler {
	return &Reconciler{
		kube: kube, sets: sets, log: log, recorder: rec, now: time.Now,
		pacer:   pace.New(pace.DefaultQuiet, pace.DefaultMax, pace.DefaultEvery),
		batch:   newBatcher(rangeBatchWindow),
		readers: map[types.NamespacedName]types.NamespacedName{},
		wrote:   map[types.NamespacedName]map[types.UID]int64{},
	}
}

func (r *Reconciler) readerOf(set types.NamespacedName) (types.NamespacedName, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	al, ok := r.readers[set]
	return al, ok
}

func (r *Reconciler) reads(al *v1alpha1.SecurityPolicyAllowlist) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(al)
	for _, src := range al.Spec.Sources {
		// Instance sources too: their AddressSets publish on every poll
		// that changes them, with no Node event to wake anyone.
		if src.ReadBySet() {
			r.readers[types.NamespacedName{Namespace: al.GetNamespace(), Name: SetName(al.GetName(), src.Name)}] = key
		}
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for set, al := range r.readers {
		if al == key {
			delete(r.readers, set)
		}
	}
	delete(r.wrote, key)
	r.pacer.Forget(key)
	r.batch.forget(key)
}

// written remembers the generation obj reached by a write of al.
func (r *Reconciler) written(al types.NamespacedName, obj client.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wrote[al] == nil {
		r.wrote[al] = map[types.UID]int64{}
	}
	r.wrote[al][obj.GetUID()] = obj.GetGeneration()
}

// catchUp gives each listed object that the cache shows older than the
// allowlist's last write of it the generation that write reached: its
// conditions then speak of an older spec, and it does not count as in GCP.
// Without it a Synced condition on the old spec would vouch for ranges the
// write just took out. Objects caught up, or gone, are forgotten.
func (r *Reconciler) catchUp(al types.NamespacedName, listed []resource.Managed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.wrote[al]
	behind := map[types.UID]int64{}
	for _, o := range listed {
		if gen, ok := was[o.GetUID()]; ok && o.GetGeneration() < gen {
			o.SetGeneration(gen)
			behind[o.GetUID()] = gen
		}
	}
	r.wrote[al] = behind
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Reconcile makes an allowlist's rules, groups and AddressSets what its
// sources and mode ask for.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	al := &v1alpha1.SecurityPolicyAllowlist{}
	if err := r.kube.Get(ctx, req.NamespacedName, al); err != nil {
		if kerrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	k, err := r.list(ctx, al)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.catchUp(req.NamespacedName, k.objects())
	if al.GetDeletionTimestamp() != nil {
		return r.delete(ctx, al, k)
	}
	if controllerutil.AddFinalizer(al, finalizer) {
		if err := r.kube.Update(ctx, al); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot add the allowlist's finalizer")
		}
	}
	r.reads(al)
	if err := r.keepPolicy(ctx, al, k); err != nil {
		return reconcile.Result{}, r.failed(ctx, al, err)
	}
	if err := r.keepSets(ctx, al, k); err != nil {
		return reconcile.Result{}, r.failed(ctx, al, err)
	}

	st := outcome{}
	src, err := resolve(al, k.sets, r.sets)
	var p plan
	switch {
	case err != nil:
		st.hold(v1alpha1.ReasonCannotCompose, err.Error())
		p = hold(k.children)
	case len(src.pending) > 0:
		st.hold(v1alpha1.ReasonSourcesPending, fmt.Sprintf("source(s) %s: the provider has not read their addresses yet; the rules stay as they are", strings.Join(src.pending, ", ")))
		p = hold(k.children)
	default:
		if src.keepAllowed {
			src.ranges = iprange.Minimal(append(src.ranges, k.children.allowed()...))
		}
		if al.Spec.Mode == v1alpha1.AllowlistModeAddressGroup {
			p, err = planGroups(al.Spec, src.ranges, k.children)
		} else {
			p, err = planRules(al.Spec, src.ranges, k.children)
		}
		if err != nil {
			st.hold(v1alpha1.ReasonCannotCompose, err.Error())
			p = hold(k.children)
		}
	}
	wait := r.batchRanges(req.NamespacedName, k.children, &p, st.held)
	gone, held := removals(k.children, p, src.ranges)
	if err := r.apply(ctx, al, k.children, p, gone); err != nil {
		return reconcile.Result{}, r.failed(ctx, al, err)
	}
	missing := uncovered(src.ranges, held)
	if err := r.keepDefaultRule(ctx, al, k, len(missing) == 0 && !st.held); err != nil {
		return reconcile.Result{}, r.failed(ctx, al, err)
	}
	st.follow(al, src, k.children, p)
	st.inGCP = len(src.ranges) - len(missing)
	res, err := r.report(ctx, al, k, st)
	if st.reason == v1alpha1.ReasonSourcesPending {
		res.RequeueAfter = sooner(res.RequeueAfter, retry)
	}
	if wait > 0 {
		res.RequeueAfter = sooner(res.RequeueAfter, wait)
	}
	return res, err
}

// batchRanges makes the range rule changes of p that more of a burst would
// write again wait, when the batcher says so, and returns how long. Only a
// plan of range rules alone waits: a switch between modes and a held plan go
// as they are.
func (r *Reconciler) batchRanges(key types.NamespacedName, c children, p *plan, held bool) time.Duration {
	if held || p.switching != "" || p.groupRule != nil || len(c.groupRules)+len(c.groups) > 0 {
		return 0
	}
	changes := rangeChanges(c, *p)
	if len(changes) == 0 {
		return 0
	}
	wait, after := r.batch.hold(key, changes, r.now())
	p.waitRules = wait
	return after
}

// keepPolicy makes the policy the allowlist creates what its spec says, but
// its default rule (keepDefaultRule). Only what the allowlist sets is
// compared: the rest of the object is its controller's (defaults, resolved
// fields).
func (r *Reconciler) keepPolicy(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, k kept) error {
	switch {
	case al.Spec.CreatePolicy == nil:
		return nil
	case k.policy == nil:
		return r.create(ctx, policy(al))
	}
	want := policyParameters(al, k.policy.Spec.ForProvider)
	want.DefaultRule = k.policy.Spec.ForProvider.DefaultRule
	return r.updatePolicy(ctx, k.policy, want)
}

// keepDefaultRule gives a policy the allowlist did not create itself (one an
// IPAllowlist composed before allowlists existed, adopted, and perhaps in use)
// the default action the spec asks for, once GCP holds every range the spec
// allows (covered): a deny set first would deny them until their rules came.
// A policy the allowlist creates has it from the start, as nothing uses it
// before the allowlist is Ready.
func (r *Reconciler) keepDefaultRule(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, k kept, covered bool) error {
	if al.Spec.CreatePolicy == nil || k.policy == nil || !covered {
		return nil
	}
	want := k.policy.Spec.ForProvider.DeepCopy()
	want.DefaultRule = policyParameters(al, *want).DefaultRule
	return r.updatePolicy(ctx, k.policy, *want)
}

func (r *Reconciler) updatePolicy(ctx context.Context, p *v1beta1.SecurityPolicy, want v1beta1.SecurityPolicyParameters) error {
	if equality.Semantic.DeepEqual(want, p.Spec.ForProvider) {
		return nil
	}
	return errors.Wrapf(r.update(ctx, p, func() { p.Spec.ForProvider = want }), "cannot update SecurityPolicy %s", p.GetName())
}

// keepSets makes one AddressSet per node or instance source and removes the
// others.
func (r *Reconciler) keepSets(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, k kept) error {
	want := map[string]bool{}
	for _, src := range al.Spec.Sources {
		if !src.ReadBySet() {
			continue
		}
		as := addressSet(al, src)
		want[as.GetName()] = true
		have, ok := k.sets[as.GetName()]
		switch {
		case !ok:
			if err := r.kube.Create(ctx, as); err != nil && !kerrors.IsAlreadyExists(err) {
				return errors.Wrapf(err, "cannot create AddressSet %s", as.GetName())
			}
			k.sets[as.GetName()] = as
		case !equality.Semantic.DeepEqual(have.Spec, as.Spec):
			if err := r.update(ctx, have, func() { have.Spec = as.Spec }); err != nil {
				return errors.Wrapf(err, "cannot update AddressSet %s", have.GetName())
			}
		}
	}
	for n, as := range k.sets {
		if !want[n] {
			if err := ignoreGone(r.kube.Delete(ctx, as)); err != nil {
				return errors.Wrapf(err, "cannot delete AddressSet %s", n)
			}
			delete(k.sets, n)
		}
	}
	return nil
}

// apply makes the rules and groups what p says: creates and updates first,
// then what goes (removals).
func (r *Reconciler) apply(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, c children, p plan, gone []resource.Managed) error {
	if err := r.applyGroups(ctx, al, c, p); err != nil {
		return err
	}
	if err := r.applyRanges(ctx, al, c, p); err != nil {
		return err
	}
	for _, o := range gone {
		if err := ignoreGone(r.kube.Delete(ctx, o)); err != nil {
			return errors.Wrapf(err, "cannot delete %s %s", kindOf(o), o.GetName())
		}
	}
	return nil
}

// applyGroups creates or fills the address groups p wants, then their rule.
func (r *Reconciler) applyGroups(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, c children, p plan) error {
	for name, w := range p.groups {
		have, ok := c.groups[name]
		switch {
		case !ok:
			if err := r.create(ctx, addressGroup(al, name, w)); err != nil {
				return err
			}
		case !slices.Equal(have.Spec.ForProvider.Items, strs(w.items)):
			if err := r.update(ctx, have, func() { have.Spec.ForProvider.Items = strs(w.items) }); err != nil {
				return errors.Wrapf(err, "cannot update AddressGroup %s", have.GetName())
			}
		}
	}
	w := p.groupRule
	if w == nil {
		return nil
	}
	have, ok := c.groupRules[w.v4Name]
	switch {
	case !ok:
		return r.create(ctx, groupRule(al, w))
	case ruleExpression(have) != w.expression:
		return errors.Wrapf(r.update(ctx, have, func() { have.Spec.ForProvider.Match.Expr.Expression = w.expression }),
			"cannot update SecurityPolicyRule %s", have.GetName())
	}
	return nil
}

// applyRanges creates or updates the range rules p wants.
func (r *Reconciler) applyRanges(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, c children, p plan) error {
	for _, rule := range p.ranges {
		if p.waitRules[rule.Priority] {
			continue
		}
		have, ok := c.ranges[rule.Priority]
		switch {
		case !ok:
			if err := r.create(ctx, rangeRule(al, rule)); err != nil {
				return err
			}
		case !slices.Equal(ruleRanges(have), rule.Ranges) || have.Spec.ForProvider.Match.Config == nil ||
			len(have.Spec.ForProvider.Match.Config.SrcIpRanges) != len(rule.Ranges):
			if err := r.update(ctx, have, func() {
				have.Spec.ForProvider.Match.Config = &v1beta1.RuleMatcherConfig{SrcIpRanges: ipRanges(rule.Ranges)}
			}); err != nil {
				return errors.Wrapf(err, "cannot update SecurityPolicyRule %s", have.GetName())
			}
		}
	}
	return nil
}

// update writes what change makes of obj's spec as a merge patch. The
// allowlist is the only writer of its objects' specs, so it needs no
// resourceVersion: a status their own controller wrote a moment before no
// longer fails the write with a conflict, which turned the allowlist
// Synced=False and back, two events on its composite each.
func (r *Reconciler) update(ctx context.Context, obj client.Object, change func()) error {
	base := obj.DeepCopyObject().(client.Object)
	change()
	if err := r.kube.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return err
	}
	r.written(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[LabelAllowlist]}, obj)
	return nil
}

func (r *Reconciler) create(ctx context.Context, o client.Object) error {
	if err := r.kube.Create(ctx, o); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create %s", o.GetName())
	}
	return nil
}

// delete removes every object the allowlist keeps, then its finalizer.
func (r *Reconciler) delete(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, k kept) (reconcile.Result, error) {
	all := make([]client.Object, 0, len(k.ranges)+len(k.groupRules)+len(k.groups)+len(k.sets))
	for _, o := range k.objects() {
		all = append(all, o)
	}
	for _, o := range k.sets {
		all = append(all, o)
	}
	if k.policy != nil {
		all = append(all, k.policy)
	}
	for _, o := range all {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if err := ignoreGone(r.kube.Delete(ctx, o)); err != nil {
			return reconcile.Result{}, errors.Wrapf(err, "cannot delete %s", o.GetName())
		}
	}
	if len(all) > 0 {
		// Their deletion events bring the allowlist back; this is a fallback.
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	r.forget(client.ObjectKeyFromObject(al))
	if controllerutil.RemoveFinalizer(al, finalizer) {
		return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(r.kube.Update(ctx, al)), "cannot remove the allowlist's finalizer")
	}
	return reconcile.Result{}, nil
}

// failed reports err in the Synced condition and returns it, for the error
// backoff.
func (r *Reconciler) failed(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, err error) error {
	if kerrors.IsConflict(err) {
		// The cache was behind: the retry sees the object as it is. Not an
		// error worth a Synced flip, which Crossplane would see twice.
		return err
	}
	al.Status.SetConditions(xpv2.ReconcileError(err).WithObservedGeneration(al.GetGeneration()))
	_ = r.kube.Status().Update(ctx, al)
	return err
}
