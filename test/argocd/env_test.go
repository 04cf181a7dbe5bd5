package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	group      = "cloudarmor.armorplane.io/v1beta1"
	pcGroup    = "armorplane.io/v1beta1"
	namespace  = "default"
	readyLimit = 90 * time.Second
)

var (
	buildDir string
	// buildProvider builds the provider (or takes $E2E_PROVIDER_BIN) the
	// first time a test needs it: the Lua and doc tests do not.
	buildProvider = sync.OnceValues(func() (string, error) {
		bin, err := provider.Binary(buildDir, provider.BinEnv)
		if err != nil {
			return "", fmt.Errorf("cannot build the provider: %w", err)
		}
		return bin, nil
	})
)

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "argocd-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(buildDir)
	os.Exit(code)
}

// env is a real control plane with our CRDs, an emulator and the provider
// binary running against both, as in a cluster.
type env struct {
	cp   *controlplane.ControlPlane
	emu  *emulator.Running
	kube client.WithWatch
}

func start(t *testing.T) *env {
	t.Helper()
	bin, err := buildProvider()
	if err != nil {
		t.Fatal(err)
	}
	cp := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{repo.CRDDir()}})
	// The examples include address groups, which need Cloud Armor Enterprise.
	emu := emulator.Start(t, emulator.Options{DefaultTier: emulator.TierEnterprisePaygo})
	kube, err := client.NewWithWatch(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runProvider(t, bin, cp.KubeconfigPath, emu.Endpoint())
	return &env{cp: cp, emu: emu, kube: kube}
}

// runProvider starts the provider binary with a short poll; it stops (and
// the end of its log is shown on failure) when the test ends, before the
// control plane. Namespaced ProviderConfigs may name endpoint, as the
// platform team grants it.
func runProvider(t *testing.T, bin, kubeconfig, endpoint string) {
	t.Helper()
	p := &provider.Process{
		Bin:        bin,
		Kubeconfig: kubeconfig,
		LogPath:    filepath.Join(t.TempDir(), "provider.log"),
		Label:      "argocd",
		Args: []string{"--debug", "--poll=2s", "--poll-jitter=0s", "--snapshot-ttl=1s",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--namespaced-endpoint=" + endpoint},
	}
	p.Start(t)
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 5*time.Second)
		if t.Failed() {
			t.Logf("provider log (end):\n%s", p.Tail(80))
		}
	})
}

// create creates objects, failing the test on error.
func (e *env) create(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if err := e.kube.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// obj builds an object from its apiVersion, kind, name (namespace "default"
// unless the kind is cluster-scoped) and top-level fields.
func obj(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if kind != "ClusterProviderConfig" {
		u.SetNamespace(namespace)
	}
	return u
}

// credentials creates the token Secret, ClusterProviderConfig "default" and
// ProviderConfig "team-a", both pointing at the emulator.
func (e *env) credentials(t *testing.T) {
	t.Helper()
	ref := map[string]any{"name": "emulator-token", "key": "token"}
	cpcRef := map[string]any{"name": "emulator-token", "key": "token", "namespace": namespace}
	spec := func(ref map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"projectID": "argocd-project", "endpoint": e.emu.Endpoint(),
			"credentials": map[string]any{"source": "AccessToken", "secretRef": ref}}}
	}
	e.create(t,
		obj("v1", "Secret", "emulator-token", map[string]any{"stringData": map[string]any{"token": "t"}}),
		obj(pcGroup, "ClusterProviderConfig", "default", spec(cpcRef)),
		obj(pcGroup, "ProviderConfig", "team-a", spec(ref)),
	)
}

// condition returns the status, reason and message of u's condition typ.
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// recorder keeps the first version of an object, as a watch delivers them,
// that matches each wanted predicate: transient states such as Creating and
// Deleting last one write and would be missed by polling.
type recorder struct {
	mu    sync.Mutex
	wants map[string]func(*unstructured.Unstructured) bool
	got   map[string]*unstructured.Unstructured
}

func newRecorder(wants map[string]func(*unstructured.Unstructured) bool) *recorder {
	return &recorder{wants: wants, got: map[string]*unstructured.Unstructured{}}
}

// watch feeds every version of the kind's objects to r until the test ends.
func (r *recorder) watch(t *testing.T, kube client.WithWatch, apiVersion, kind string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind+"List"))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kube.Watch(ctx, list)
	if err != nil {
		cancel()
		t.Fatalf("watch %s: %v", kind, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				r.see(u)
			}
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
}

func (r *recorder) see(u *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, match := range r.wants {
		if _, ok := r.got[name]; !ok && match(u) {
			r.got[name] = u.DeepCopy()
		}
	}
}

// wait returns the object recorded for name, failing the test after limit.
func (r *recorder) wait(t *testing.T, name string, limit time.Duration) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r.mu.Lock()
		u, ok := r.got[name]
		r.mu.Unlock()
		if ok {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("no object in state %q within %s", name, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// capturedCase is the expected health of one captured live object.
type capturedCase struct {
	reason  string
	capture string
	want    health
}

// checkCaptured evaluates the health script on each case's captured object.
// Messages are GCP's, the provider's or Crossplane's: a case names the part
// it relies on, and a message containing it matches.
func checkCaptured(t *testing.T, script string, got map[string]*unstructured.Unstructured, cases map[string]capturedCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := evalHealth(script, got[tc.capture])
			if err != nil {
				t.Fatalf("health.lua: %v", err)
			}
			t.Logf("%s: %s", h.Status, h.Message)
			if strings.Contains(h.Message, tc.want.Message) {
				h.Message = tc.want.Message
			}
			if diff := cmp.Diff(tc.want, h); diff != "" {
				t.Errorf("%s\nhealth of %s: -want +got:\n%s", tc.reason, tc.capture, diff)
			}
		})
	}
}
