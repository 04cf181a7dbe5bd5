// Package inmemory is the null provider's external system: one desired spec
// per object, held in memory. External is it as a setup.External, which
// setup.Add gives every kind in place of its GCP connector and changes
// nothing else, so the null provider measures the provider's own machinery
// with no GCP behind it.
package inmemory

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// External returns the external system that answers from store. Like the
// provider's connector, it tracks ProviderConfig usage on every connect (so
// does every crossplane-runtime provider).
func External(store *Store, usage resource.ModernTracker) setup.External {
	return func(gvk schema.GroupVersionKind) managed.ExternalConnector {
		return managed.ExternalConnectorFn(func(ctx context.Context, mg resource.Managed) (managed.ExternalClient, error) {
			if m, ok := mg.(resource.ModernManaged); ok {
				if err := usage.Track(ctx, m); err != nil {
					return nil, err
				}
			}
			return &external{store: store, kind: gvk.Kind}, nil
		})
	}
}

// A Store holds the desired spec of every object created.
type Store struct {
	mu    sync.Mutex
	specs map[key]any
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{specs: map[key]any{}}
}

type key struct {
	kind string
	name types.NamespacedName
}

type external struct {
	store *Store
	kind  string
}

func (e *external) key(mg resource.Managed) key {
	return key{kind: e.kind, name: types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}}
}

// forProvider is the spec the store keeps of mg. Kinds not listed keep none:
// once created they are always up to date.
func forProvider(mg resource.Managed) any {
	switch cr := mg.(type) {
	case *v1beta1.SecurityPolicy:
		return cr.Spec.ForProvider.DeepCopy()
	case *v1beta1.SecurityPolicyRule:
		return cr.Spec.ForProvider.DeepCopy()
	case *v1alpha1.AddressGroup:
		return cr.Spec.ForProvider.DeepCopy()
	}
	return nil
}

func (e *external) Observe(_ context.Context, mg resource.Managed) (managed.ExternalObservation, error) {
	e.store.mu.Lock()
	have, ok := e.store.specs[e.key(mg)]
	e.store.mu.Unlock()
	if !ok {
		return managed.ExternalObservation{}, nil
	}
	mg.SetConditions(xpv2.Available())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: equality.Semantic.DeepEqual(have, forProvider(mg))}, nil
}

func (e *external) Create(_ context.Context, mg resource.Managed) (managed.ExternalCreation, error) {
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	e.store.specs[e.key(mg)] = forProvider(mg)
	return managed.ExternalCreation{}, nil
}

func (e *external) Update(_ context.Context, mg resource.Managed) (managed.ExternalUpdate, error) {
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	e.store.specs[e.key(mg)] = forProvider(mg)
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(_ context.Context, mg resource.Managed) (managed.ExternalDelete, error) {
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	delete(e.store.specs, e.key(mg))
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }
