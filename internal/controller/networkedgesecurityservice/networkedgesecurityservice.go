// Package networkedgesecurityservice manages NetworkEdgeSecurityService
// objects: regional network edge security services (compute v1), which
// apply a CLOUD_ARMOR_NETWORK security policy to the network load
// balancers, protocol forwarding and VMs of their region.
//
// GCP gives a network edge security service no labels, so no owner label
// can say which object owns it. Ownership is instead what the object
// recorded: an object owns the service it created
// (crossplane.io/external-create-succeeded, which crossplane-runtime sets
// after a successful Create). An object that finds a service it did not
// create adopts it only if its management policies leave out Create (for
// example [Observe, Update]): such an object never creates, so naming an
// existing service is what it is for. Any other object finding a service it
// did not create refuses: it writes nothing, reports why in Synced, and
// leaves the service in place when deleted. Two objects racing to create
// one service are settled by GCP's alreadyExists: the loser records no
// create and refuses from then on. A person hands an object a service
// outright by setting the annotation on it.
package networkedgesecurityservice

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	gcpedge "github.com/armorplane/provider-cloudarmor/internal/clients/edgeservice"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errConnect  = "cannot connect to GCP"
	errGet      = "cannot get network edge security service"
	errCreate   = "cannot create network edge security service"
	errPatch    = "cannot update network edge security service"
	errDelete   = "cannot delete network edge security service"
	errValidate = "cannot ask GCP to validate the network edge security service (dry run)"

	errFmtNotCreated = "GCP already has network edge security service %s, and this object did not create it. " +
		"GCP gives these services no labels to say which object owns one, so this object makes no change to it and leaves it in place when deleted. " +
		"To keep the existing service as the spec says, set managementPolicies without Create ([Observe, Update]); " +
		"if it is this object's, set the annotation crossplane.io/external-create-succeeded on this object to the current time (RFC 3339)"
)

// Kind wires the NetworkEdgeSecurityService controller.
var Kind = setup.Kind[*v1alpha1.NetworkEdgeSecurityService]{
	GVK: v1alpha1.NetworkEdgeSecurityServiceGroupVersionKind,
	// securityPolicyRef resolves to a SecurityPolicy.
	Requires:  []schema.GroupVersionKind{v1beta1.SecurityPolicyGroupVersionKind},
	New:       func() *v1alpha1.NetworkEdgeSecurityService { return &v1alpha1.NetworkEdgeSecurityService{} },
	List:      &v1alpha1.NetworkEdgeSecurityServiceList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	Status: setup.StatusOf(func(cr *v1alpha1.NetworkEdgeSecurityService) *v1alpha1.NetworkEdgeSecurityServiceStatus {
		return &cr.Status
	}),
	KeepConditions: []xpv2.ConditionType{apivalues.TypeTier},
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.NetworkEdgeSecurityService] {
	return &externalConnector{conn: e.Connector, recorder: e.Recorder}
}

// PollGroup polls each service on its own: no other object reads it.
func PollGroup(mg resource.Managed) string {
	return "networkedgesecurityservice/" + mg.GetNamespace() + "/" + mg.GetName()
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector (package connector), and hands the reconcile an external.
type externalConnector struct {
	conn     *connector.Connector
	recorder event.Recorder
}

func (c *externalConnector) Connect(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.TypedExternalClient[*v1alpha1.NetworkEdgeSecurityService], error) {
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	project, err := conn.ProjectOr(cr.Spec.ForProvider.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	return &external{services: conn.Client.EdgeServices(), projects: conn.Client.Projects(),
		key: Key(cr, project), recorder: c.recorder}, nil
}

// Key is the GCP service cr manages, given the project it resolved to.
func Key(cr *v1alpha1.NetworkEdgeSecurityService, project string) gcp.EdgeServiceKey {
	return gcp.EdgeServiceKey{Project: project, Region: cr.Spec.ForProvider.Region, Name: meta.GetExternalName(cr)}
}

// external manages one GCP network edge security service. It holds only
// what lives as long as the connection: each call reads what it needs.
type external struct {
	services gcp.EdgeServiceClient
	// projects reads the project's Cloud Armor tier, kept for a poll
	// interval by the config's client.
	projects gcp.ProjectClient
	key      gcp.EdgeServiceKey
	recorder event.Recorder
}

// Observe reads the service once, per poll.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	if !f.DryRun {
		dryrun.End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	}
	e.reportTier(ctx, cr)
	s, err := e.services.Get(ctx, e.key)
	if gcp.IsNotFound(err) {
		f.Presence = verdict.Missing
		v := verdict.Decide(f)
		if v == verdict.DryRun {
			return e.dryRunMissing(ctx, cr)
		}
		return v.Observation(verdict.Details{})
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGet))
	}
	f.Presence = verdict.Present
	if f.Role == verdict.Owner && !created(cr) {
		if creates(cr) {
			return verdict.Refuse(f, fmt.Sprintf(errFmtNotCreated, e.key))
		}
		f.Role = verdict.Adopter
	}
	cr.Status.AtProvider = gcpedge.Observation(s)
	cr.SetConditions(xpv2.Available())

	mask := gcpedge.Diff(e.key.Project, cr.Spec.ForProvider, s)
	v := verdict.Decide(f)
	if v == verdict.DryRun {
		return dryRunPresent(cr, e.key, len(mask) == 0)
	}
	return v.Observation(verdict.Details{UpToDate: len(mask) == 0, Diff: diff(mask)})
}

