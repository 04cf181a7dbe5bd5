// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it
// counts the managed resources using each one and blocks its deletion while
// any do.
package config

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// Setup adds controllers for both ProviderConfig kinds.
//
// crossplane-runtime's usage tracker always writes a namespaced
// ProviderConfigUsage labelled with the config's kind and name, whichever
// kind the managed resource references. Both reconcilers therefore count
// and watch that one usage kind; counting a ClusterProviderConfigUsage, as
// provider-template does, would always find zero users and let an in-use
// ClusterProviderConfig be deleted.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	if err := setup(mgr, o, v1beta1.ProviderConfigGroupVersionKind, &v1beta1.ProviderConfig{}); err != nil {
		return err
	}
	return setup(mgr, o, v1beta1.ClusterProviderConfigGroupVersionKind, &v1beta1.ClusterProviderConfig{})
}

func setup(mgr ctrl.Manager, o controller.Options, gvk schema.GroupVersionKind, of client.Object) error {
	name := providerconfig.ControllerName(gvk.GroupKind().String())
	r := providerconfig.NewReconciler(mgr, resource.ProviderConfigKinds{
		Config:    gvk,
		Usage:     v1beta1.ProviderConfigUsageGroupVersionKind,
		UsageList: v1beta1.ProviderConfigUsageListGroupVersionKind,
	},
		providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
		//lint:ignore SA1019 crossplane-runtime v2.4 event.NewAPIRecorder takes the old recorder; the new events API is not wired through it yet.
		providerconfig.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))),
	)

	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		For(of).
		Watches(&v1beta1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: gvk.Kind}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
