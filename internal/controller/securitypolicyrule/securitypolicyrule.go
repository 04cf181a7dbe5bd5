// Package securitypolicyrule manages SecurityPolicyRule objects: one rule of
// a Cloud Armor policy, identified by (policy, priority).
package securitypolicyrule

import (
	"context"
	"strconv"

	"google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kptr "k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// AnnotationResetDefaultRule, set to "true" on a SecurityPolicyRule at
// priority 2147483647, resets the default rule to "allow *" when the object
// is deleted. Without it the default rule is left as it is: it can never be
// removed, and silently opening a deny-by-default policy would be worse than
// leaving it closed.
const AnnotationResetDefaultRule = "cloudarmor.armorplane.io/reset-default-rule-on-delete"

// Error strings.
const (
	errConnect        = "cannot connect to GCP"
	errNoPolicy       = "spec.forProvider.securityPolicy is not set: set it or resolve securityPolicyRef/securityPolicySelector"
	errGetPolicy      = "cannot get security policy"
	errAddRule        = "cannot add rule"
	errPatchRule      = "cannot patch rule"
	errRemoveRule     = "cannot remove rule"
	errResetDefault   = "cannot reset default rule"
	errPolicyNotFound = "security policy does not exist"
	errNotRule        = "managed resource is not a SecurityPolicyRule"
	errResolve        = "cannot resolve references"
	errUpdateRefs     = "cannot update managed resource with resolved references"
)

// Kind wires the SecurityPolicyRule controller. A rule asks the policies
// that name its GCP policy whether it may claim its priority, so it also
// waits for their CRD.
var Kind = setup.Kind[*v1beta1.SecurityPolicyRule]{
	GVK:       v1beta1.SecurityPolicyRuleGroupVersionKind,
	Requires:  []schema.GroupVersionKind{v1beta1.SecurityPolicyGroupVersionKind},
	New:       func() *v1beta1.SecurityPolicyRule { return &v1beta1.SecurityPolicyRule{} },
	List:      &v1beta1.SecurityPolicyRuleList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	Indexes:   indexes,
	Resolver:  func(e setup.Env) managed.ReferenceResolver { return &resolver{kube: e.Client} },
	// The identity is (policy, priority) from the spec, not metadata.name.
	NamedBySpec:    true,
	Status:         setup.StatusOf(func(cr *v1beta1.SecurityPolicyRule) *v1beta1.SecurityPolicyRuleStatus { return &cr.Status }),
	KeepConditions: []xpv2.ConditionType{apivalues.TypeWarning, apivalues.TypeTier},
	Gates:          gates,
	Watches: func(e setup.Env) []setup.Watch {
		return []setup.Watch{watchPolicies(e.Client), watchArrivals(e.Client)}
	},
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1beta1.SecurityPolicyRule] {
	return &externalConnector{conn: e.Connector, index: ownership.NewIndex(e.Client), recorder: e.Recorder}
}

// indexes registers the ownership indexes and the index of rules waiting
// for their policy's reference to resolve.
func indexes(ctx context.Context, o setup.Options, idx client.FieldIndexer) error {
	if err := setup.OwnershipIndexes(ctx, o, idx); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1beta1.SecurityPolicyRule{}, indexUnresolved, indexUnresolvedRule)
}

// gates puts a rule's reconcile off while its policy's write queue is full.
func gates(e setup.Env) []setup.Check {
	if e.Writes == nil {
		return nil
	}
	return []setup.Check{setup.Backlog(e.Writes, policyOf(e.Client, ownership.NewIndex(e.Client)))}
}

// policyOf returns the GCP policy a rule object writes to, read from the
// cache: the key of its policy's write queue.
func policyOf(kube client.Reader, index *ownership.Index) setup.KeyFn[gcp.PolicyKey] {
	return func(ctx context.Context, req reconcile.Request) (gcp.PolicyKey, bool) {
		cr := &v1beta1.SecurityPolicyRule{}
		if err := kube.Get(ctx, req.NamespacedName, cr); err != nil || policyName(cr) == "" {
			return gcp.PolicyKey{}, false
		}
		project, err := index.ProjectOf(ctx, cr, cr.Spec.ForProvider.Project)
		if err != nil {
			return gcp.PolicyKey{}, false
		}
		return ownership.RulePolicyKey(cr, project), true
	}
}

