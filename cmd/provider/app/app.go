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
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
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

// Options are what the binaries built from this wiring differ in: the
// external system, and nothing else.
type Options struct {
	// External, when set, is called once with the provider's tracker of
	// ProviderConfig usage, and every managed resource kind connects to
	// what it returns in place of GCP (setup.Options.External): the
	// benchmark's null provider. Nil is GCP.
	External func(usage resource.ModernTracker) setup.External
}

// Provider returns the provider's options: every kind connects to GCP.
func Provider() Options { return Options{} }

// Main parses the command line and runs the provider, wired with o, until
// it is told to stop. It exits the process on errors.
func Main(o Options) {
	f := parseCommandLine(os.Args[1:])
	log := newLogger(f.debug)
	gcp.Version = version.Version
	setGC(f.gcPercent, f.memoryLimit, func() (int64, bool) { return cgroupMemoryLimit("/sys/fs/cgroup") })
	cfg, err := ctrl.GetConfig()
	kingpin.FatalIfError(err, "Cannot get API server rest config")
	mgr, closeChangeLogs, err := newProvider(f, o, Process{Config: cfg, Metrics: metrics.Registry}, log)
	kingpin.FatalIfError(err, "")
	defer closeChangeLogs()
	log.Info("Starting", "version", version.Version, "poll", f.poll, "snapshotTTL", f.snapshotTTL)
	kingpin.FatalIfError(mgr.Start(ctrl.SetupSignalHandler()), "Cannot start controller manager")
}

// Process is what a provider shares with the process it runs in: Main's
// is the command's, the API server of its kubeconfig and the registry the
// metrics endpoint serves. A test that runs providers in its own process
// gives each its own (NewManager).
type Process struct {
	// Config reaches the API server.
	Config *rest.Config
	// Metrics is where the provider's metrics are registered: once per
	// registry, so once per provider.
	Metrics prometheus.Registerer
	// ManyManagers says that more than one manager of these controllers
	// runs in the process, one after another or at once: controller-runtime
	// refuses a controller name it has seen unless told.
	ManyManagers bool
}

// NewManager returns the provider that the command line args (flags of the
// run command) configure, wired with o exactly as Main wires it, in process
// p, logging to log: a manager to start. The function it returns releases
// what the provider holds (the change logs connection), once the manager has
// stopped. It is for tests that run the provider in their own process; it
// leaves the process's own settings (garbage collection, the controller-runtime
// logger) as they are.
func NewManager(args []string, o Options, p Process, log logging.Logger) (ctrl.Manager, func(), error) {
	app, f, validate, _ := newApp("provider")
	command, err := app.Parse(args)
	if err != nil {
		return nil, nil, err
	}
	if command == validate.FullCommand() {
		return nil, nil, errors.New("the validate command runs no provider")
	}
	return newProvider(f, o, p, log)
}

// newProvider returns the manager of the provider f configures, with the
// CRD gate and every controller wired with o, and what closes the change
// logs connection.
func newProvider(f *flags, o Options, p Process, log logging.Logger) (ctrl.Manager, func(), error) {
	mgr, err := newManager(f, p)
	if err != nil {
		return nil, nil, err
	}
	co, closeChangeLogs, err := controllerOptions(f, p.Metrics, log)
	if err != nil {
		return nil, nil, err
	}
	if err := setupControllers(mgr, f, o, co, p.Metrics, log); err != nil {
		closeChangeLogs()
		return nil, nil, err
	}
	return mgr, closeChangeLogs, nil
}

// flags are the provider's command line flags.
type flags struct {
	debug                                     bool
	leaderElection                            bool
	leNamespace                               string
	leaseDuration, renewDeadline, retryPeriod time.Duration

	sync, poll, pollJitter, pollStateMetric time.Duration
	maxReconcileRate, maxConcurrent         int
	memoryLimit                             int64
	gcPercent                               int
	timeout, snapshotTTL                    time.Duration

	namespacedAmbient bool

	managementPolicies, changeLogs bool
	changeLogsSocket               string
	metricsAddr, healthAddr        string
	pprofAddr                      string
}

