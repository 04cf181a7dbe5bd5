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
	"strconv"
	"strings"
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
	"github.com/armorplane/provider-cloudarmor/internal/netguard"
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

	namespacedAmbient  bool
	namespacedEndpoint []string
	externalSources    []string
	tokenURLs          []string

	allowDialCIDRs, allowDialHosts, denyDialCIDRs []string
	remote                                        addressset.Bounds

	ownerIdentity string

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
	app.Flag("namespaced-endpoint", "An origin (scheme://host[:port]) that a namespaced ProviderConfig's spec.endpoint may name, e.g. a Private Service Connect endpoint or the local emulator; repeat for more. Without it a namespaced ProviderConfig may not set an endpoint: every GCP call, with the namespace's token, would go wherever it names.").StringsVar(&f.namespacedEndpoint)
	app.Flag("external-account-source", "A file or URL (exact) that an external_account credentials JSON of a ClusterProviderConfig may read its subject token from, e.g. a projected token file; repeat for more. Without it no external_account source is accepted: the Google libraries read and call what the JSON names without checking it.").StringsVar(&f.externalSources)
	app.Flag("allow-token-url", "A token endpoint (exact URL) that credentials JSON may name besides Google's (oauth2.googleapis.com, sts.googleapis.com, iamcredentials.googleapis.com), e.g. a private endpoint; repeat for more.").StringsVar(&f.tokenURLs)

	app.Flag("allow-dial-cidr", "Let the provider connect, on a tenant's behalf (a remote cluster's API server, a namespaced endpoint), to addresses in this CIDR although they are loopback, link-local, private or the cluster's own; repeatable or a comma list. Everything else such a connection may reach is public.").PlaceHolder("CIDR").StringsVar(&f.allowDialCIDRs)
	app.Flag("allow-dial-host", "Let the provider connect, on a tenant's behalf, to whatever addresses this exact host name resolves to; repeatable or a comma list.").PlaceHolder("HOST").StringsVar(&f.allowDialHosts)
	app.Flag("deny-dial-cidr", "Refuse connections on a tenant's behalf to this CIDR as well: the cluster's Pod and Service ranges, which the provider cannot discover, when they are public addresses; repeatable or a comma list.").PlaceHolder("CIDR").StringsVar(&f.denyDialCIDRs)
	d := addressset.DefaultBounds()
	app.Flag("max-remote-response-bytes", "Bytes one response of a remote cluster's API server may have: a Node list beyond it makes the AddressSet Unreadable, naming this bound; a watch stream beyond it ends and is resumed.").Default(strconv.FormatInt(d.ResponseBytes, 10)).Int64Var(&f.remote.ResponseBytes)
	app.Flag("max-remote-nodes", "Nodes one remote cluster may have: a cluster with more is Unreadable, naming this bound, and its AddressSets keep their last addresses.").Default(strconv.Itoa(d.NodesPerCluster)).IntVar(&f.remote.NodesPerCluster)
	app.Flag("max-remote-node-label-bytes", "Bytes of labels (keys and values) one remote Node may have: a cluster with a Node beyond it is Unreadable, naming this bound and the Node.").Default(strconv.Itoa(d.LabelBytesPerNode)).IntVar(&f.remote.LabelBytesPerNode)
	app.Flag("drop-unreadable-after", "How long an AddressSet's source (another cluster's Nodes, instances, Cloud NAT, objects of its namespace) may stay unreadable before its last addresses are dropped from the allowlists; 0 (the default) holds them until it answers again. Either way a source unreadable for an hour is reported in an event and the cloudarmor_addressset_sources_held_long metric.").Default("0s").DurationVar(&f.remote.DropUnreadableAfter)
	app.Flag("max-remote-clusters-per-namespace", "Distinct remote clusters (and credentials) the AddressSets of one namespace may read: one beyond it is Unreadable, naming this bound.").Default(strconv.Itoa(d.ClustersPerNamespace)).IntVar(&f.remote.ClustersPerNamespace)
	app.Flag("max-namespace-source-objects", "Objects one AddressSet may read of its own namespace (Services, objects of a kind): a source with more is Unreadable, naming this bound, and the set keeps its last addresses.").Default(strconv.Itoa(d.ObjectsPerSource)).IntVar(&f.remote.ObjectsPerSource)
	app.Flag("max-namespace-source-values", "Values (addresses and findings) the objects one AddressSet reads of its own namespace may hold: a source with more is Unreadable, naming this bound, and the set keeps its last addresses.").Default(strconv.Itoa(d.ValuesPerSource)).IntVar(&f.remote.ValuesPerSource)
	app.Flag("max-namespace-sources-per-namespace", "AddressSets of one namespace that may read its objects (services, object, configMap), each one watch of the API server: one beyond it is Unreadable, naming this bound.").Default(strconv.Itoa(d.NamespaceSourcesPerNamespace)).IntVar(&f.remote.NamespaceSourcesPerNamespace)

	app.Flag("owner-identity", "What the GCP owner labels name this cluster by (1 to 253 letters, digits and . _ : / -). Empty (the default) is the UID of the kube-system namespace. Set it to the old cluster's identity when moving the objects to a new management cluster, so the new one adopts what the old one made; never run two clusters with one identity against the same projects.").Default("").StringVar(&f.ownerIdentity)

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
// command line kingpin refuses, and runs validate or test and exits when
// asked to.
func parseCommandLine(args []string) *flags {
	app, f, validate, runValidate := newApp(filepath.Base(os.Args[0]))
	test, runTest := testCommand(app, &f.timeout)
	command, err := app.Parse(args)
	if err != nil {
		app.Errorf("%s, try --help", err)
		os.Exit(testUsageStatus(args, usageStatus(args)))
	}
	if command == validate.FullCommand() {
		os.Exit(runValidate())
	}
	if command == test.FullCommand() {
		os.Exit(runTest())
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
	return g, register(reg, append(append([]prometheus.Collector{gcp.NewCollector(g.calls, g.snapshots, g.queue)}, ownership.Collectors()...), addressset.Collectors()...)...)
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
	if len(f.namespacedEndpoint) > 0 {
		connOpts = append(connOpts, connector.WithNamespacedEndpoints(f.namespacedEndpoint))
		log.Info("Namespaced ProviderConfigs may set these endpoints", "flag", "--namespaced-endpoint", "origins", f.namespacedEndpoint)
	}
	if len(f.externalSources)+len(f.tokenURLs) > 0 {
		connOpts = append(connOpts, connector.WithCredentialGrants(gcp.Grants{ExternalSources: f.externalSources, TokenURLs: f.tokenURLs}))
	}
	return connector.New(mgr.GetClient(), mgr.GetAPIReader(), usage, gcp.NewClientCache(0), build, connOpts...)
}

// clusterOwner returns what GCP owner labels name this cluster by: the
// platform's --owner-identity, else the kube-system namespace's UID, else
// none when the provider may not read it.
func clusterOwner(mgr ctrl.Manager, identity string, log logging.Logger) (string, error) {
	if identity != "" {
		if err := checkOwnerIdentity(identity); err != nil {
			return "", err
		}
		log.Info("GCP owner labels name this cluster by --owner-identity", "identity", identity)
		return identity, nil
	}
	cluster, err := clusterID(mgr.GetAPIReader())
	if err != nil {
		// Crossplane's RBAC manager does not grant providers namespaces:
		// without the extra ClusterRole (docs/security.md) owner labels name
		// objects by namespace and name only, which still tells this
		// cluster's objects apart but not two clusters' same-named ones.
		log.Info("Cannot read the kube-system namespace; GCP owner labels will not name this cluster", "error", err.Error())
		return "", nil
	}
	log.Info("GCP owner labels name this cluster by the kube-system namespace's UID", "identity", cluster)
	return cluster, nil
}

// maxOwnerIdentity bounds --owner-identity: a DNS subdomain's length, more
// than a UID (36) or any name a platform team gives a cluster.
const maxOwnerIdentity = 253

// checkOwnerIdentity refuses an --owner-identity that could not have been
// meant: empty space, control characters or a pasted document.
func checkOwnerIdentity(id string) error {
	if len(id) > maxOwnerIdentity {
		return errors.Errorf("--owner-identity is %d characters; at most %d", len(id), maxOwnerIdentity)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:/-", r)
		if !ok {
			return errors.Errorf("--owner-identity %q has %q: only letters, digits and . _ : / - are allowed", id, r)
		}
	}
	return nil
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
	dial, err := dialPolicy(f)
	if err != nil {
		return err
	}
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1beta1.ProviderConfigUsage{})
	conn := newConnector(mgr, f, g, usage, log)
	cluster, err := clusterOwner(mgr, f.ownerIdentity, log)
	if err != nil {
		return err
	}
	nodes := nodesReadable(mgr, log)
	if err := customresourcesgate.Setup(mgr, co); err != nil {
		return errors.Wrap(err, "Cannot set up the CRD gate")
	}
	return errors.Wrap(armorcontroller.SetupGated(mgr, controllers(f, o, co, wiring{conn: conn, writes: g.queue, usage: usage, cluster: cluster, nodes: nodes, dial: dial})),
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
	// dial is where the provider may connect on a tenant's behalf
	// (setup.Options.Dial).
	dial *netguard.Policy
}

// controllers returns the options of every controller. o changes only
// their external system (TestOptionsChangeOnlyTheExternalSystem).
func controllers(f *flags, o Options, co controller.Options, w wiring) armorcontroller.Options {
	so := setup.Options{Options: co, Connector: w.conn, PollJitter: f.pollJitter, Timeout: f.timeout, Writes: w.writes,
		Indexes: &ownership.Indexes{}, Labeler: ownership.NewLabeler(w.cluster), PolicyWake: setup.NewWake(), Dial: w.dial}
	if o.External != nil {
		so.External = o.External(w.usage)
	}
	return armorcontroller.Options{NodesReadable: w.nodes, RemoteBounds: f.remote, Options: so}
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
