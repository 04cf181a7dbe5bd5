// Package harness runs the built provider binary as a process against a real
// kube-apiserver + etcd and the Cloud Armor emulator, as the least privileged
// user the shipped ClusterRole (cluster/rbac/clusterrole.yaml) allows. The
// chaos and security suites share it; the process is test/framework/provider's
// (one log file across restarts, SIGKILL, Pdeathsig).
package harness

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// ProviderUser is the identity the provider process runs as: a user bound
// to the shipped ClusterRole and nothing else.
const ProviderUser = "system:serviceaccount:crossplane-system:provider-cloudarmor"

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
	Prov  *provider.Process
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
		CRDDirs: []string{repo.CRDDir()},
		Scheme:  kube.SchemeT(t),
	})
	e.Admin = e.CP.Client
	kubeconfig := e.restrictedUser(t)
	e.Emu = emulator.Start(t, o.Emulator)
	var err error
	if e.GCP, err = e.Emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	e.Prov = &provider.Process{
		Bin:        bin,
		Label:      "harness",
		Kubeconfig: kubeconfig,
		LogPath:    filepath.Join(logDir, "provider.log"),
		// The platform team's grant: namespaced ProviderConfigs may point
		// at the emulator.
		Args: append(append([]string{}, o.Args...), "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--namespaced-endpoint="+e.Emu.Endpoint()),
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
	b, err := os.ReadFile(repo.Path("cluster", "rbac", "clusterrole.yaml"))
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

// Eventually polls cond every 250 ms until it returns nil, failing after
// timeout or at once when the provider died on its own.
func (e *Env) Eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, timeout, what, cond, wait.Every(250*time.Millisecond), wait.AbortOn(e.Prov.ExitedUnexpectedly))
}
