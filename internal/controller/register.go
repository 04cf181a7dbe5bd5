// Package controller wires every controller of the provider into a manager.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

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
}

// SetupGated adds every controller. The managed resource controllers start
// only once their CRDs exist (safe-start: with Crossplane's
// ManagedResourceActivationPolicy a CRD may appear long after the provider
// starts); the ProviderConfig controllers start at once.
func SetupGated(mgr ctrl.Manager, o Options) error {
	// The organization-level kinds are not listed: admission and the
	// connector keep them off namespaced ProviderConfigs.
	if err := config.Setup(mgr, o.Options.Options, securitypolicy.Kind.GVK, securitypolicyrule.Kind.GVK,
		addressgroup.Kind.GVK, networkedgesecurityservice.Kind.GVK, projectcloudarmortier.Kind.GVK, securitypolicyattachment.Kind.GVK); err != nil {
		return err
	}
	// The AddressSets publish Node addresses in memory to the allowlists,
	// which must run in the same process.
	sets := addressset.NewRegistry()
	if err := addressset.Setup(mgr, o.Options.Options, o.NodesReadable, sets); err != nil {
		return err
	}
	if err := securitypolicyallowlist.Setup(mgr, o.Options.Options, sets); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, securitypolicy.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, securitypolicyrule.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, addressgroup.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, networkedgesecurityservice.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, projectcloudarmortier.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, securitypolicyattachment.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, organizationsecuritypolicy.Kind); err != nil {
		return err
	}
	if err := setup.AddGated(mgr, o.Options, organizationsecuritypolicyassociation.Kind); err != nil {
		return err
	}
	return setup.AddGated(mgr, o.Options, organizationsecuritypolicyrule.Kind)
}