// watchPolicies re-reconciles the rule objects, in every namespace, that
// name a policy's GCP policy when the policy's spec changes: a policy that
// opens spec.allowedRules to a namespace, or declares inline the priority of
// a rule being deleted, changes what those rules may do.
func watchPolicies(kube client.Reader) setup.Watch {
	return setup.Watch{
		Of:         &v1beta1.SecurityPolicy{},
		Handler:    setup.Afresh(handler.EnqueueRequestsFromMapFunc(setup.Related(kube, ownership.RulesNaming))),
		Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}},
	}
}

// resolver resolves a rule's policy reference or selector and writes the
// object only when that changed what it names. crossplane-runtime's
// APISimpleReferenceResolver instead compares a deep copy of the whole object
// with cmp.Equal on every reconcile, a large share of the provider's CPU while
// rules converge (docs/performance.md). A reference to a SecurityPolicy that is not there
// yet is left unresolved without an error: Observe reports the rule waiting.
type resolver struct {
	kube client.Client
}

func (r *resolver) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	cr, ok := mg.(*v1beta1.SecurityPolicyRule)
	if !ok {
		return errors.New(errNotRule)
	}
	p := &cr.Spec.ForProvider
	if p.SecurityPolicyRef == nil && p.SecurityPolicySelector == nil {
		return nil
	}
	name, ref := p.SecurityPolicy, p.SecurityPolicyRef.DeepCopy()
	if err := cr.ResolveReferences(ctx, r.kube); err != nil {
		if wait, perr := pending(ctx, r.kube, cr); perr == nil && wait {
			return nil
		}
		return errors.Wrap(err, errResolve)
	}
	if equality.Semantic.DeepEqual(name, p.SecurityPolicy) && equality.Semantic.DeepEqual(ref, p.SecurityPolicyRef) {
		return nil
	}
	return errors.Wrap(r.kube.Update(ctx, cr), errUpdateRefs)
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector (package connector), and hands the reconcile an external.
type externalConnector struct {
	conn     *connector.Connector
	index    *ownership.Index
	recorder event.Recorder
}

func (c *externalConnector) Connect(ctx context.Context, cr *v1beta1.SecurityPolicyRule) (managed.TypedExternalClient[*v1beta1.SecurityPolicyRule], error) {
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	p := cr.Spec.ForProvider
	project, err := conn.ProjectOr(p.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	return &external{policies: conn.Client.Policies(project, kptr.Deref(p.Region, "")), key: ownership.RulePolicyKey(cr, project), owners: c.index,
		validator: conn.Client.Validator(project, kptr.Deref(p.Region, "")), projects: conn.Client.Projects(), recorder: c.recorder}, nil
}

// owners answers who owns what; *ownership.Index in production.
type owners interface {
	RuleStanding(ctx context.Context, cr *v1beta1.SecurityPolicyRule, key gcp.PolicyKey) (ownership.Standing, error)
}

// external manages one rule through the policy's PolicyClient. Reads go
// through the shared per-policy snapshot, so every rule of a policy costs
// GCP one read per snapshot lifetime, not one each.
type external struct {
	policies gcp.PolicyClient
	key      gcp.PolicyKey // the GCP policy the rule belongs to
	// validator asks GCP with validateOnly, for an object in dry run.
	validator gcp.PolicyValidator
	// projects reads the project's Cloud Armor tier, kept for a poll
	// interval and shared by every object of the project under the same
	// config.
	projects gcp.ProjectClient
	owners   owners
	recorder event.Recorder
}

func (e *external) Observe(ctx context.Context, cr *v1beta1.SecurityPolicyRule) (managed.ExternalObservation, error) {
	reportValues(cr, e.recorder)
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	policy := policyName(cr)
	if policy == "" {
		return e.unresolved(cr, f)
	}
	if f.Role == verdict.Owner {
		// Asked of the cluster first: an object that may not write its rule
		// makes no call to GCP.
		st, err := e.owners.RuleStanding(ctx, cr, e.key)
		if err != nil {
			return verdict.Fail(err)
		}
		if st.Refused != "" {
			return verdict.Refuse(f, st.Refused)
		}
		if st.Inline {
			f.Role = verdict.Borrower
		}
		// A borrower being deleted is decided here, without a read.
		if v := verdict.Decide(f); v != verdict.Undecided {
			return v.Observation(verdict.Details{})
		}
	}
	e.reportTier(ctx, cr)
	sp, err := e.policies.Get(ctx, policy)
	if gcp.IsNotFound(err) {
		// Not "the rule does not exist": Create would then call AddRule
		// only to learn the same. Wait for the policy, as happens when a
		// policy and its rules are applied together; being deleted, no
		// policy means no rule.
		return e.noPolicy(cr, f)
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGetPolicy))
	}
	observed := gcppolicy.FindRule(sp, cr.Spec.ForProvider.Priority)
	switch {
	case observed == nil:
		f.Presence = verdict.Missing
	case f.Deleting && keptOnDelete(cr, observed):
		f.Presence = verdict.Permanent
	default:
		f.Presence = verdict.Present
	}
	if f.Presence != verdict.Present {
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			return e.dryRun(ctx, cr, sp, false)
		}
		return v.Observation(verdict.Details{})
	}
	obs := gcppolicy.GenerateRuleObservation(observed)
	cr.Status.AtProvider = v1beta1.SecurityPolicyRuleObservation{SecurityPolicy: policy, PolicySelfLink: sp.SelfLink, Rule: &obs}
	cr.SetConditions(xpv2.Available())

	upToDate, diff := gcppolicy.RuleUpToDate(desired(cr), observed)
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		return e.dryRun(ctx, cr, sp, upToDate)
	}
	return v.Observation(verdict.Details{UpToDate: upToDate, Diff: diff})
}

