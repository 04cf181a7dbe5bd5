package setup

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A StatusFn saves an object's status and returns what restores it.
type StatusFn[T any] func(T) (restore func())

// StatusOf returns the StatusFn of the status that status points at.
func StatusOf[T any, S any, PS interface {
	*S
	DeepCopy() *S
}](status func(T) PS) StatusFn[T] {
	return func(t T) func() {
		p := status(t)
		saved := p.DeepCopy()
		return func() { *p = *saved }
	}
}

// A statusKeeper is the managed reconciler's finalizer, keeping the status
// Observe set across the update that adds the finalizer. The API server
// answers that update with the status it holds, and the reconciler then
// writes whatever the object holds: without it, the first reconcile of an
// object whose Observe found its external resource (an imported or adopted
// policy, a rule waiting for its policy) wrote Synced=True alone, and the
// object reached Ready only at its next poll (30 s in `make run`).
type statusKeeper[T resource.Object] struct {
	resource.Finalizer
	status StatusFn[T]
}

// keepStatus returns crossplane-runtime's finalizer for the objects of kube,
// keeping the status that status saves.
func keepStatus[T resource.Object](kube client.Client, status StatusFn[T]) statusKeeper[T] {
	return statusKeeper[T]{Finalizer: resource.NewAPIFinalizer(kube, managed.FinalizerName), status: status}
}

// AddFinalizer adds the finalizer and restores the status obj had before.
func (k statusKeeper[T]) AddFinalizer(ctx context.Context, obj resource.Object) error {
	t, ok := obj.(T)
	if !ok {
		return k.Finalizer.AddFinalizer(ctx, obj)
	}
	restore := k.status(t)
	err := k.Finalizer.AddFinalizer(ctx, obj)
	restore()
	return err
}

// A conditionKeeper updates an object's critical annotations (the managed
// reconciler's external-create-pending, -succeeded and -failed) as its
// CriticalAnnotationUpdater does, and keeps the conditions of its types
// that the object held before. The API server answers that update with the
// status it holds, so without it a condition Observe or Create set (the
// Warning condition of a value GCP refuses) never reached the API server on
// the create path: the reconciler wrote the object's status after the update.
type conditionKeeper struct {
	managed.CriticalAnnotationUpdater
	types []xpv2.ConditionType
}

// keepConditions returns a conditionKeeper of u for the conditions of types.
func keepConditions(u managed.CriticalAnnotationUpdater, types ...xpv2.ConditionType) conditionKeeper {
	return conditionKeeper{CriticalAnnotationUpdater: u, types: types}
}

// UpdateCriticalAnnotations updates o's critical annotations and restores
// the kept conditions o had before.
func (k conditionKeeper) UpdateCriticalAnnotations(ctx context.Context, o client.Object) error {
	c, ok := o.(resource.Conditioned)
	if !ok {
		return k.CriticalAnnotationUpdater.UpdateCriticalAnnotations(ctx, o)
	}
	var saved []xpv2.Condition
	for _, t := range k.types {
		if cond := c.GetCondition(t); cond.Reason != "" {
			saved = append(saved, cond)
		}
	}
	err := k.CriticalAnnotationUpdater.UpdateCriticalAnnotations(ctx, o)
	c.SetConditions(saved...)
	return err
}