// newFlags adds the provider's flags to app.
func newFlags(app *kingpin.Application) *flags {
	f := &flags{}
	app.Flag("debug", "Run with debug logging.").Short('d').BoolVar(&f.debug)
	app.Flag("leader-election", "Use leader election for the controller manager.").Short('l').Default("false").Envar("LEADER_ELECTION").BoolVar(&f.leaderElection)
	app.Flag("leader-election-namespace", "Namespace of the leader election Lease; in a pod it defaults to the pod's namespace, out of a cluster it must be set.").Default("").Envar("LEADER_ELECTION_NAMESPACE").StringVar(&f.leNamespace)
	app.Flag("leader-election-lease-duration", "How long a standby waits, after the leader's last renewal, before it takes the Lease: the failover time when the leader dies without releasing it.").Default("15s").DurationVar(&f.leaseDuration)
	app.Flag("leader-election-renew-deadline", "How long the leader keeps trying to renew the Lease before it gives up leading (and exits). Must be less than the lease duration.").Default("10s").DurationVar(&f.renewDeadline)
	app.Flag("leader-election-retry-period", "How often the leader renews the Lease and a standby tries to take it.").Default("2s").DurationVar(&f.retryPeriod)

	app.Flag("sync", "How often the informer cache resyncs every object.").Short('s').Default("1h").DurationVar(&f.sync)
	app.Flag("poll", "How often each resource is checked for drift in GCP.").Default("1m").DurationVar(&f.poll)
	app.Flag("poll-jitter", "Width of the window in which the objects of one GCP policy are polled each --poll (each policy has its own window, so they share one snapshot of it; keep it under --snapshot-ttl), and the ± jitter of objects whose policy is not known yet.").Default("5s").DurationVar(&f.pollJitter)
	app.Flag("poll-state-metric", "How often the state metrics are recorded.").Default("5s").DurationVar(&f.pollStateMetric)
	app.Flag("max-reconcile-rate", "Global maximum reconciles per second; the API server client may make 5 requests per reconcile.").Default("100").IntVar(&f.maxReconcileRate)
	app.Flag("max-concurrent-reconciles", "Reconciles each controller runs at once. Writes to one policy wait for each other, so this bounds how many policies are written in parallel.").Default("50").IntVar(&f.maxConcurrent)
	app.Flag("memory-limit", "Soft memory limit of the Go runtime in MiB (GOMEMLIMIT wins when set). 0 sets it to 90% of the container's memory limit (cgroup memory.max) when there is one; -1 turns it off. It bounds the heap and the runtime's own memory, not the binary's code mapped from disk; a limit under what the provider must hold makes the collector run without pause.").Default("0").Int64Var(&f.memoryLimit)
	app.Flag("gc-percent", "Garbage collection target percentage, as GOGC (GOGC wins when set): the heap may grow this much over the live heap before a collection; 0 leaves the runtime's default (100).").Default("50").IntVar(&f.gcPercent)
	app.Flag("timeout", "Bound on one reconcile's GCP calls, operation waits included.").Default("2m").DurationVar(&f.timeout)
	app.Flag("snapshot-ttl", "How long rule observations reuse one GET of their policy. Keep it well under --poll.").Default("15s").DurationVar(&f.snapshotTTL)

	app.Flag("namespaced-ambient-credentials", "Let namespaced ProviderConfigs use the sources that act with the provider's own GCP identity (InjectedIdentity, Environment, Filesystem, ImpersonateServiceAccount). Only for single-tenant clusters: anyone who may write a ProviderConfig in any namespace then acts as the provider.").Default("false").BoolVar(&f.namespacedAmbient)

	app.Flag("enable-management-policies", "Enable support for management policies.").Default("true").Envar("ENABLE_MANAGEMENT_POLICIES").BoolVar(&f.managementPolicies)
	app.Flag("enable-changelogs", "Record every create, update and delete the provider asks of GCP in Crossplane's change logs, sent to the change logs sidecar on --changelogs-socket-path (docs/security.md).").Default("false").Envar("ENABLE_CHANGE_LOGS").BoolVar(&f.changeLogs)
	app.Flag("changelogs-socket-path", "Unix socket of the change logs sidecar, with --enable-changelogs.").Default(DefaultChangeLogsSocketPath).Envar("CHANGELOGS_SOCKET_PATH").StringVar(&f.changeLogsSocket)
	app.Flag("metrics-bind-address", "Address of the Prometheus metrics endpoint; 0 disables it.").Default(":8080").StringVar(&f.metricsAddr)
	app.Flag("health-probe-bind-address", "Address of the health and readiness probes; 0 disables them.").Default(":8081").StringVar(&f.healthAddr)
	app.Flag("pprof-bind-address", "Address of the net/http/pprof endpoints (/debug/pprof/); empty or 0 disables them.").Default("").StringVar(&f.pprofAddr)
	return f
}

