package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	kubescheme "github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	project = "gitops-project"
	// namespace holds what the Application syncs: its own on the shared
	// node, deleted at the end with everything in it (see the package doc).
	namespace = "gitops"
	mrGroup   = "cloudarmor.armorplane.io/v1beta1"
	// stepLimit bounds each step: a sync, a refresh, the provider's
	// reconciles. The node's provider reconciles at once when an object's
	// spec or annotations change (each step is such a change); its poll
	// (5 s ± 0.5 s, hack/shared-node.sh) only paces re-reads of objects
	// nobody touched, which no step waits for. On the node the subtests took
	// 2 to 12 s each (2026-11-27); 3 min is room for a 2-core machine loaded
	// by other suites, not a figure a passing step comes near.
	stepLimit = 3 * time.Minute
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// fromDoc returns the object of kind and name in docs/gitops.md's YAML blocks.
func fromDoc(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	doc, err := os.ReadFile(repo.Path("docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range yamlBlock.FindAllSubmatch(doc, -1) {
		for _, d := range strings.Split(string(m[1]), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
				t.Fatalf("docs/gitops.md: %v", err)
			}
			if u.GetKind() == kind && u.GetName() == name {
				return u
			}
		}
	}
	t.Fatalf("docs/gitops.md has no %s %s", kind, name)
	return nil
}

// gitRepo is a repository served by git daemon on loopback.
type gitRepo struct {
	dir, url string
}

func serveGit(t *testing.T) *gitRepo {
	t.Helper()
	base := t.TempDir()
	g := &gitRepo{dir: filepath.Join(base, "platform")}
	if err := os.MkdirAll(g.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	g.git(t, "init", "-q", "-b", "main")
	// git-daemon itself, not `git daemon`: the git wrapper would fork it, and
	// a wrapper killed with the test binary would leave it running.
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	port := freePort(t)
	d := run(t, t.TempDir(), "git-daemon", filepath.Join(strings.TrimSpace(string(execPath)), "git-daemon"), nil, "--reuseaddr", "--export-all",
		"--base-path="+base, "--listen=127.0.0.1", "--port="+strconv.Itoa(port), base)
	waitListening(t, d, port)
	g.url = fmt.Sprintf("git://127.0.0.1:%d/platform", port)
	return g
}

func (g *gitRepo) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", g.dir, "-c", "user.name=gitops suite", "-c", "user.email=gitops@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+g.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (path relative to the repository: content) and commits
// them, returning the commit's hash.
func (g *gitRepo) commit(t *testing.T, msg string, files map[string]string) string {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(g.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g.git(t, "add", "-A")
	g.git(t, "commit", "-q", "-m", msg)
	return g.git(t, "rev-parse", "HEAD")
}

// layout is docs/gitops.md's repository layout: one folder per Application,
// one file per sync wave.
type layout struct {
	endpoint   string
	partner    string // the partner rule's source range; "" drops the rule
	adminMatch string // the admin rule's CEL expression
}

func (l layout) files() map[string]string {
	rules := rule("web-admin", 10, "deny(404)", "Hide admin paths", "expr:\n        expression: "+strconv.Quote(l.adminMatch)) +
		"---\n" + rule("web-office", 1000, "allow", "Office", "versionedExpr: SRC_IPS_V1\n      config:\n        srcIpRanges: [\"203.0.113.0/24\"]")
	if l.partner != "" {
		rules += "---\n" + rule("web-partner", 2000, "allow", "Partner", "versionedExpr: SRC_IPS_V1\n      config:\n        srcIpRanges: [\""+l.partner+"\"]")
	}
	return map[string]string{
		"cloud-armor/providerconfig.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: cloud-armor-token
  namespace: ` + namespace + `
  annotations:
    argocd.argoproj.io/sync-wave: "-1"
stringData:
  token: gitops-suite
---
apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata:
  name: cloud-armor
  namespace: ` + namespace + `
  annotations:
    argocd.argoproj.io/sync-wave: "-1"
    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true,PruneLast=true
spec:
  projectID: ` + project + `
  endpoint: ` + l.endpoint + `
  credentials:
    source: AccessToken
    secretRef:
      name: cloud-armor-token
      key: token
`,
		"cloud-armor/policies.yaml": `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: web
  namespace: ` + namespace + `
  annotations:
    argocd.argoproj.io/sync-wave: "0"
spec:
  providerConfigRef:
    kind: ProviderConfig
    name: cloud-armor
  forProvider:
    description: Web frontends; rules are separate objects
    defaultRule:
      action: deny(403)
`,
		"cloud-armor/rules.yaml": rules,
	}
}

func rule(name string, priority int, action, description, match string) string {
	return fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata:
  name: %s
  namespace: %s
  annotations:
    argocd.argoproj.io/sync-wave: "1"
spec:
  providerConfigRef:
    kind: ProviderConfig
    name: cloud-armor
  forProvider:
    securityPolicyRef:
      name: web
    priority: %d
    action: %s
    description: %s
    match:
      %s
`, name, namespace, priority, action, description, match)
}

// argoCRDs are the Application and AppProject CRDs of the Argo CD module
// the binary was built from.
func argoCRDs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3@"+argocdVersion)
	cmd.Dir = repo.Path("cluster", "toolchain", "argocd")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download argo-cd %s: %v", argocdVersion, err)
	}
	var mod struct{ Dir string }
	if err := yaml.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download argo-cd: no module folder in %s (%v)", out, err)
	}
	crds := filepath.Join(mod.Dir, "manifests", "crds")
	return []string{filepath.Join(crds, "application-crd.yaml"), filepath.Join(crds, "appproject-crd.yaml")}
}

