// Package securitypolicyattachment manages SecurityPolicyAttachment
// objects: a security policy named in one field (securityPolicy or
// edgeSecurityPolicy) of one backend service or backend bucket, set by
// compute v1's setSecurityPolicy and setEdgeSecurityPolicy, which change
// that field and nothing else of the target.
//
// The attachment owns that one field, and only of a target the platform
// team granted its namespace (package grant: ClusterProviderConfig
// spec.attachmentGrants; a namespaced ProviderConfig's own credentials need
// no grant). GCP records nothing of who set the field, so only the cluster
// decides between attachments (ownership.AttachmentStanding: the one that
// wrote, then the oldest); anything outside the cluster that writes the
// field is met by a Fight (fight.go): the attachment writes again with a
// growing delay, and after a few reversals stops writing and reports the
// contest until the user acts. Deleting the attachment restores what its
// first write replaced, only if the field still names what it wrote, and
// only if it ever wrote: the provider records its writes in an
// AttachmentRecord (record.go), which a tenant cannot forge.
package securitypolicyattachment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	"github.com/armorplane/provider-cloudarmor/internal/controller/grant"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Error strings.
const (
	errConnect   = "cannot connect to GCP"
	errStanding  = "cannot decide whether this object may write its field"
	errGet       = "cannot get the attachment's target"
	errSet       = "cannot set the target's security policy"
	errDetach    = "cannot restore the target's security policy"
	errGrant     = "cannot decide whether this namespace is granted the target"
	errBadPolicy = "spec.forProvider.securityPolicy must be a policy name or a securityPolicies URL"

	errFmtDryRunDiffers = "dry run: %s of %s names %s, not %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: setSecurityPolicy and setEdgeSecurityPolicy take no validateOnly, so the write cannot be asked about"
)

// apiRoot is what a relative resource name is a URL below.
const apiRoot = "https://www.googleapis.com/compute/v1/"

// TypeContested is the condition of an attachment that stopped writing its
// field because another writer kept setting it back: True, reason
// Contested, with what GCP holds, how often and when it was set back; False,
// reason Uncontested, once the attachment writes again. It is set only on
// an attachment that was ever contested.
const TypeContested xpv2.ConditionType = "Contested"

// Reasons of the Contested condition.
const (
	ReasonContested   xpv2.ConditionReason = "Contested"
	ReasonUncontested xpv2.ConditionReason = "Uncontested"
)

// Kind wires the SecurityPolicyAttachment controller.
var Kind = setup.Kind[*v1alpha1.SecurityPolicyAttachment]{
	GVK: v1alpha1.SecurityPolicyAttachmentGroupVersionKind,
	// securityPolicyRef resolves to a SecurityPolicy; the provider records
	// the attachment's writes in AttachmentRecords.
	Requires:  []schema.GroupVersionKind{v1beta1.SecurityPolicyGroupVersionKind, v1alpha1.AttachmentRecordGroupVersionKind},
	New:       func() *v1alpha1.SecurityPolicyAttachment { return &v1alpha1.SecurityPolicyAttachment{} },
	List:      &v1alpha1.SecurityPolicyAttachmentList{},
	Connector: newConnector,
	PollGroup: PollGroup,
	Indexes: func(ctx context.Context, o setup.Options, idx client.FieldIndexer) error {
		// The ownership indexes find the SecurityPolicies an attachment
		// wakes.
		if err := setup.OwnershipIndexes(ctx, o, idx); err != nil {
			return err
		}
		return ownership.SetupAttachmentIndexes(ctx, idx)
	},
	// An attachment has no external name of its own: it is its target's
	// field.
	NamedBySpec: true,
	Status: setup.StatusOf(func(cr *v1alpha1.SecurityPolicyAttachment) *v1alpha1.SecurityPolicyAttachmentStatus {
		return &cr.Status
	}),
}

func newConnector(e setup.Env) managed.TypedExternalConnector[*v1alpha1.SecurityPolicyAttachment] {
	return &externalConnector{conn: e.Connector, index: ownership.NewIndex(e.Client), kube: e.Client, wake: e.PolicyWake,
		fight: DefaultFight, now: time.Now, grants: grant.NewChecker(e.Client), records: Records{kube: e.Client}}
}

