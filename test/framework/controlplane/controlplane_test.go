package controlplane

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestControlPlane starts the real etcd and kube-apiserver and checks the things the
// provider's tests rely on: built-in objects, CRD installation and validation,
// server-side apply, the kubeconfig file, and a stop that neither hangs nor leaks.
func TestControlPlane(t *testing.T) {
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "sub", "kubeconfig")

	cp, err := Start(ctx, Options{
		CRDDirs:        []string{"testdata/crds"},
		Scheme:         testScheme(t),
		KubeconfigPath: kubeconfig,
		Logf:           t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cp.Stop()
		}
	})
	t.Logf("control plane started in %s at %s", cp.StartDuration.Round(time.Millisecond), cp.URL)

	checkLoopback(t, cp)
	checkConfigMap(ctx, t, cp.Client)
	checkCRD(ctx, t, cp.Client)
	checkApply(ctx, t, cp)
	checkKubeconfig(ctx, t, cp, kubeconfig)

	tmp := cp.tmpDir
	if err := cp.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	t.Logf("control plane stopped in %s", cp.StopDuration.Round(time.Millisecond))
	if limit := DefaultStopTimeout + 3*time.Second; cp.StopDuration > limit {
		t.Errorf("stop took %s, want under %s", cp.StopDuration, limit)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary folder %s still exists after Stop (err=%v)", tmp, err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// TestStartT covers the test helper and an empty start (no CRDs).
func TestStartT(t *testing.T) {
	cp := StartT(t, Options{})
	var ns corev1.Namespace
	if err := cp.Client.Get(context.Background(), client.ObjectKey{Name: "default"}, &ns); err != nil {
		t.Fatalf("get default namespace: %v", err)
	}
}

func TestStartMissingCRDDir(t *testing.T) {
	_, err := Start(context.Background(), Options{CRDDirs: []string{"testdata/no-such-dir"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Fatalf("want an error naming the missing folder, got %v", err)
	}
}

func TestAssetsDirMissing(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PROVIDER_CLOUDARMOR_CACHE", t.TempDir())
	_, err := AssetsDir()
	if err == nil || !strings.Contains(err.Error(), ToolsCommand) {
		t.Fatalf("want an error naming %q, got %v", ToolsCommand, err)
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func checkLoopback(t *testing.T, cp *ControlPlane) {
	u, err := url.Parse(cp.URL)
	if err != nil || u.Scheme != "https" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Errorf("URL = %q, want https://127.0.0.1:PORT", cp.URL)
	}
}

func checkConfigMap(ctx context.Context, t *testing.T, c client.Client) {
	cm := &corev1.ConfigMap{}
	cm.Name, cm.Namespace = "hello", "default"
	cm.Data = map[string]string{"greeting": "hi"}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	if got.Data["greeting"] != "hi" || got.UID == "" {
		t.Errorf("ConfigMap round trip: got %+v", got)
	}
}

func checkCRD(ctx context.Context, t *testing.T, c client.Client) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "widgets.test.cloudarmor.armorplane.io"}, crd); err != nil {
		t.Fatalf("get CRD: %v", err)
	}
	established := false
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	if !established {
		t.Fatalf("CRD not established: %+v", crd.Status.Conditions)
	}
	// The schema says size >= 1: the real API server must reject 0.
	bad := widget("default", "bad", 0)
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("want a validation error on spec.size, got %v", err)
	}
}

func checkApply(ctx context.Context, t *testing.T, cp *ControlPlane) {
	objs, err := cp.Apply(ctx, "testdata/objects")
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("applied %d objects, want 2 (the trailing empty document is skipped)", len(objs))
	}
	// Applying again is a no-op, not a conflict.
	if _, err := cp.Apply(ctx, "testdata/objects/widget.yaml"); err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	got := widget("widgets", "small", 0)
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatalf("get applied widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 1 {
		t.Errorf("spec.size = %d, want 1", size)
	}
}

func checkKubeconfig(ctx context.Context, t *testing.T, cp *ControlPlane, path string) {
	if cp.KubeconfigPath != path {
		t.Errorf("KubeconfigPath = %q, want %q", cp.KubeconfigPath, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600: it holds a client key", fi.Mode().Perm())
	}
	// A separate process would load the file the same way.
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, &cm); err != nil {
		t.Errorf("get ConfigMap through the kubeconfig: %v", err)
	}
}

func widget(ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.cloudarmor.armorplane.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"size": size},
	}}
	return u
}
