package setup

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// An External is one external system every managed resource kind connects
// to in place of GCP: the benchmark's null provider's, in memory. It
// returns the connector of the kind gvk.
type External func(gvk schema.GroupVersionKind) managed.ExternalConnector

// WithExternal returns k connecting to e in place of its own Connector, and
// otherwise unchanged; k itself when e is nil.
func WithExternal[T resource.Managed](k Kind[T], e External) Kind[T] {
	if e == nil {
		return k
	}
	c := e(k.GVK)
	k.Connector = func(Env) managed.TypedExternalConnector[T] { return typedConnector[T]{c: c} }
	return k
}

// typedConnector is an ExternalConnector for the kind T.
type typedConnector[T resource.Managed] struct{ c managed.ExternalConnector }

func (t typedConnector[T]) Connect(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
	c, err := t.c.Connect(ctx, mg)
	if err != nil {
		return nil, err
	}
	return typedClient[T]{c: c}, nil
}

// typedClient is an ExternalClient for the kind T.
type typedClient[T resource.Managed] struct{ c managed.ExternalClient }

func (t typedClient[T]) Observe(ctx context.Context, mg T) (managed.ExternalObservation, error) {
	return t.c.Observe(ctx, mg)
}

func (t typedClient[T]) Create(ctx context.Context, mg T) (managed.ExternalCreation, error) {
	return t.c.Create(ctx, mg)
}

func (t typedClient[T]) Update(ctx context.Context, mg T) (managed.ExternalUpdate, error) {
	return t.c.Update(ctx, mg)
}

func (t typedClient[T]) Delete(ctx context.Context, mg T) (managed.ExternalDelete, error) {
	return t.c.Delete(ctx, mg)
}

func (t typedClient[T]) Disconnect(ctx context.Context) error { return t.c.Disconnect(ctx) }
