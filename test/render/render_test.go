// Package render tests the IPAllowlist Composition end to end with the real `crossplane render`:
// the crossplane CLI v2.5.0 drives the Crossplane core v2.4.0 render engine, which calls our
// function and function-auto-ready, both running here as local processes in Development mode.
// Outputs are compared with golden files (regenerate with -update) and validated with
// `crossplane resource validate` against the provider's CRDs and the IPAllowlist XRD.
package render

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// Tools, as cluster/toolchain/build.sh caches them. An environment variable overrides each.
var tools = []struct{ env, name, version string }{
	{"CROSSPLANE_BIN", "crossplane", "v2.5.0"},
	{"CROSSPLANE_CORE_BIN", "crossplane-core", "v2.4.0"},
	{"FUNCTION_AUTO_READY_BIN", "function-auto-ready", "v0.5.0"},
}

const (
	repoRoot    = "../.."
	xrdFile     = repoRoot + "/package/configuration/definition.yaml"
	compFile    = repoRoot + "/package/configuration/composition.yaml"
	exampleFile = repoRoot + "/examples/allowlist/ipallowlist.yaml"
	crdDir      = repoRoot + "/package/crds"

	// Function names as a Configuration's dependencies name them, which the Composition uses.
	ourFunction       = "armorplane-function-ipallowlist"
	autoReadyFunction = "crossplane-contrib-function-auto-ready"
)

// env is what every render needs: the tools, and a functions.yaml naming the two running
// functions.
type env struct {
	crossplane, core string
	functions        string
	dir              string
}

func toolPath(t *testing.T, env, name, version string) string {
	t.Helper()
	p, err := controlplane.Tool(env, name, version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func setup(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("render tests run the crossplane CLI and two function processes; skipped with -short")
	}
	e := &env{dir: t.TempDir()}
	e.crossplane = toolPath(t, tools[0].env, tools[0].name, tools[0].version)
	e.core = toolPath(t, tools[1].env, tools[1].name, tools[1].version)
	autoReady := toolPath(t, tools[2].env, tools[2].name, tools[2].version)

	fn := filepath.Join(e.dir, "function-ipallowlist")
	build := exec.Command("go", "build", "-o", fn, "./cmd/function")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/function: %v\n%s", err, out)
	}

	ours := serve(t, fn)
	theirs := serve(t, autoReady)
	functions := ""
	for _, f := range []struct{ name, pkg, addr string }{
		{ourFunction, "xpkg.crossplane.io/armorplane/function-ipallowlist:v0.1.0", ours},
		{autoReadyFunction, "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.5.0", theirs},
	} {
		functions += fmt.Sprintf(`---
apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: %s
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: %s
spec:
  package: %s
`, f.name, f.addr, f.pkg)
	}
	e.functions = write(t, e.dir, "functions.yaml", []byte(functions))
	return e
}

// serve starts a function binary on a free loopback port, without TLS, and returns its address
// once it accepts connections. The process is killed when the test ends.
func serve(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--insecure", "--address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s logs:\n%s", filepath.Base(bin), logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", bin, err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after 30s", bin, addr)
		}
	}
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// node is one Node fixture: web pool nodes have an ExternalIP unless noExternal is set.
type node struct {
	name, pool, external, internal string
}

func webNodes(n int) []node {
	out := make([]node, 0, n)
	for i := range n {
		out = append(out, node{
			name:     fmt.Sprintf("gke-prod-web-%02d", i),
			pool:     "web",
			external: fmt.Sprintf("198.18.%d.%d", i/200, 10+i%200),
			internal: fmt.Sprintf("10.128.0.%d", 10+i),
		})
	}
	return out
}