// newApp returns the command line: run (the default) with the provider's
// flags, and validate. It returns the flags run reads, the validate
// command and the function that runs it.
func newApp(name string) (*kingpin.Application, *flags, *kingpin.CmdClause, func() int) {
	app := kingpin.New(name, "Google Cloud Armor support for Crossplane.").DefaultEnvars()
	f := newFlags(app)
	app.Command("run", "Run the provider's controllers (the default).").Default()
	validate, runValidate := validateCommand(app, &f.timeout)
	app.Version(version.Version)
	return app, f, validate, runValidate
}

// parseCommandLine parses args into the provider's flags. It exits on a
// command line kingpin refuses, and runs validate and exits when asked to.
func parseCommandLine(args []string) *flags {
	app, f, validate, runValidate := newApp(filepath.Base(os.Args[0]))
	command, err := app.Parse(args)
	if err != nil {
		app.Errorf("%s, try --help", err)
		os.Exit(usageStatus(args))
	}
	if command == validate.FullCommand() {
		os.Exit(runValidate())
	}
	return f
}

// newLogger returns the provider's logger. controller-runtime is verbose:
// it gets the logger only when debugging.
func newLogger(debug bool) logging.Logger {
	zl := zap.New(zap.UseDevMode(debug))
	if debug {
		ctrl.SetLogger(zl)
	} else {
		// logr.Discard, not a zap logger writing nowhere: a non-development
		// zap logger allocates its sampler's counters (about 450 KiB) and
		// still formats every entry.
		ctrl.SetLogger(logr.Discard())
	}
	return logging.NewLogrLogger(zl.WithName("provider-cloudarmor"))
}

// managerOptions are the controller manager's options: scheme, cache,
// client, endpoints and leader election.
func managerOptions(f *flags, scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		// Deprecated in controller-runtime, but the only way to size the event
		// correlator's caches; the goroutine leak it warns of needs a manager
		// that lives shorter than its process.
		EventBroadcaster: setup.NewEventBroadcaster(),
		// The scheme must know every kind before NewManager: the cache
		// resolves its ByObject kinds (the CRD) when it is built.
		Scheme:                     scheme,
		Cache:                      cacheOptions(&f.sync),
		Client:                     clientOptions(),
		Metrics:                    metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:     f.healthAddr,
		PprofBindAddress:           f.pprofAddr,
		LeaderElection:             f.leaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-cloudarmor",
		LeaderElectionNamespace:    f.leNamespace,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaseDuration:              &f.leaseDuration,
		RenewDeadline:              &f.renewDeadline,
		RetryPeriod:                &f.retryPeriod,
		// A clean stop (SIGTERM on a rollout or drain) releases the Lease, so
		// a standby takes over at its next retry instead of waiting out the
		// lease duration. Safe because Main returns as soon as the manager
		// stops: nothing reconciles after the release.
		LeaderElectionReleaseOnCancel: true,
	}
}

