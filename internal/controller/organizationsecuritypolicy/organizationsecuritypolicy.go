// Package organizationsecuritypolicy manages OrganizationSecurityPolicy
// objects: hierarchical Cloud Armor policies of an organization or folder
// (compute v1 organizationSecurityPolicies).
//
// GCP names such a policy by the numeric id it gives it at insert, and
// gives it no labels, so no owner label can say which object owns it.
// Ownership is the external name: an object owns the policy whose id it
// recorded when it created it (crossplane.io/external-name, which Create
// sets), and a person hands an object an existing policy by setting the
// annotation to its id. An object without an id never takes over a policy
// that has its shortName: the insert fails with GCP's alreadyExists, and the
// error names the id to set if the policy is meant to be this object's.
//
// The rules are planned and applied by package securitypolicy, as a
// project policy's inline rules are: diffed by priority, new rules added
// before old ones are removed.
package organizationsecuritypolicy

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"

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
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errGet    = "cannot get organization security policy"
	errCreate = "cannot create organization security policy"
	errUpdate = "cannot update organization security policy"
	errDelete = "cannot delete organization security policy"

	errFmtExists = "%s already has a security policy with shortName %q, and this object did not create it. " +
		"GCP gives organization policies no labels to say which object owns one, so this object does not take it over. " +
		"If it is this object's, set the annotation crossplane.io/external-name on this object to its id%s"
	errFmtType   = "GCP organization policy %s has type %q, not %q; the type cannot change"
	errFmtParent = "GCP organization policy %s belongs to %s, not to spec.forProvider.parent %s: this object makes no change to it and leaves it in place when deleted. " +
		"Correct crossplane.io/external-name or spec.forProvider.parent"
)

// Dry run messages. compute v1 has no validateOnly on any method of
// organization policies, so GCP is never asked.
const (
	msgFmtDryRunMissing = "dry run: GCP has no organization security policy for this object under %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP organization security policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: organizationSecurityPolicies methods take no validateOnly, so the writes this object would send cannot be asked about"
)

// Kind wires the OrganizationSecurityPolicy controller.
var Kind = setup.Kind[*v1alpha1.OrganizationSecurityPolicy]{
	GVK:       v1alpha1.OrganizationSecurityPolicyGroupVersionKind,
	New:       func() *v1alpha1.OrganizationSecurityPolicy { return &v1alpha1.OrganizationSecurityPolicy{} },
	List:      &v1alpha1.OrganizationSecurityPolicyList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	// The external name is the id GCP gives at insert, never metadata.name.
	NamedBySpec: true,
	Status: setup.StatusOf(func(cr *v1alpha1.OrganizationSecurityPolicy) *v1alpha1.OrganizationSecurityPolicyStatus {
		return &cr.Status
	}),
}

// newConnector connects each reconcile to GCP through a
// ClusterProviderConfig only (connector.Connector.OrgPolicies), to the
// policies of spec.forProvider.parent.
func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.OrganizationSecurityPolicy] {
	return connector.OrgPolicyConnector(e.Connector,
		func(cr *v1alpha1.OrganizationSecurityPolicy) string { return cr.Spec.ForProvider.Parent },
		func(p gcp.OrgPolicyClient) managed.TypedExternalClient[*v1alpha1.OrganizationSecurityPolicy] {
			return &external{policies: p}
		})
}

// PollGroup is the GCP policy an object observes: its id once it has one,
// which its associations observe too.
func PollGroup(mg resource.Managed) string {
	if id := meta.GetExternalName(mg); id != "" {
		return "organizationsecuritypolicy/" + id
	}
	return "organizationsecuritypolicy/" + mg.GetNamespace() + "/" + mg.GetName()
}

// external manages one organization policy.
type external struct {
	policies gcp.OrgPolicyClient
}

// ShortName is the policy's name within its parent: spec.forProvider.shortName,
// else metadata.name.
func ShortName(cr *v1alpha1.OrganizationSecurityPolicy) string {
	if s := cr.Spec.ForProvider.ShortName; s != nil {
		return *s
	}
	return cr.GetName()
}

// Parameters are cr's spec as a project policy's, which package
// securitypolicy plans and applies: the fields an organization policy
// shares with one, nothing else.
func Parameters(cr *v1alpha1.OrganizationSecurityPolicy) v1beta1.SecurityPolicyParameters {
	p := cr.Spec.ForProvider
	typ := v1alpha1.OrgPolicyTypeCloudArmor
	if p.Type != nil {
		typ = *p.Type
	}
	return v1beta1.SecurityPolicyParameters{Type: &typ, Description: p.Description, DefaultRule: p.DefaultRule, Rules: p.Rules}
}

