//go:build bench

// Command nullprovider is the benchmark's floor: the provider's CRDs,
// crossplane-runtime's managed reconciler with this provider's setup options
// (poll, jitter, requeue backoff, global rate limit, read-your-writes gate,
// desired-state predicate, ProviderConfig usage tracking and the
// ProviderConfig controllers), and an external client that answers from
// memory instead of calling GCP. What it costs the API server and the clock
// to converge a workload is what Crossplane's machinery costs on its own;
// the benchmark runs it before the real provider and reports ours ÷ floor.
//
// It is behind the bench build tag and is not shipped.
package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/config"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pollphase"
	"github.com/armorplane/provider-cloudarmor/internal/controller/readyourwrites"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
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
	}, PollJitter: *pollJitter, Timeout: 2 * time.Minute}
	o.Features.Enable(feature.EnableBetaManagementPolicies)

	kingpin.FatalIfError(config.Setup(mgr, o.Options), "Cannot set up ProviderConfig controllers")
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &pcv1beta1.ProviderConfigUsage{})
	mem := &memory{specs: map[key]any{}}
	kingpin.FatalIfError(setupKind(mgr, o, usage, mem, v1beta1.SecurityPolicyGroupKind, v1beta1.SecurityPolicyGroupVersionKind,
		func() *v1beta1.SecurityPolicy { return &v1beta1.SecurityPolicy{} }, &v1beta1.SecurityPolicyList{}, securitypolicy.PollGroup), "Cannot set up SecurityPolicy controller")
	// Rules are named by their spec, not metadata.name, as in the provider.
	kingpin.FatalIfError(setupKind(mgr, o, usage, mem, v1beta1.SecurityPolicyRuleGroupKind, v1beta1.SecurityPolicyRuleGroupVersionKind,
		func() *v1beta1.SecurityPolicyRule { return &v1beta1.SecurityPolicyRule{} }, &v1beta1.SecurityPolicyRuleList{}, securitypolicyrule.PollGroup,
		managed.WithInitializers()),
		"Cannot set up SecurityPolicyRule controller")
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

// setupKind builds one kind's controller exactly as the provider's Setup
// does, but for the external client.
func setupKind[T resource.Managed](mgr ctrl.Manager, o setup.Options, usage resource.ModernTracker, mem *memory, groupKind string,
	gvk schema.GroupVersionKind, newT func() T, list resource.ManagedList, group pollphase.GroupFn, extra ...managed.ReconcilerOption) error {
	name := managed.ControllerName(groupKind)
	fresh := readyourwrites.New(mgr.GetClient(), newT)
	mgr = fresh.Manager(mgr)
	opts := append(o.ReconcilerOptions(mgr, name, group),
		managed.WithExternalConnector(managed.ExternalConnectorFn(func(ctx context.Context, mg resource.Managed) (managed.ExternalClient, error) {
			// The provider's connector tracks ProviderConfig usage on
			// every connect; so does every crossplane-runtime provider.
			if err := usage.Track(ctx, mg.(resource.ModernManaged)); err != nil {
				return nil, err
			}
			return &external{mem: mem, kind: gvk.Kind}, nil
		})))
	opts = append(opts, extra...)
	r := managed.NewReconciler(mgr, resource.ManagedKind(gvk), opts...)
	return o.Complete(mgr, name, newT(), list, r, fresh)
}

type key struct {
	kind string
	name types.NamespacedName
}

// memory is the external system: one desired spec per object.
type memory struct {
	mu    sync.Mutex
	specs map[key]any
}

type external struct {
	mem  *memory
	kind string
}

func (e *external) key(mg resource.Managed) key {
	return key{kind: e.kind, name: types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}}
}

func forProvider(mg resource.Managed) any {
	switch cr := mg.(type) {
	case *v1beta1.SecurityPolicy:
		return cr.Spec.ForProvider.DeepCopy()
	case *v1beta1.SecurityPolicyRule:
		return cr.Spec.ForProvider.DeepCopy()
	}
	return nil
}

func (e *external) Observe(_ context.Context, mg resource.Managed) (managed.ExternalObservation, error) {
	e.mem.mu.Lock()
	have, ok := e.mem.specs[e.key(mg)]
	e.mem.mu.Unlock()
	if !ok {
		return managed.ExternalObservation{}, nil
	}
	mg.SetConditions(xpv2.Available())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: equality.Semantic.DeepEqual(have, forProvider(mg))}, nil
}

func (e *external) Create(_ context.Context, mg resource.Managed) (managed.ExternalCreation, error) {
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	e.mem.specs[e.key(mg)] = forProvider(mg)
	return managed.ExternalCreation{}, nil
}

func (e *external) Update(_ context.Context, mg resource.Managed) (managed.ExternalUpdate, error) {
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	e.mem.specs[e.key(mg)] = forProvider(mg)
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(_ context.Context, mg resource.Managed) (managed.ExternalDelete, error) {
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	delete(e.mem.specs, e.key(mg))
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }
