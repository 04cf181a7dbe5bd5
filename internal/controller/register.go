// Package controller wires every controller of the provider into a manager.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/internal/controller/addressgroup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/internal/controller/config"
	"github.com/armorplane/provider-cloudarmor/internal/controller/networkedgesecurityservice"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicyassociation"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/projectcloudarmortier"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyallowlist"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyattachment"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// Options configure every controller of the provider: the managed resource
// kinds' (setup.Options) and the AddressSets'.
type Options struct {
	setup.Options

	// NodesReadable says whether the provider may list and watch Nodes,
	// which AddressSets read.
	NodesReadable bool

	// RemoteBounds are what one remote cluster an AddressSet reads may
	// cost the provider.
	RemoteBounds addressset.Bounds
}

// SetupGated adds every controller, each the same way: one entry of
// controllers, added in order. The managed resource controllers start only
// once their CRDs exist (safe-start: with Crossplane's
// ManagedResourceActivationPolicy a CRD may appear long after the provider
// starts); the ProviderConfig controllers start at once.
func SetupGated(mgr ctrl.Manager, o Options) error {
	for _, add := range controllers(o.NodesReadable, o.RemoteBounds) {
		if err := add(mgr, o.Options); err != nil {
			return err
		}
	}
	return nil
}

// An adder adds one of the provider's controllers to a manager.
type adder func(ctrl.Manager, setup.Options) error

// controllers are every controller of the provider. nodes says whether the
// provider may list Nodes, which AddressSets read; bounds are what a remote
// cluster an AddressSet reads may cost.
func controllers(nodes bool, bounds addressset.Bounds) []adder {
	// The AddressSets publish Node addresses in memory to the allowlists,
	// which must run in the same process.
	sets := addressset.NewRegistry()
	return []adder{
		func(mgr ctrl.Manager, o setup.Options) error {
			// The organization-level kinds are not listed: admission and the
			// connector keep them off namespaced ProviderConfigs.
			return config.Setup(mgr, o.Options, securitypolicy.Kind.GVK, securitypolicyrule.Kind.GVK,
				addressgroup.Kind.GVK, networkedgesecurityservice.Kind.GVK, projectcloudarmortier.Kind.GVK, securitypolicyattachment.Kind.GVK)
		},
		func(mgr ctrl.Manager, o setup.Options) error {
			return addressset.Setup(mgr, o, nodes, sets, bounds)
		},
		func(mgr ctrl.Manager, o setup.Options) error {
			return securitypolicyallowlist.Setup(mgr, o.Options, sets)
		},
		kind(securitypolicy.Kind),
		kind(securitypolicyrule.Kind),
		kind(addressgroup.Kind),
		kind(networkedgesecurityservice.Kind),
		kind(projectcloudarmortier.Kind),
		kind(securitypolicyattachment.Kind),
		kind(organizationsecuritypolicy.Kind),
		kind(organizationsecuritypolicyassociation.Kind),
		kind(organizationsecuritypolicyrule.Kind),
	}
}

// kind adds a managed resource kind's controller once its CRDs exist.
func kind[T resource.Managed](k setup.Kind[T]) adder {
	return func(mgr ctrl.Manager, o setup.Options) error { return setup.AddGated(mgr, o, k) }
}