// PollGroup is the attachment's target and field: the attachments of one
// field are polled together.
func PollGroup(mg resource.Managed) string {
	if cr, ok := mg.(*v1alpha1.SecurityPolicyAttachment); ok {
		return "securitypolicyattachment/" + ownership.AttachmentTargetKey(cr.Spec.ForProvider)
	}
	return "securitypolicyattachment/" + mg.GetNamespace() + "/" + mg.GetName()
}

// An externalConnector connects each reconcile to GCP through the provider's
// connector (package connector), and hands the reconcile an external.
type externalConnector struct {
	conn  *connector.Connector
	index *ownership.Index
	kube  client.Reader
	wake  *setup.Wake
	fight Fight
	now   func() time.Time

	grants  *grant.Checker
	records Records
}

// Connect connects cr to GCP. An attachment that may write must have its
// target granted (package grant): one that is not gets an external that
// refuses, which makes no call to GCP, not even a read.
func (c *externalConnector) Connect(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.TypedExternalClient[*v1alpha1.SecurityPolicyAttachment], error) {
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	if verdict.Writes(cr) {
		why, err := c.grants.Check(ctx, cr)
		if err != nil {
			return nil, errors.Wrap(err, errGrant)
		}
		if why != "" {
			return &refused{why: why, records: c.records}, nil
		}
	}
	project, err := conn.ProjectOr(cr.Spec.ForProvider.Project)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	return &external{backends: conn.Client.Backends(), key: Key(cr, project), index: c.index, kube: c.kube, wake: c.wake,
		fight: c.fight, now: c.now, records: c.records}, nil
}

// Key is the target cr attaches to, given the project it resolved to.
func Key(cr *v1alpha1.SecurityPolicyAttachment, project string) gcp.TargetKey {
	t := cr.Spec.ForProvider.Target
	return gcp.TargetKey{Project: project, Region: ptr.Deref(t.Region, ""), Name: t.Name, Bucket: t.Kind == v1alpha1.TargetBackendBucket}
}

// PolicyName is the relative resource name of cr's policy: its URL's, or
// for a name the policy of that name in the target's project and scope.
// ok is false while the policy is not resolved yet.
func PolicyName(cr *v1alpha1.SecurityPolicyAttachment, key gcp.TargetKey) (name string, ok bool, err error) {
	p := cr.Spec.ForProvider.SecurityPolicy
	switch {
	case p == nil || *p == "":
		return "", false, nil
	case strings.Contains(*p, "/"):
		rel := gcp.RelativeName(*p)
		if !strings.HasPrefix(rel, "projects/") || !strings.Contains(rel, "/securityPolicies/") {
			return "", false, errors.New(errBadPolicy)
		}
		return rel, true, nil
	case key.Region != "":
		return "projects/" + key.Project + "/regions/" + key.Region + "/securityPolicies/" + *p, true, nil
	}
	return "projects/" + key.Project + "/global/securityPolicies/" + *p, true, nil
}

// external manages one attachment. It holds what lives as long as the
// connection; nothing is carried from Observe to Update but the status.
type external struct {
	backends gcp.BackendClient
	key      gcp.TargetKey
	index    *ownership.Index
	kube     client.Reader
	wake     *setup.Wake
	fight    Fight
	now      func() time.Time
	records  Records
}

// Observe reads the target and decides; an attachment being deleted that
// leaves its field as it is (Released, or nothing left to clear) forgets
// the provider's record of its writes.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalObservation, error) {
	o, err := e.observe(ctx, cr)
	if err == nil && !o.ResourceExists && meta.WasDeleted(cr) {
		if err := e.records.Forget(ctx, cr); err != nil {
			return verdict.Fail(err)
		}
	}
	return o, err
}

// observe reads the target once per poll and decides, with the Fight, what
// to do with its field.
func (e *external) observe(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalObservation, error) {
	f := verdict.FactsOf(cr)
	desired, ok, err := PolicyName(cr, e.key)
	if err != nil {
		return verdict.Fail(err)
	}
	if !ok {
		// The reference has not resolved: the policy is not there yet.
		f.Presence = verdict.NoParent
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	if f.Role == verdict.Owner {
		why, err := e.index.AttachmentStanding(ctx, cr, e.key.Project)
		if err != nil {
			return verdict.Fail(errors.Wrap(err, errStanding))
		}
		if why != "" {
			return verdict.Refuse(f, why)
		}
	}
	t, err := e.backends.Get(ctx, e.key)
	if gcp.IsNotFound(err) {
		cr.SetConditions(xpv2.Unavailable().WithMessage(fmt.Sprintf("GCP has no %s: the policy is attached once it exists", e.key)))
		f.Presence = verdict.NoParent
		return verdict.Decide(f).Observation(verdict.Details{})
	}
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errGet))
	}
	if f.Deleting {
		// What the attachment owns while being deleted is what it wrote
		// and would restore: once the field names anything else, or it
		// never wrote, nothing is left to restore, and the finalizer may
		// go.
		rec, err := e.records.Get(ctx, cr)
		if err != nil {
			return verdict.Fail(err)
		}
		f.Presence = verdict.Present
		if !RestoreOnDelete(rec, gcp.RelativeName(t.Field(cr.Spec.ForProvider.Field))).Write {
			f.Presence = verdict.Missing
		}
	}
	return e.observeField(cr, f, desired, t)
}

