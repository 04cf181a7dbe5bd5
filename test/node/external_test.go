package nodesuite

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestExternalCluster is `make run KUBECONFIG=… REGISTRY=…`: cluster/local
// installing into a cluster it did not boot. The cluster is a bare node
// (nothing installed), reached only through its kubeconfig, with its registry
// pushed to at the host's address and pulled from at the node's, as a
// user's cluster with a port-forwarded registry would be. The run must reach
// the examples and this-cluster's IPAllowlist all Ready (cluster/local fails
// otherwise), make no Node objects, and on Ctrl-C remove everything it
// installed: no Crossplane or armorplane CRD, namespace or Helm release left.
func TestExternalCluster(t *testing.T) {
	tools := realNode(t, t.TempDir())
	root, local := repo.Root(), localBinary(t)
	lk := lockMachine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	n, down := boot(ctx, t, tools, lk)
	defer down()
	reg := n.Registry()

	cmd := exec.CommandContext(ctx, local, "--kubeconfig", n.Kubeconfig, "--registry", reg.Pull,
		"--push-registry", reg.Push, "--plain-http",
		"--bin-dir", envOr("NODE_BIN_DIR", filepath.Join(root, "_output/bin")),
		"--xpkg-dir", envOr("NODE_XPKG_DIR", filepath.Join(root, "_output/xpkg")))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CROSSPLANE_BIN="+toolPath(t, "CROSSPLANE_BIN", "crossplane"))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = pw.Close() }()
	var log strings.Builder
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// wait reads the run's output until a line contains want or it ends.
	wait := func(want string) bool {
		for l := range lines {
			log.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return true
			}
		}
		return false
	}
	start := time.Now()
	if !wait("Press Ctrl-C to remove everything") {
		t.Fatalf("make run into the cluster did not get Ready:\n%s\nexit: %v", log.String(), <-exited)
	}
	t.Logf("installed and Ready in %s", time.Since(start).Round(100*time.Millisecond))

	if out, err := n.Kubectl(ctx, "get", "nodes", "-o", "name"); err != nil || strings.TrimSpace(out) != "node/"+node.Name {
		t.Errorf("Nodes: %q (%v), want only node/%s: make run must not make Nodes in a cluster it did not boot", out, err, node.Name)
	}
	dataPlaneAnswers(ctx, t, log.String())

	_ = cmd.Process.Signal(syscall.SIGINT)
	interrupted := log.Len()
	removed := wait("the cluster is as it was")
	for range lines {
	}
	if err := <-exited; err != nil || !removed {
		// What it printed after the Ctrl-C only: CI shows the head of a
		// long failure, and the install's table would hide the cause.
		t.Fatalf("after Ctrl-C: exit %v; output since the Ctrl-C:\n%s", err, log.String()[interrupted:])
	}
	crds, err := n.Kubectl(ctx, "get", "crd", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range strings.Fields(crds) {
		if strings.HasSuffix(c, ".crossplane.io") || strings.HasSuffix(c, ".armorplane.io") {
			t.Errorf("CRD %s is left after Ctrl-C", c)
		}
	}
	if ns, _ := n.Kubectl(ctx, "get", "namespace", "crossplane-system", "cloudarmor-emulator", "--ignore-not-found", "-o", "name"); strings.TrimSpace(ns) != "" {
		t.Errorf("namespaces left after Ctrl-C: %s", ns)
	}
	for _, kind := range []string{"clusterroles", "clusterrolebindings"} {
		out, _ := n.Kubectl(ctx, "get", kind, "-o", "name")
		for _, r := range strings.Fields(out) {
			if strings.Contains(r, "crossplane") || strings.Contains(r, "cloudarmor") {
				t.Errorf("%s left after Ctrl-C", r)
			}
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", log.String())
	}
}

// localBinary is the program `make run` execs (cluster/local): LOCAL, as the
// Makefile builds it, else built here.
func localBinary(t *testing.T) string {
	t.Helper()
	if local := os.Getenv("LOCAL"); local != "" {
		return local
	}
	local := filepath.Join(t.TempDir(), "local")
	build := exec.Command("go", "build", "-o", local, "./cluster/local")
	build.Dir = repo.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cluster/local: %v\n%s", err, out)
	}
	return local
}

// dataPlaneAddr finds the data plane's host address in the curl of make
// run's "Try next".
var dataPlaneAddr = regexp.MustCompile(`backend\.local' .*http://(127\.0\.0\.1:[0-9]+)/`)

// dataPlaneAnswers sends the request "Try next" shows through the data plane
// make run forwarded from the host: a client outside office-allowlist's
// ranges through web-frontend, which the examples attach it to, is denied.
func dataPlaneAnswers(ctx context.Context, t *testing.T, output string) {
	t.Helper()
	m := dataPlaneAddr.FindStringSubmatch(output)
	if m == nil {
		t.Errorf("make run's Try next shows no curl through the data plane")
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m[1]+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "web-frontend.demo-project.backend.local"
	req.Header.Set("X-Emulator-Client-IP", "198.51.100.77")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("the data plane make run forwarded to %s: %v", m[1], err)
		return
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a request from 198.51.100.77 through web-frontend on the data plane: %s (%s), want 403", res.Status, res.Header.Get("X-Emulator-Verdict"))
	}
}