// reportValues says, in the Warning condition and an event, which values of
// cr's spec GCP may refuse (unknown to the provider, preview only, or
// Enterprise only), before anything is sent. An object that writes nothing
// sends none.
func reportValues(cr *v1beta1.SecurityPolicyRule, rec event.Recorder) {
	var findings []apivalues.Finding
	if verdict.Writes(cr) {
		findings = apivalues.Rule(cr.Spec.ForProvider.RuleParameters, "spec.forProvider.")
	}
	apivalues.Report(cr, rec, findings)
}

// reportTier says, in the Tier condition, whether cr's project is on the
// Cloud Armor tier the Enterprise features of its rule need, reading the
// tier (kept for a poll interval) only when the rule uses any. An object
// that writes nothing sends none.
func (e *external) reportTier(ctx context.Context, cr *v1beta1.SecurityPolicyRule) {
	var fs []apivalues.Feature
	if verdict.Writes(cr) {
		fs = apivalues.RuleFeatures(cr.Spec.ForProvider.RuleParameters, "spec.forProvider.")
	}
	apivalues.ReportTier(cr, e.key.Project, fs, func(p string) (string, error) { return e.projects.Tier(ctx, p) })
}

// unresolved observes a rule whose policy name is not known: its reference
// or selector waits for a SecurityPolicy (see resolver). A rule that names
// no policy at all is an error, unless it is being deleted.
func (e *external) unresolved(cr *v1beta1.SecurityPolicyRule, f verdict.Facts) (managed.ExternalObservation, error) {
	if p := cr.Spec.ForProvider; !f.Deleting && p.SecurityPolicyRef == nil && p.SecurityPolicySelector == nil {
		return verdict.Fail(errors.New(errNoPolicy))
	}
	return e.noPolicy(cr, f)
}

// keptOnDelete reports whether deleting cr leaves its GCP rule as it is. Only
// the default rule is kept: GCP never removes it, so deleting cr removes
// nothing unless the user asked for a reset and the rule does not already
// allow everything.
func keptOnDelete(cr *v1beta1.SecurityPolicyRule, observed *compute.SecurityPolicyRule) bool {
	if cr.Spec.ForProvider.Priority != v1beta1.DefaultRulePriority {
		return false
	}
	if !resetDefaultRule(cr) {
		return true
	}
	ok, _ := gcppolicy.RuleUpToDate(allowAll(), observed)
	return ok
}

