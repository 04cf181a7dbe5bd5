// Package controlplane runs a real, throwaway Kubernetes control plane (etcd and
// kube-apiserver, built from source by cluster/toolchain/build.sh) on 127.0.0.1.
//
// It is shared by the integration tests (StartT), the e2e suite and `make run`
// (cluster/local), so all three exercise the same API server the provider meets in a
// real cluster: admission, CRD validation, server-side apply and status subresources
// all behave for real. It wraps controller-runtime's envtest and adds what envtest
// leaves to the caller: locating the cached binaries, a kubeconfig file for
// out-of-process clients, logs on disk, and a stop that cannot hang.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Defaults for Options.
const (
	// DefaultStartTimeout is generous because other builds may be saturating the
	// machine's cores while kube-apiserver starts; an idle start takes ~2-3 s.
	DefaultStartTimeout = 60 * time.Second
	// DefaultStopTimeout is the grace period after SIGTERM before SIGKILL. Nothing
	// here is worth preserving on shutdown, and kube-apiserver can take many
	// seconds to drain, so tests should not wait for it.
	DefaultStopTimeout = 5 * time.Second
)

// Options configure Start. The zero value starts an empty control plane.
type Options struct {
	// CRDDirs are folders (or files) of CustomResourceDefinition manifests to
	// install before Start returns; each must exist. Start waits until every CRD
	// is established.
	CRDDirs []string

	// Scheme is used by ControlPlane.Client. Defaults to client-go's scheme, which
	// knows the built-in kinds only.
	Scheme *runtime.Scheme

	// AssetsDir holds kube-apiserver and etcd. Defaults to AssetsDir().
	AssetsDir string

	// KubeconfigPath is where the admin kubeconfig is written (parents created).
	// Defaults to a file in a temporary folder removed by Stop.
	KubeconfigPath string

	// EtcdDataDir keeps etcd's data across runs when set; Stop leaves it in place.
	// Defaults to a temporary folder removed by Stop.
	EtcdDataDir string

	// LogDir receives etcd.log and kube-apiserver.log; Stop leaves it in place.
	// Defaults to a temporary folder removed by Stop.
	LogDir string

	// StartTimeout and StopTimeout bound each process's start and its grace period
	// after SIGTERM. Default to DefaultStartTimeout and DefaultStopTimeout.
	StartTimeout time.Duration
	StopTimeout  time.Duration

	// Logf, when set, receives diagnostics that are not errors (e.g. a process
	// that had to be killed). StartT sets it to t.Logf.
	Logf func(format string, args ...any)

	// APIServerFlags are extra kube-apiserver flags, name to value, such as
	// token-auth-file.
	APIServerFlags map[string]string
}

// ControlPlane is a running etcd + kube-apiserver. Create it with Start and always
// call Stop.
type ControlPlane struct {
	// Config authenticates as an admin (group system:masters).
	Config *rest.Config
	// Client uses Config and Options.Scheme.
	Client client.Client
	// Kubeconfig is the admin kubeconfig, also written to KubeconfigPath for
	// processes such as the provider, kubectl and crossplane.
	Kubeconfig     []byte
	KubeconfigPath string
	// URL is the API server's address, https://127.0.0.1:PORT.
	URL string
	// LogDir holds etcd.log and kube-apiserver.log.
	LogDir string
	// StartDuration is how long Start took, CRD installation included.
	StartDuration time.Duration
	// StopDuration is how long Stop took; zero until Stop returns.
	StopDuration time.Duration
	// Env is the underlying envtest environment, for what this package does not
	// wrap (e.g. Env.AddUser for a less privileged identity).
	Env *envtest.Environment

	opts     Options
	tmpDir   string
	logs     *logFiles
	unguard  func()
	stopOnce sync.Once
	stopErr  error
}

