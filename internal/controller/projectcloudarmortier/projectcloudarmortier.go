// Package projectcloudarmortier manages ProjectCloudArmorTier objects: the
// Cloud Armor tier of a GCP project (projects.setCloudArmorTier, read back
// from projects.get). The tier always exists, so Observe reports it present
// and Update sets it; there is nothing to create, and deleting the object
// leaves the project on its tier.
//
// A project has one tier, so one object writes it: the oldest object that
// may update and names the project, across the cluster (Owner). Any other is
// refused, names it, and writes nothing. Writing the tier also needs a
// config that lets the object's namespace change project-wide settings
// (connector.AdmitProjectWide); observing it does not.
package projectcloudarmortier

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
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
	errConnect = "cannot connect to GCP"
	errGetTier = "cannot get the project's Cloud Armor tier"
	errSetTier = "cannot set the project's Cloud Armor tier"
	errOwners  = "cannot list ProjectCloudArmorTiers to find which one sets the project's tier"

	errFmtOutranked = "ProjectCloudArmorTier %s/%s, older than this object, sets the Cloud Armor tier of project %s: a project has one tier, so this object makes no change to it. Delete one of the two, or set managementPolicies [Observe] on this one to only report the tier"
)

// Messages of a dry run: setCloudArmorTier takes no validateOnly.
const (
	msgFmtDryRun = "dry run: project %s is on %s, and this object would set %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked  = "not asked: projects.setCloudArmorTier takes no validateOnly, so the change cannot be asked about"
)

// reasonTierSet is the event recorded when the object changed the tier.
const reasonTierSet event.Reason = "SetCloudArmorTier"

// Kind wires the ProjectCloudArmorTier controller.
var Kind = setup.Kind[*v1alpha1.ProjectCloudArmorTier]{
	GVK:       v1alpha1.ProjectCloudArmorTierGroupVersionKind,
	New:       func() *v1alpha1.ProjectCloudArmorTier { return &v1alpha1.ProjectCloudArmorTier{} },
	List:      &v1alpha1.ProjectCloudArmorTierList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	// The external name is not used: the project (spec, else the config's)
	// names what the object manages.
	NamedBySpec: true,
	Status: setup.StatusOf(func(cr *v1alpha1.ProjectCloudArmorTier) *v1alpha1.ProjectCloudArmorTierStatus {
		return &cr.Status
	}),
}

// PollGroup polls each object on its own: its read is its own.
func PollGroup(mg resource.Managed) string {
	return "projectcloudarmortier/" + mg.GetNamespace() + "/" + mg.GetName()
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.ProjectCloudArmorTier] {
	return &externalConnector{conn: e.Connector, kube: e.Client, recorder: e.Recorder}
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector, after checking that an object that writes may change the
// project.
type externalConnector struct {
	conn     *connector.Connector
	kube     client.Reader
	recorder event.Recorder
}

func (c *externalConnector) Connect(ctx context.Context, cr *v1alpha1.ProjectCloudArmorTier) (managed.TypedExternalClient[*v1alpha1.ProjectCloudArmorTier], error) {
	if updates(cr) && !meta.WasDeleted(cr) {
		if err := c.conn.AdmitProjectWide(ctx, cr); err != nil {
			return nil, err
		}
	}
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	project, err := conn.ProjectOr(cr.Spec.ForProvider.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	return &external{projects: conn.Client.Projects(), project: project,
		owners: &owners{kube: c.kube, projects: connector.NewProjects(c.kube), admit: c.conn.AdmitProjectWide}, recorder: c.recorder}, nil
}

// updates reports whether cr's management policies update: the only write
// a tier has.
func updates(cr *v1alpha1.ProjectCloudArmorTier) bool {
	mp := cr.GetManagementPolicies()
	return len(mp) == 0 || slices.ContainsFunc(mp, func(a xpv2.ManagementAction) bool {
		return a == xpv2.ManagementActionAll || a == xpv2.ManagementActionUpdate
	})
}

// ownerOf answers which object writes a project's tier.
type ownerOf interface {
	Owner(ctx context.Context, project string) (*v1alpha1.ProjectCloudArmorTier, error)
}

// external manages one project's tier.
type external struct {
	projects gcp.ProjectClient
	project  string
	owners   ownerOf
	recorder event.Recorder
}

// Observe reads the tier once per poll, from GCP (not the Client's kept
// copy, which it refreshes for the policies of the project).
func (e *external) Observe(ctx context.Context, cr *v1alpha1.ProjectCloudArmorTier) (managed.ExternalObservation, error) {
	f := facts(cr)
	if f.Role == verdict.Owner && !f.Deleting {
		owner, err := e.owners.Owner(ctx, e.project)
		if err != nil {
			return verdict.Fail(errors.Wrap(err, errOwners))
		}
		if owner != nil && owner.GetUID() != cr.GetUID() {
			return verdict.Refuse(f, fmt.Sprintf(errFmtOutranked, owner.GetNamespace(), owner.GetName(), e.project))
		}
	}
	if f.Deleting {
		// Nothing to delete: the project keeps its tier.
		f.Presence = verdict.Permanent
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	tier, err := e.projects.FreshTier(ctx, e.project)
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGetTier))
	}
	cr.Status.AtProvider = v1alpha1.ProjectCloudArmorTierObservation{Project: e.project, CloudArmorTier: tier}
	cr.SetConditions(xpv2.Available())
	f.Presence = verdict.Present
	upToDate := tier == cr.Spec.ForProvider.CloudArmorTier
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		return dryRun(cr, tier, upToDate)
	}
	dryrun.End(&cr.Status.ConditionedStatus, nil)
	d := ""
	if !upToDate {
		d = fmt.Sprintf("setCloudArmorTier %s -> %s", tier, cr.Spec.ForProvider.CloudArmorTier)
	}
	return v.Observation(verdict.Details{UpToDate: upToDate, Diff: d})
}

