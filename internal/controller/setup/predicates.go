package setup

import (
	"slices"

	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// desiredStateChanged passes events that may change what the reconciler
// should do: creates, deletes, and updates of the spec (generation), labels
// or annotations. It is crossplane-runtime's resource.DesiredStateChanged
// except that it also ignores the annotations the managed reconciler writes
// to itself around a Create (external-create-succeeded, and the external name
// it records with it); the reconciler requeues after a Create anyway. Letting
// that write through started a second reconcile at once, before the
// informer had the status written after it, so the second reconcile's status
// update failed with a conflict: about one wasted write per object created.
//
// It also passes a finalizer leaving an object being deleted: the managed
// reconciler puts off deleting the external resource while another finalizer
// remains, and that write is the only sign it may go on.
func desiredStateChanged() predicate.Predicate {
	return predicate.Or(
		userAnnotationsChanged{},
		finalizersChangedWhileDeleting{},
		predicate.LabelChangedPredicate{},
		predicate.GenerationChangedPredicate{},
	)
}

// userAnnotationsChanged passes updates that change an annotation other than
// the ones the managed reconciler writes for its own bookkeeping.
type userAnnotationsChanged struct {
	predicate.Funcs
}

func (userAnnotationsChanged) Update(e ctrlevent.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	oa, na := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	// The reconciler records the external name in the same write as
	// external-create-succeeded; any other change of it is the user's.
	createRecorded := oa[meta.AnnotationKeyExternalCreateSucceeded] != na[meta.AnnotationKeyExternalCreateSucceeded]
	ignored := func(k string) bool {
		switch k {
		case meta.AnnotationKeyExternalCreatePending, meta.AnnotationKeyExternalCreateSucceeded, meta.AnnotationKeyExternalCreateFailed:
			return true
		case meta.AnnotationKeyExternalName:
			return createRecorded && oa[k] == ""
		}
		return false
	}
	for k, v := range na {
		if !ignored(k) && oa[k] != v {
			return true
		}
	}
	for k := range oa {
		if _, ok := na[k]; !ok && !ignored(k) {
			return true
		}
	}
	return false
}

// finalizersChangedWhileDeleting passes updates of an object being deleted
// whose finalizers changed. crossplane-runtime delays the external delete until
// the managed reconciler's finalizer is the last one; when another controller
// removes its own, nothing else changes (not the generation), so without this
// the object waited for its error backoff. Measured in the platform suite:
// Crossplane deletes composed resources in the foreground, the garbage
// collector then removes the foregroundDeletion finalizer, and dropping five
// rules of an IPAllowlist took 6.9 s instead of about 0.5 s.
type finalizersChangedWhileDeleting struct {
	predicate.Funcs
}

func (finalizersChangedWhileDeleting) Update(e ctrlevent.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil || e.ObjectNew.GetDeletionTimestamp() == nil {
		return false
	}
	return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}
