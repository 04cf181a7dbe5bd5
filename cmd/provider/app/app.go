// Package app is the provider's command: its flags, its manager and every
// controller, wired once. cmd/provider runs it against GCP; the benchmark's
// null provider (test/bench/nullprovider) runs it with an in-memory external
// system in place of GCP and nothing else different.
package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	armorcontroller "github.com/armorplane/provider-cloudarmor/internal/controller"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/version"
)

// Main parses the command line and runs the provider until it is told to
// stop. It exits the process on errors.
func Main() {
	var (
		app            = kingpin.New(filepath.Base(os.Args[0]), "Google Cloud Armor support for Crossplane.").DefaultEnvars()
		debug          = app.Flag("debug", "Run with debug logging.").Short('d').Bool()
		leaderElection = app.Flag("leader-election", "Use leader election for the controller manager.").Short('l').Default("false").Envar("LEADER_ELECTION").Bool()
		leNamespace    = app.Flag("leader-election-namespace", "Namespace of the leader election Lease; in a pod it defaults to the pod's namespace, out of a cluster it must be set.").Default("").Envar("LEADER_ELECTION_NAMESPACE").String()
		leaseDuration  = app.Flag("leader-election-lease-duration", "How long a standby waits, after the leader's last renewal, before it takes the Lease: the failover time when the leader dies without releasing it.").Default("15s").Duration()
		renewDeadline  = app.Flag("leader-election-renew-deadline", "How long the leader keeps trying to renew the Lease before it gives up leading (and exits). Must be less than the lease duration.").Default("10s").Duration()
		retryPeriod    = app.Flag("leader-election-retry-period", "How often the leader renews the Lease and a standby tries to take it.").Default("2s").Duration()

		syncInterval     = app.Flag("sync", "How often the informer cache resyncs every object.").Short('s').Default("1h").Duration()
		pollInterval     = app.Flag("poll", "How often each resource is checked for drift in GCP.").Default("1m").Duration()
		pollJitter       = app.Flag("poll-jitter", "Width of the window in which the objects of one GCP policy are polled each --poll (each policy has its own window, so they share one snapshot of it; keep it under --snapshot-ttl), and the ± jitter of objects whose policy is not known yet.").Default("5s").Duration()
		pollStateMetric  = app.Flag("poll-state-metric", "How often the state metrics are recorded.").Default("5s").Duration()
		maxReconcileRate = app.Flag("max-reconcile-rate", "Global maximum reconciles per second; the API server client may make 5 requests per reconcile.").Default("100").Int()
		maxConcurrent    = app.Flag("max-concurrent-reconciles", "Reconciles each controller runs at once. Writes to one policy wait for each other, so this bounds how many policies are written in parallel.").Default("50").Int()
		memoryLimit      = app.Flag("memory-limit", "Soft memory limit of the Go runtime in MiB (GOMEMLIMIT wins when set). 0 sets it to 90% of the container's memory limit (cgroup memory.max) when there is one; -1 turns it off. It bounds the heap and the runtime's own memory, not the binary's code mapped from disk; a limit under what the provider must hold makes the collector run without pause.").Default("0").Int64()
		gcPercent        = app.Flag("gc-percent", "Garbage collection target percentage, as GOGC (GOGC wins when set): the heap may grow this much over the live heap before a collection; 0 leaves the runtime's default (100).").Default("50").Int()
		timeout          = app.Flag("timeout", "Bound on one reconcile's GCP calls, operation waits included.").Default("2m").Duration()
		snapshotTTL      = app.Flag("snapshot-ttl", "How long rule observations reuse one GET of their policy. Keep it well under --poll.").Default("15s").Duration()

		namespacedAmbient = app.Flag("namespaced-ambient-credentials", "Let namespaced ProviderConfigs use the sources that act with the provider's own GCP identity (InjectedIdentity, Environment, Filesystem, ImpersonateServiceAccount). Only for single-tenant clusters: anyone who may write a ProviderConfig in any namespace then acts as the provider.").Default("false").Bool()

		enableManagementPolicies = app.Flag("enable-management-policies", "Enable support for management policies.").Default("true").Envar("ENABLE_MANAGEMENT_POLICIES").Bool()
		enableChangeLogs         = app.Flag("enable-changelogs", "Record every create, update and delete the provider asks of GCP in Crossplane's change logs, sent to the change logs sidecar on --changelogs-socket-path (docs/security.md).").Default("false").Envar("ENABLE_CHANGE_LOGS").Bool()
		changelogsSocketPath     = app.Flag("changelogs-socket-path", "Unix socket of the change logs sidecar, with --enable-changelogs.").Default(DefaultChangeLogsSocketPath).Envar("CHANGELOGS_SOCKET_PATH").String()
		metricsAddr              = app.Flag("metrics-bind-address", "Address of the Prometheus metrics endpoint; 0 disables it.").Default(":8080").String()
		healthAddr               = app.Flag("health-probe-bind-address", "Address of the health and readiness probes; 0 disables them.").Default(":8081").String()
		pprofAddr                = app.Flag("pprof-bind-address", "Address of the net/http/pprof endpoints (/debug/pprof/); empty or 0 disables them.").Default("").String()
	)
	app.Command("run", "Run the provider's controllers (the default).").Default()
	validate, runValidate := validateCommand(app, timeout)
	app.Version(version.Version)
	command, err := app.Parse(os.Args[1:])
	if err != nil {
		app.Errorf("%s, try --help", err)
		os.Exit(usageStatus(os.Args[1:]))
	}
	if command == validate.FullCommand() {
		os.Exit(runValidate())
	}

	zl := zap.New(zap.UseDevMode(*debug))
	log := logging.NewLogrLogger(zl.WithName("provider-cloudarmor"))
	// controller-runtime is verbose; give it our logger only when debugging.
	if *debug {
		ctrl.SetLogger(zl)
	} else {
		// logr.Discard, not a zap logger writing nowhere: a non-development
		// zap logger allocates its sampler's counters (about 450 KiB) and
		// still formats every entry.
		ctrl.SetLogger(logr.Discard())
	}
	gcp.Version = version.Version
	setGC(*gcPercent, *memoryLimit, func() (int64, bool) { return cgroupMemoryLimit("/sys/fs/cgroup") })

	cfg, err := ctrl.GetConfig()
	kingpin.FatalIfError(err, "Cannot get API server rest config")

	scheme, err := newScheme()
	kingpin.FatalIfError(err, "Cannot build the scheme")
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, *maxReconcileRate), ctrl.Options{
		// Deprecated in controller-runtime, but the only way to size the event
		// correlator's caches; the goroutine leak it warns of needs a manager
		// that lives shorter than its process.
		EventBroadcaster: setup.NewEventBroadcaster(),
		// The scheme must know every kind before NewManager: the cache
		// resolves its ByObject kinds (the CRD) when it is built.
		Scheme:                     scheme,
		Cache:                      cacheOptions(syncInterval),
		Client:                     clientOptions(),
		Metrics:                    metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:     *healthAddr,
		PprofBindAddress:           *pprofAddr,
		LeaderElection:             *leaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-cloudarmor",
		LeaderElectionNamespace:    *leNamespace,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaseDuration:              leaseDuration,
		RenewDeadline:              renewDeadline,
		RetryPeriod:                retryPeriod,
		// A clean stop (SIGTERM on a rollout or drain) releases the Lease, so
		// a standby takes over at its next retry instead of waiting out the
		// lease duration. Safe because main returns as soon as the manager
		// stops: nothing reconciles after the release.
		LeaderElectionReleaseOnCancel: true,
	})
	kingpin.FatalIfError(err, "Cannot create controller manager")
	kingpin.FatalIfError(mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }), "Cannot add health check")
	kingpin.FatalIfError(mgr.AddReadyzCheck("ping", func(_ *http.Request) error { return nil }), "Cannot add readiness check")

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics)

	o := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: *maxConcurrent,
		PollInterval:            *pollInterval,
		GlobalRateLimiter:       ratelimiter.NewGlobal(*maxReconcileRate),
		Features:                &feature.Flags{},
		Gate:                    new(gate.Gate[schema.GroupVersionKind]),
		MetricOptions: &controller.MetricOptions{
			PollStateMetricInterval: *pollStateMetric,
			MRMetrics:               mrMetrics,
			MRStateMetrics:          stateMetrics,
		},
	}
	if *enableManagementPolicies {
		o.Features.Enable(feature.EnableBetaManagementPolicies)
		log.Info("Beta feature enabled", "flag", feature.EnableBetaManagementPolicies)
	}
	if *enableChangeLogs {
		cl, conn, err := newChangeLogger(*changelogsSocketPath)
		kingpin.FatalIfError(err, "Cannot set up change logs")
		defer func() { _ = conn.Close() }()
		o.Features.Enable(feature.EnableAlphaChangeLogs)
		o.ChangeLogOptions = &controller.ChangeLogOptions{ChangeLogger: cl}
		log.Info("Alpha feature enabled", "flag", feature.EnableAlphaChangeLogs, "socket", *changelogsSocketPath)
	}

	// One counter, snapshot cache and write queue for every GCP client, so
	// the metrics show the whole provider's traffic.
	calls := gcp.NewCallCounter()
	snapshots := gcp.NewSnapshotCache(gcp.WithSnapshotTTL(*snapshotTTL))
	queue := gcp.NewWriteQueue()
	metrics.Registry.MustRegister(gcp.NewCollector(calls, snapshots, queue))
	metrics.Registry.MustRegister(ownership.Collectors()...)
	build := func(ctx context.Context, creds gcp.Credentials) (*gcp.Client, error) {
		// Project-wide reads (tier, backend and edge services) are kept one
		// poll interval: every policy of a project polls once in it.
		return gcp.NewClientForCredentials(ctx, creds, snapshots, queue, gcp.WithCallCounter(calls), gcp.WithProjectReadTTL(*pollInterval))
	}
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1beta1.ProviderConfigUsage{})
	var connOpts []connector.Option
	if *namespacedAmbient {
		connOpts = append(connOpts, connector.WithNamespacedAmbientCredentials())
		log.Info("Namespaced ProviderConfigs may use the provider's own GCP identity", "flag", "--namespaced-ambient-credentials")
	}
	conn := connector.New(mgr.GetClient(), mgr.GetAPIReader(), usage, gcp.NewClientCache(0), build, connOpts...)
	cluster, err := clusterID(mgr.GetAPIReader())
	if err != nil {
		// Crossplane's RBAC manager does not grant providers namespaces:
		// without the extra ClusterRole (docs/security.md) owner labels name
		// objects by namespace and name only, which still tells this
		// cluster's objects apart but not two clusters' same-named ones.
		log.Info("Cannot read the kube-system namespace; GCP owner labels will not name this cluster", "error", err.Error())
	}

	nodesCtx, cancelNodes := context.WithTimeout(context.Background(), 30*time.Second)
	nodes := addressset.CanListNodes(nodesCtx, mgr.GetAPIReader())
	cancelNodes()
	if !nodes {
		log.Info("Cannot list Nodes; AddressSets will keep their last addresses and say why", "grant", "get, list and watch on nodes")
	}

	kingpin.FatalIfError(customresourcesgate.Setup(mgr, o), "Cannot set up the CRD gate")
	kingpin.FatalIfError(armorcontroller.SetupGated(mgr, armorcontroller.Options{NodesReadable: nodes, Options: setup.Options{Options: o, Connector: conn,
		PollJitter: *pollJitter, Timeout: *timeout, Writes: queue, Indexes: &ownership.Indexes{}, Labeler: ownership.NewLabeler(cluster), PolicyWake: setup.NewWake()}}),
		"Cannot set up controllers")
	log.Info("Starting", "version", version.Version, "poll", *pollInterval, "snapshotTTL", *snapshotTTL)
	kingpin.FatalIfError(mgr.Start(ctrl.SetupSignalHandler()), "Cannot start controller manager")
}