// newManager returns the controller manager of p's API server, rate
// limited to --max-reconcile-rate, with its health and readiness probes.
func newManager(f *flags, p Process) (ctrl.Manager, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, errors.Wrap(err, "Cannot build the scheme")
	}
	mo := managerOptions(f, scheme)
	if p.ManyManagers {
		mo.Controller.SkipNameValidation = ptr.To(true)
	}
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(p.Config, f.maxReconcileRate), mo)
	if err != nil {
		return nil, errors.Wrap(err, "Cannot create controller manager")
	}
	if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return nil, errors.Wrap(err, "Cannot add health check")
	}
	if err := mgr.AddReadyzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return nil, errors.Wrap(err, "Cannot add readiness check")
	}
	return mgr, nil
}

// controllerOptions are the options every controller shares, with the
// managed resource metrics registered in reg and the features the flags
// enable. The function it returns closes the change logs connection, if any.
func controllerOptions(f *flags, reg prometheus.Registerer, log logging.Logger) (controller.Options, func(), error) {
	o := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: f.maxConcurrent,
		PollInterval:            f.poll,
		GlobalRateLimiter:       ratelimiter.NewGlobal(f.maxReconcileRate),
		Features:                &feature.Flags{},
		Gate:                    new(gate.Gate[schema.GroupVersionKind]),
	}
	var err error
	if o.MetricOptions, err = managedMetrics(f, reg); err != nil {
		return o, nil, err
	}
	if f.managementPolicies {
		o.Features.Enable(feature.EnableBetaManagementPolicies)
		log.Info("Beta feature enabled", "flag", feature.EnableBetaManagementPolicies)
	}
	if !f.changeLogs {
		return o, func() {}, nil
	}
	cl, conn, err := newChangeLogger(f.changeLogsSocket)
	if err != nil {
		return o, nil, errors.Wrap(err, "Cannot set up change logs")
	}
	o.Features.Enable(feature.EnableAlphaChangeLogs)
	o.ChangeLogOptions = &controller.ChangeLogOptions{ChangeLogger: cl}
	log.Info("Alpha feature enabled", "flag", feature.EnableAlphaChangeLogs, "socket", f.changeLogsSocket)
	return o, func() { _ = conn.Close() }, nil
}

// managedMetrics registers crossplane-runtime's managed resource metrics
// in reg: the registry the manager's metrics endpoint serves.
func managedMetrics(f *flags, reg prometheus.Registerer) (*controller.MetricOptions, error) {
	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	if err := register(reg, mrMetrics, stateMetrics); err != nil {
		return nil, err
	}
	return &controller.MetricOptions{
		PollStateMetricInterval: f.pollStateMetric,
		MRMetrics:               mrMetrics,
		MRStateMetrics:          stateMetrics,
	}, nil
}

// register registers cs in reg.
func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return errors.Wrap(err, "Cannot register metrics")
		}
	}
	return nil
}

// gcpShared is what every GCP client shares: one call counter, snapshot
// cache and write queue, so the metrics show the whole provider's traffic.
type gcpShared struct {
	calls     *gcp.CallCounter
	snapshots *gcp.SnapshotCache
	queue     *gcp.WriteQueue
}

// newGCPShared returns what the GCP clients share, with its metrics and
// the ownership counters registered in reg.
func newGCPShared(f *flags, reg prometheus.Registerer) (gcpShared, error) {
	g := gcpShared{calls: gcp.NewCallCounter(), snapshots: gcp.NewSnapshotCache(gcp.WithSnapshotTTL(f.snapshotTTL)), queue: gcp.NewWriteQueue()}
	return g, register(reg, append([]prometheus.Collector{gcp.NewCollector(g.calls, g.snapshots, g.queue)}, ownership.Collectors()...)...)
}

