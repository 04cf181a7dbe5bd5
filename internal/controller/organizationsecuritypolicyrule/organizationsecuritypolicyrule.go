// Package organizationsecuritypolicyrule manages OrganizationSecurityPolicyRule
// objects: one rule of a hierarchical Cloud Armor policy (compute v1
// organizationSecurityPolicies addRule, patchRule, removeRule), identified by
// the policy's numeric id and the rule's priority.
//
// GCP gives organization rules no labels, so which object owns a rule is
// decided from the cluster's objects alone (ownership.OrgRuleStanding): the
// OrganizationSecurityPolicy of the id, when its spec.forProvider.rules is
// set, owns every non-default rule; else the oldest rule object for the
// priority, in any namespace. An object refused makes no change to GCP and
// leaves the rule in place when deleted.
//
// The rule is read from its policy's shared snapshot, so a policy and all its
// rule objects cost GCP one read per snapshot lifetime, and compared as a
// project rule is (securitypolicy.RuleUpToDate).
package organizationsecuritypolicyrule

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errNoPolicy       = "spec.forProvider.securityPolicy is not set: set it or resolve securityPolicyRef/securityPolicySelector"
	errGetPolicy      = "cannot get organization security policy"
	errAddRule        = "cannot add rule"
	errPatchRule      = "cannot patch rule"
	errRemoveRule     = "cannot remove rule"
	errPolicyNotFound = "organization security policy does not exist"

	errFmtClear = "the rule at priority %d of organization security policy %s holds %s, which the spec no longer sets: compute v1 has no updateMask on organizationSecurityPolicies.patchRule, " +
		"so a field cannot be cleared in place. Set it in the spec again, or delete this object and apply it again (the rule is removed, then added)"
)

// Dry run messages. compute v1 has no validateOnly on any method of
// organization policies, so GCP is never asked.
const (
	msgFmtDryRunMissing = "dry run: GCP organization security policy %s has no rule at priority %d; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: the rule at priority %d of GCP organization security policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: organizationSecurityPolicies.addRule and patchRule take no validateOnly, so the writes this object would send cannot be asked about"
)

// ReasonWaitingForPolicy is the Ready=False reason of a rule object whose
// organization policy is not in GCP (yet): a wait, not an error. Synced
// stays True, no warning event is recorded and the object does not back
// off; the policy object's arrival re-reconciles it, else the poll.
const ReasonWaitingForPolicy xpv2.ConditionReason = "WaitingForOrganizationSecurityPolicy"

// Kind wires the OrganizationSecurityPolicyRule controller. A rule asks the
// OrganizationSecurityPolicy objects of its policy whether it may write, and
// its reference resolves to one, so it waits for their CRD too.
var Kind = setup.Kind[*v1alpha1.OrganizationSecurityPolicyRule]{
	GVK:       v1alpha1.OrganizationSecurityPolicyRuleGroupVersionKind,
	Requires:  []schema.GroupVersionKind{v1alpha1.OrganizationSecurityPolicyGroupVersionKind},
	New:       func() *v1alpha1.OrganizationSecurityPolicyRule { return &v1alpha1.OrganizationSecurityPolicyRule{} },
	List:      &v1alpha1.OrganizationSecurityPolicyRuleList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	Indexes: func(ctx context.Context, _ setup.Options, idx client.FieldIndexer) error {
		return ownership.SetupOrgIndexes(ctx, idx)
	},
	// The identity is (policy id, priority) from the spec, not metadata.name.
	NamedBySpec: true,
	Status: setup.StatusOf(func(cr *v1alpha1.OrganizationSecurityPolicyRule) *v1alpha1.OrganizationSecurityPolicyRuleStatus {
		return &cr.Status
	}),
	Watches: func(e setup.Env) []setup.Watch { return []setup.Watch{watchPolicies(e.Client)} },
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.OrganizationSecurityPolicyRule] {
	index := ownership.NewIndex(e.Client)
	return connector.OrgPolicyConnector(e.Connector,
		// A rule's calls name its policy by id, which needs no parent.
		func(*v1alpha1.OrganizationSecurityPolicyRule) string { return "" },
		func(p gcp.OrgPolicyClient) managed.TypedExternalClient[*v1alpha1.OrganizationSecurityPolicyRule] {
			return &external{policies: p, owners: index}
		})
}

