// Package platform runs the platform team's path out of a cluster: the real
// Crossplane core (v2.4.0) against a control plane from package controlplane,
// installing this repository's packages through its package manager from an
// OCI registry served on loopback, with the harness playing the package runtime.
//
// What a cluster gives Crossplane and this package stands in for:
//   - a registry: Registry serves one in this process; the three packages that
//     `make xpkg` builds and function-auto-ready are pushed to it with
//     `crossplane xpkg push`, and an ImageConfig rewrites xpkg.crossplane.io/ to
//     it, so the packages keep their public dependency names;
//   - a package runtime: core runs with --package-runtime=External, which
//     installs packages (CRDs from the provider package, XRD and Composition from
//     the Configuration) but starts nothing. The harness starts the provider
//     binary as the identity the shipped ClusterRole allows, and the function
//     binaries with a server certificate from core's CA, and writes each active
//     FunctionRevision's status.endpoint, which a runtime would write;
//   - a garbage collector: kube-controller-manager with only that controller, so
//     deleting an XR deletes its composed resources.
//
// `make run` (cluster/local) and the platform suite (test/platform) share it.
package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// Names and versions of what is installed.
const (
	// Namespace is Crossplane's own namespace.
	Namespace = "crossplane-system"

	// CoreVersion is the Crossplane core the harness runs; its module holds the
	// CRDs `core init` installs.
	CoreVersion = "v2.4.0"

	// PackageTag is the tag the packages are pushed under. The Configuration's
	// dependencies ask for >=v0.1.0 and Crossplane resolves constraints against
	// the registry's tags, so it must be a release version, not a commit.
	PackageTag = "v0.1.0"
	// AutoReadyTag is function-auto-ready's version, as built by `make tools`.
	AutoReadyTag = "v0.5.0"

	// Repositories, as the packages name each other under xpkg.crossplane.io/.
	ProviderRepository      = "armorplane/provider-cloudarmor"
	FunctionRepository      = "armorplane/function-ipallowlist"
	ConfigurationRepository = "armorplane/configuration-ipallowlist"
	AutoReadyRepository     = "crossplane-contrib/function-auto-ready"

	// ConfigurationName is the pkg.crossplane.io Configuration the harness applies.
	ConfigurationName = "configuration-ipallowlist"

	// ProviderUser is the identity the provider runs as, bound to the shipped
	// ClusterRole as a ServiceAccount would be.
	ProviderUser = "provider-cloudarmor"

	publicRegistry = "xpkg.crossplane.io/"
	caSecret       = "crossplane-root-ca"
	clientSecret   = "crossplane-tls-client"
	// runtimeSecret holds the server certificate the harness signs for the
	// processes it runs, named in each revision's status as a runtime would.
	runtimeSecret = "package-runtime-tls"
)

// Binaries the platform runs. Every path must exist.
type Binaries struct {
	// Crossplane is the crossplane CLI (xpkg build/push).
	Crossplane string
	// Core is the Crossplane core binary.
	Core string
	// Provider and Function are this repository's binaries.
	Provider string
	Function string
	// AutoReady is function-auto-ready.
	AutoReady string
	// ControllerManager is kube-controller-manager; its garbage collector runs.
	ControllerManager string
}

// Options configure Start.
type Options struct {
	ControlPlane *controlplane.ControlPlane
	Bin          Binaries
	// XpkgDir holds what `make xpkg` writes: <name>.xpkg for the Configuration
	// and linux_<arch>/<name>.xpkg for the provider and the function.
	XpkgDir string
	// WorkDir receives logs, certificates and core's package cache.
	WorkDir string
	// ProviderArgs are passed to the provider binary.
	ProviderArgs []string
	// PollInterval is core's --poll-interval: how often an XR is recomposed
	// without an event. Crossplane's default is 1m.
	PollInterval time.Duration
	// CoreArgs are added to `crossplane core start`, e.g. the XR circuit
	// breaker's settings.
	CoreArgs []string
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Platform is a running Crossplane core with packages installed and the
// provider and functions serving. Create it with Start; always call Stop.
type Platform struct {
	Registry *Registry
	// Core is the running core; Provider the provider binary as the runtime
	// started it. Both may be killed and relaunched by a test.
	Core     *provider.Process
	Provider *provider.Process
	// ProviderKubeconfig is the restricted identity's kubeconfig.
	ProviderKubeconfig string
	// Steps records how long each step of Start took, in order.
	Steps []Step

	opts         Options
	admin        client.Client
	gc           *provider.Process
	runtimeCerts string

	mu        sync.Mutex
	functions map[string]*provider.Process // by FunctionRevision name
	// functionMetrics is the URL of our function's Prometheus metrics.
	functionMetrics string
	// acted says the runtime loop started a process or wrote a status in
	// its current step; only the loop's goroutine uses it.
	acted    bool
	stopLoop context.CancelFunc
	loopDone chan struct{}
	loopErr  error
}

// Step is one timed step of Start.
type Step struct {
	Name     string
	Duration time.Duration
}

// Start installs and runs the platform and returns once the Configuration and
// its dependencies are Installed and Healthy. On error it stops what it started.
func Start(ctx context.Context, opts Options) (p *Platform, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Minute
	}
	if err := os.MkdirAll(opts.WorkDir, 0o755); err != nil {
		return nil, err
	}
	p = &Platform{opts: opts, admin: opts.ControlPlane.Client, functions: map[string]*provider.Process{}}
	defer func() {
		if err != nil {
			p.Stop()
			p = nil
		}
	}()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"registry: push the packages", p.startRegistry},
		{"crossplane core init", p.initCore},
		{"crossplane core start", p.startCore},
		{"garbage collector", p.startGC},
		{"install the Configuration", p.install},
		{"packages Installed and Healthy", p.waitHealthy},
	}
	for _, s := range steps {
		begin := time.Now()
		if err := s.fn(ctx); err != nil {
			return p, fmt.Errorf("%s: %w", s.name, err)
		}
		p.Steps = append(p.Steps, Step{s.name, time.Since(begin)})
		opts.Logf("platform: %s (%.1fs)", s.name, time.Since(begin).Seconds())
	}
	return p, nil
}

