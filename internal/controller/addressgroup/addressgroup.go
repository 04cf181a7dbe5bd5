// Package addressgroup manages AddressGroup objects: Cloud Armor address
// groups (networksecurity v1), whose items are added and removed one call
// each, so an allowlist of thousands of addresses changes by one item when
// one address comes or goes.
//
// Ownership is the owner label alone: a group carrying another object's
// label (of this cluster or another) is never written, and is left in place
// when the object is deleted; a group without one is adopted and labelled.
// Two objects naming one group cannot both own it: whichever labels it
// first does, and GCP's ALREADY_EXISTS settles two creates racing.
package addressgroup

import (
	"context"
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcpgroup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errConnect     = "cannot connect to GCP"
	errGet         = "cannot get address group"
	errReferences  = "cannot list the rules that use the address group"
	errCreate      = "cannot create address group"
	errAddItems    = "cannot add items to address group"
	errRemoveItems = "cannot remove items from address group"
	errPatch       = "cannot update address group"
	errDelete      = "cannot delete address group"

	errOrgNeedsCluster     = "an organization address group affects every project of the organization: only a ClusterProviderConfig may manage one"
	errFmtImmutable        = "address group %s differs in fields GCP cannot change: %s. Create a new group (another name) with the wanted values"
	errFmtLabelledForOther = "address group %s carries the label %s=%s: another AddressGroup, in this cluster or another, owns it. This object makes no change to it and leaves it in place when deleted. To hand the group to this object, remove that label from the group in GCP; if this cluster took over from another management cluster, run the provider with that cluster's --owner-identity"
	errFmtOverCapacity     = "address group %s holds at most %d items, and the spec lists %d distinct ones: capacity is fixed when the group is created, so create a larger group"
)

// Kind wires the AddressGroup controller.
var Kind = setup.Kind[*v1alpha1.AddressGroup]{
	GVK:       v1alpha1.AddressGroupGroupVersionKind,
	New:       func() *v1alpha1.AddressGroup { return &v1alpha1.AddressGroup{} },
	List:      &v1alpha1.AddressGroupList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	Status:    setup.StatusOf(func(cr *v1alpha1.AddressGroup) *v1alpha1.AddressGroupStatus { return &cr.Status }),
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.AddressGroup] {
	return &externalConnector{conn: e.Connector, labeler: e.Labeler}
}

// PollGroup polls each group on its own: no other object reads it.
func PollGroup(mg resource.Managed) string {
	return "addressgroup/" + mg.GetNamespace() + "/" + mg.GetName()
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector (package connector), and hands the reconcile an external.
type externalConnector struct {
	conn    *connector.Connector
	labeler ownership.Labeler
}

func (c *externalConnector) Connect(ctx context.Context, cr *v1alpha1.AddressGroup) (managed.TypedExternalClient[*v1alpha1.AddressGroup], error) {
	p := cr.Spec.ForProvider
	if p.Organization != nil {
		// Admission refuses this too; a CRD installed without its
		// validation must not open the organization to a namespace.
		if ref := cr.GetProviderConfigReference(); ref == nil || ref.Kind != "ClusterProviderConfig" {
			return nil, errors.New(errOrgNeedsCluster)
		}
	}
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	project, err := conn.ProjectOr(p.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	return &external{groups: conn.Client.AddressGroups(), key: Key(cr, project), labels: c.labeler.ExternalLabels(cr, v1alpha1.AddressGroupGroupVersionKind.GroupKind())}, nil
}

// Key is the GCP group cr manages, given the project it resolved to.
func Key(cr *v1alpha1.AddressGroup, project string) gcp.GroupKey {
	p := cr.Spec.ForProvider
	parent := gcp.ProjectParent(project)
	if p.Organization != nil {
		parent = gcp.OrganizationParent(*p.Organization)
	}
	loc := p.Location
	if loc == "" {
		loc = "global"
	}
	return gcp.GroupKey{Parent: parent, Location: loc, Name: meta.GetExternalName(cr)}
}

// external manages one GCP address group. It holds only what lives as long
// as the connection: each call reads what it needs.
type external struct {
	groups gcp.AddressGroupClient
	key    gcp.GroupKey
	labels map[string]string // the owner and provenance labels the group carries in GCP
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.AddressGroup) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, nil)
	}
	ag, err := e.groups.Get(ctx, e.key)
	if gcp.IsNotFound(err) {
		f.Presence = verdict.Missing
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			return dryRun(cr, e.key, false, false)
		}
		return v.Observation(verdict.Details{})
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGet))
	}
	f.Presence = verdict.Present
	if f.Role == verdict.Owner {
		role, other := ownership.ByOwnerLabel(ag.Labels, e.labels[ownership.LabelKey])
		if role == verdict.Outranked {
			ownership.CountConflicts(v1alpha1.AddressGroupKind, ownership.ConflictOwnerLabel, 1)
			return verdict.Refuse(f, fmt.Sprintf(errFmtLabelledForOther, e.key, ownership.LabelKey, other))
		}
		f.Role = role
	}
	refs, err := e.groups.References(ctx, e.key)
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errReferences))
	}
	cr.Status.AtProvider = gcpgroup.Observation(ag, refs)
	cr.SetConditions(xpv2.Available())

	plan := gcpgroup.PlanGroup(cr.Spec.ForProvider, e.own(cr), ag)
	if len(plan.Immutable) > 0 {
		return verdict.Fail(errors.Errorf(errFmtImmutable, e.key, strings.Join(plan.Immutable, "; ")))
	}
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		return dryRun(cr, e.key, true, plan.UpToDate())
	}
	return v.Observation(verdict.Details{UpToDate: plan.UpToDate(), Diff: plan.String()})
}

