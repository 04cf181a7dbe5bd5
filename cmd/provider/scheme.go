package main

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	"github.com/armorplane/provider-cloudarmor/apis"
)

// newScheme returns the scheme of the provider's manager: the built-in
// kinds, this provider's APIs and CustomResourceDefinitions (for the CRD
// gate).
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// cacheOptions configures the manager's informer cache. Every ByObject kind
// must be in newScheme: the cache resolves them when the manager is built.
func cacheOptions(syncInterval *time.Duration) cache.Options {
	return cache.Options{
		SyncPeriod: syncInterval,
		// Nothing here reads managedFields. They are most of a managed
		// resource's size once several managers have written it, and
		// keeping them cost memory for every cached object and CPU for
		// every copy and comparison of one. Updates without managedFields
		// leave the server's copy as it is.
		DefaultTransform: cache.TransformStripManagedFields(),
		// The CRD gate needs only names and conditions, not schemas.
		ByObject: map[client.Object]cache.ByObject{
			&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
		},
	}
}
