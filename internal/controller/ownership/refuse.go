package ownership

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Refuse is the observation of an object that may not write its external
// resource, because another object (of this cluster or another) owns it:
// the error msg, which the managed reconciler reports as Synced=False and
// retries with backoff. While the object is being deleted the resource is
// reported gone instead, on purpose: the reconciler then removes the
// object's finalizer without calling Delete, so what another object owns is
// left in place.
func Refuse(mg resource.Managed, msg string) (managed.ExternalObservation, error) {
	if meta.WasDeleted(mg) {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	return managed.ExternalObservation{}, errors.New(msg)
}