// PollGroup is the policy a rule reads, polled with the policy's own object
// (organizationsecuritypolicy.PollGroup).
func PollGroup(mg resource.Managed) string {
	if cr, ok := mg.(*v1alpha1.OrganizationSecurityPolicyRule); ok && cr.Spec.ForProvider.SecurityPolicy != nil {
		return "organizationsecuritypolicy/" + *cr.Spec.ForProvider.SecurityPolicy
	}
	return "organizationsecuritypolicyrule/" + mg.GetNamespace() + "/" + mg.GetName()
}

// watchPolicies re-reconciles, without their backoff, the rule objects an
// OrganizationSecurityPolicy's change concerns: those that name its id
// (setting or unsetting its rules changes who owns them; its id appearing
// ends their wait) and those whose reference or selector waits for it.
func watchPolicies(kube client.Reader) setup.Watch {
	return setup.Watch{
		Of:         &v1alpha1.OrganizationSecurityPolicy{},
		Handler:    setup.Afresh(handler.EnqueueRequestsFromMapFunc(setup.Related(kube, related))),
		Predicates: []predicate.Predicate{policyChanges()},
	}
}

// policyChanges passes a policy object's creation and deletion, and the
// updates that change its spec or its id.
func policyChanges() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				meta.GetExternalName(e.ObjectOld) != meta.GetExternalName(e.ObjectNew)
		},
	}
}

// related returns the rule objects that name p's id, in every namespace, and
// those of p's namespace whose unresolved reference or selector picks p.
func related(ctx context.Context, kube client.Reader, p *v1alpha1.OrganizationSecurityPolicy) ([]types.NamespacedName, error) {
	out, err := ownership.OrgRulesNaming(ctx, kube, p)
	if err != nil {
		return nil, err
	}
	l := &v1alpha1.OrganizationSecurityPolicyRuleList{}
	if err := kube.List(ctx, l, client.InNamespace(p.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for n := range l.Items {
		r := &l.Items[n]
		fp := r.Spec.ForProvider
		switch {
		case fp.SecurityPolicy != nil:
			continue
		case fp.SecurityPolicyRef != nil && fp.SecurityPolicyRef.Name == p.GetName(),
			fp.SecurityPolicyRef == nil && fp.SecurityPolicySelector != nil && labels.SelectorFromSet(fp.SecurityPolicySelector.MatchLabels).Matches(labels.Set(p.GetLabels())):
			out = append(out, client.ObjectKeyFromObject(r))
		}
	}
	return out, nil
}

// owners answers who owns what; *ownership.Index in production.
type owners interface {
	OrgRuleStanding(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule, id string) (ownership.Standing, error)
}

// external manages one rule through its policy's client: an
// OrgPolicyClient in production, whose reads go through the shared
// per-policy snapshot.
type external struct {
	policies gcp.PolicyClient
	owners   owners
}

func policyID(cr *v1alpha1.OrganizationSecurityPolicyRule) string {
	if id := cr.Spec.ForProvider.SecurityPolicy; id != nil {
		return *id
	}
	return ""
}

func desired(cr *v1alpha1.OrganizationSecurityPolicyRule) *compute.SecurityPolicyRule {
	return gcppolicy.GenerateRule(cr.Spec.ForProvider.Priority, cr.Spec.ForProvider.RuleParameters)
}

// Observe asks the cluster whether cr may write its rule, then reads the
// rule from its policy's snapshot and compares it with the spec.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	id, prio := policyID(cr), cr.Spec.ForProvider.Priority
	if id == "" {
		if p := cr.Spec.ForProvider; !f.Deleting && p.SecurityPolicyRef == nil && p.SecurityPolicySelector == nil {
			return verdict.Fail(errors.New(errNoPolicy))
		}
		return noPolicy(cr, f)
	}
	if f.Role == verdict.Owner {
		// Asked of the cluster first: an object that may not write its rule
		// makes no call to GCP.
		st, err := e.owners.OrgRuleStanding(ctx, cr, id)
		if err != nil {
			return verdict.Fail(err)
		}
		if st.Refused != "" {
			return verdict.Refuse(f, st.Refused)
		}
	}
	sp, err := e.policies.Get(ctx, id)
	if gcp.IsNotFound(err) {
		return noPolicy(cr, f)
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGetPolicy))
	}
	observed := gcppolicy.FindRule(sp, prio)
	if observed == nil {
		f.Presence = verdict.Missing
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, id, prio))
			return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
		}
		return v.Observation(verdict.Details{})
	}
	f.Presence = verdict.Present
	obs := gcppolicy.GenerateRuleObservation(observed)
	cr.Status.AtProvider = v1alpha1.OrganizationSecurityPolicyRuleObservation{SecurityPolicyID: id, SecurityPolicySelfLink: sp.SelfLink, Rule: &obs}
	cr.SetConditions(xpv2.Available())
	upToDate, diff := gcppolicy.RuleUpToDate(desired(cr), observed)
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		if upToDate {
			return dryrun.UpToDate(cr, &cr.Status.DryRun)
		}
		cr.Status.DryRun = nil
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, prio, id))
		return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
	}
	return v.Observation(verdict.Details{UpToDate: upToDate, Diff: diff})
}