// resetDefaultRule reports whether the user asked for the default rule to
// be reset to "allow *" when cr is deleted.
func resetDefaultRule(cr *v1beta1.SecurityPolicyRule) bool {
	return cr.GetAnnotations()[AnnotationResetDefaultRule] == "true"
}

func (e *external) Create(ctx context.Context, cr *v1beta1.SecurityPolicyRule) (managed.ExternalCreation, error) {
	// Observe's event stands; the condition is set again because the
	// reconciler wrote cr, and dropped it, before calling Create.
	reportValues(cr, nil)
	e.reportTier(ctx, cr)
	policy, priority := policyName(cr), cr.Spec.ForProvider.Priority
	var err error
	if priority == v1beta1.DefaultRulePriority {
		// The default rule cannot be added, only patched.
		err = e.patch(ctx, policy, desired(cr))
	} else {
		// A rule that appeared at this priority since Observe read the
		// policy was written by something outside this cluster: report it.
		// The write invalidated the snapshot, so the next Observe sees the
		// rule and adopts it, as Crossplane adopts what an external name
		// points at (GCP rules carry no label to tell their owner by).
		err = errors.Wrap(e.policies.AddRule(ctx, policy, desired(cr)), errAddRule)
	}
	if gcp.IsNotFound(err) {
		return managed.ExternalCreation{}, errors.Wrap(err, errPolicyNotFound)
	}
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	meta.SetExternalName(cr, policy+"/"+strconv.FormatInt(priority, 10))
	return managed.ExternalCreation{}, nil
}

func (e *external) Update(ctx context.Context, cr *v1beta1.SecurityPolicyRule) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, e.patch(ctx, policyName(cr), desired(cr))
}

// patch replaces the rule at want.Priority with want, clearing every field
// GCP holds that want no longer sets.
func (e *external) patch(ctx context.Context, policy string, want *compute.SecurityPolicyRule) error {
	sp, err := e.policies.Get(ctx, policy)
	if err != nil {
		return errors.Wrap(err, errGetPolicy)
	}
	mask := gcppolicy.RuleUpdateMask(want, gcppolicy.FindRule(sp, want.Priority))
	return errors.Wrap(e.policies.PatchRule(ctx, policy, want.Priority, want, mask...), errPatchRule)
}

func (e *external) Delete(ctx context.Context, cr *v1beta1.SecurityPolicyRule) (managed.ExternalDelete, error) {
	policy, priority := policyName(cr), cr.Spec.ForProvider.Priority
	if priority == v1beta1.DefaultRulePriority {
		// Observe only reports a deleted default rule as existing when the
		// user asked for a reset and it is not yet "allow *" (keptOnDelete).
		// Check again here: opening a deny-by-default policy must never be
		// a side effect of how Observe and the reconciler happen to
		// interact.
		if !resetDefaultRule(cr) {
			return managed.ExternalDelete{}, nil
		}
		return managed.ExternalDelete{}, errors.Wrap(e.patch(ctx, policy, allowAll()), errResetDefault)
	}
	err := e.policies.RemoveRule(ctx, policy, priority)
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errRemoveRule)
}

func (e *external) Disconnect(_ context.Context) error { return nil }

// PollGroup is the GCP policy a rule object observes, so that it is polled
// with its policy's other objects.
func PollGroup(mg resource.Managed) string {
	cr, ok := mg.(*v1beta1.SecurityPolicyRule)
	if !ok {
		return ""
	}
	return policyName(cr)
}

func policyName(cr *v1beta1.SecurityPolicyRule) string {
	if cr.Spec.ForProvider.SecurityPolicy == nil {
		return ""
	}
	return *cr.Spec.ForProvider.SecurityPolicy
}

func desired(cr *v1beta1.SecurityPolicyRule) *compute.SecurityPolicyRule {
	return gcppolicy.GenerateRule(cr.Spec.ForProvider.Priority, cr.Spec.ForProvider.RuleParameters)
}

// allowAll is the default rule GCP creates for a policy without one.
func allowAll() *compute.SecurityPolicyRule {
	return gcppolicy.GenerateDefaultRule(v1beta1.RuleParameters{Action: v1beta1.ActionAllow})
}