// events records, from watches, when each object was first seen and first
// seen Ready: polling would miss the order of events a second apart.
type events struct {
	mu    sync.Mutex
	added map[string]time.Time
	ready map[string]time.Time
}

func (ev *events) watch(t *testing.T, kube client.WithWatch, apiVersion, kind string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind+"List"))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kube.Watch(ctx, list, client.InNamespace(namespace))
	if err != nil {
		cancel()
		t.Fatalf("watch %s: %v", kind, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			key, now := kind+"/"+u.GetName(), time.Now()
			ev.mu.Lock()
			if _, ok := ev.added[key]; !ok {
				ev.added[key] = now
			}
			if _, ok := ev.ready[key]; !ok && conditionStatus(u, "Ready") == "True" {
				ev.ready[key] = now
			}
			ev.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
}

func (ev *events) times(key string) (added, ready time.Time) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.added[key], ev.ready[key]
}

func conditionField(u *unstructured.Unstructured, typ, field string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			s, _ := m[field].(string)
			return s
		}
	}
	return ""
}

func conditionStatus(u *unstructured.Unstructured, typ string) string {
	return conditionField(u, typ, "status")
}

// suite is everything one run needs.
type suite struct {
	plat *platform.Platform
	kube client.WithWatch
	gcp  *compute.Service
	app  client.ObjectKey
}

func (s *suite) getApp(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	if err := s.kube.Get(context.Background(), s.app, u); err != nil {
		t.Fatalf("get Application: %v", err)
	}
	return u
}

// appState is what the test reads of an Application.
type appState struct {
	revision, sync, health string
	// resources maps kind/name to its sync status and health.
	resources                 map[string]resourceState
	reconciledAt, opStartedAt string
	opPhase                   string
	refreshPending            bool
}

type resourceState struct{ sync, health, message string }