// addressSetYAML renders the observed AddressSet of node source pool-web of the example XR as
// the provider publishes it: its status is computed by the provider's own code from the Node
// fixtures, with one node of another pool that must never match.
func addressSetYAML(t *testing.T, nodes []node, internal bool) []byte {
	t.Helper()
	var selected []corev1.Node
	for _, n := range append(nodes, node{name: "gke-prod-batch-00", pool: "batch", external: "198.19.0.1", internal: "10.129.0.1"}) {
		if n.pool != "web" {
			continue
		}
		cn := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"cloud.google.com/gke-nodepool": n.pool}}}
		cn.Status.Addresses = append(cn.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: n.internal})
		if n.external != "" {
			cn.Status.Addresses = append(cn.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: n.external})
		}
		cn.Status.Addresses = append(cn.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.name})
		selected = append(selected, cn)
	}
	got := addressset.Collect(selected, internal)
	d := addressset.Decide(nil, nil, nil, got.Addresses, 0, time.Unix(0, 0))
	nodesSpec := map[string]any{"matchLabels": map[string]any{"cloud.google.com/gke-nodepool": "web"}}
	if internal {
		nodesSpec["includeInternalIP"] = true
	}
	skipped := []any{}
	for _, sk := range got.Skipped {
		skipped = append(skipped, map[string]any{"name": sk.Name, "reason": sk.Reason})
	}
	as := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1",
		"kind":       "AddressSet",
		"metadata": map[string]any{
			"name": "web-nodes-pool-web", "namespace": "default", "generation": 1,
			"annotations": map[string]any{"crossplane.io/composition-resource-name": "nodes-pool-web"},
		},
		"spec": map[string]any{"nodes": nodesSpec},
		"status": map[string]any{
			"addresses": d.Addresses, "addressCount": len(d.Addresses), "nodeCount": got.Nodes,
			"skipped": skipped, "skippedCount": len(got.Skipped), "observedGeneration": 1,
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"},
				map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			},
		},
	}
	out, err := yaml.Marshal(as)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("---\n"), out...)
}