// newConnector returns the connector that resolves ProviderConfigs into
// GCP clients built on g, tracking their usage with usage.
func newConnector(mgr ctrl.Manager, f *flags, g gcpShared, usage resource.ModernTracker, log logging.Logger) *connector.Connector {
	build := func(ctx context.Context, creds gcp.Credentials) (*gcp.Client, error) {
		// Project-wide reads (tier, backend and edge services) are kept one
		// poll interval: every policy of a project polls once in it.
		return gcp.NewClientForCredentials(ctx, creds, g.snapshots, g.queue, gcp.WithCallCounter(g.calls), gcp.WithProjectReadTTL(f.poll))
	}
	var connOpts []connector.Option
	if f.namespacedAmbient {
		connOpts = append(connOpts, connector.WithNamespacedAmbientCredentials())
		log.Info("Namespaced ProviderConfigs may use the provider's own GCP identity", "flag", "--namespaced-ambient-credentials")
	}
	return connector.New(mgr.GetClient(), mgr.GetAPIReader(), usage, gcp.NewClientCache(0), build, connOpts...)
}

// clusterOwner returns what GCP owner labels name this cluster by: the
// kube-system namespace's UID, or none when the provider may not read it.
func clusterOwner(mgr ctrl.Manager, log logging.Logger) string {
	cluster, err := clusterID(mgr.GetAPIReader())
	if err != nil {
		// Crossplane's RBAC manager does not grant providers namespaces:
		// without the extra ClusterRole (docs/security.md) owner labels name
		// objects by namespace and name only, which still tells this
		// cluster's objects apart but not two clusters' same-named ones.
		log.Info("Cannot read the kube-system namespace; GCP owner labels will not name this cluster", "error", err.Error())
	}
	return cluster
}

// nodesReadable says whether the provider may list Nodes, which
// AddressSets read.
func nodesReadable(mgr ctrl.Manager, log logging.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := addressset.CanListNodes(ctx, mgr.GetAPIReader())
	if !nodes {
		log.Info("Cannot list Nodes; AddressSets will keep their last addresses and say why", "grant", "get, list and watch on nodes")
	}
	return nodes
}

// setupControllers adds the CRD gate and every controller to mgr, with
// the GCP clients' metrics registered in reg.
func setupControllers(mgr ctrl.Manager, f *flags, o Options, co controller.Options, reg prometheus.Registerer, log logging.Logger) error {
	g, err := newGCPShared(f, reg)
	if err != nil {
		return err
	}
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1beta1.ProviderConfigUsage{})
	conn := newConnector(mgr, f, g, usage, log)
	cluster := clusterOwner(mgr, log)
	nodes := nodesReadable(mgr, log)
	if err := customresourcesgate.Setup(mgr, co); err != nil {
		return errors.Wrap(err, "Cannot set up the CRD gate")
	}
	return errors.Wrap(armorcontroller.SetupGated(mgr, controllers(f, o, co, wiring{conn: conn, writes: g.queue, usage: usage, cluster: cluster, nodes: nodes})),
		"Cannot set up controllers")
}

// wiring is what the controllers are built on besides the flags: the GCP
// connector and write queue, the tracker of ProviderConfig usage, the
// cluster's identity and whether Nodes may be listed.
type wiring struct {
	conn    *connector.Connector
	writes  *gcp.WriteQueue
	usage   resource.ModernTracker
	cluster string
	nodes   bool
}

// controllers returns the options of every controller. o changes only
// their external system (TestOptionsChangeOnlyTheExternalSystem).
func controllers(f *flags, o Options, co controller.Options, w wiring) armorcontroller.Options {
	so := setup.Options{Options: co, Connector: w.conn, PollJitter: f.pollJitter, Timeout: f.timeout, Writes: w.writes,
		Indexes: &ownership.Indexes{}, Labeler: ownership.NewLabeler(w.cluster), PolicyWake: setup.NewWake()}
	if o.External != nil {
		so.External = o.External(w.usage)
	}
	return armorcontroller.Options{NodesReadable: w.nodes, Options: so}
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