// noPolicy observes cr while its policy is not there: not named yet, or not
// in GCP. Unless cr is being deleted (then nothing in GCP is left to
// remove), it waits: Ready=False saying which policy, Synced=True, no
// backoff.
func noPolicy(cr *v1alpha1.OrganizationSecurityPolicyRule, f verdict.Facts) (managed.ExternalObservation, error) {
	f.Presence = verdict.NoParent
	v := verdict.Decide(f)
	if v == verdict.Waiting {
		cr.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonWaitingForPolicy,
			Message: waitMessage(cr), LastTransitionTime: metav1.Now()})
	}
	return v.Observation(verdict.Details{})
}

// waitMessage names what cr waits for, from its spec only, so that a rule
// that waits writes its status once.
func waitMessage(cr *v1alpha1.OrganizationSecurityPolicyRule) string {
	p := cr.Spec.ForProvider
	var from string
	switch {
	case p.SecurityPolicyRef != nil:
		from = fmt.Sprintf("OrganizationSecurityPolicy %s/%s", cr.GetNamespace(), p.SecurityPolicyRef.Name)
	case p.SecurityPolicySelector != nil:
		from = fmt.Sprintf("an OrganizationSecurityPolicy in namespace %s matching spec.forProvider.securityPolicySelector (%s)", cr.GetNamespace(), labels.SelectorFromSet(p.SecurityPolicySelector.MatchLabels))
	}
	switch {
	case p.SecurityPolicy == nil:
		return "waiting for " + from + " and its GCP organization security policy to exist"
	case from != "":
		return fmt.Sprintf("waiting for GCP organization security policy %s (%s) to exist", *p.SecurityPolicy, from)
	}
	return fmt.Sprintf("waiting for GCP organization security policy %s to exist", *p.SecurityPolicy)
}

// Create adds the rule in one call and records "<policy id>/<priority>" as
// the external name.
func (e *external) Create(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule) (managed.ExternalCreation, error) {
	id, prio := policyID(cr), cr.Spec.ForProvider.Priority
	// A rule that appeared at this priority since Observe read the policy
	// was written by something outside this cluster: GCP's refusal is
	// reported, and the write invalidated the snapshot, so the next Observe
	// sees the rule and compares it, as Crossplane adopts what an external
	// name points at.
	err := errors.Wrap(e.policies.AddRule(ctx, id, desired(cr)), errAddRule)
	if gcp.IsNotFound(err) {
		return managed.ExternalCreation{}, errors.Wrap(err, errPolicyNotFound)
	}
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	meta.SetExternalName(cr, id+"/"+strconv.FormatInt(prio, 10))
	return managed.ExternalCreation{}, nil
}

// Update patches the rule in one call. compute v1 has no updateMask on an
// organization policy's patchRule: the fields the body sets are replaced and
// the others kept, so a change that would clear a field GCP holds is
// reported instead of sent (it would leave a diff that never ends).
func (e *external) Update(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule) (managed.ExternalUpdate, error) {
	id, prio := policyID(cr), cr.Spec.ForProvider.Priority
	sp, err := e.policies.Get(ctx, id)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errGetPolicy)
	}
	want := desired(cr)
	if cleared := gcppolicy.RuleClearedFields(want, gcppolicy.FindRule(sp, prio)); len(cleared) > 0 {
		return managed.ExternalUpdate{}, errors.Errorf(errFmtClear, prio, id, strings.Join(cleared, ", "))
	}
	return managed.ExternalUpdate{}, errors.Wrap(e.policies.PatchRule(ctx, id, prio, want), errPatchRule)
}

// Delete removes the rule; one already gone, or a policy gone, is fine.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	err := e.policies.RemoveRule(ctx, policyID(cr), cr.Spec.ForProvider.Priority)
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errRemoveRule)
}

func (e *external) Disconnect(context.Context) error { return nil }
