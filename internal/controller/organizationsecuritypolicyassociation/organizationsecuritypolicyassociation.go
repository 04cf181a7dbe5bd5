// Package organizationsecuritypolicyassociation manages
// OrganizationSecurityPolicyAssociation objects: where an organization
// security policy applies (compute v1 organizationSecurityPolicies
// addAssociation and removeAssociation).
//
// An association is read from its policy (the policy's associations), so
// an association and its policy share one snapshot per poll. It is named
// within its policy, and everything it has is immutable: there is nothing
// to update, and nothing but its name and attachment point to own. An
// association of the same name attached elsewhere is not this object's: it
// refuses it, writes nothing and leaves it in place when deleted.
package organizationsecuritypolicyassociation

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errGet    = "cannot get the association's organization security policy"
	errCreate = "cannot add organization security policy association"
	errDelete = "cannot remove organization security policy association"

	errFmtExclusions = "organization security policy %s has an association %q excluding folders %v and projects %v, not folders %v and projects %v as the spec says: " +
		"GCP cannot change an association, so this object makes no change to it and leaves it in place when deleted. " +
		"Remove the association in GCP for this object to add it as the spec says, or name this object's association differently (spec.forProvider.name)"

	errFmtElsewhere = "organization security policy %s has an association %q attached to %s, not to spec.forProvider.attachmentId %s: " +
		"this object makes no change to it and leaves it in place when deleted. Name this object's association differently (spec.forProvider.name)"
)

// Dry run messages: addAssociation and removeAssociation take no
// validateOnly.
const (
	msgFmtDryRunMissing = "dry run: GCP organization security policy %s has no association %q; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: organizationSecurityPolicies.addAssociation takes no validateOnly, so the association cannot be asked about"
)

// Kind wires the OrganizationSecurityPolicyAssociation controller.
var Kind = setup.Kind[*v1alpha1.OrganizationSecurityPolicyAssociation]{
	GVK: v1alpha1.OrganizationSecurityPolicyAssociationGroupVersionKind,
	// securityPolicyRef resolves to an OrganizationSecurityPolicy.
	Requires: []schema.GroupVersionKind{v1alpha1.OrganizationSecurityPolicyGroupVersionKind},
	New: func() *v1alpha1.OrganizationSecurityPolicyAssociation {
		return &v1alpha1.OrganizationSecurityPolicyAssociation{}
	},
	List:      &v1alpha1.OrganizationSecurityPolicyAssociationList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	// The association is named by spec.forProvider.name or metadata.name.
	NamedBySpec: true,
	Status: setup.StatusOf(func(cr *v1alpha1.OrganizationSecurityPolicyAssociation) *v1alpha1.OrganizationSecurityPolicyAssociationStatus {
		return &cr.Status
	}),
}

// newConnector connects each reconcile to GCP through a
// ClusterProviderConfig only (connector.Connector.OrgPolicies). The policy
// is known by id: no parent is needed to read or attach it.
func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.OrganizationSecurityPolicyAssociation] {
	return connector.OrgPolicyConnector(e.Connector,
		func(*v1alpha1.OrganizationSecurityPolicyAssociation) string { return "" },
		func(p gcp.OrgPolicyClient) managed.TypedExternalClient[*v1alpha1.OrganizationSecurityPolicyAssociation] {
			return &external{policies: p}
		})
}

// PollGroup is the policy an association reads, polled with the policy's
// own object (organizationsecuritypolicy.PollGroup).
func PollGroup(mg resource.Managed) string {
	if cr, ok := mg.(*v1alpha1.OrganizationSecurityPolicyAssociation); ok && cr.Spec.ForProvider.SecurityPolicy != nil {
		return "organizationsecuritypolicy/" + *cr.Spec.ForProvider.SecurityPolicy
	}
	return "organizationsecuritypolicyassociation/" + mg.GetNamespace() + "/" + mg.GetName()
}

// external manages one association.
type external struct {
	policies gcp.OrgPolicyClient
}

