// Package securitypolicy manages SecurityPolicy objects: a Cloud Armor
// policy, its top-level settings, its default rule and, when the spec lists
// them, its inline rules.
package securitypolicy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kptr "k8s.io/utils/ptr"

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

// Error strings.
const (
	errConnect      = "cannot connect to GCP"
	errGetPolicy    = "cannot get security policy"
	errInsertPolicy = "cannot create security policy"
	errDeletePolicy = "cannot delete security policy"
	errClaims       = "cannot list SecurityPolicyRules that claim rules of this policy"

	errFmtLabelledForOther = "GCP policy %s carries the label %s=%s: another SecurityPolicy, in this cluster or another, owns it. This object makes no change to it and leaves it in place when deleted. To hand the policy to this object, remove that label from the policy in GCP; if this cluster took over from another management cluster, run the provider with that cluster's --owner-identity"
)

// reasonAdopted is the event recorded when an unlabelled GCP policy is
// adopted and labelled.
const reasonAdopted event.Reason = "AdoptedExternalPolicy"

const msgFmtAdopted = "GCP policy %s existed without an owner label: adopted it and labelled it %s=%s"

// Kind wires the SecurityPolicy controller. It indexes and watches rule
// objects, so it also waits for their CRD.
var Kind = setup.Kind[*v1beta1.SecurityPolicy]{
	GVK:            v1beta1.SecurityPolicyGroupVersionKind,
	Requires:       []schema.GroupVersionKind{v1beta1.SecurityPolicyRuleGroupVersionKind},
	New:            func() *v1beta1.SecurityPolicy { return &v1beta1.SecurityPolicy{} },
	List:           &v1beta1.SecurityPolicyList{},
	Connector:      newConnector,
	PollGroup:      PollGroup,
	Indexes:        setup.OwnershipIndexes,
	Status:         setup.StatusOf(func(cr *v1beta1.SecurityPolicy) *v1beta1.SecurityPolicyStatus { return &cr.Status }),
	KeepConditions: []xpv2.ConditionType{apivalues.TypeWarning, apivalues.TypeTier, TypeAttached},
	Watches: func(e setup.Env) []setup.Watch {
		return append([]setup.Watch{watchRules(e.Client)}, e.PolicyWake.Watch()...)
	},
}

// PollGroup is the GCP policy a SecurityPolicy observes, its external name,
// so that it is polled with the rule objects of that policy.
func PollGroup(mg resource.Managed) string {
	return meta.GetExternalName(mg)
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1beta1.SecurityPolicy] {
	return &externalConnector{conn: e.Connector, index: ownership.NewIndex(e.Client), labeler: e.Labeler, recorder: e.Recorder}
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector (package connector), and hands the reconcile an external.
type externalConnector struct {
	conn     *connector.Connector
	index    *ownership.Index
	labeler  ownership.Labeler
	recorder event.Recorder
}

func (c *externalConnector) Connect(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.TypedExternalClient[*v1beta1.SecurityPolicy], error) {
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	p := cr.Spec.ForProvider
	project, err := conn.ProjectOr(p.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	// A new external for each reconcile, so its reconcile state starts empty.
	return &external{policies: conn.Client.Policies(project, kptr.Deref(p.Region, "")), key: ownership.PolicyKey(cr, project),
		validator: conn.Client.Validator(project, kptr.Deref(p.Region, "")),
		projects:  conn.Client.Projects(),
		owners:    c.index, labels: c.labeler.ExternalLabels(cr, v1beta1.SecurityPolicyGroupVersionKind.GroupKind()), recorder: c.recorder}, nil
}

// owners answers who owns what; *ownership.Index in production.
type owners interface {
	PolicyOwner(ctx context.Context, key gcp.PolicyKey) (*v1beta1.SecurityPolicy, error)
	Claims(ctx context.Context, policy *v1beta1.SecurityPolicy, key gcp.PolicyKey) (map[int64]string, []ownership.Refusal, error)
}

// external manages one GCP policy, if cr owns it. Rules at priorities
// claimed by SecurityPolicyRule objects are never written here.
type external struct {
	policies gcp.PolicyClient
	key      gcp.PolicyKey
	// validator asks GCP with validateOnly, for an object in dry run.
	validator gcp.PolicyValidator
	// projects reads the project's tier and which backend services use
	// the policy, each kept for a poll interval and shared by every policy
	// of the project under the same config.
	projects gcp.ProjectClient
	owners   owners
	labels   map[string]string // the owner and provenance labels cr's policy carries in GCP
	recorder event.Recorder

	// reconcile is this reconcile's own: what its Observe concluded and the
	// claims it read, for the Create or Update that follows. crossplane-
	// runtime hands Create and Update nothing from Observe but this client,
	// which Connect builds afresh for each reconcile; only Observe and
	// claims write it.
	reconcile reconcileState
}

// reconcileState is what one reconcile learns in Observe and acts on in
// Create or Update.
type reconcileState struct {
	// verdict is Observe's: Adopt makes the Update announce the adoption.
	verdict verdict.Verdict
	// claims are the cluster's claims on the policy, read at most once.
	claims *claims
}

// claims is what the cluster decided about cr's GCP policy: the priorities
// rule objects own and the owner label (own), and the rule objects refused.
type claims struct {
	own     gcppolicy.Ownership
	refused []ownership.Refusal
}

func (e *external) Observe(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	writes := f.Role == verdict.Owner
	reportValues(cr, e.recorder, writes)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	if writes {
		// Asked of the cluster first: an object that owns nothing makes no
		// call to GCP, not even a read.
		owner, err := e.owners.PolicyOwner(ctx, e.key)
		if err != nil {
			return verdict.Fail(err)
		}
		if owner != nil && owner.GetUID() != cr.GetUID() {
			return verdict.Refuse(f, ownership.PolicyRefusal(e.key, owner))
		}
	}
	e.reportTier(ctx, cr, writes)
	sp, err := e.policies.Get(ctx, e.key.Name)
	if gcp.IsNotFound(err) {
		f.Presence = verdict.Missing
		if v := verdict.Decide(f); v == verdict.DryRun {
			return e.dryRun(ctx, cr, nil, false)
		}
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGetPolicy))
	}
	f.Presence = verdict.Present
	if writes {
		role, other := ownership.ByOwnerLabel(sp.Labels, e.labels[ownership.LabelKey])
		if role == verdict.Outranked {
			ownership.CountConflicts(v1beta1.SecurityPolicyKind, ownership.ConflictOwnerLabel, 1)
			return verdict.Refuse(f, fmt.Sprintf(errFmtLabelledForOther, e.key, ownership.LabelKey, other))
		}
		f.Role = role
	}
	if ok, msg := gcppolicy.TypeUpToDate(cr.Spec.ForProvider, sp); !ok {
		// Type is immutable in GCP: report it, write nothing.
		return verdict.Fail(errors.New(msg))
	}
	cr.Status.AtProvider = gcppolicy.GenerateObservation(sp)
	cr.SetConditions(xpv2.Available())
	if !f.Deleting {
		e.reportUsers(ctx, cr, sp.Type)
	}

	c, err := e.claims(ctx, cr)
	if err != nil {
		return verdict.Fail(err)
	}
	d := gcppolicy.PlanPolicy(cr.Spec.ForProvider, sp, c.own)
	cr.SetConditions(conflictCondition(d.Rules.Conflicts, d.DefaultClaimedBy, c.refused))
	ownership.CountConflicts(v1beta1.SecurityPolicyKind, ownership.ConflictPriorityClaimed, claimedInline(d))
	e.reconcile.verdict = verdict.Decide(f)
	if e.reconcile.verdict == verdict.DryRun {
		return e.dryRun(ctx, cr, sp, d.UpToDate())
	}
	return e.reconcile.verdict.Observation(verdict.Details{UpToDate: d.UpToDate(), Diff: d.String()})
}

