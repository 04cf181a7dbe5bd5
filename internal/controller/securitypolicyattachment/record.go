package securitypolicyattachment

import (
	"context"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// What an attachment wrote, and what its field named before, decide what
// deleting it does. Its status would be the natural place, but Crossplane's
// RBAC manager grants every role of a provider's kinds their status
// subresource too, so a tenant with edit rights in its namespace could
// write "I replaced X" or "I wrote this" into its own attachment. The
// provider keeps this record instead in a cluster-scoped AttachmentRecord,
// which a namespaced RoleBinding cannot grant.

// Error strings.
const (
	errGetRecord    = "cannot get the provider's record of this attachment's writes"
	errWriteRecord  = "cannot write the provider's record of this attachment's writes"
	errDeleteRecord = "cannot delete the provider's record of this attachment's writes"
)

// Records reads and writes AttachmentRecords.
type Records struct {
	kube client.Client
}

// Get returns the record of cr, or nil when the provider never wrote cr's
// field.
func (r Records) Get(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (*v1alpha1.AttachmentRecord, error) {
	rec := &v1alpha1.AttachmentRecord{}
	err := r.kube.Get(ctx, types.NamespacedName{Name: v1alpha1.AttachmentRecordName(string(cr.GetUID()))}, rec)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	return rec, errors.Wrap(err, errGetRecord)
}

// Written records, before the write it stands for, that cr is about to
// write policy into field of target, whose field names held: the first
// write records held as what it replaced; a later one only what it writes.
// Recorded first, a write whose answer is lost is still known, and delete
// restores only a field that names what was written.
func (r Records) Written(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment, target, held, policy string, now metav1.Time) error {
	rec, err := r.Get(ctx, cr)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &v1alpha1.AttachmentRecord{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AttachmentRecordName(string(cr.GetUID()))},
			Spec: v1alpha1.AttachmentRecordSpec{Namespace: cr.GetNamespace(), Name: cr.GetName(), UID: string(cr.GetUID()),
				Target: target, Field: cr.Spec.ForProvider.Field, Written: policy, Replaced: held, FirstWriteTime: now}}
		// Already there: a record the cache did not show yet, whose
		// first write came before this one.
		err := r.kube.Create(ctx, rec)
		return errors.Wrap(resource.Ignore(kerrors.IsAlreadyExists, err), errWriteRecord)
	}
	if rec.Spec.Written == policy {
		return nil
	}
	rec.Spec.Written = policy
	return errors.Wrap(r.kube.Update(ctx, rec), errWriteRecord)
}

// Forget deletes cr's record, once its field is restored or left.
func (r Records) Forget(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) error {
	rec := &v1alpha1.AttachmentRecord{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AttachmentRecordName(string(cr.GetUID()))}}
	err := r.kube.Delete(ctx, rec)
	if kerrors.IsForbidden(err) {
		// The grant to delete records (provider-runtime.yaml) is gone, as
		// when its ClusterRole is deleted with the examples before the
		// attachments: the record, named by this attachment's UID, can
		// serve no other object, so it is left rather than keeping the
		// attachment from being deleted.
		return nil
	}
	return errors.Wrap(client.IgnoreNotFound(err), errDeleteRecord)
}

// A Restore is what deleting an attachment writes into its field.
type Restore struct {
	// Write is false when the field is left as it is.
	Write bool
	// Value is the policy to write ("" for none).
	Value string
}

// RestoreOnDelete decides what deleting an attachment does to a field that
// names held, given the provider's record of its writes (nil: it never
// wrote). It restores what the attachment replaced, and only while the
// field still names what the attachment wrote: an attachment that adopted
// a field already naming its policy clears nothing, and a field another
// writer changed since is theirs.
func RestoreOnDelete(rec *v1alpha1.AttachmentRecord, held string) Restore {
	if rec == nil || held != rec.Spec.Written || held == rec.Spec.Replaced {
		return Restore{}
	}
	return Restore{Write: true, Value: rec.Spec.Replaced}
}