// Stop stops the runtime loop and every process, then the registry. It is safe
// to call more than once and on a partly started platform.
func (p *Platform) Stop() {
	if p.stopLoop != nil {
		p.stopLoop()
		<-p.loopDone
		p.stopLoop = nil
	}
	p.mu.Lock()
	fns := p.functions
	p.functions = map[string]*provider.Process{}
	p.mu.Unlock()
	for _, proc := range fns {
		proc.Stop(os.Interrupt, 2*time.Second)
	}
	for _, proc := range []*provider.Process{p.Provider, p.Core, p.gc} {
		if proc != nil {
			proc.Stop(os.Interrupt, 5*time.Second)
		}
	}
	if p.Registry != nil {
		_ = p.Registry.Close()
		p.Registry = nil
	}
}

// Err reports why the runtime loop gave up or a process exited on its own,
// or nil. Suites poll it to fail fast.
func (p *Platform) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loopErr != nil {
		return p.loopErr
	}
	for _, proc := range []*provider.Process{p.Core, p.gc, p.Provider} {
		if proc == nil {
			continue
		}
		if err := proc.ExitedUnexpectedly(); err != nil {
			return fmt.Errorf("%s: %w\n%s", proc.Label, err, proc.Tail(30))
		}
	}
	for _, proc := range p.functions {
		if err := proc.ExitedUnexpectedly(); err != nil {
			return fmt.Errorf("%s: %w\n%s", proc.Label, err, proc.Tail(30))
		}
	}
	return nil
}

// LogDir is where each process's log is written.
func (p *Platform) LogDir() string { return filepath.Join(p.opts.WorkDir, "logs") }

func (p *Platform) process(label, bin string, args ...string) *provider.Process {
	return &provider.Process{
		Bin:        bin,
		Args:       args,
		Kubeconfig: p.opts.ControlPlane.KubeconfigPath,
		LogPath:    filepath.Join(p.LogDir(), label+".log"),
		Label:      label,
	}
}

