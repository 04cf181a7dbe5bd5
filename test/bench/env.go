//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

const (
	project   = "bench-project"
	namespace = "default"
)

// env is one scenario's world: control plane, emulator and provider.
type env struct {
	cp       *controlplane.ControlPlane
	kube     client.Client // direct, high QPS: the benchmark's own writes
	cache    cache.Cache   // watches policies and rules, to count Ready cheaply
	emu      *emulator.Running
	provider *provider.Process
	pprof    string // host:port of the provider's pprof, or ""
	// apiHTTP talks to the API server as its admin, for /metrics and
	// /debug/pprof.
	apiHTTP *http.Client
	// apiserverPid and etcdPid are the control plane's processes, or 0.
	apiserverPid, etcdPid int
	stop                  []func()
}

// start brings up the control plane, the emulator and the provider.
func start(ctx context.Context, cfg config, bin string, sc scenario, logName string) (*env, error) {
	e := &env{}
	s, err := kube.Scheme()
	if err != nil {
		return nil, err
	}
	logDir, err := filepath.Abs(filepath.Join(cfg.outDir, "bench-logs", logName))
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{CRDDirs: []string{cfg.crds}, Scheme: s, LogDir: logDir})
	if err != nil {
		return nil, err
	}
	e.cp = cp
	e.apiserverPid, e.etcdPid = controlPlanePids(cp.Config.Host)
	if e.apiHTTP, err = rest.HTTPClientFor(cp.Config); err != nil {
		return e, err
	}
	e.stop = append(e.stop, func() { _ = cp.Stop() })

	rc := *cp.Config
	rc.QPS, rc.Burst = 500, 1000
	if e.kube, err = client.New(&rc, client.Options{Scheme: s}); err != nil {
		return e, err
	}
	if e.cache, err = cache.New(&rc, cache.Options{Scheme: s, DefaultNamespaces: map[string]cache.Config{namespace: {}}}); err != nil {
		return e, err
	}
	cctx, cancel := context.WithCancel(ctx)
	e.stop = append(e.stop, cancel)
	for _, o := range []client.Object{&v1beta1.SecurityPolicy{}, &v1beta1.SecurityPolicyRule{}} {
		if _, err := e.cache.GetInformer(cctx, o); err != nil {
			return e, err
		}
	}
	go func() { _ = e.cache.Start(cctx) }()
	if !e.cache.WaitForCacheSync(cctx) {
		return e, fmt.Errorf("benchmark cache did not sync")
	}

	emuLog, err := os.Create(filepath.Join(logDir, "emulator.log"))
	if err != nil {
		return e, err
	}
	e.emu, err = emulator.Listen("127.0.0.1:0", emulator.Options{OpLatency: cfg.latency, Auth: emulator.AuthAny,
		Logf: func(format string, args ...any) { fmt.Fprintf(emuLog, format+"\n", args...) }})
	if err != nil {
		return e, err
	}
	e.stop = append(e.stop, func() { _ = e.emu.Close(); _ = emuLog.Close() })
	if err := e.createProviderConfig(ctx); err != nil {
		return e, err
	}
	return e, e.startProvider(ctx, cfg, bin, sc, logDir)
}

func (e *env) createProviderConfig(ctx context.Context) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "emulator-token"},
		StringData: map[string]string{"token": "bench-token"}}
	endpoint := e.emu.Endpoint()
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: pcv1beta1.ClusterProviderConfigSpec{ProjectID: project, Endpoint: &endpoint,
			Credentials: pcv1beta1.ClusterProviderCredentials{Source: pcv1beta1.CredentialsSourceAccessToken,
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: namespace, Name: "emulator-token"}, Key: "token"}}}}
	for _, o := range []client.Object{secret, cpc} {
		if err := e.kube.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// startProvider runs the built provider binary as its own process, with its
// defaults except the poll interval (and its jitter, scaled like the
// defaults: 5 s per minute).
func (e *env) startProvider(ctx context.Context, cfg config, bin string, sc scenario, logDir string) error {
	// Its remote clusters' API servers are on loopback, which the provider
	// reaches only where allowed, and all in one namespace.
	args := []string{"--poll=" + sc.Poll.String(), "--poll-jitter=" + (sc.Poll / 12).String(),
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--allow-dial-cidr=127.0.0.1/32", "--max-remote-clusters-per-namespace=1000"}
	if cfg.profile && !sc.Null {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		e.pprof = addr
		args = append(args, "--pprof-bind-address="+addr)
	}
	if !sc.Null {
		args = append(args, strings.Fields(cfg.providerArgs)...)
	}
	logPath := filepath.Join(logDir, "provider.log")
	// A fresh log per scenario, as the control plane's.
	if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	p := &provider.Process{Bin: bin, Args: args, Kubeconfig: e.cp.KubeconfigPath, LogPath: logPath, Label: filepath.Base(bin)}
	// The provider inherits the benchmark's environment; -provider-env adds
	// to it for this launch only (e.g. GODEBUG=memprofilerate=65536 for a
	// finer heap profile).
	var set []string
	if !sc.Null {
		for _, kv := range strings.Fields(cfg.providerEnv) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				if err := os.Setenv(k, v); err != nil {
					return err
				}
				set = append(set, k)
			}
		}
	}
	err := p.Launch()
	for _, k := range set {
		_ = os.Unsetenv(k)
	}
	if err != nil {
		return err
	}
	e.provider = p
	e.stop = append(e.stop, func() { p.Stop(os.Interrupt, 10*time.Second) })
	fmt.Fprintf(os.Stderr, "   provider pid %d %s (log %s)\n", p.Pid(), strings.Join(args, " "), logPath)
	if e.pprof == "" {
		return nil
	}
	// Profiles start with the first apply, so wait for the endpoint.
	for range 100 {
		if c, err := net.Dial("tcp", e.pprof); err == nil {
			return c.Close()
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("provider pprof endpoint %s did not come up", e.pprof)
}

// alive returns an error once the provider has exited.
func (e *env) alive() error { return e.provider.ExitedUnexpectedly() }

func (e *env) close() {
	for i := len(e.stop) - 1; i >= 0; i-- {
		e.stop[i]()
	}
}

// saveProfile fetches a pprof profile from the provider into path.
func (e *env) saveProfile(ctx context.Context, profile, path string) error {
	if e.pprof == "" {
		return nil
	}
	return fetchProfile(ctx, http.DefaultClient, "http://"+e.pprof+"/debug/pprof/"+profile, path)
}

// saveAPIServerProfile fetches a pprof profile from the kube-apiserver (it
// serves /debug/pprof to its admin) into path: the API server is where a
// managed resource's writes cost CPU.
func (e *env) saveAPIServerProfile(ctx context.Context, profile, path string) error {
	return fetchProfile(ctx, e.apiHTTP, strings.TrimSuffix(e.cp.Config.Host, "/")+"/debug/pprof/"+profile, path)
}

func fetchProfile(ctx context.Context, hc *http.Client, url, path string) error {
	resp, err := get(ctx, hc, url)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// get GETs url; any answer but 200 OK is an error. The caller closes the
// body.
func get(ctx context.Context, hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close() //nolint:errcheck // only reserving a port
	return l.Addr().String(), nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func numCPU() int { return runtime.NumCPU() }
