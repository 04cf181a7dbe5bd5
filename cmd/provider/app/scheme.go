package app

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
)

// newScheme returns the scheme of the provider's manager: this provider's
// APIs, CustomResourceDefinitions (for the CRD gate) and the few built-in
// kinds it reads or writes: Secrets (credentials, read uncached), Events,
// Leases (leader election), Namespaces (selectors, the cluster's identity)
// and Nodes (AddressSets).
//
// Not client-go's whole scheme: its ~60 API groups and their conversion and
// defaulting functions cost heap and touched pages in every process, and
// nothing here uses them. A kind missing here fails loudly ("no kind is
// registered"); TestSchemeHoldsOnlyWhatTheProviderUses lists what it holds.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{addBuiltins, apis.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// addBuiltins registers the built-in kinds the provider uses, with the
// list kinds, meta kinds (options, Status) and defaulting of their
// group-versions, without the rest of their groups.
func addBuiltins(s *runtime.Scheme) error {
	core := corev1.SchemeGroupVersion
	s.AddKnownTypes(core, &corev1.Secret{}, &corev1.SecretList{}, &corev1.Event{}, &corev1.EventList{},
		&corev1.Namespace{}, &corev1.NamespaceList{}, &corev1.Node{}, &corev1.NodeList{})
	metav1.AddToGroupVersion(s, core)
	coord := coordinationv1.SchemeGroupVersion
	s.AddKnownTypes(coord, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	metav1.AddToGroupVersion(s, coord)
	return nil
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
			&corev1.Node{}: {Transform: addressset.TransformNodeToAddresses},
		},
	}
}

// uncached are kinds the provider reads rarely (a Secret when a client is
// built) or only writes (Events, the leader election Lease). Reading one
// through the manager's client must not start an informer: that would
// list and watch every Secret in the cluster and keep them all in memory.
// The connector reads Secrets through the API reader already; this keeps a
// later cached Get from undoing that.
func uncached() []client.Object {
	return []client.Object{&corev1.Secret{}, &corev1.Event{}, &coordinationv1.Lease{}}
}

// clientOptions configures the manager's client: the kinds in uncached go
// straight to the API server.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: uncached()}}
}