// Name is the association's name: spec.forProvider.name, else
// metadata.name.
func Name(cr *v1alpha1.OrganizationSecurityPolicyAssociation) string {
	if n := cr.Spec.ForProvider.Name; n != nil {
		return *n
	}
	return cr.GetName()
}

func policyID(cr *v1alpha1.OrganizationSecurityPolicyAssociation) string {
	if id := cr.Spec.ForProvider.SecurityPolicy; id != nil {
		return *id
	}
	return ""
}

// Observe reads the association's policy once per poll, from the shared
// snapshot, and finds the association in it.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyAssociation) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	id := policyID(cr)
	if id == "" {
		// The reference has not resolved: the policy is not created yet.
		f.Presence = verdict.NoParent
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	sp, err := e.policies.Get(ctx, id)
	if gcp.IsNotFound(err) {
		f.Presence = verdict.NoParent
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGet))
	}
	a := find(sp, Name(cr))
	if a == nil {
		f.Presence = verdict.Missing
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, id, Name(cr)))
			return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
		}
		return v.Observation(verdict.Details{})
	}
	f.Presence = verdict.Present
	if a.AttachmentId != cr.Spec.ForProvider.AttachmentID {
		return verdict.Refuse(f, fmt.Sprintf(errFmtElsewhere, id, Name(cr), a.AttachmentId, cr.Spec.ForProvider.AttachmentID))
	}
	cr.Status.AtProvider = v1alpha1.OrganizationSecurityPolicyAssociationObservation{SecurityPolicyID: id,
		AttachmentID: a.AttachmentId, DisplayName: sp.ShortName, ExcludedFolders: a.ExcludedFolders, ExcludedProjects: a.ExcludedProjects}
	if !sameSet(a.ExcludedFolders, cr.Spec.ForProvider.ExcludedFolders) || !sameSet(a.ExcludedProjects, cr.Spec.ForProvider.ExcludedProjects) {
		return verdict.Refuse(f, fmt.Sprintf(errFmtExclusions, id, Name(cr), a.ExcludedFolders, a.ExcludedProjects,
			cr.Spec.ForProvider.ExcludedFolders, cr.Spec.ForProvider.ExcludedProjects))
	}
	cr.SetConditions(xpv2.Available())
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		return dryrun.UpToDate(cr, &cr.Status.DryRun)
	}
	// Everything an association has is immutable: it is up to date.
	return v.Observation(verdict.Details{UpToDate: true})
}

func find(sp *compute.SecurityPolicy, name string) *compute.SecurityPolicyAssociation {
	for _, a := range sp.Associations {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Create adds the association in one call. GCP refuses it while another
// policy of the same type is attached at the same point: that association
// is never replaced from here (replaceExistingAssociation), since it may be
// another object's.
func (e *external) Create(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyAssociation) (managed.ExternalCreation, error) {
	p := cr.Spec.ForProvider
	a := &compute.SecurityPolicyAssociation{Name: Name(cr), AttachmentId: p.AttachmentID,
		ExcludedFolders: p.ExcludedFolders, ExcludedProjects: p.ExcludedProjects}
	if err := e.policies.AddAssociation(ctx, policyID(cr), a, false); err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	meta.SetExternalName(cr, Name(cr))
	return managed.ExternalCreation{}, nil
}

// Update has nothing to do: Observe reports an association up to date or
// refuses it.
func (e *external) Update(context.Context, *v1alpha1.OrganizationSecurityPolicyAssociation) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, nil
}

// Delete removes the association. Observe found it moments ago: GCP answers
// a missing association with a 400, not a 404.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyAssociation) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	err := e.policies.RemoveAssociation(ctx, policyID(cr), Name(cr))
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDelete)
}

func (e *external) Disconnect(context.Context) error { return nil }

// sameSet reports whether a and b hold the same values, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[string]int, len(a))
	for _, v := range a {
		seen[v]++
	}
	for _, v := range b {
		if seen[v] == 0 {
			return false
		}
		seen[v]--
	}
	return true
}