// facts are cr's ownership facts: it owns the tier if it updates.
func facts(cr *v1alpha1.ProjectCloudArmorTier) verdict.Facts {
	f := verdict.Facts{Role: verdict.Observer, Deleting: meta.WasDeleted(cr)}
	if updates(cr) {
		f.Role = verdict.Owner
		f.DryRun = verdict.IsDryRun(cr)
	}
	return f
}

// Create is never called: Observe always finds the project's tier.
func (e *external) Create(context.Context, *v1alpha1.ProjectCloudArmorTier) (managed.ExternalCreation, error) {
	return managed.ExternalCreation{}, nil
}

// Update sets the tier: one setCloudArmorTier per change.
func (e *external) Update(ctx context.Context, cr *v1alpha1.ProjectCloudArmorTier) (managed.ExternalUpdate, error) {
	want := cr.Spec.ForProvider.CloudArmorTier
	if err := e.projects.SetTier(ctx, e.project, want); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errSetTier)
	}
	e.recorder.Event(cr, event.Normal(reasonTierSet, fmt.Sprintf("set the Cloud Armor tier of project %s to %s", e.project, want)))
	return managed.ExternalUpdate{}, nil
}

// Delete changes nothing: a project always has a tier, and going back to
// Standard is a change the spec asks for, not a deletion.
func (e *external) Delete(context.Context, *v1alpha1.ProjectCloudArmorTier) (managed.ExternalDelete, error) {
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// dryRun reports, for cr in dry run, whether the tier matches the spec.
func dryRun(cr *v1alpha1.ProjectCloudArmorTier, tier string, upToDate bool) (managed.ExternalObservation, error) {
	if upToDate {
		return dryrun.UpToDate(cr, nil)
	}
	dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRun, cr.Status.AtProvider.Project, tier, cr.Spec.ForProvider.CloudArmorTier))
	return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
}

// owners finds the object that writes a project's tier among every
// ProjectCloudArmorTier of the cluster, read from the informer cache. There
// are few of them (one per project that sets its tier), so a list is cheap.
type owners struct {
	kube     client.Reader
	projects *connector.Projects
	// admit says whether an object's config lets it change the project
	// (Connector.AdmitProjectWide): one that may not write the tier does
	// not outrank one that may.
	admit func(ctx context.Context, mg resource.ModernManaged) error
}

// Owner is the oldest object (then by namespace and name) that updates,
// is not being deleted, resolves to project and whose config lets it change
// the project; nil when none does.
func (o *owners) Owner(ctx context.Context, project string) (*v1alpha1.ProjectCloudArmorTier, error) {
	l := &v1alpha1.ProjectCloudArmorTierList{}
	if err := o.kube.List(ctx, l); err != nil {
		return nil, err
	}
	var best *v1alpha1.ProjectCloudArmorTier
	for i := range l.Items {
		cr := &l.Items[i]
		if !updates(cr) || meta.WasDeleted(cr) {
			continue
		}
		p, err := o.projects.Of(ctx, cr, cr.Spec.ForProvider.Project)
		if err != nil || p != project {
			// An object whose config cannot be read cannot write
			// either: it does not outrank anyone.
			continue
		}
		if o.admit != nil && o.admit(ctx, cr) != nil {
			continue
		}
		if best == nil || older(cr, best) {
			best = cr
		}
	}
	return best, nil
}

func older(a, b *v1alpha1.ProjectCloudArmorTier) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	return a.GetName() < b.GetName()
}
