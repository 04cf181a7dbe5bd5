package ownership

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// A SecurityPolicyAttachment owns one field of one backend service or
// bucket. GCP records nothing of who set a field, so only the cluster's
// objects decide, in every namespace: of the attachments that may write and
// name the same field of the same target in the same project, the oldest
// owns it (attachmentOlder: one that wrote the field, then creation time,
// then namespace/name).

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
	projects := i.projects()
	var owner *v1alpha1.SecurityPolicyAttachment
	for n := range l.Items {
		a := &l.Items[n]
		if a.GetUID() == cr.GetUID() || !verdict.Writes(a) || !attachmentOlder(a, cr) {
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
		if owner == nil || attachmentOlder(a, owner) {
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

// attachmentOlder reports whether a owns before b: an attachment that wrote
// its field (status.atProvider.lastAppliedTime) before one that never did,
// then older. An attachment never records a create (its field exists with
// its target), so without the write first an attachment created in the
// same second as the one that set the field, with a name that sorts
// earlier, would take the field over (creationTimestamp has a resolution
// of one second).
func attachmentOlder(a, b *v1alpha1.SecurityPolicyAttachment) bool {
	wa, wb := a.Status.AtProvider.LastAppliedTime != nil, b.Status.AtProvider.LastAppliedTime != nil
	if wa != wb {
		return wa
	}
	return older(a, b)
}