// Start launches etcd and kube-apiserver on free 127.0.0.1 ports, installs the CRDs
// in opts.CRDDirs, writes the kubeconfig and returns once the API server serves.
// If ctx ends first, Start waits for the half-started processes, stops them and
// returns ctx's error: envtest cannot abort a start midway, and returning early
// would orphan them.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	begin := time.Now()
	cp, err := newControlPlane(opts)
	if err != nil {
		return nil, err
	}
	if err := cp.startEnv(ctx); err != nil {
		cp.cleanupFiles()
		return nil, err
	}
	cp.guard()
	if err := cp.finishSetup(); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	cp.StartDuration = time.Since(begin)
	return cp, nil
}

// newControlPlane applies defaults, makes the folders and prepares (but does not
// start) the envtest environment.
func newControlPlane(opts Options) (*ControlPlane, error) {
	opts = withDefaults(opts)
	// Checked here although envtest checks too: envtest only looks after starting
	// both processes, a few seconds wasted on a typo.
	for _, p := range opts.CRDDirs {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
	}
	if opts.AssetsDir == "" {
		dir, err := AssetsDir()
		if err != nil {
			return nil, err
		}
		opts.AssetsDir = dir
	}
	tmp, err := os.MkdirTemp("", "cloudarmor-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a temporary folder: %w", err)
	}
	cp := &ControlPlane{opts: opts, tmpDir: tmp, LogDir: opts.LogDir, KubeconfigPath: opts.KubeconfigPath, unguard: func() {}}
	if cp.LogDir == "" {
		cp.LogDir = filepath.Join(tmp, "logs")
	}
	if cp.KubeconfigPath == "" {
		cp.KubeconfigPath = filepath.Join(tmp, "kubeconfig")
	}
	if cp.logs, err = openLogFiles(cp.LogDir); err != nil {
		cp.cleanupFiles()
		return nil, err
	}
	if opts.EtcdDataDir != "" {
		if err := os.MkdirAll(opts.EtcdDataDir, 0o700); err != nil {
			cp.cleanupFiles()
			return nil, fmt.Errorf("cannot create etcd data folder: %w", err)
		}
	}
	cp.Env = newEnvironment(opts, cp.logs)
	// A folder of ours, not one envtest makes and forgets on stop: the
	// serving certificate then survives StopAPIServer, and a client that
	// trusted the API server before trusts it after StartAPIServer.
	certs := filepath.Join(tmp, "apiserver")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		cp.cleanupFiles()
		return nil, fmt.Errorf("cannot create the API server's certificate folder: %w", err)
	}
	cp.Env.ControlPlane.APIServer.CertDir = certs
	for k, v := range opts.APIServerFlags {
		cp.Env.ControlPlane.APIServer.Configure().Set(k, v)
	}
	return cp, nil
}