// observeField is Observe's verdict on the target's field, as GCP holds it.
func (e *external) observeField(cr *v1alpha1.SecurityPolicyAttachment, f verdict.Facts, desired string, t *gcp.Target) (managed.ExternalObservation, error) {
	field := cr.Spec.ForProvider.Field
	if c, ok := gkeCondition(field, e.key, t); ok {
		cr.SetConditions(c)
	}
	held := gcp.RelativeName(t.Field(field))
	cr.Status.AtProvider.Target, cr.Status.AtProvider.Value = e.key.String(), held
	if !f.Deleting {
		f.Presence = verdict.Present
	}
	switch v := verdict.Decide(f); v {
	case verdict.Own:
		return e.decide(cr, desired, held)
	case verdict.DryRun:
		if held == desired {
			return dryrun.UpToDate(cr, nil)
		}
		dryrun.Unavailable(cr, fmt.Sprintf(errFmtDryRunDiffers, field, e.key, orNone(held), desired))
		return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
	default:
		available(cr, field, e.key, held, desired)
		return v.Observation(verdict.Details{UpToDate: held == desired})
	}
}

// decide is Observe's verdict for the field's owner: the Fight's decision,
// recorded in the status.
func (e *external) decide(cr *v1alpha1.SecurityPolicyAttachment, desired, held string) (managed.ExternalObservation, error) {
	field := cr.Spec.ForProvider.Field
	d := e.fight.Decide(Input{Now: e.now(), Desired: desired, Held: held, Observed: cr.Status.AtProvider,
		Generation: cr.GetGeneration(), Reapply: cr.GetAnnotations()[v1alpha1.AnnotationReapply]})
	cr.Status.AtProvider.ReversalTimes, cr.Status.AtProvider.Contest = d.Reversals, d.Contest
	setContested(cr, field, e.key, d.Contest)
	available(cr, field, e.key, held, desired)
	switch d.Action {
	case Wait:
		return verdict.Fail(errors.New(e.fight.waitMessage(field, e.key.String(), held, d)))
	case Stop:
		return verdict.Fail(errors.New(contestMessage(field, e.key.String(), d.Contest)))
	}
	diff := ""
	if d.Action == Apply {
		diff = fmt.Sprintf("%s: %s, want %s", field, orNone(held), desired)
	}
	return verdict.Own.Observation(verdict.Details{UpToDate: d.Action == Hold, Diff: diff})
}

// available sets Ready: Available while the field names the policy.
func available(cr *v1alpha1.SecurityPolicyAttachment, field string, key gcp.TargetKey, held, desired string) {
	if held == desired {
		cr.SetConditions(xpv2.Available())
		return
	}
	cr.SetConditions(xpv2.Unavailable().WithMessage(fmt.Sprintf("%s of %s names %s, not %s", field, key, orNone(held), desired)))
}

// setContested sets the Contested condition: True while contest is set;
// False once it ends, on an attachment that had it.
func setContested(cr *v1alpha1.SecurityPolicyAttachment, field string, key gcp.TargetKey, contest *v1alpha1.ContestObservation) {
	if contest != nil {
		cr.SetConditions(xpv2.Condition{Type: TypeContested, Status: corev1.ConditionTrue, Reason: ReasonContested,
			Message: contestMessage(field, key.String(), contest), LastTransitionTime: metav1.Now()})
		return
	}
	if cr.GetCondition(TypeContested).Status == corev1.ConditionTrue {
		cr.SetConditions(xpv2.Condition{Type: TypeContested, Status: corev1.ConditionFalse, Reason: ReasonUncontested,
			Message: "this object writes its field again", LastTransitionTime: metav1.Now()})
	}
}