// reportValues says, in the Warning condition and an event, which values of
// cr's spec GCP may refuse (unknown to the provider, preview only, or
// Enterprise only), before anything is sent: the warning stands whether or
// not GCP then accepts them. An object that writes nothing sends none.
func reportValues(cr *v1beta1.SecurityPolicy, rec event.Recorder, writes bool) {
	var findings []apivalues.Finding
	if writes {
		findings = apivalues.Policy(cr.Spec.ForProvider)
	}
	apivalues.Report(cr, rec, findings)
}

// reportTier says, in the Tier condition, whether cr's project is on the
// Cloud Armor tier the Enterprise features of its spec need, reading the
// tier (kept for a poll interval) only when the spec uses any. An object
// that writes nothing sends none.
func (e *external) reportTier(ctx context.Context, cr *v1beta1.SecurityPolicy, writes bool) {
	var fs []apivalues.Feature
	if writes {
		fs = apivalues.PolicyFeatures(cr.Spec.ForProvider)
	}
	apivalues.ReportTier(cr, e.key.Project, fs, func(p string) (string, error) { return e.projects.Tier(ctx, p) })
}

// claims returns what the cluster decided about cr's GCP policy, reading it
// once per reconcile: the Create or Update that follows Observe plans with
// the same claims instead of listing the policy's rules again.
func (e *external) claims(ctx context.Context, cr *v1beta1.SecurityPolicy) (*claims, error) {
	if e.reconcile.claims != nil {
		return e.reconcile.claims, nil
	}
	claimed, refused, err := e.owners.Claims(ctx, cr, e.key)
	if err != nil {
		return nil, errors.Wrap(err, errClaims)
	}
	c := &claims{own: gcppolicy.Ownership{Claims: claimed}, refused: refused}
	if verdict.Writes(cr) {
		// An object that only observes does not own the policy: it neither
		// wants nor reports our label.
		c.own.Labels = e.labels
	}
	e.reconcile.claims = c
	return c, nil
}

func (e *external) Create(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalCreation, error) {
	// Observe's event stands; the condition is set again because the
	// reconciler wrote cr, and dropped it, before calling Create.
	reportValues(cr, nil, true)
	e.reportTier(ctx, cr, true)
	c, err := e.claims(ctx, cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	// A policy that appeared under this name since Observe (another writer
	// was faster) is not ours: the error is reported and the next Observe
	// decides, by its owner label, whether it may be adopted.
	err = e.policies.Insert(ctx, gcppolicy.InsertBody(e.key.Name, cr.Spec.ForProvider, c.own))
	return managed.ExternalCreation{}, errors.Wrap(err, errInsertPolicy)
}

func (e *external) Update(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalUpdate, error) {
	c, err := e.claims(ctx, cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	if err := gcppolicy.ApplyPolicy(ctx, e.policies, e.key.Name, cr.Spec.ForProvider, c.own); err != nil {
		return managed.ExternalUpdate{}, err
	}
	if e.reconcile.verdict == verdict.Adopt {
		// Observe refuses a policy labelled for another owner, so an
		// unlabelled one is adopted, as Crossplane adopts what an external
		// name points at; say so once it carries our label.
		e.recorder.Event(cr, event.Normal(reasonAdopted, fmt.Sprintf(msgFmtAdopted, e.key, ownership.LabelKey, e.labels[ownership.LabelKey])))
	}
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalDelete, error) {
	err := e.policies.Delete(ctx, e.key.Name)
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDeletePolicy)
}

func (e *external) Disconnect(_ context.Context) error { return nil }