func (p *Platform) startRegistry(ctx context.Context) error {
	if err := os.MkdirAll(p.LogDir(), 0o755); err != nil {
		return err
	}
	r, err := StartRegistry(p.opts.Logf)
	if err != nil {
		return err
	}
	p.Registry = r
	x := p.opts.XpkgDir
	platforms := func(name string) []string {
		files, _ := filepath.Glob(filepath.Join(x, "linux_*", name+".xpkg"))
		return files
	}
	autoReady, err := p.buildAutoReadyPackage(ctx)
	if err != nil {
		return err
	}
	pushes := []struct {
		repo, tag string
		files     []string
	}{
		{ProviderRepository, PackageTag, platforms("provider-cloudarmor")},
		{FunctionRepository, PackageTag, platforms("function-ipallowlist")},
		{ConfigurationRepository, PackageTag, []string{filepath.Join(x, "configuration-ipallowlist.xpkg")}},
		{AutoReadyRepository, AutoReadyTag, []string{autoReady}},
	}
	errs := make(chan error, len(pushes))
	for _, push := range pushes {
		go func() {
			if len(push.files) == 0 {
				errs <- fmt.Errorf("no package for %s in %s (run `make xpkg`)", push.repo, x)
				return
			}
			errs <- r.Push(ctx, p.opts.Bin.Crossplane, push.repo, push.tag, push.files...)
		}()
	}
	var all []error
	for range pushes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// buildAutoReadyPackage builds function-auto-ready's package from the
// crossplane.yaml its module ships. The package carries no runtime image: with
// the External runtime nothing runs one, and the harness runs the binary that
// `make tools` built from the same module version.
func (p *Platform) buildAutoReadyPackage(ctx context.Context) (string, error) {
	dir, err := moduleDir(ctx, "github.com/crossplane-contrib/function-auto-ready", AutoReadyTag)
	if err != nil {
		return "", err
	}
	root := filepath.Join(p.opts.WorkDir, "function-auto-ready")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	meta, err := os.ReadFile(filepath.Join(dir, "package", "crossplane.yaml"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "crossplane.yaml"), meta, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(p.opts.WorkDir, "function-auto-ready.xpkg")
	cmd := exec.CommandContext(ctx, p.opts.Bin.Crossplane, "xpkg", "build", "--package-root="+root, "--package-file="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("crossplane xpkg build (function-auto-ready): %w\n%s", err, b)
	}
	return out, nil
}

// moduleDir returns the folder of module@version in the module cache,
// downloading it through the module proxy if needed.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: the module's own go.mod does not matter
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	return m.Dir, nil
}

// initCore runs `crossplane core init`: Crossplane's CRDs, its namespace and
// the CA and client certificate Secrets.
func (p *Platform) initCore(ctx context.Context) error {
	dir, err := moduleDir(ctx, "github.com/crossplane/crossplane/v2", CoreVersion)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := p.admin.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	args := []string{"core", "init", "--enable-webhooks=false", "--namespace=" + Namespace,
		"--cr-ds-path=" + filepath.Join(dir, "cluster", "crds"),
		"--tlsca-secret-name=" + caSecret, "--tls-client-secret-name=" + clientSecret}
	// On a fresh API server the first run can fail with "no matches for kind
	// Lock": the CRD it just created is not served yet. A second run succeeds.
	var last error
	for attempt := 1; attempt <= 3; attempt++ {
		cmd := exec.CommandContext(ctx, p.opts.Bin.Core, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+p.opts.ControlPlane.KubeconfigPath)
		out, err := cmd.CombinedOutput()
		_ = os.WriteFile(filepath.Join(p.LogDir(), fmt.Sprintf("crossplane-init-%d.log", attempt)), out, 0o644)
		if err == nil {
			return p.writeCerts(ctx)
		}
		last = fmt.Errorf("%w\n%s", err, lastLines(out, 10))
	}
	return last
}

// writeCerts copies core's client certificate out of its Secret and signs the
// functions' server certificate with core's CA.
func (p *Platform) writeCerts(ctx context.Context) error {
	read := func(name string) (map[string][]byte, error) {
		s := &corev1.Secret{}
		if err := p.admin.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: name}, s); err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	ca, err := read(caSecret)
	if err != nil {
		return err
	}
	cl, err := read(clientSecret)
	if err != nil {
		return err
	}
	if err := writeCertDir(filepath.Join(p.opts.WorkDir, "tls", "client"), cl[keyCert], cl[keyKey], cl[keyCA]); err != nil {
		return err
	}
	crt, key, err := signServerCert(ca[keyCert], ca[keyKey])
	if err != nil {
		return err
	}
	p.runtimeCerts = filepath.Join(p.opts.WorkDir, "tls", "functions")
	if err := writeCertDir(p.runtimeCerts, crt, key, ca[keyCert]); err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: runtimeSecret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{keyCert: crt, keyKey: key, keyCA: ca[keyCert]},
	}
	if err := p.admin.Create(ctx, s); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func (p *Platform) startCore(ctx context.Context) error {
	cache := filepath.Join(p.opts.WorkDir, "xpkg-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	p.Core = p.process("crossplane", p.opts.Bin.Core, append([]string{"core", "start",
		"--namespace=" + Namespace,
		"--package-runtime=External",
		"--enable-webhooks=false",
		"--xpkg-cache-dir=" + cache,
		"--tls-client-certs-dir=" + filepath.Join(p.opts.WorkDir, "tls", "client"),
		"--poll-interval=" + p.opts.PollInterval.String(),
		"--metrics-port=" + strconv.Itoa(ports[0]),
		"--health-probe-port=" + strconv.Itoa(ports[1])}, p.opts.CoreArgs...)...)
	if err := p.Core.Launch(); err != nil {
		return err
	}
	if err := p.providerIdentity(ctx); err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	p.stopLoop, p.loopDone = cancel, make(chan struct{})
	go p.playRuntime(loopCtx)
	return nil
}