// xr returns the example IPAllowlist, changed by fn.
func xr(t *testing.T, fn func(spec map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	u := map[string]any{}
	if err := yaml.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	if fn != nil {
		fn(u["spec"].(map[string]any))
	}
	out, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type renderResult struct {
	stdout []byte
	stderr string
	err    error
}

// render runs `crossplane render` in dir with the given XR and observed resources, and any
// extra flags (such as --required-resources).
func (e *env) render(t *testing.T, dir string, xrYAML, observed []byte, extra ...string) renderResult {
	t.Helper()
	args := []string{"render",
		write(t, dir, "xr.yaml", xrYAML), compFile, e.functions,
		"--crossplane-binary=" + e.core,
		"--xrd=" + xrdFile,
		"--include-function-results",
		"--include-full-xr",
		"--timeout=60s",
	}
	if observed != nil {
		args = append(args, "--observed-resources="+write(t, dir, "observed.yaml", observed))
	}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.crossplane, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return renderResult{stdout: stdout.Bytes(), stderr: stderr.String(), err: err}
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		m := map[string]any{}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("cannot decode render output: %v", err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// normalized re-encodes render output with its Results sorted by message: Crossplane emits the
// "not yet ready" Results in map order.
func normalized(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var resources, results []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Result" {
			results = append(results, o)
			continue
		}
		resources = append(resources, o)
	}
	sort.SliceStable(results, func(i, j int) bool {
		mi, _ := results[i].Object["message"].(string)
		mj, _ := results[j].Object["message"].(string)
		return mi < mj
	})
	var b bytes.Buffer
	for _, o := range append(resources, results...) {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, objs []*unstructured.Unstructured) {
	t.Helper()
	got := normalized(t, objs)
	p := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("render output differs from %s (-want, +got; rerun with -update if intended):\n%s", p, diff)
	}
}

// validate runs `crossplane resource validate` on the rendered XR and managed resources, against
// the provider's CRDs and the XRD. Crossplane's own schemas are not needed, so no image is pulled.
func (e *env) validate(t *testing.T, dir string, objs []*unstructured.Unstructured) {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		if o.GetKind() == "Result" {
			continue
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	resources := write(t, dir, "validate.yaml", b.Bytes())
	out, err := exec.Command(e.crossplane, "resource", "validate",
		"--crossplane-image=", "--error-on-missing-schemas", "--skip-success-results",
		"--cache-dir="+filepath.Join(e.dir, "validate-cache"),
		crdDir+","+xrdFile, resources).CombinedOutput()
	if err != nil {
		t.Errorf("crossplane resource validate: %v\n%s", err, out)
	}
}

// rules returns the rendered SecurityPolicyRules' forProvider, keyed by name.
func rules(objs []*unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for _, o := range objs {
		if o.GetKind() == "SecurityPolicyRule" {
			out[o.GetName()] = o.Object["spec"]
		}
	}
	return out
}

// changedRules counts rules added, removed or modified between two renders.
func changedRules(before, after map[string]any) int {
	n := 0
	for name, spec := range before {
		if a, ok := after[name]; !ok || !cmp.Equal(spec, a) {
			n++
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			n++
		}
	}
	return n
}

// observedFrom turns a render's composed resources into what Crossplane observes once the
// provider has made them Ready. AddressSets are left out: the caller supplies them as the
// provider reports them.
func observedFrom(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs[1:] { // objs[0] is the XR
		if o.GetKind() == "Result" || o.GetKind() == "AddressSet" {
			continue
		}
		o = o.DeepCopy()
		conds := []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}
		if err := unstructured.SetNestedSlice(o.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// TestRender starts the two functions once and runs every render against them.
func TestRender(t *testing.T) {
	e := setup(t)
	t.Run("FirstPass", func(t *testing.T) { testFirstPass(t, e) })
	t.Run("Fixtures", func(t *testing.T) { testFixtures(t, e) })
	t.Run("NodeReplaced", func(t *testing.T) { testNodeReplaced(t, e) })
	t.Run("Held", func(t *testing.T) { testHeld(t, e) })
}

// testFirstPass renders the example XR before its AddressSet exists: the function composes the
// policy and the AddressSet and no rule yet, and says it waits for the AddressSet.
func testFirstPass(t *testing.T, e *env) {
	dir := t.TempDir()
	r := e.render(t, dir, xr(t, nil), nil)
	if r.err != nil {
		t.Fatalf("crossplane render: %v\n%s", r.err, r.stderr)
	}
	objs := decode(t, r.stdout)
	golden(t, "first-pass", objs)
	e.validate(t, dir, objs)
	if n := len(rules(objs)); n != 0 {
		t.Errorf("%d rules composed before the AddressSet reported, want 0", n)
	}
	if _, reason, msg := platform.ConditionOf(objs[0], "Current"); reason != "SourcesPending" {
		t.Errorf("Current condition: %s %s, want reason SourcesPending", reason, msg)
	}
	if c := readyOf(objs[0]); c == "True" {
		t.Errorf("XR Ready before its AddressSet reported")
	}
}

// testFixtures renders the example XR over AddressSets reporting Node fixtures and compares
// with the golden files.
func testFixtures(t *testing.T, e *env) {
	noExternal := webNodes(10)
	noExternal[4].external = ""
	badAddress := webNodes(10)
	badAddress[6].external = "198.18.0.999"

	type tc struct {
		reason   string
		xr       func(spec map[string]any)
		nodes    []node
		internal bool
		// status expected on the XR.
		ipCount, ruleCount int64
		unmatched          []any
	}
	cases := map[string]tc{
		"nodes-0": {
			reason: "No web node: the offices alone, and pool-web reported unmatched (optional source).",
			nodes:  nil, ipCount: 3, ruleCount: 1, unmatched: []any{"pool-web"},
		},
		"nodes-1":  {reason: "One node.", nodes: webNodes(1), ipCount: 4, ruleCount: 1, unmatched: []any{}},
		"nodes-10": {reason: "Ten nodes: 13 ranges, two rules.", nodes: webNodes(10), ipCount: 13, ruleCount: 2, unmatched: []any{}},
		"nodes-11": {reason: "Eleven nodes: 14 ranges, two rules.", nodes: webNodes(11), ipCount: 14, ruleCount: 2, unmatched: []any{}},
		"nodes-37": {reason: "37 nodes: 40 ranges, four full rules.", nodes: webNodes(37), ipCount: 40, ruleCount: 4, unmatched: []any{}},
		"node-without-external-ip": {
			reason: "A node without an ExternalIP is skipped with a warning naming it.",
			nodes:  noExternal, ipCount: 12, ruleCount: 2, unmatched: []any{},
		},
		"node-with-invalid-address": {
			reason: "A node with an address that does not parse is skipped with a warning naming it; the others are kept.",
			nodes:  badAddress, ipCount: 12, ruleCount: 2, unmatched: []any{},
		},
		"existing-policy-internal-ips": {
			reason: "An existing policy is referenced by name and no SecurityPolicy is composed; InternalIPs are included.",
			xr: func(spec map[string]any) {
				spec["policy"] = map[string]any{"name": "shared-edge"}
				spec["nodeSources"].([]any)[0].(map[string]any)["includeInternalIP"] = true
			},
			nodes: webNodes(3), internal: true, ipCount: 9, ruleCount: 1, unmatched: []any{},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := e.render(t, dir, xr(t, c.xr), addressSetYAML(t, c.nodes, c.internal))
			if r.err != nil {
				t.Fatalf("crossplane render: %v\n%s", r.err, r.stderr)
			}
			objs := decode(t, r.stdout)
			golden(t, name, objs)
			checkStatus(t, c.reason, objs, c.ipCount, c.ruleCount, c.unmatched)
			if st, reason, msg := platform.ConditionOf(objs[0], "Current"); st != "True" {
				t.Errorf("%s\nCurrent condition: %s %s %s, want True", c.reason, st, reason, msg)
			}
			e.validate(t, dir, objs)
		})
	}
}

func checkStatus(t *testing.T, reason string, objs []*unstructured.Unstructured, ipCount, ruleCount int64, unmatched []any) {
	t.Helper()
	if len(objs) == 0 || objs[0].GetKind() != "IPAllowlist" {
		t.Fatalf("render output does not start with the IPAllowlist")
	}
	status, _, _ := unstructured.NestedMap(objs[0].Object, "status")
	got := map[string]any{"ipCount": status["ipCount"], "ruleCount": status["ruleCount"], "unmatchedSources": status["unmatchedSources"]}
	// Numbers decode from the YAML output as float64.
	want := map[string]any{"ipCount": float64(ipCount), "ruleCount": float64(ruleCount), "unmatchedSources": unmatched}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s\nXR status: -want, +got:\n%s", reason, diff)
	}
	if n := int64(len(rules(objs))); n != ruleCount {
		t.Errorf("%s\n%d SecurityPolicyRules rendered, status.ruleCount says %d", reason, n, ruleCount)
	}
}

// testNodeReplaced renders 37 nodes, then renders again with one node replaced, feeding the
// first output back as the observed resources, as Crossplane would on its next reconcile.
func testNodeReplaced(t *testing.T, e *env) {
	dir := t.TempDir()

	before := webNodes(37)
	first := e.render(t, dir, xr(t, nil), addressSetYAML(t, before, false))
	if first.err != nil {
		t.Fatalf("crossplane render (37 nodes): %v\n%s", first.err, first.stderr)
	}
	firstObjs := decode(t, first.stdout)

	// The morning after: gke-prod-web-13 is gone, a new node with a new address took its place.
	after := append([]node{}, before...)
	after[13] = node{name: "gke-prod-web-37", pool: "web", external: "198.18.0.250", internal: "10.128.0.250"}
	second := e.render(t, dir, xr(t, nil), append(observedFrom(t, firstObjs), addressSetYAML(t, after, false)...))
	if second.err != nil {
		t.Fatalf("crossplane render (node replaced): %v\n%s", second.err, second.stderr)
	}
	secondObjs := decode(t, second.stdout)
	golden(t, "node-replaced", secondObjs)
	checkStatus(t, "node replaced", secondObjs, 40, 4, []any{})
	e.validate(t, dir, secondObjs)

	n := changedRules(rules(firstObjs), rules(secondObjs))
	t.Logf("rules changed when 1 of 37 nodes is replaced: %d of %d", n, len(rules(secondObjs)))
	if n != 1 {
		t.Errorf("replacing one node of 37 changed %d rules, want 1", n)
	}

	// Observed Ready, every composed resource is Ready, so function-auto-ready makes the XR Ready.
	if c := readyOf(secondObjs[0]); c != "True" {
		t.Errorf("XR Ready condition: %q, want True once every composed resource is Ready", c)
	}
}

// readyOf is the status of u's Ready condition.
func readyOf(u *unstructured.Unstructured) string {
	s, _ := platform.Condition(u, "Ready")
	return s
}

// testHeld checks the inputs the function cannot make into rules: it then composes the rules
// exactly as observed, marks them not Ready (so the XR is not Ready), and says why in the XR's
// Current condition.
func testHeld(t *testing.T, e *env) {
	// A live allowlist of 37 nodes, as the previous reconcile left it.
	dir := t.TempDir()
	live := e.render(t, dir, xr(t, nil), addressSetYAML(t, webNodes(37), false))
	if live.err != nil {
		t.Fatalf("crossplane render (37 nodes): %v\n%s", live.err, live.stderr)
	}
	liveObjs := decode(t, live.stdout)

	cases := map[string]struct {
		xr      func(spec map[string]any)
		nodes   []node
		wantMsg string
	}{
		"RequiredSelectorMatchesNothing": {
			xr:      func(spec map[string]any) { spec["nodeSources"].([]any)[0].(map[string]any)["required"] = true },
			wantMsg: `node source "pool-web": no address: 0 node(s) match labels {cloud.google.com/gke-nodepool=web}, and the source is required; the rules are left as they are`,
		},
		"PriorityRangeOverflow": {
			xr:      func(spec map[string]any) { spec["priorityRange"] = map[string]any{"first": 1000, "last": 1002} },
			nodes:   webNodes(38),
			wantMsg: "41 source ranges need 5 rules of 10, but priorityRange 1000-1002 reserves only 3: widen the range or remove sources",
		},
		"InvalidCIDR": {
			xr: func(spec map[string]any) {
				spec["staticSources"].([]any)[1].(map[string]any)["cidrs"] = []any{"198.51.100.300/28"}
			},
			nodes:   webNodes(1),
			wantMsg: `static source "office-berlin": "198.51.100.300/28" is not a valid CIDR`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := e.render(t, t.TempDir(), xr(t, tc.xr), append(observedFrom(t, liveObjs), addressSetYAML(t, tc.nodes, false)...))
			if r.err != nil {
				t.Fatalf("crossplane render: %v\n%s", r.err, r.stderr)
			}
			objs := decode(t, r.stdout)
			if diff := cmp.Diff(rules(liveObjs), rules(objs)); diff != "" {
				t.Errorf("held rules differ from the live ones: -live, +rendered:\n%s", diff)
			}
			if st, reason, msg := platform.ConditionOf(objs[0], "Current"); st != "False" || reason != "CannotCompose" || msg != tc.wantMsg {
				t.Errorf("Current condition: %s %s %q, want False, CannotCompose, %q", st, reason, msg, tc.wantMsg)
			}
			if c := readyOf(objs[0]); c == "True" {
				t.Errorf("XR Ready while its rules are held")
			}
		})
	}
}
