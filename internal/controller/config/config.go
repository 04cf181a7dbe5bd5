// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it
// counts the managed resources using each one and blocks its deletion while
// any do.
package config

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// Setup adds controllers for both ProviderConfig kinds.
//
// crossplane-runtime's usage tracker always writes a namespaced
// ProviderConfigUsage labelled with the config's kind and name, whichever
// kind the managed resource references. Both reconcilers therefore count
// and watch that one usage kind; counting a ClusterProviderConfigUsage, as
// provider-template does, would always find zero users and let an in-use
// ClusterProviderConfig be deleted.
//
// managed are the managed resource kinds that name configs: a namespaced
// ProviderConfig being deleted stays while one of them in its namespace
// names it (keepWhileNamed).
func Setup(mgr ctrl.Manager, o controller.Options, managed ...schema.GroupVersionKind) error {
	if err := setupKind(mgr, o, v1beta1.ProviderConfigGroupVersionKind, &v1beta1.ProviderConfig{}, managed); err != nil {
		return err
	}
	return setupKind(mgr, o, v1beta1.ClusterProviderConfigGroupVersionKind, &v1beta1.ClusterProviderConfig{}, nil)
}

func setupKind(mgr ctrl.Manager, o controller.Options, gvk schema.GroupVersionKind, of client.Object, managed []schema.GroupVersionKind) error {
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
		WithOptions(configControllerOptions(o)).
		For(of).
		Watches(&v1beta1.ProviderConfigUsage{}, setup.Delayed(&resource.EnqueueRequestForProviderConfig{Kind: gvk.Kind}, UsageCountDelay)).
		Complete(ratelimiter.NewReconciler(name, &keepWhileNamed{inner: r, kube: mgr.GetClient(), managed: managed}, o.GlobalRateLimiter))
}

// configControllerOptions are the managed resources' options with one
// worker: a handful of configs are recounted now and then, and every idle
// worker is a goroutine stack the provider keeps.
func configControllerOptions(o controller.Options) ctrlcontroller.Options {
	co := o.ForControllerRuntime()
	co.MaxConcurrentReconciles = 1
	return co
}

// UsageCountDelay is how long a usage event waits before its config is
// recounted. Every managed resource writes a usage when it is first
// reconciled, and crossplane-runtime's config reconciler answers each one
// with an Update and a status update of the config: a thousand rules applied
// at once cost the API server about three hundred writes to one object, many
// of them conflicts, while it was the bottleneck. Waiting a moment folds a
// burst into one recount per delay; deleting a config still waits for the
// count to reach zero.
const UsageCountDelay = time.Second