func withDefaults(opts Options) Options {
	if opts.Scheme == nil {
		opts.Scheme = clientgoscheme.Scheme
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return opts
}

func newEnvironment(opts Options, logs *logFiles) *envtest.Environment {
	useExisting := false
	return &envtest.Environment{
		// Explicit so that USE_EXISTING_CLUSTER in a developer's shell cannot point
		// the tests at a real cluster.
		UseExistingCluster:       &useExisting,
		BinaryAssetsDirectory:    opts.AssetsDir,
		CRDDirectoryPaths:        opts.CRDDirs,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   opts.Scheme,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  opts.StopTimeout,
		ControlPlane: envtest.ControlPlane{
			// Paths set outright: left empty, envtest would prefer KUBEBUILDER_ASSETS
			// over an AssetsDir the caller chose.
			APIServer: &envtest.APIServer{
				Path: filepath.Join(opts.AssetsDir, "kube-apiserver"),
				Out:  logs.apiServer,
				Err:  logs.apiServer,
			},
			Etcd: &envtest.Etcd{
				Path:    filepath.Join(opts.AssetsDir, "etcd"),
				Out:     logs.etcd,
				Err:     logs.etcd,
				DataDir: opts.EtcdDataDir,
			},
		},
	}
}

// startEnv runs envtest's Start, honouring ctx as far as envtest allows.
func (cp *ControlPlane) startEnv(ctx context.Context) error {
	type result struct {
		cfg *rest.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := cp.Env.Start()
		done <- result{cfg, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r = <-done
		if r.err == nil {
			r.err = ctx.Err()
		}
	}
	if r.err != nil {
		// envtest leaves processes running when a late step (CRDs) fails.
		_ = cp.stopEnv()
		return fmt.Errorf("cannot start the control plane: %w%s", r.err, cp.logs.tails())
	}
	cp.Config = r.cfg
	return nil
}

// guard arranges for the processes and temporary folders to go even if this process
// dies without calling Stop (see startReaper).
func (cp *ControlPlane) guard() {
	plane := cp.Env.ControlPlane
	// envtest's Start also makes /tmp/envtest-serving-certs-* for webhooks,
	// which only its Stop removes.
	dirs := []string{cp.tmpDir, plane.APIServer.CertDir, cp.Env.WebhookInstallOptions.LocalServingCertDir}
	if cp.opts.EtcdDataDir == "" {
		dirs = append(dirs, plane.Etcd.DataDir)
	}
	cp.unguard = startReaper([]string{plane.APIServer.Path, plane.Etcd.Path}, dirs)
}

// finishSetup derives the client, URL and kubeconfig file from the running server.
func (cp *ControlPlane) finishSetup() error {
	c, err := client.New(cp.Config, client.Options{Scheme: cp.opts.Scheme})
	if err != nil {
		return fmt.Errorf("cannot create a client: %w", err)
	}
	cp.Client = c
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		return fmt.Errorf("API server address %q: %w", cp.Config.Host, err)
	}
	cp.URL = (&url.URL{Scheme: "https", Host: u.Host}).String()
	cp.Kubeconfig = cp.Env.KubeConfig
	return writeFileAtomic(cp.KubeconfigPath, cp.Kubeconfig)
}

// Stop terminates kube-apiserver, then etcd (the other order leaves the API server
// retrying a dead etcd), each killed after Options.StopTimeout, and removes the
// temporary folders. A process killed after its grace period is logged, not
// returned: the caller wanted it gone and it is. Stop is safe to call repeatedly.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		begin := time.Now()
		cp.stopErr = cp.stopEnv()
		cp.cleanupFiles()
		cp.unguard()
		cp.StopDuration = time.Since(begin)
	})
	return cp.stopErr
}

// StopAPIServer stops kube-apiserver alone, etcd and its data staying: an
// outage of the cluster as its clients see it.
func (cp *ControlPlane) StopAPIServer() error {
	err := cp.Env.ControlPlane.APIServer.Stop()
	if err != nil && killedAfterGrace(err) {
		cp.opts.Logf("controlplane: kube-apiserver killed after %s grace period: %v", cp.opts.StopTimeout, err)
		return nil
	}
	return err
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address and with the same serving and client CAs, so a client's
// kubeconfig works as before.
func (cp *ControlPlane) StartAPIServer() error {
	return cp.Env.ControlPlane.APIServer.Start()
}

func (cp *ControlPlane) stopEnv() error {
	err := cp.Env.Stop()
	if err != nil && killedAfterGrace(err) {
		cp.opts.Logf("controlplane: killed after %s grace period: %v", cp.opts.StopTimeout, err)
		return nil
	}
	return err
}

// killedAfterGrace reports whether err consists only of envtest's "timeout waiting
// for process X to stop", which it returns after sending SIGKILL. envtest exposes no
// typed error for it, hence the string match.
func killedAfterGrace(err error) bool {
	var agg kerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if !killedAfterGrace(e) {
				return false
			}
		}
		return true
	}
	return strings.Contains(err.Error(), "timeout waiting for process")
}

// cleanupFiles closes the logs and removes the temporary folder (which holds the
// default kubeconfig, logs and nothing else of ours; envtest removes its own).
func (cp *ControlPlane) cleanupFiles() {
	if cp.logs != nil {
		cp.logs.close()
	}
	if cp.tmpDir != "" {
		_ = os.RemoveAll(cp.tmpDir)
	}
}

// writeFileAtomic writes data with owner-only permissions (it holds a client key)
// through a rename, so a process watching path never reads half a kubeconfig.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create folder for %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