func (s *suite) state(t *testing.T) appState {
	t.Helper()
	u := s.getApp(t)
	st := appState{resources: map[string]resourceState{}}
	st.revision, _, _ = unstructured.NestedString(u.Object, "status", "sync", "revision")
	st.sync, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	st.health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	st.reconciledAt, _, _ = unstructured.NestedString(u.Object, "status", "reconciledAt")
	st.opStartedAt, _, _ = unstructured.NestedString(u.Object, "status", "operationState", "startedAt")
	st.opPhase, _, _ = unstructured.NestedString(u.Object, "status", "operationState", "phase")
	_, st.refreshPending = u.GetAnnotations()["argocd.argoproj.io/refresh"]
	res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range res {
		m, _ := r.(map[string]any)
		rs := resourceState{}
		rs.sync, _ = m["status"].(string)
		if h, ok := m["health"].(map[string]any); ok {
			rs.health, _ = h["status"].(string)
			rs.message, _ = h["message"].(string)
		}
		st.resources[fmt.Sprint(m["kind"], "/", m["name"])] = rs
	}
	return st
}

func (st appState) String() string {
	keys := make([]string, 0, len(st.resources))
	for k := range st.resources {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "revision=%.8s sync=%s health=%s operation=%s", st.revision, st.sync, st.health, st.opPhase)
	for _, k := range keys {
		r := st.resources[k]
		fmt.Fprintf(&b, "\n  %s: %s %s %s", k, r.sync, r.health, r.message)
	}
	return b.String()
}