// setGC sets the collector's target percentage and soft memory limit,
// unless GOGC and GOMEMLIMIT are set. A limitMiB of 0 takes 90% of the
// container's memory limit, if any: the limit is there to collect harder
// before the kernel kills the process, not to hold the heap to a size, which
// made the collector run without pause (docs/performance.md).
func setGC(percent int, limitMiB int64, container func() (int64, bool)) {
	if os.Getenv("GOGC") == "" && percent > 0 {
		debug.SetGCPercent(percent)
	}
	if os.Getenv("GOMEMLIMIT") != "" || limitMiB < 0 {
		return
	}
	if limitMiB > 0 {
		debug.SetMemoryLimit(limitMiB << 20)
		return
	}
	if bytes, ok := container(); ok {
		debug.SetMemoryLimit(bytes / 10 * 9)
	}
}

// cgroupMemoryLimit returns the memory limit of the cgroup the process runs
// in, read from the cgroup filesystem under root: cgroup v2's memory.max,
// else cgroup v1's memory.limit_in_bytes. No limit ("max", or v1's
// page-rounded maximum) and no cgroup filesystem are reported as none.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// clusterID returns the UID of the kube-system namespace, which lives as
// long as the cluster: policies this provider creates are labelled with a
// hash of it, so another cluster's provider cannot take them over silently.
func clusterID(kube client.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := kube.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	return string(ns.GetUID()), nil
}
