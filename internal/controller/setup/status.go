package setup

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A StatusKeeper is the managed reconciler's finalizer, keeping the status
// Observe set across the update that adds the finalizer. The API server
// answers that update with the status it holds, and the reconciler then
// writes whatever the object holds: without it, the first reconcile of an
// object whose Observe found its external resource (an imported or adopted
// policy, a rule waiting for its policy) wrote Synced=True alone, and the
// object reached Ready only at its next poll (30 s in `make run`).
type StatusKeeper[T resource.Object, S any, PS interface {
	*S
	DeepCopy() *S
}] struct {
	resource.Finalizer
	status func(T) PS
}

// KeepStatus returns crossplane-runtime's finalizer for the objects of kube,
// keeping the status that status points at.
func KeepStatus[T resource.Object, S any, PS interface {
	*S
	DeepCopy() *S
}](kube client.Client, status func(T) PS) StatusKeeper[T, S, PS] {
	return StatusKeeper[T, S, PS]{Finalizer: resource.NewAPIFinalizer(kube, managed.FinalizerName), status: status}
}

// AddFinalizer adds the finalizer and restores the status obj had before.
func (k StatusKeeper[T, S, PS]) AddFinalizer(ctx context.Context, obj resource.Object) error {
	t, ok := obj.(T)
	if !ok {
		return k.Finalizer.AddFinalizer(ctx, obj)
	}
	saved := k.status(t).DeepCopy()
	err := k.Finalizer.AddFinalizer(ctx, obj)
	*k.status(t) = *saved
	return err
}
