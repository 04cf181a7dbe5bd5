//go:build bench

// Command nullprovider is the benchmark's floor: the provider's CRDs and its
// controllers wired by the same setup.Add from the same setup.Kind values
// (options, indexes, reference resolver, status keeping, gates, watches,
// ProviderConfig usage tracking and the ProviderConfig controllers), with an
// external client that answers from memory (package inmemory) instead of
// calling GCP. It has no GCP write queue, so the rules' write-backlog gate,
// which only that queue fills, is off. What it costs the API server and the clock
// to converge a workload is what Crossplane's machinery costs on its own;
// the benchmark runs it before the real provider and reports ours ÷ floor.
//
// It is behind the bench build tag and is not shipped.
package main

import (
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/config"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/test/bench/nullprovider/inmemory"
)

func main() {
	var (
		app              = kingpin.New("nullprovider", "The benchmark's floor: Crossplane's managed reconciler with an in-memory external client.")
		pollInterval     = app.Flag("poll", "How often each resource is observed.").Default("1m").Duration()
		pollJitter       = app.Flag("poll-jitter", "Width of the window in which the objects of one GCP policy are polled each --poll (each policy has its own window, so they share one snapshot of it; keep it under --snapshot-ttl), and the ± jitter of objects whose policy is not known yet.").Default("5s").Duration()
		maxReconcileRate = app.Flag("max-reconcile-rate", "Global maximum reconciles per second.").Default("100").Int()
		maxConcurrent    = app.Flag("max-concurrent-reconciles", "Reconciles each controller runs at once.").Default("50").Int()
		metricsAddr      = app.Flag("metrics-bind-address", "Prometheus metrics address; 0 disables it.").Default("0").String()
		healthAddr       = app.Flag("health-probe-bind-address", "Health probe address; 0 disables it.").Default("0").String()
		pprofAddr        = app.Flag("pprof-bind-address", "pprof address; empty disables it.").Default("").String()
	)
	kingpin.MustParse(app.Parse(os.Args[1:]))
	ctrl.SetLogger(logr.Discard())

	cfg, err := ctrl.GetConfig()
	kingpin.FatalIfError(err, "Cannot get API server rest config")
	s := runtime.NewScheme()
	kingpin.FatalIfError(addToScheme(s), "Cannot build the scheme")
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, *maxReconcileRate), ctrl.Options{
		// Deprecated in controller-runtime, but the only way to size the event
		// correlator's caches; the goroutine leak it warns of needs a manager
		// that lives shorter than its process.
		EventBroadcaster: setup.NewEventBroadcaster(),
		Scheme:           s,
		// As the provider: no managedFields in the cache, Secrets and
		// Events uncached.
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.Event{}, &coordinationv1.Lease{}}}},
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *healthAddr,
		PprofBindAddress:       *pprofAddr,
	})
	kingpin.FatalIfError(err, "Cannot create controller manager")

	o := setup.Options{Options: controller.Options{
		Logger:                  logging.NewNopLogger(),
		MaxConcurrentReconciles: *maxConcurrent,
		PollInterval:            *pollInterval,
		GlobalRateLimiter:       ratelimiter.NewGlobal(*maxReconcileRate),
		Features:                &feature.Flags{},
		Gate:                    new(gate.Gate[schema.GroupVersionKind]),
	}, PollJitter: *pollJitter, Timeout: 2 * time.Minute, Indexes: &ownership.Indexes{}}
	o.Features.Enable(feature.EnableBetaManagementPolicies)

	kingpin.FatalIfError(config.Setup(mgr, o.Options), "Cannot set up ProviderConfig controllers")
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &pcv1beta1.ProviderConfigUsage{})
	store := inmemory.NewStore()
	kingpin.FatalIfError(setup.Add(mgr, o, inmemory.Kind(securitypolicy.Kind, store, usage)), "Cannot set up SecurityPolicy controller")
	kingpin.FatalIfError(setup.Add(mgr, o, inmemory.Kind(securitypolicyrule.Kind, store, usage)), "Cannot set up SecurityPolicyRule controller")
	kingpin.FatalIfError(mgr.Start(ctrl.SetupSignalHandler()), "Cannot start controller manager")
}

func addToScheme(s *runtime.Scheme) error {
	core := corev1.SchemeGroupVersion
	s.AddKnownTypes(core, &corev1.Secret{}, &corev1.SecretList{}, &corev1.Event{}, &corev1.EventList{},
		&corev1.Namespace{}, &corev1.NamespaceList{})
	metav1.AddToGroupVersion(s, core)
	coord := coordinationv1.SchemeGroupVersion
	s.AddKnownTypes(coord, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	metav1.AddToGroupVersion(s, coord)
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	return apis.AddToScheme(s)
}
