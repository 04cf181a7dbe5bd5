// Package harness runs the built provider binary as a process against a real
// kube-apiserver + etcd and the Cloud Armor emulator, as the least privileged
// user the shipped ClusterRole (cluster/rbac/clusterrole.yaml) allows. The
// chaos and security suites share it; it follows test/e2e's process handling
// (one log file across restarts, SIGKILL, Pdeathsig).
package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

// ProviderUser is the identity the provider process runs as: a user bound
// to the shipped ClusterRole and nothing else.
const ProviderUser = "system:serviceaccount:crossplane-system:provider-cloudarmor"

// RepoRoot is the repository's root folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// BuildProvider returns the provider binary under test: $PROVIDER_BIN or
// $E2E_PROVIDER_BIN when set, else ./cmd/provider built into dir.
func BuildProvider(dir string) (string, error) {
	for _, env := range []string{"PROVIDER_BIN", "E2E_PROVIDER_BIN"} {
		if bin := os.Getenv(env); bin != "" {
			return filepath.Abs(bin)
		}
	}
	out := filepath.Join(dir, "provider")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/provider")
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return out, cmd.Run()
}

// Scheme knows the built-in kinds and ours.
func Scheme(tb testing.TB) *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(s); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// Options configure Start.
type Options struct {
	// Emulator configures the emulator.
	Emulator emulator.Options
	// Args are the provider's flags; --metrics-bind-address=0 and
	// --health-probe-bind-address=0 are always added.
	Args []string
}

// Env is a control plane, an emulator and a provider process.
type Env struct {
	CP    *controlplane.ControlPlane
	Admin client.Client // system:masters
	Emu   *emulator.Running
	GCP   *compute.Service // the emulator, behind the provider's back
	Prov  *Process
	// ProviderClient acts as ProviderUser.
	ProviderClient client.Client
}

// Start starts a control plane with our CRDs, binds ProviderUser to the
// shipped ClusterRole, starts the emulator and prepares (but does not
// start) the provider process.
func Start(t *testing.T, bin string, o Options) *Env {
	t.Helper()
	e := &Env{}
	e.CP = controlplane.StartT(t, controlplane.Options{
		CRDDirs: []string{filepath.Join(RepoRoot(), "package", "crds")},
		Scheme:  Scheme(t),
	})
	e.Admin = e.CP.Client
	kubeconfig := e.restrictedUser(t)
	e.Emu = emulator.Start(t, o.Emulator)
	var err error
	if e.GCP, err = e.Emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	e.Prov = &Process{
		Bin:        bin,
		Kubeconfig: kubeconfig,
		LogPath:    filepath.Join(logDir, "provider.log"),
		Args:       append(append([]string{}, o.Args...), "--metrics-bind-address=0", "--health-probe-bind-address=0"),
	}
	// Registered after the control plane's and emulator's cleanups, so it
	// runs first: the provider never outlives its API server.
	t.Cleanup(func() {
		e.Prov.Kill()
		if t.Failed() {
			t.Logf("emulator stats: total=%d injected=%d notReady=%d", e.Emu.Stats().Total, e.Emu.Stats().InjectedErrors, e.Emu.Stats().NotReady)
			t.Logf("provider log, last 60 lines:\n%s", e.Prov.Tail(60))
		}
	})
	return e
}

// ClusterRole reads cluster/rbac/clusterrole.yaml.
func ClusterRole(tb testing.TB) *rbacv1.ClusterRole {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "cluster", "rbac", "clusterrole.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	cr := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, cr); err != nil {
		tb.Fatalf("cluster/rbac/clusterrole.yaml: %v", err)
	}
	return cr
}

// restrictedUser creates the ClusterRole, binds ProviderUser to it and
// returns a kubeconfig file for that user.
func (e *Env) restrictedUser(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	cr := ClusterRole(t)
	if err := e.Admin.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "provider-cloudarmor"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ProviderUser}},
	}
	if err := e.Admin.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	u, err := e.CP.Env.AddUser(envtest.User{Name: ProviderUser}, e.CP.Config)
	if err != nil {
		t.Fatal(err)
	}
	if e.ProviderClient, err = client.New(u.Config(), client.Options{Scheme: e.Admin.Scheme()}); err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "provider.kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Eventually polls cond every interval until it returns nil, failing after
// timeout or at once when the provider died on its own.
func (e *Env) Eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if perr := e.Prov.ExitedUnexpectedly(); perr != nil {
			t.Fatalf("waiting for %s: %v (last: %v)", what, perr, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Process runs the provider binary, appending stdout and stderr to one log
// file across restarts.
type Process struct {
	Bin        string
	Args       []string
	Kubeconfig string
	LogPath    string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	killed  bool
	exitErr error
	// Starts counts how often the process was started.
	Starts int
}

// Start launches the provider; it must not be running.
func (p *Process) Start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		t.Fatal("provider: start while it is still running")
	}
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.Starts++
	fmt.Fprintf(f, "=== harness: %s starting provider (run %d)\n", time.Now().Format(time.RFC3339Nano), p.Starts)
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.Kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("provider: cannot start %s: %v", p.Bin, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.killed, p.exitErr = cmd, done, false, nil
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
}

// Kill sends SIGKILL and waits for the exit; it does nothing when the
// provider is not running.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
}

// ExitedUnexpectedly reports an exit the test did not ask for.
func (p *Process) ExitedUnexpectedly() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.killed {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("the provider process exited on its own: %v", p.exitErr)
	default:
		return nil
	}
}

// Log returns the whole log.
func (p *Process) Log() []byte {
	b, _ := os.ReadFile(p.LogPath)
	return b
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(p.Log()))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