// startGC runs kube-controller-manager's garbage collector alone: Crossplane
// deletes an XR's composed resources through owner references, as a cluster does.
func (p *Platform) startGC(ctx context.Context) error {
	if p.opts.Bin.ControllerManager == "" {
		return errors.New("no kube-controller-manager binary (run `make tools`)")
	}
	p.gc = p.process("kube-controller-manager", p.opts.Bin.ControllerManager,
		"--kubeconfig="+p.opts.ControlPlane.KubeconfigPath,
		"--controllers=garbagecollector",
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false")
	return p.gc.Launch()
}

// providerIdentity creates the provider's user, bound to the ClusterRole the
// package ships for it (cluster/rbac), and writes its kubeconfig.
func (p *Platform) providerIdentity(ctx context.Context) error {
	b, err := os.ReadFile(repo.Path("cluster", "rbac", "clusterrole.yaml"))
	if err != nil {
		return err
	}
	cr := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, cr); err != nil {
		return fmt.Errorf("cluster/rbac/clusterrole.yaml: %w", err)
	}
	if err := p.admin.Create(ctx, cr); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ProviderUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ProviderUser}},
	}
	if err := p.admin.Create(ctx, crb); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	u, err := p.opts.ControlPlane.Env.AddUser(envtest.User{Name: ProviderUser}, p.opts.ControlPlane.Config)
	if err != nil {
		return err
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return err
	}
	p.ProviderKubeconfig = filepath.Join(p.opts.WorkDir, "provider.kubeconfig")
	return os.WriteFile(p.ProviderKubeconfig, kc, 0o600)
}

// install applies what a platform team applies: an ImageConfig pointing the
// public registry at the local one, an activation policy for the provider's
// kinds (it is safe-start) and the Configuration.
func (p *Platform) install(ctx context.Context) error {
	manifest := fmt.Sprintf(`
apiVersion: pkg.crossplane.io/v1beta1
kind: ImageConfig
metadata:
  name: local-registry
spec:
  matchImages:
    - type: Prefix
      prefix: %[1]s
  rewriteImage:
    prefix: %[2]s/
---
apiVersion: apiextensions.crossplane.io/v1alpha1
kind: ManagedResourceActivationPolicy
metadata:
  name: provider-cloudarmor
spec:
  activate:
    - "*.cloudarmor.armorplane.io"
---
apiVersion: pkg.crossplane.io/v1
kind: Configuration
metadata:
  name: %[3]s
spec:
  package: %[1]s%[4]s:%[5]s
`, publicRegistry, p.Registry.Host, ConfigurationName, ConfigurationRepository, PackageTag)
	path := filepath.Join(p.opts.WorkDir, "install.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		return err
	}
	// The pkg CRDs were created by core init a moment ago; give discovery a
	// few seconds to serve them.
	return poll(ctx, 30*time.Second, func() error {
		_, err := p.opts.ControlPlane.Apply(ctx, path)
		return err
	})
}

// Package kinds whose conditions waitHealthy checks.
var packageKinds = []string{"Configuration", "Provider", "Function"}

// waitHealthy waits until the Configuration and the packages it depends on
// (three: the provider and two functions) are Installed and Healthy.
func (p *Platform) waitHealthy(ctx context.Context) error {
	return poll(ctx, 3*time.Minute, func() error {
		if err := p.Err(); err != nil {
			return backoffAbort{err}
		}
		n := 0
		for _, kind := range packageKinds {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: kind + "List"})
			if err := p.admin.List(ctx, l); err != nil {
				return err
			}
			for _, o := range l.Items {
				for _, c := range []string{"Installed", "Healthy"} {
					if s, msg := Condition(&o, c); s != "True" {
						return fmt.Errorf("%s %s: %s=%s %s", kind, o.GetName(), c, s, msg)
					}
				}
				n++
			}
		}
		if n < 4 {
			return fmt.Errorf("%d packages installed, want the Configuration and its 3 dependencies", n)
		}
		return nil
	})
}

// Condition returns the status ("Unknown" when absent) and message of the
// condition typ of a Crossplane object.
func Condition(o *unstructured.Unstructured, typ string) (status, message string) {
	status, _, message = ConditionOf(o, typ)
	return status, message
}

// ConditionOf returns the status ("Unknown" when absent), reason and message
// of the condition typ of a Crossplane object.
func ConditionOf(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
		return status, reason, message
	}
	return "Unknown", "", ""
}

// backoffAbort makes poll return at once.
type backoffAbort struct{ error }

// poll calls fn every 250 ms until it returns nil, returning its last error
// after timeout or when ctx ends, and at once for a backoffAbort.
func poll(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var abort backoffAbort
		if errors.As(err, &abort) {
			return abort.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// freePorts returns n free loopback ports. They are free when returned, so a
// process started at once will almost always get them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
