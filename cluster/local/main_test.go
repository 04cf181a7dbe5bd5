package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

func TestFlagsDefaults(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config{kubeconfigOut: "_output/local/kubeconfig", crds: "package/crds", binDir: "_output/bin", examples: "examples", xpkgDir: "_output/xpkg"}
	if cfg != want {
		t.Errorf("defaults = %+v, want %+v", cfg, want)
	}
}

func TestOptionsStateDir(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	opts, err := controlPlaneOptions(config{kubeconfigOut: "k", crds: filepath.Join(dir, "none"), stateDir: dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if opts.EtcdDataDir != filepath.Join(dir, "etcd") || opts.LogDir != filepath.Join(dir, "logs") {
		t.Errorf("state dir not used: %+v", opts)
	}
	if !filepath.IsAbs(opts.KubeconfigPath) {
		t.Errorf("kubeconfig path %q is not absolute", opts.KubeconfigPath)
	}
	if len(opts.CRDDirs) != 0 || !strings.Contains(out.String(), "no CRDs") {
		t.Errorf("missing CRD folder: CRDDirs=%v, output %q", opts.CRDDirs, out.String())
	}
}

// TestRun drives the launcher as `make run` does, with a state dir, and runs it
// twice to show that objects survive a restart when --state-dir is given.
func TestRun(t *testing.T) {
	if _, err := controlplane.AssetsDir(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := config{
		kubeconfigOut: filepath.Join(dir, "kubeconfig"),
		crds:          "../../test/framework/controlplane/testdata/crds",
		stateDir:      filepath.Join(dir, "state"),
		// The demo (emulator on its fixed port, provider, examples) is
		// exercised by `make run`; here only the control plane matters.
		controlPlaneOnly: true,
	}
	out := runUntilReady(t, cfg, func(ctx context.Context) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survivor"}}
		if err := kubeClient(t, cfg).Create(ctx, cm); err != nil {
			t.Errorf("create through the kubeconfig: %v", err)
		}
	})
	for _, want := range []string{"starting etcd and kube-apiserver", "API server ready at https://127.0.0.1:",
		"installed 1 CRDs", "kubeconfig: " + cfg.kubeconfigOut, "control plane stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.stateDir, "logs", controlplane.APIServerLogFile)); err != nil {
		t.Errorf("log not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.stateDir, "etcd", "member")); err != nil {
		t.Errorf("etcd data not kept: %v", err)
	}
	// Restarting on the same state must work (new ports, new certificates).
	runUntilReady(t, cfg, func(ctx context.Context) {
		var cm corev1.ConfigMap
		if err := kubeClient(t, cfg).Get(ctx, client.ObjectKey{Namespace: "default", Name: "survivor"}, &cm); err != nil {
			t.Errorf("object lost across restart with --state-dir: %v", err)
		}
	})
}

// kubeClient connects the way an out-of-process tool would: through the file.
func kubeClient(t *testing.T, cfg config) client.Client {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfigOut)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runUntilReady runs the launcher until it reports ready, calls check, then sends
// the equivalent of Ctrl-C and returns everything it printed.
func runUntilReady(t *testing.T, cfg config, check func(context.Context)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &watchWriter{want: "Ctrl-C to stop", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- run(ctx, func() {}, cfg, out) }()
	select {
	case <-out.seen:
		check(ctx)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	case err := <-done:
		t.Fatalf("run ended early: %v\n%s", err, out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("not ready after 2 minutes:\n%s", out.String())
	}
	t.Logf("launcher output:\n%s", out.String())
	return out.String()
}

// watchWriter collects output and closes seen once want has been written.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