// Create sets the field: Observe reports a target that exists, so the
// reconciler calls Update, never Create, but either writes the same.
func (e *external) Create(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalCreation, error) {
	_, err := e.Update(ctx, cr)
	return managed.ExternalCreation{}, err
}

// Update sets the field to the policy, records the write (the provider's
// record first, which delete restores from; then the status, which the
// Fight reads) and wakes the policy's SecurityPolicies, whose usedBy then
// says so. Observe, earlier in the same reconcile, set
// status.atProvider.value to what the field names now.
func (e *external) Update(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalUpdate, error) {
	desired, _, err := PolicyName(cr, e.key)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	now := metav1.NewTime(e.now())
	if err := e.records.Written(ctx, cr, e.key.String(), cr.Status.AtProvider.Value, desired, now); err != nil {
		return managed.ExternalUpdate{}, err
	}
	if err := e.backends.SetPolicy(ctx, e.key, cr.Spec.ForProvider.Field, apiRoot+desired); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errSet)
	}
	o := &cr.Status.AtProvider
	o.AppliedPolicy, o.LastAppliedTime, o.Value = desired, &now, desired
	available(cr, cr.Spec.ForProvider.Field, e.key, desired, desired)
	e.wakePolicies(ctx, desired)
	return managed.ExternalUpdate{}, nil
}

// Delete puts back what the attachment's first write replaced
// (RestoreOnDelete), if the field, read just before, still names what it
// wrote: a field another writer set is left as it is, and so is one the
// attachment never wrote (it found its policy already there). Then it
// forgets the record.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	rec, err := e.records.Get(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	t, err := e.backends.Get(ctx, e.key)
	if err != nil && !gcp.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errGet)
	}
	if err == nil {
		held := gcp.RelativeName(t.Field(cr.Spec.ForProvider.Field))
		if r := RestoreOnDelete(rec, held); r.Write {
			if err := e.backends.SetPolicy(ctx, e.key, cr.Spec.ForProvider.Field, policyURL(r.Value)); err != nil {
				return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDetach)
			}
			e.wakePolicies(ctx, held)
			if r.Value != "" {
				e.wakePolicies(ctx, r.Value)
			}
		}
	}
	return managed.ExternalDelete{}, e.records.Forget(ctx, cr)
}

// policyURL is the URL setSecurityPolicy takes for the relative name rel,
// "" for none.
func policyURL(rel string) string {
	if rel == "" {
		return ""
	}
	return apiRoot + rel
}

func (e *external) Disconnect(context.Context) error { return nil }

// wakePolicies wakes the SecurityPolicies of the GCP policy rel (a
// relative name), in every namespace. Best effort: a policy not woken sees
// the change at its next poll.
func (e *external) wakePolicies(ctx context.Context, rel string) {
	if e.wake == nil {
		return
	}
	region := ""
	if _, after, ok := strings.Cut(rel, "/regions/"); ok {
		region, _, _ = strings.Cut(after, "/")
	}
	name := rel[strings.LastIndex(rel, "/")+1:]
	policies, err := ownership.PoliciesNamed(ctx, e.kube, region, name)
	if err != nil {
		return
	}
	for _, p := range policies {
		sp := &v1beta1.SecurityPolicy{}
		sp.SetNamespace(p.Namespace)
		sp.SetName(p.Name)
		e.wake.Wake(sp)
	}
}

// refused is the external of an attachment whose namespace is not granted
// its target: it makes no call to GCP. Being deleted, it leaves the field
// as it is (Released) and forgets any record of earlier writes.
type refused struct {
	why     string
	records Records
}

func (r *refused) Observe(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (managed.ExternalObservation, error) {
	if meta.WasDeleted(cr) {
		if err := r.records.Forget(ctx, cr); err != nil {
			return verdict.Fail(err)
		}
	}
	return verdict.Refuse(verdict.FactsOf(cr), r.why)
}

func (r *refused) Create(context.Context, *v1alpha1.SecurityPolicyAttachment) (managed.ExternalCreation, error) {
	return managed.ExternalCreation{}, errors.New(r.why)
}

func (r *refused) Update(context.Context, *v1alpha1.SecurityPolicyAttachment) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, errors.New(r.why)
}

func (r *refused) Delete(context.Context, *v1alpha1.SecurityPolicyAttachment) (managed.ExternalDelete, error) {
	return managed.ExternalDelete{}, nil
}

func (r *refused) Disconnect(context.Context) error { return nil }
