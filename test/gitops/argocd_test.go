package gitops

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

// argocdNamespace is where Argo CD's own objects live, as in a default install.
const argocdNamespace = "argocd"

// process is one long-running child: redis-server, git daemon or an Argo CD
// component. It gets SIGKILL from the kernel when this test binary dies
// (Pdeathsig), so nothing outlives a harness killed by -timeout or kill -9
// (what it added to the node stays, until hack/shared-node.sh tears the node
// down).
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// run starts bin with args and env (added to ours), logging to dir/name.log,
// and stops it when the test ends.
func run(t *testing.T, dir, name, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); _ = f.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s log (end):\n%s", name, tail(p.log, 40))
		}
	})
	return p
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until p accepts connections on port.
func waitListening(t *testing.T, p *process, port int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before listening on %d:\n%s", p.name, port, tail(p.log, 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %d after 60s:\n%s", p.name, port, tail(p.log, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// argoCD runs Argo CD's repo server and application controller as host
// processes against cp (the node's API server, on loopback), with Debian's
// redis-server as their cache. The argocd-cm is the one docs/gitops.md
// gives; the argocd namespace must exist. It returns once both serve.
func argoCD(t *testing.T, cp *controlplane.ControlPlane, kube client.Client, argocdBin string, argocdCM *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()

	redisPort := freePort(t)
	redis := run(t, dir, "redis", "redis-server", nil, "--bind", "127.0.0.1", "--port", strconv.Itoa(redisPort),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	waitListening(t, redis, redisPort)
	redisAddr := "127.0.0.1:" + strconv.Itoa(redisPort)

	// Argo CD's settings, as an install has them.
	cm := argocdCM.DeepCopy()
	cm.SetNamespace(argocdNamespace)
	objs := []client.Object{cm,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm", Namespace: argocdNamespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: argocdNamespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
			StringData: map[string]string{"server.secretkey": "gitops-suite"}},
		clusterSecret(t, cp),
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": argocdNamespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	objs = append(objs, project)
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	repoPort := freePort(t)
	empty := func() string {
		d, err := os.MkdirTemp(dir, "data-")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	repoEnv := []string{"ARGOCD_BINARY_NAME=argocd-repo-server", "ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + empty(), "ARGOCD_SSH_DATA_PATH=" + empty(), "TMPDIR=" + empty(),
		// The repo server's git credential socket, by default
		// /tmp/reposerver-ask-pass.sock, which it leaves behind.
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(empty(), "ask-pass.sock")}
	repo := run(t, dir, "repo-server", argocdBin, repoEnv, "--disable-tls", "--redis", redisAddr,
		"--address", "127.0.0.1", "--port", strconv.Itoa(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(freePort(t)), "--loglevel", "info")
	waitListening(t, repo, repoPort)

	// The controller has no flag to bind its metrics port to loopback: it
	// listens on every interface, on a random port, for the test's length.
	run(t, dir, "application-controller", argocdBin, []string{"ARGOCD_BINARY_NAME=argocd-application-controller", "TMPDIR=" + empty()},
		"--kubeconfig", cp.KubeconfigPath, "--namespace", argocdNamespace,
		"--repo-server", "127.0.0.1:"+strconv.Itoa(repoPort), "--repo-server-plaintext",
		"--redis", redisAddr, "--metrics-port", strconv.Itoa(freePort(t)), "--loglevel", "info",
		// Argo CD 3 keeps per-resource health in Redis only; persisting it in
		// status.resources lets the test read each resource's message.
		"--persist-resource-health")
}

// clusterSecret registers cp as an Argo CD cluster: the in-cluster
// destination needs in-cluster config, which a process outside a Pod has not.
// The node's kubeconfig names its CA by file and authenticates with a token.
func clusterSecret(t *testing.T, cp *controlplane.ControlPlane) *corev1.Secret {
	t.Helper()
	ca := cp.Config.CAData
	if len(ca) == 0 && cp.Config.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cp.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	tls := map[string]any{"caData": ca}
	if len(cp.Config.CertData) > 0 {
		tls["certData"], tls["keyData"] = cp.Config.CertData, cp.Config.KeyData
	}
	cfg := map[string]any{"tlsClientConfig": tls}
	if cp.Config.BearerToken != "" {
		cfg["bearerToken"] = cp.Config.BearerToken
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "local-control-plane", Namespace: argocdNamespace,
			Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "local", "server": cp.URL, "config": string(b)},
	}
}