// Observe reads the policy once per poll, from the shared snapshot.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicy) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	id := meta.GetExternalName(cr)
	var (
		sp       *compute.SecurityPolicy
		err      error
		imported bool
	)
	switch {
	case id != "":
		sp, err = e.policies.Get(ctx, id)
	case f.Role == verdict.Observer:
		// An observe-only object without an id imports the policy of its
		// shortName: one list of the parent's policies, uncached, each poll
		// until the id is saved (managementPolicies with LateInitialize, or
		// the annotation set by hand); then the shared snapshot serves it.
		sp, err = e.policies.Find(ctx, ShortName(cr))
		if err == nil {
			id, imported = sp.Name, true
			meta.SetExternalName(cr, id)
		}
	}
	if err != nil {
		sp = nil
		if !gcp.IsNotFound(err) {
			return verdict.Fail(errors.Wrap(err, errGet))
		}
	}
	if sp == nil {
		f.Presence = verdict.Missing
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, cr.Spec.ForProvider.Parent))
			return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
		}
		return v.Observation(verdict.Details{})
	}
	f.Presence = verdict.Present
	if sp.Parent != "" && sp.Parent != cr.Spec.ForProvider.Parent {
		// An id names a policy anywhere: one under another parent was set
		// by hand or moved, and is not what this spec describes.
		return verdict.Refuse(f, fmt.Sprintf(errFmtParent, id, sp.Parent, cr.Spec.ForProvider.Parent))
	}
	cr.Status.AtProvider = Observation(sp)
	cr.SetConditions(xpv2.Available())
	p := Parameters(cr)
	if ok, _ := gcppolicy.TypeUpToDate(p, sp); !ok && f.Role == verdict.Owner && !f.Deleting {
		return verdict.Fail(errors.Errorf(errFmtType, id, sp.Type, *p.Type))
	}
	plan := gcppolicy.PlanPolicy(p, sp, gcppolicy.Ownership{})
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		if plan.UpToDate() {
			return dryrun.UpToDate(cr, &cr.Status.DryRun)
		}
		cr.Status.DryRun = nil
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, id))
		return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
	}
	return v.Observation(verdict.Details{UpToDate: plan.UpToDate(), Diff: plan.String(), LateInitialized: imported})
}

// Observation is what status.atProvider shows of sp.
func Observation(sp *compute.SecurityPolicy) v1alpha1.OrganizationSecurityPolicyObservation {
	o := v1alpha1.OrganizationSecurityPolicyObservation{ID: sp.Name, SelfLink: sp.SelfLink, Fingerprint: sp.Fingerprint,
		Parent: sp.Parent, ShortName: sp.ShortName, RuleCount: len(sp.Rules), CreationTimestamp: sp.CreationTimestamp}
	for _, a := range sp.Associations {
		o.Associations = append(o.Associations, v1alpha1.OrganizationSecurityPolicyAttachment{Name: a.Name, AttachmentID: a.AttachmentId})
	}
	return o
}

// Create inserts the policy in one call and records its id as the external
// name, which is what makes the policy this object's.
func (e *external) Create(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicy) (managed.ExternalCreation, error) {
	body := gcppolicy.InsertBody("", Parameters(cr), gcppolicy.Ownership{})
	body.ShortName = ShortName(cr)
	id, err := e.policies.Create(ctx, body)
	if gcp.IsAlreadyExists(err) {
		return managed.ExternalCreation{}, errors.New(e.exists(ctx, cr))
	}
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	meta.SetExternalName(cr, id)
	return managed.ExternalCreation{}, nil
}

// exists explains an insert GCP refused because the shortName is taken,
// naming the existing policy's id when a list finds it.
func (e *external) exists(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicy) string {
	hint := ""
	if sp, err := e.policies.Find(ctx, ShortName(cr)); err == nil {
		hint = " (" + sp.Name + ")"
	}
	return fmt.Sprintf(errFmtExists, cr.Spec.ForProvider.Parent, ShortName(cr), hint)
}

// Update applies the plan: a patch of the description if it differs, then
// one call per rule added, patched or removed.
func (e *external) Update(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicy) (managed.ExternalUpdate, error) {
	err := gcppolicy.ApplyPolicy(ctx, e.policies, meta.GetExternalName(cr), Parameters(cr), gcppolicy.Ownership{})
	return managed.ExternalUpdate{}, errors.Wrap(err, errUpdate)
}

// Delete deletes the policy. GCP refuses while an association attaches it:
// the error is reported and the delete retried until the associations are
// gone.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicy) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	err := e.policies.Delete(ctx, meta.GetExternalName(cr))
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDelete)
}

func (e *external) Disconnect(context.Context) error { return nil }