// waitApp polls the Application until ok holds, failing after stepLimit with
// the last state seen.
func (s *suite) waitApp(t *testing.T, what string, ok func(appState) bool) appState {
	t.Helper()
	deadline := time.Now().Add(stepLimit)
	for {
		st := s.state(t)
		if ok(st) {
			return st
		}
		if err := s.plat.Err(); err != nil {
			t.Fatalf("%s: %v; Application: %s", what, err, st)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; Application: %s", what, stepLimit, st)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// refresh asks the controller for a hard refresh (which also re-resolves the
// branch, bypassing the repo server's revision cache), as `argocd app get
// --hard-refresh` does, and waits until it has been done.
func (s *suite) refresh(t *testing.T) appState {
	t.Helper()
	before := s.state(t).reconciledAt
	// reconciledAt has a resolution of one second.
	time.Sleep(1100 * time.Millisecond)
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"hard"}}}`)
	u := s.getApp(t)
	if err := s.kube.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return s.waitApp(t, "refresh", func(st appState) bool { return !st.refreshPending && st.reconciledAt != before })
}

// synced is an Application at revision rev, Synced, with the health wanted.
func synced(rev, health string) func(appState) bool {
	return func(st appState) bool {
		return st.revision == rev && st.sync == "Synced" && st.health == health && st.opPhase != "Running"
	}
}

// gcpRules returns the priorities and source ranges of policy web's rules in
// the emulator, read through the GCP client.
func (s *suite) gcpRules(t *testing.T) map[int64]string {
	t.Helper()
	p, err := s.gcp.SecurityPolicies.Get(project, "web").Do()
	if err != nil {
		t.Fatalf("GCP: get policy web: %v", err)
	}
	out := map[int64]string{}
	for _, r := range p.Rules {
		m := ""
		if r.Match != nil && r.Match.Config != nil {
			m = strings.Join(r.Match.Config.SrcIpRanges, ",")
		}
		if r.Match != nil && r.Match.Expr != nil {
			m = r.Match.Expr.Expression
		}
		out[r.Priority] = m
	}
	return out
}

func (s *suite) waitGCP(t *testing.T, what string, ok func(map[int64]string) bool) {
	t.Helper()
	deadline := time.Now().Add(stepLimit)
	for {
		got := s.gcpRules(t)
		if ok(got) {
			return
		}
		if err := s.plat.Err(); err != nil {
			t.Fatalf("%s: %v; rules: %v", what, err, got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in GCP within %s; rules: %v", what, stepLimit, got)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

const defaultPriority = 2147483647

// TestArgoCD syncs docs/gitops.md's Application layout with the real Argo CD
// and follows it through the changes a team makes in Git.
func TestArgoCD(t *testing.T) {
	// Attached first: without a node the suite skips before building Argo CD.
	scheme := kubescheme.SchemeT(t)
	if err := apiextensionsv1.AddToScheme(scheme); err != nil { // for the Argo CD CRDs
		t.Fatal(err)
	}
	plat := platform.Attach(t, scheme)
	argocdBin := prerequisites(t)
	begin := time.Now()

	emu := emulator.Start(t, emulator.Options{})
	gcp, err := emu.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exposed, err := plat.Node.Expose(strings.TrimPrefix(emu.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// The platform team's grant: the namespaced ProviderConfig in Git may
	// name this emulator as its endpoint. Registered before the footprint's
	// cleanup, so it is put back once the namespaces are gone.
	plat.ReconfigureProvider(t, func(spec map[string]any) {
		platform.SetArgsIn(spec, append(platform.ArgsIn(spec), "--namespaced-endpoint=http://"+exposed))
	})
	// Registered after the emulator starts, so it runs before the emulator
	// stops, and before Argo CD starts, so it runs once Argo CD has stopped.
	fp := &footprint{plat: plat, gcp: gcp}
	t.Cleanup(func() { fp.cleanup(t) })
	kube, err := client.NewWithWatch(plat.Kube.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fp.createNamespace(t, argocdNamespace)
	fp.createNamespace(t, namespace)
	fp.installCRDs(t, argoCRDs(t)...)
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if logs, err := plat.Node.Kubectl(ctx, "-n", platform.Namespace, "logs", "-l", "pkg.crossplane.io/provider="+platform.ProviderName, "--tail=60"); err == nil {
				t.Logf("the provider's log, last 60 lines:\n%s", logs)
			}
		}
	})

	ev := &events{added: map[string]time.Time{}, ready: map[string]time.Time{}}
	ev.watch(t, kube, "armorplane.io/v1beta1", "ProviderConfig")
	ev.watch(t, kube, mrGroup, "SecurityPolicy")
	ev.watch(t, kube, mrGroup, "SecurityPolicyRule")

	g := serveGit(t)
	// The endpoint in Git is the emulator as the provider's pod reaches it.
	l := layout{endpoint: "http://" + exposed + "/compute/v1/", partner: "198.51.100.0/24", adminMatch: "request.path.startsWith('/admin')"}
	rev := g.commit(t, "cloud-armor: provider config, policy web and three rules", l.files())

	argoCD(t, plat.Kube, kube, argocdBin, fromDoc(t, "ConfigMap", "argocd-cm"))
	startup := time.Since(begin)

	// The Application docs/gitops.md gives, pointed at the local repository,
	// the node's API server and the suite's namespace.
	app := fromDoc(t, "Application", "cloud-armor")
	_ = unstructured.SetNestedField(app.Object, g.url, "spec", "source", "repoURL")
	_ = unstructured.SetNestedField(app.Object, plat.Kube.URL, "spec", "destination", "server")
	_ = unstructured.SetNestedField(app.Object, namespace, "spec", "destination", "namespace")
	if err := kube.Create(context.Background(), app); err != nil {
		t.Fatalf("create Application: %v", err)
	}
	s := &suite{plat: plat, kube: kube, gcp: gcp, app: client.ObjectKeyFromObject(app)}

	t.Run("FirstSyncInWaves", func(t *testing.T) {
		start := time.Now()
		st := s.waitApp(t, "first sync Synced and Healthy", synced(rev, "Healthy"))
		for _, k := range []string{"ProviderConfig/cloud-armor", "SecurityPolicy/web", "SecurityPolicyRule/web-admin",
			"SecurityPolicyRule/web-office", "SecurityPolicyRule/web-partner"} {
			if r := st.resources[k]; r.sync != "Synced" || r.health != "Healthy" {
				t.Errorf("%s: %s %s %s, want Synced Healthy", k, r.sync, r.health, r.message)
			}
		}
		// Wave -1 before wave 0; wave 1 only once wave 0 is Healthy, which
		// for a policy means Ready: GCP has it.
		pcAdded, _ := ev.times("ProviderConfig/cloud-armor")
		polAdded, polReady := ev.times("SecurityPolicy/web")
		if pcAdded.IsZero() || polAdded.IsZero() || polReady.IsZero() {
			t.Fatalf("watches missed the first objects: ProviderConfig added %v, policy added %v, Ready %v", pcAdded, polAdded, polReady)
		}
		if !pcAdded.Before(polAdded) {
			t.Errorf("wave -1 ProviderConfig created at %v, not before wave 0 policy at %v", pcAdded, polAdded)
		}
		for _, r := range []string{"web-admin", "web-office", "web-partner"} {
			if added, _ := ev.times("SecurityPolicyRule/" + r); added.IsZero() || !added.After(polReady) {
				t.Errorf("wave 1 rule %s created at %v, not after wave 0 policy was Ready at %v", r, added, polReady)
			}
		}
		s.waitGCP(t, "the three rules", func(got map[int64]string) bool {
			return len(got) == 4 && got[1000] == "203.0.113.0/24" && got[2000] == "198.51.100.0/24" && got[10] != ""
		})
		t.Logf("first sync Synced/Healthy in %s (ProviderConfig -> policy +%s -> policy Ready +%s -> first rule)",
			time.Since(start).Round(100*time.Millisecond), polAdded.Sub(pcAdded).Round(time.Millisecond), polReady.Sub(polAdded).Round(time.Millisecond))
	})

	t.Run("GitChangeReachesGCPWithoutDiffLoop", func(t *testing.T) {
		start := time.Now()
		l.partner = "198.51.100.128/25"
		rev = g.commit(t, "narrow the partner range", l.files())
		s.refresh(t)
		st := s.waitApp(t, "the change synced", synced(rev, "Healthy"))
		s.waitGCP(t, "the narrowed range", func(got map[int64]string) bool { return got[2000] == "198.51.100.128/25" })
		t.Logf("git commit to GCP in %s", time.Since(start).Round(100*time.Millisecond))

		// The provider keeps writing: the resolved securityPolicy, the
		// external-name and create annotations, status. None of it may show
		// as drift, or automated sync would apply again and again.
		live := &unstructured.Unstructured{}
		live.SetAPIVersion(mrGroup)
		live.SetKind("SecurityPolicyRule")
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web-partner"}, live); err != nil {
			t.Fatal(err)
		}
		resolved, _, _ := unstructured.NestedString(live.Object, "spec", "forProvider", "securityPolicy")
		if resolved != "web" || live.GetAnnotations()["crossplane.io/external-name"] == "" {
			t.Fatalf("the rule lacks what the provider writes (resolved securityPolicy %q, annotations %v): nothing here could be drift", resolved, live.GetAnnotations())
		}
		opStarted := st.opStartedAt
		for i := range 3 {
			st := s.refresh(t)
			if st.sync != "Synced" || st.revision != rev {
				t.Errorf("refresh %d: %s", i+1, st)
			}
			for k, r := range st.resources {
				if r.sync != "Synced" {
					t.Errorf("refresh %d: %s is %s (drift Argo CD would fight over)", i+1, k, r.sync)
				}
			}
			if st.opStartedAt != opStarted {
				t.Errorf("refresh %d: a new sync started at %s: Argo CD saw a difference", i+1, st.opStartedAt)
			}
		}
	})

	t.Run("GCPRefusalIsDegraded", func(t *testing.T) {
		// Valid YAML, admitted by the CRD; only GCP parses CEL.
		l.adminMatch = "request.path.startsWith('/admin'"
		rev = g.commit(t, "a broken CEL expression", l.files())
		s.refresh(t)
		st := s.waitApp(t, "Degraded", func(st appState) bool {
			return st.revision == rev && st.health == "Degraded" && st.resources["SecurityPolicyRule/web-admin"].health == "Degraded"
		})
		rule := &unstructured.Unstructured{}
		rule.SetAPIVersion(mrGroup)
		rule.SetKind("SecurityPolicyRule")
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web-admin"}, rule); err != nil {
			t.Fatal(err)
		}
		want := conditionField(rule, "Synced", "message")
		got := st.resources["SecurityPolicyRule/web-admin"].message
		if want == "" || got != want {
			t.Errorf("web-admin health message %q, want the provider's Synced message %q", got, want)
		}
		t.Logf("Degraded: %s", got)
		if rules := s.gcpRules(t); rules[10] != "request.path.startsWith('/admin')" {
			t.Errorf("GCP's rule 10 changed to %q, though GCP refused the update", rules[10])
		}

		l.adminMatch = "request.path.startsWith('/admin')"
		rev = g.commit(t, "fix the expression", l.files())
		s.refresh(t)
		s.waitApp(t, "Healthy again", synced(rev, "Healthy"))
	})

	t.Run("PauseIsSuspended", func(t *testing.T) {
		// Paused on the live object, as in an incident, not in Git: a sync
		// waits for each wave to be Healthy, and gitops-engine counts
		// Suspended as still running, so a pause committed to Git would hold
		// the sync operation (and every later sync) until it is lifted.
		pause := func(value any) {
			t.Helper()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"crossplane.io/paused":%s}}}`, value)
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(mrGroup)
			u.SetKind("SecurityPolicy")
			u.SetNamespace(namespace)
			u.SetName("web")
			if err := kube.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-annotate")); err != nil {
				t.Fatalf("annotate policy web: %v", err)
			}
		}
		pause(`"true"`)
		st := s.waitApp(t, "Suspended", synced(rev, "Suspended"))
		if r := st.resources["SecurityPolicy/web"]; r.health != "Suspended" || r.sync != "Synced" {
			t.Errorf("policy web: %s %s %s, want Synced Suspended (an annotation outside Git is no drift)", r.sync, r.health, r.message)
		}
		t.Logf("Suspended: %s", st.resources["SecurityPolicy/web"].message)
		if st := s.refresh(t); st.sync != "Synced" || st.health != "Suspended" {
			t.Errorf("after a refresh: %s", st)
		}

		pause("null")
		s.waitApp(t, "Healthy again", synced(rev, "Healthy"))
	})

	t.Run("PruneRemovesOneRule", func(t *testing.T) {
		l.partner = ""
		rev = g.commit(t, "drop the partner rule", l.files())
		s.refresh(t)
		st := s.waitApp(t, "pruned", synced(rev, "Healthy"))
		if _, ok := st.resources["SecurityPolicyRule/web-partner"]; ok {
			t.Errorf("web-partner still in the Application: %s", st)
		}
		s.waitGCP(t, "rule 2000 deleted", func(got map[int64]string) bool { _, ok := got[2000]; return !ok })
		got := s.gcpRules(t)
		want := map[int64]string{10: "request.path.startsWith('/admin')", 1000: "203.0.113.0/24"}
		for prio, m := range want {
			if got[prio] != m {
				t.Errorf("GCP rule %d: %q, want %q (pruning must remove only the partner rule)", prio, got[prio], m)
			}
		}
		if _, ok := got[defaultPriority]; !ok || len(got) != 3 {
			t.Errorf("GCP rules after prune: %v, want 10, 1000 and the default rule", got)
		}
		deadline := time.Now().Add(stepLimit)
		for {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(mrGroup)
			u.SetKind("SecurityPolicyRule")
			err := kube.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "web-partner"}, u)
			if kerrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("SecurityPolicyRule web-partner not deleted within %s (err %v)", stepLimit, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	t.Logf("suite took %s (startup %s)", time.Since(begin).Round(100*time.Millisecond), startup.Round(100*time.Millisecond))
}