// own is the labels the group must carry: the owner and provenance labels,
// unless cr only observes.
func (e *external) own(cr *v1alpha1.AddressGroup) map[string]string {
	if verdict.Writes(cr) {
		return e.labels
	}
	return nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.AddressGroup) (managed.ExternalCreation, error) {
	if err := checkCapacity(e.key, cr.Spec.ForProvider); err != nil {
		return managed.ExternalCreation{}, err
	}
	err := e.groups.Create(ctx, e.key, gcpgroup.Generate(cr.Spec.ForProvider, e.own(cr)))
	return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
}

// Update adds the missing items, then removes the extra ones, so that an
// address changing ranges is never out of the group; when the group lacks
// room to add first, it removes just enough first to make room. Then it
// patches description and labels.
func (e *external) Update(ctx context.Context, cr *v1alpha1.AddressGroup) (managed.ExternalUpdate, error) {
	p := cr.Spec.ForProvider
	if err := checkCapacity(e.key, p); err != nil {
		return managed.ExternalUpdate{}, err
	}
	ag, err := e.groups.Get(ctx, e.key)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errGet)
	}
	plan := gcpgroup.PlanGroup(p, e.own(cr), ag)
	if room := int(ag.Capacity) - len(ag.Items); len(plan.Add) > room && len(plan.Remove) > 0 {
		first := min(len(plan.Add)-room, len(plan.Remove))
		if err := e.groups.RemoveItems(ctx, e.key, plan.Remove[:first]); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errRemoveItems)
		}
		plan.Remove = plan.Remove[first:]
	}
	if len(plan.Add) > 0 {
		if err := e.groups.AddItems(ctx, e.key, plan.Add); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errAddItems)
		}
	}
	if len(plan.Remove) > 0 {
		if err := e.groups.RemoveItems(ctx, e.key, plan.Remove); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errRemoveItems)
		}
	}
	if len(plan.Patch) > 0 {
		body := gcpgroup.PatchBody(p, e.own(cr), ag)
		if err := e.groups.Patch(ctx, e.key, body, strings.Join(plan.Patch, ",")); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errPatch)
		}
	}
	// The group now holds the spec's items. Said at once, not at the next poll: a composition
	// waiting for the group to be filled reads this count.
	cr.Status.AtProvider.ItemCount = distinctItems(p.Items)
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.AddressGroup) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	err := e.groups.Delete(ctx, e.key)
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDelete)
}

func (e *external) Disconnect(context.Context) error { return nil }

// checkCapacity refuses a spec that lists more distinct items than the group
// holds, before any call: GCP would refuse the create, or the add.
func checkCapacity(k gcp.GroupKey, p v1alpha1.AddressGroupParameters) error {
	if n := distinctItems(p.Items); n > int(p.Capacity) {
		return errors.Errorf(errFmtOverCapacity, k, p.Capacity, n)
	}
	return nil
}

// distinctItems counts items as address ranges.
func distinctItems(items []string) int {
	distinct := make(map[string]bool, len(items))
	for _, it := range items {
		distinct[gcpgroup.Canonical(it)] = true
	}
	return len(distinct)
}
