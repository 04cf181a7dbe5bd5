package ownership

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/grant"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// A SecurityPolicyAttachment owns one field of one backend service or
// bucket. GCP records nothing of who set a field, so only the cluster's
// objects decide, in every namespace: of the attachments that may write, are
// granted the target (package grant) and name the same field of the same
// target in the same project, the oldest owns it (attachmentOlder: one the
// provider recorded writing the field, then creation time, then
// namespace/name). Nothing a tenant can edit ranks: the record is the
// provider's cluster-scoped AttachmentRecord, not the attachment's status
// or annotations, and creationTimestamp is the API server's.

const indexAttachmentTarget = "ownership.attachmentTarget" // SecurityPolicyAttachment: kind/region/name/field

const errListAttachments = "cannot list SecurityPolicyAttachments that name the same field of the same target"

// AttachmentTargetKey is what the attachment index is keyed by: the target
// and field, without the project (which an index function cannot resolve).
func AttachmentTargetKey(p v1alpha1.SecurityPolicyAttachmentParameters) string {
	return p.Target.Kind + "/" + ptr.Deref(p.Target.Region, "") + "/" + p.Target.Name + "/" + p.Field
}

// SetupAttachmentIndexes registers the field index AttachmentStanding
// reads. Only the SecurityPolicyAttachment controller reads it, so it
// registers it itself.
func SetupAttachmentIndexes(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &v1alpha1.SecurityPolicyAttachment{}, indexAttachmentTarget, func(o client.Object) []string {
		a, ok := o.(*v1alpha1.SecurityPolicyAttachment)
		if !ok {
			return nil
		}
		return []string{AttachmentTargetKey(a.Spec.ForProvider)}
	})
}

// AttachmentStanding says whether cr, whose target is in project, may write
// its field: "" if it may, else why not, naming the owner. A refused object
// makes no change to GCP and leaves the field as it is when deleted.
func (i *Index) AttachmentStanding(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment, project string) (string, error) {
	l := &v1alpha1.SecurityPolicyAttachmentList{}
	if err := i.kube.List(ctx, l, client.MatchingFields{indexAttachmentTarget: AttachmentTargetKey(cr.Spec.ForProvider)}, client.UnsafeDisableDeepCopy); err != nil {
		return "", errors.Wrap(err, errListAttachments)
	}
	projects, grants, wrote := i.projects(), grant.NewChecker(i.kube), i.wroteFn(ctx)
	var owner *v1alpha1.SecurityPolicyAttachment
	for n := range l.Items {
		a := &l.Items[n]
		if a.GetUID() == cr.GetUID() || !verdict.Writes(a) || !attachmentOlder(a, cr, wrote) {
			continue
		}
		if p, err := projects.Of(ctx, a, a.Spec.ForProvider.Project); err != nil || p != project {
			// An object whose config cannot be read cannot reach GCP
			// either; it owns nothing until it can.
			continue
		}
		if ok, err := projects.Admitted(ctx, a); err != nil || !ok {
			// Nor can one in a namespace its config does not admit: a
			// tenant may not hold another's field by naming it first.
			continue
		}
		if why, err := grants.Check(ctx, a); err != nil || why != "" {
			// Nor can one whose namespace is not granted the target.
			continue
		}
		if owner == nil || attachmentOlder(a, owner, wrote) {
			owner = a
		}
	}
	if owner == nil {
		return "", nil
	}
	conflicts.WithLabelValues(v1alpha1.SecurityPolicyAttachmentKind, ConflictOlderOwner).Inc()
	return fmt.Sprintf("the %s of %s is managed by SecurityPolicyAttachment %s, the oldest object for it: "+
		"this object makes no change to it and leaves it as it is when deleted", cr.Spec.ForProvider.Field, targetName(cr, project), nameOf(owner)), nil
}

func targetName(cr *v1alpha1.SecurityPolicyAttachment, project string) string {
	t := cr.Spec.ForProvider.Target
	switch {
	case t.Kind == v1alpha1.TargetBackendBucket:
		return "projects/" + project + "/global/backendBuckets/" + t.Name
	case t.Region != nil:
		return "projects/" + project + "/regions/" + *t.Region + "/backendServices/" + t.Name
	}
	return "projects/" + project + "/global/backendServices/" + t.Name
}

// attachmentOlder reports whether a owns before b: an attachment the
// provider recorded writing its field (wrote) before one it did not, then
// older. An attachment never records a create (its field exists with its
// target), so without the write first an attachment created in the same
// second as the one that set the field, with a name that sorts earlier,
// would take the field over (creationTimestamp has a resolution of one
// second).
func attachmentOlder(a, b *v1alpha1.SecurityPolicyAttachment, wrote func(*v1alpha1.SecurityPolicyAttachment) bool) bool {
	wa, wb := wrote(a), wrote(b)
	if wa != wb {
		return wa
	}
	return older(a, b)
}

// wroteFn returns a function reporting whether the provider recorded an
// attachment writing its field: its AttachmentRecord exists. A record that
// cannot be read counts as none.
func (i *Index) wroteFn(ctx context.Context) func(*v1alpha1.SecurityPolicyAttachment) bool {
	seen := map[types.UID]bool{}
	return func(a *v1alpha1.SecurityPolicyAttachment) bool {
		if w, ok := seen[a.GetUID()]; ok {
			return w
		}
		err := i.kube.Get(ctx, types.NamespacedName{Name: v1alpha1.AttachmentRecordName(string(a.GetUID()))}, &v1alpha1.AttachmentRecord{})
		seen[a.GetUID()] = err == nil
		return err == nil
	}
}
