// Package gitops runs the real Argo CD v3.1.0 (application controller and repo
// server, built by cluster/toolchain/build.sh argocd) out of cluster against a
// real API server, with the provider binary and the Cloud Armor emulator. The
// Application and argocd-cm are the ones docs/gitops.md gives; the repository
// has its layout, served by git daemon. What a user of Argo CD sees is shown
// by outcome: sync waves in order, a change in Git reaching GCP with no diff
// loop, GCP's refusal as Degraded, a pause as Suspended, a prune removing
// exactly one rule.
package gitops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const argocdVersion = "v3.1.0"

var buildDir string

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "gitops-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(buildDir)
	os.Exit(code)
}

// cacheDir is the tool cache cluster/toolchain/build.sh writes.
func cacheDir() string {
	if d := os.Getenv("PROVIDER_CLOUDARMOR_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "provider-cloudarmor")
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// argocdBinary is $ARGOCD_BIN (set by make test, which builds it first) or the
// cached build. Run by hand without one, the suite builds it (about 7 min
// cold) and skips only if that build fails.
var argocdBinary = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("ARGOCD_BIN"); p != "" {
		if !executable(p) {
			return "", fmt.Errorf("ARGOCD_BIN=%s is not an executable (make tools builds it)", p)
		}
		return p, nil
	}
	p := filepath.Join(cacheDir(), "bin", "argocd-"+argocdVersion, "argocd")
	if executable(p) {
		return p, nil
	}
	cmd := exec.Command(filepath.Join(repo.Root(), "cluster", "toolchain", "build.sh"), "argocd")
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil {
		return "", errSkip{fmt.Sprintf("Argo CD %s cannot be built here (cluster/toolchain/build.sh argocd: %v); skipping the gitops suite", argocdVersion, err)}
	} else if len(out) == 0 || !executable(p) {
		return "", fmt.Errorf("cluster/toolchain/build.sh argocd did not produce %s", p)
	}
	return p, nil
})

// errSkip is a missing prerequisite that cannot be had on this machine.
type errSkip struct{ msg string }

func (e errSkip) Error() string { return e.msg }

// prerequisites returns the Argo CD, kube-controller-manager and provider
// binaries, checking that the
// Debian tools the suite runs are installed. Under make test (ARGOCD_BIN set)
// everything is required: make installs redis-server and git first.
func prerequisites(t *testing.T) (argocd, gcBin, providerBin string) {
	t.Helper()
	underMake := os.Getenv("ARGOCD_BIN") != ""
	for _, tool := range []string{"redis-server", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if underMake {
				t.Fatalf("%s is not installed (make gitops-deps installs it)", tool)
			}
			t.Skipf("%s is not installed: apt-get install %s, or run make gitops-deps", tool, tool)
		}
	}
	argocd, err := argocdBinary()
	if skip := (errSkip{}); errors.As(err, &skip) {
		t.Skip(skip.msg)
	}
	if err != nil {
		t.Fatal(err)
	}
	gcBin = os.Getenv("KUBE_CONTROLLER_MANAGER_BIN")
	if gcBin == "" {
		gcBin = filepath.Join(cacheDir(), "bin", "kube-controller-manager-"+controlplane.KubernetesVersion, "kube-controller-manager")
	}
	if !executable(gcBin) {
		t.Fatalf("kube-controller-manager not found at %s (make tools builds it; set KUBE_CONTROLLER_MANAGER_BIN)", gcBin)
	}
	providerBin, err = provider.Binary(buildDir, provider.BinEnv)
	if err != nil {
		t.Fatalf("cannot build the provider: %v", err)
	}
	return argocd, gcBin, providerBin
}