// created reports whether cr recorded creating its service.
func created(cr *v1alpha1.NetworkEdgeSecurityService) bool {
	return !meta.GetExternalCreateSucceeded(cr).IsZero()
}

// creates reports whether cr's management policies create.
func creates(cr *v1alpha1.NetworkEdgeSecurityService) bool {
	mp := cr.GetManagementPolicies()
	return len(mp) == 0 || slices.ContainsFunc(mp, func(a xpv2.ManagementAction) bool {
		return a == xpv2.ManagementActionAll || a == xpv2.ManagementActionCreate
	})
}

func diff(mask []string) string {
	if len(mask) == 0 {
		return ""
	}
	return "patch " + strings.Join(mask, ",")
}

// reportTier says, in the Tier condition, whether the project is on the
// Cloud Armor Enterprise tier a service applying a policy needs, reading the
// tier (kept for a poll interval) only when the spec names a policy. An
// object that writes nothing sends none.
func (e *external) reportTier(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) {
	var fs []apivalues.Feature
	if verdict.Writes(cr) && cr.Spec.ForProvider.SecurityPolicy != nil {
		fs = []apivalues.Feature{{Path: "spec.forProvider.securityPolicy", Name: apivalues.FeatureNetworkEdgePolicy}}
	}
	apivalues.ReportTier(cr, e.key.Project, fs, func(p string) (string, error) { return e.projects.Tier(ctx, p) })
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.ExternalCreation, error) {
	// The reconciler wrote cr, dropping what Observe set, before Create.
	e.reportTier(ctx, cr)
	err := e.services.Insert(ctx, e.key, gcpedge.Generate(e.key.Name, e.key.Project, cr.Spec.ForProvider))
	return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
}

// Update patches what differs in one call, with the fingerprint of the
// service as Update reads it: Observe's read is not carried over, and a
// fresh one makes a 412 only a concurrent writer's doing.
func (e *external) Update(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.ExternalUpdate, error) {
	s, err := e.services.Get(ctx, e.key)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errGet)
	}
	p := cr.Spec.ForProvider
	mask := gcpedge.Diff(e.key.Project, p, s)
	if len(mask) == 0 {
		return managed.ExternalUpdate{}, nil
	}
	err = e.services.Patch(ctx, e.key, gcpedge.PatchBody(e.key.Project, p, s, mask), strings.Join(mask, ","))
	return managed.ExternalUpdate{}, errors.Wrap(err, errPatch)
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	err := e.services.Delete(ctx, e.key)
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDelete)
}

func (e *external) Disconnect(context.Context) error { return nil }

// A NetworkEdgeSecurityService in dry run (v1beta1.AnnotationDryRun) writes
// nothing to GCP, as every kind's object does: the verdict is
// verdict.DryRun where Create or Update would write, and deleting the
// object leaves its service in place. Of the service's writes only insert
// takes validateOnly: a service GCP does not have is asked about (once per
// change of the insert, whose hash is status.dryRun.requestHash); a patch
// cannot be asked about, which Validated says (NotAsked).

const (
	msgFmtDryRunMissing = "dry run: GCP has no network edge security service %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP network edge security service %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: networkEdgeSecurityServices.patch takes no validateOnly, so the patch this object would send cannot be asked about"
	msgAccepted         = "GCP accepts networkEdgeSecurityServices.insert (validateOnly)"
	msgFmtRefused       = "GCP refuses networkEdgeSecurityServices.insert: %s"
)

// dryRunMissing asks GCP whether it would insert cr's service, unless it
// answered the same insert already, and reports the answer in Validated.
func (e *external) dryRunMissing(ctx context.Context, cr *v1alpha1.NetworkEdgeSecurityService) (managed.ExternalObservation, error) {
	dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, e.key))
	body := gcpedge.Generate(e.key.Name, e.key.Project, cr.Spec.ForProvider)
	hash, err := requestHash(e.key, body)
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errValidate))
	}
	return dryrun.Ask(cr, &cr.Status.DryRun, e.recorder, hash, errValidate, func() (dryrun.Answer, error) {
		err := e.services.ValidateInsert(ctx, e.key, body)
		switch k := gcp.Kind(err); {
		case err == nil:
			return dryrun.Accepted(msgAccepted), nil
		case k == gcp.KindInvalid || k == gcp.KindAlreadyExists || k == gcp.KindPermissionDenied || k == gcp.KindQuotaExceeded:
			return dryrun.Refused(fmt.Sprintf(msgFmtRefused, message(err))), nil
		}
		return dryrun.Answer{}, err
	})
}

// dryRunPresent reports, for cr in dry run whose service GCP has, whether it
// matches the spec in Ready, and in Validated that a patch cannot be asked
// about.
func dryRunPresent(cr *v1alpha1.NetworkEdgeSecurityService, key gcp.EdgeServiceKey, upToDate bool) (managed.ExternalObservation, error) {
	if upToDate {
		return dryrun.UpToDate(cr, &cr.Status.DryRun)
	}
	cr.Status.DryRun = nil
	dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, key))
	return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
}

// requestHash identifies the insert of body into key.
func requestHash(key gcp.EdgeServiceKey, body *compute.NetworkEdgeSecurityService) (string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(append([]byte(key.String()+"\n"), b...))
	return hex.EncodeToString(h[:]), nil
}

// message is GCP's own message in err, on one line, without the client's
// "googleapi: Error 400:" framing.
func message(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Message != "" {
		return strings.Join(strings.Fields(ge.Message), " ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
