// Package gitops runs the real Argo CD v3.1.0 (application controller and repo
// server, built by cluster/toolchain/build.sh argocd) against the real node
// `make test` boots (test/framework/platform): Crossplane from its Helm chart,
// our provider installed by `crossplane xpkg install` and run as a pod. The
// Application and argocd-cm are the ones docs/gitops.md gives; the repository
// has its layout, served by git daemon. What a user of Argo CD sees is shown
// by outcome: sync waves in order, a change in Git reaching GCP with no diff
// loop, GCP's refusal as Degraded, a pause as Suspended, a prune removing
// exactly one rule.
//
// How it runs on the node, and why:
//
//   - The provider is the node's pod, with the flags hack/shared-node.sh gives
//     it (--poll=5s, --poll-jitter=500ms, --timeout=20s); the CRDs are the ones
//     its package installed; the node's kube-controller-manager collects the
//     garbage Argo CD's foreground prunes wait for. The suite builds and starts
//     none of them.
//   - The Cloud Armor emulator runs in this test binary (the suite reads GCP
//     through it directly) and is exposed to the node's pods with
//     Node.Expose; the ProviderConfig committed to Git names that endpoint.
//   - Argo CD (application controller, repo server, its redis) and git daemon
//     run as host processes on loopback, as Argo CD may run anywhere: it is
//     not our package. The controller reaches the node's API server through
//     the attachment's kubeconfig and a cluster Secret holding the same
//     address, CA and token (a process outside a Pod has no in-cluster
//     config). Its namespace (argocd) and its Application and AppProject CRDs,
//     from the Argo CD module the binary was built from, are added to the
//     node for the test.
//   - The managed resources live in a namespace of their own (gitops), not
//     docs/gitops.md's default: the node is shared with the suites before and
//     after, and one namespace deleted at the end takes every object the
//     Application made with it.
//   - The node is left as it was found: once Argo CD has stopped (so nothing
//     syncs the objects back), the cleanup deletes the argocd namespace (the
//     Application and AppProject with it), the Argo CD CRDs it added, and the
//     gitops namespace, waiting while the provider deletes the GCP policy
//     from the emulator, which still answers; it then checks GCP is empty.
//     Namespaces or CRDs that were there before the suite are not touched.
package gitops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const argocdVersion = "v3.1.0"

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

// prerequisites returns the Argo CD binary, checking that the Debian tools
// the suite runs are installed. Under make test (ARGOCD_BIN set) everything
// is required: make installs redis-server and git first.
func prerequisites(t *testing.T) (argocd string) {
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
	return argocd
}
