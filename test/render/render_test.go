// Package render tests the IPAllowlist Composition end to end with the real `crossplane render`:
// the crossplane CLI v2.5.0 drives the Crossplane core v2.4.0 render engine, which calls our
// function and function-auto-ready, both running here as local processes in Development mode.
// Outputs are compared with golden files (regenerate with -update) and validated with
// `crossplane resource validate` against the provider's CRDs and the IPAllowlist XRD.
//
// The function composes one SecurityPolicyAllowlist, which asks the provider to create the
// SecurityPolicy when the IPAllowlist's policy.create is true, and reports the allowlist's status
// on the IPAllowlist; with spec.attachTo, a SecurityPolicyAttachment per backend once the
// allowlist is Ready. What the provider does with the allowlist (the policy created, Nodes
// followed, ranges packed into rules of ten or an address group) is not rendered here: the
// observed allowlists these tests feed back carry a status as the provider writes it, and the
// provider's own tests cover how it computes it.
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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

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

// example returns the IPAllowlist of file, its spec changed by fn.
func example(t *testing.T, file string, fn func(spec map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
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

// xr returns examples/allowlist/ipallowlist.yaml, changed by fn.
func xr(t *testing.T, fn func(spec map[string]any)) []byte {
	t.Helper()
	return example(t, exampleFile, fn)
}

// withStatus returns the IPAllowlist xrYAML with status, as an earlier reconcile left it.
func withStatus(t *testing.T, xrYAML []byte, status map[string]any) []byte {
	t.Helper()
	u := map[string]any{}
	if err := yaml.Unmarshal(xrYAML, &u); err != nil {
		t.Fatal(err)
	}
	u["status"] = status
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

// renderOK renders and fails the test when `crossplane render` fails.
func (e *env) renderOK(t *testing.T, dir string, xrYAML, observed []byte, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	r := e.render(t, dir, xrYAML, observed, extra...)
	if r.err != nil {
		t.Fatalf("crossplane render: %v\n%s", r.err, r.stderr)
	}
	objs := decode(t, r.stdout)
	if len(objs) == 0 || objs[0].GetKind() != "IPAllowlist" {
		t.Fatalf("render output does not start with the IPAllowlist:\n%s", r.stdout)
	}
	return objs
}

// resourceNameAnnotation names a composed resource in its composition.
const resourceNameAnnotation = "crossplane.io/composition-resource-name"

// composed returns the rendered composed resources, keyed by composition resource name.
func composed(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs[1:] { // objs[0] is the XR
		if o.GetKind() != "Result" {
			out[o.GetAnnotations()[resourceNameAnnotation]] = o
		}
	}
	return out
}

// kinds counts the rendered composed resources of each kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range composed(objs) {
		out[o.GetKind()]++
	}
	return out
}

// allowlist is the rendered SecurityPolicyAllowlist (composition resource name allowlist).
func allowlist(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	a, ok := composed(objs)["allowlist"]
	if !ok || a.GetKind() != "SecurityPolicyAllowlist" {
		t.Fatalf("no SecurityPolicyAllowlist composed as resource allowlist")
	}
	return a
}

// specOf is o's spec.
func specOf(o *unstructured.Unstructured) map[string]any {
	s, _, _ := unstructured.NestedMap(o.Object, "spec")
	return s
}

// fromYAML parses a YAML literal, numbers as float64, as rendered objects hold them.
func fromYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// statusOf is the XR's status fields but its conditions.
func statusOf(xr *unstructured.Unstructured) map[string]any {
	s, _, _ := unstructured.NestedMap(xr.Object, "status")
	delete(s, "conditions")
	return s
}

// readyOf is the status of u's Ready condition.
func readyOf(u *unstructured.Unstructured) string {
	s, _ := platform.Condition(u, "Ready")
	return s
}

// warnings are the messages of our function's rendered Warning results.
func warnings(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Result" && o.Object["severity"] == "Warning" {
			m, _ := o.Object["message"].(string)
			out = append(out, strings.TrimPrefix(m, `Pipeline step "allowlist": `))
		}
	}
	sort.Strings(out)
	return out
}

// want is what a render should say on the XR.
type want struct {
	// status is the XR's status but its conditions; nil for none.
	status map[string]any
	// current, reason and message are the XR's Current condition; message "" is not checked.
	current, reason, message string
	// ready is the XR's Ready condition status.
	ready string
	// warnings are our function's Warning results, in any order.
	warnings []string
}

func (w want) check(t *testing.T, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	xr := objs[0]
	if diff := cmp.Diff(w.status, statusOf(xr), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s\nXR status: -want, +got:\n%s", what, diff)
	}
	st, reason, msg := platform.ConditionOf(xr, "Current")
	if st != w.current || reason != w.reason || (w.message != "" && msg != w.message) {
		t.Errorf("%s\nXR Current condition: %s %s %q, want %s %s %q", what, st, reason, msg, w.current, w.reason, w.message)
	}
	if r := readyOf(xr); r != w.ready {
		_, msg := platform.Condition(xr, "Ready")
		t.Errorf("%s\nXR Ready condition: %s (%s), want %s", what, r, msg, w.ready)
	}
	wantWarnings := append([]string{}, w.warnings...)
	sort.Strings(wantWarnings)
	if diff := cmp.Diff(wantWarnings, warnings(objs), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s\nwarnings: -want, +got:\n%s", what, diff)
	}
}

// pending is the XR's Current condition until its allowlist has reported on its spec.
const pending = "waiting for the SecurityPolicyAllowlist to report on its spec"

// report is a SecurityPolicyAllowlist's status as the provider writes it.
type report struct {
	// generation is the allowlist's metadata.generation (1 when 0); observedGeneration the
	// generation its status is about (generation when 0).
	generation, observedGeneration int64

	ipCount, ruleCount  int64
	addressGroup        string
	unmatched, warnings []string

	// current, reason and message are its Current condition: "True" or "False".
	current, reason, message string
	// notInGCP counts the rules or groups GCP does not have yet: a Current allowlist is then
	// Ready=False Creating, as the provider says before its objects are first in GCP.
	notInGCP int
	// missing counts the ranges GCP is not confirmed to hold: rangesInGCP is ipCount less them.
	missing int64
}

// transition is the lastTransitionTime of the conditions of observed resources.
const transition = "2026-01-01T00:00:00Z"

func (r report) status() (generation int64, status map[string]any) {
	generation = r.generation
	if generation == 0 {
		generation = 1
	}
	observed := r.observedGeneration
	if observed == 0 {
		observed = generation
	}
	cond := func(typ, status, reason, message string) map[string]any {
		c := map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": transition, "observedGeneration": observed}
		if message != "" {
			c["message"] = message
		}
		return c
	}
	// The provider's Ready: False with Current's reason unless Current is True, then Available
	// once GCP has every rule and group.
	ready := cond("Ready", "False", r.reason, r.message)
	if r.current == "True" {
		ready = cond("Ready", "True", "Available", "")
		if r.notInGCP > 0 {
			ready = cond("Ready", "False", "Creating", fmt.Sprintf("%d rule(s) or group(s) are not in GCP yet", r.notInGCP))
		}
	}
	status = map[string]any{
		"observedGeneration": observed,
		"conditions": []any{
			cond("Current", r.current, r.reason, r.message),
			ready,
			cond("Synced", "True", "ReconcileSuccess", ""),
		},
	}
	if r.ipCount != 0 {
		status["ipCount"] = r.ipCount
	}
	if in := r.ipCount - r.missing; in != 0 {
		status["rangesInGCP"] = in
	}
	if r.ruleCount != 0 {
		status["ruleCount"] = r.ruleCount
	}
	if r.addressGroup != "" {
		status["addressGroup"] = r.addressGroup
	}
	if len(r.unmatched) > 0 {
		status["unmatchedSources"] = r.unmatched
	}
	if len(r.warnings) > 0 {
		status["warnings"] = r.warnings
	}
	return generation, status
}

// observedFrom turns a render's composed resources into what Crossplane observes on its next
// reconcile: each Ready and Synced, but the SecurityPolicyAllowlist, whose status is rep (none
// when nil: the provider has not reported on it yet).
func observedFrom(t *testing.T, objs []*unstructured.Unstructured, rep *report) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs[1:] { // objs[0] is the XR
		if o.GetKind() == "Result" {
			continue
		}
		o = o.DeepCopy()
		if o.GetKind() == "SecurityPolicyAllowlist" {
			o.SetGeneration(1)
			if rep != nil {
				gen, status := rep.status()
				o.SetGeneration(gen)
				o.Object["status"] = status
			}
		} else {
			conds := []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": transition},
				map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": transition},
			}
			if err := unstructured.SetNestedSlice(o.Object, conds, "status", "conditions"); err != nil {
				t.Fatal(err)
			}
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

// TestRender starts the two functions once and renders the example IPAllowlist against them.
func TestRender(t *testing.T) {
	e := setup(t)
	t.Run("FirstPass", func(t *testing.T) { testFirstPass(t, e) })
	t.Run("AllowlistReports", func(t *testing.T) { testAllowlistReports(t, e) })
	t.Run("ExistingPolicy", func(t *testing.T) { testExistingPolicy(t, e) })
	t.Run("Upgrade", func(t *testing.T) { testUpgrade(t, e) })
	t.Run("AttachTo", func(t *testing.T) { testAttachTo(t, e) })
}

// exampleAllowlistSpec is the spec of the example's SecurityPolicyAllowlist.
const exampleAllowlistSpec = `
securityPolicy: web-allowlist
createPolicy: {defaultAction: deny(403), description: Offices and the web node pool}
priorityRange: {first: 1000, last: 1099}
ruleDescription: IPAllowlist default/web
mode: rules
sources:
- name: office-paris
  cidrs: [203.0.113.0/26, "2001:db8:10::/48"]
- name: office-berlin
  cidrs: [198.51.100.32/28]
- name: pool-web
  nodes:
    matchLabels: {cloud.google.com/gke-nodepool: web}
`

// testFirstPass renders the example XR before anything exists: the function composes the
// allowlist alone, which carries the policy to create, and says it waits for the allowlist to
// report.
func testFirstPass(t *testing.T, e *env) {
	dir := t.TempDir()
	objs := e.renderOK(t, dir, xr(t, nil), nil)
	golden(t, "first-pass", objs)
	e.validate(t, dir, objs)
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1}, kinds(objs)); diff != "" {
		t.Errorf("composed resources by kind: -want, +got:\n%s", diff)
	}
	a := allowlist(t, objs)
	if a.GetName() != "web" {
		t.Errorf("allowlist named %q, want web, the XR's name", a.GetName())
	}
	if diff := cmp.Diff(fromYAML(t, exampleAllowlistSpec), specOf(a)); diff != "" {
		t.Errorf("allowlist spec: -want, +got:\n%s", diff)
	}
	want{current: "False", reason: "SourcesPending", message: pending, ready: "False"}.check(t, "first pass", objs)
}

// composedMsg is the example allowlist's Current message once its ranges are in its rules.
const composedMsg = "every source's ranges are in the allow rules of policy web-allowlist, priorities 1000-1099"

// reportedStatus is the example XR's status once its allowlist reported 40 ranges in 4 rules.
func reportedStatus() map[string]any {
	return map[string]any{"ipCount": float64(40), "ruleCount": float64(4), "unmatchedSources": []any{}, "policyName": "web-allowlist"}
}

// testAllowlistReports renders the example XR over its allowlist as the provider reports on it:
// its counts become the XR's status and its Current condition the XR's, whatever its reason.
func testAllowlistReports(t *testing.T, e *env) {
	skipped := `node source "pool-web": 1 node(s) left out, the others kept: gke-prod-web-37 (no ExternalIP address)`
	held := `node source "pool-web": AddressSet web-nodes-pool-web: holding back a shrink from 37 to 30 addresses, seen since 2026-01-01T00:00:00Z: applied at 2026-01-01T00:10:00Z unless the Nodes come back; shrinkHoldSeconds: 0 applies shrinks at once`
	overflow := "41 source ranges need 5 rules of 10, but priorityRange 1000-1002 reserves only 3: widen the range or remove sources"
	cases := map[string]struct {
		reason string
		xr     func(spec map[string]any)
		// xrStatus is the XR's status before the render.
		xrStatus map[string]any
		rep      *report
		want     want
	}{
		"allowlist-created": {
			reason: "The allowlist exists, and the provider has not written its status yet: the XR waits.",
			want:   want{current: "False", reason: "SourcesPending", message: pending, ready: "False"},
		},
		"allowlist-composed": {
			reason: "37 Nodes and three office ranges: 40 ranges in 4 rules, a skipped Node warned of; the XR is Current and Ready.",
			rep:    &report{ipCount: 40, ruleCount: 4, warnings: []string{skipped}, current: "True", reason: "Composed", message: composedMsg},
			want: want{status: reportedStatus(), current: "True", reason: "Composed", message: composedMsg, ready: "True",
				warnings: []string{skipped}},
		},
		"allowlist-unmatched": {
			reason: "No Node of pool web: the offices alone, pool-web unmatched (an optional source).",
			rep: &report{ipCount: 3, ruleCount: 1, unmatched: []string{"pool-web"},
				warnings: []string{`node source "pool-web": no address: 0 node(s) match labels {cloud.google.com/gke-nodepool=web}`},
				current:  "True", reason: "Composed", message: composedMsg},
			want: want{
				status:  map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{"pool-web"}, "policyName": "web-allowlist"},
				current: "True", reason: "Composed", ready: "True",
				warnings: []string{`node source "pool-web": no address: 0 node(s) match labels {cloud.google.com/gke-nodepool=web}`},
			},
		},
		"allowlist-source-held": {
			reason:   "The AddressSet holds back a shrink: GCP follows what it publishes, the XR says so and is not Ready.",
			xrStatus: reportedStatus(),
			rep:      &report{ipCount: 40, ruleCount: 4, current: "False", reason: "SourceHeld", message: held},
			want:     want{status: reportedStatus(), current: "False", reason: "SourceHeld", message: held, ready: "False"},
		},
		"allowlist-cannot-compose": {
			reason:   "The priority range narrowed below what the ranges need: GCP keeps its 4 rules, the XR says why and is not Ready.",
			xr:       func(spec map[string]any) { spec["priorityRange"] = map[string]any{"first": 1000, "last": 1002} },
			xrStatus: reportedStatus(),
			rep:      &report{generation: 2, ipCount: 40, ruleCount: 4, current: "False", reason: "CannotCompose", message: overflow},
			want:     want{status: reportedStatus(), current: "False", reason: "CannotCompose", message: overflow, ready: "False", warnings: []string{overflow}},
		},
		"allowlist-not-reported-on-generation": {
			reason: "The allowlist's spec changed (generation 2) and its status is still about generation 1: the XR keeps its status " +
				"and waits; the allowlist stays Ready meanwhile, and so does the XR.",
			xrStatus: reportedStatus(),
			rep: &report{generation: 2, observedGeneration: 1, ipCount: 3, ruleCount: 1, current: "True", reason: "Composed",
				message: composedMsg},
			want: want{status: reportedStatus(), current: "False", reason: "SourcesPending", message: pending, ready: "True"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			first := e.renderOK(t, dir, xr(t, tc.xr), nil)
			in := xr(t, tc.xr)
			if tc.xrStatus != nil {
				in = withStatus(t, in, tc.xrStatus)
			}
			objs := e.renderOK(t, dir, in, observedFrom(t, first, tc.rep))
			golden(t, name, objs)
			e.validate(t, dir, objs)
			tc.want.check(t, tc.reason, objs)
			if diff := cmp.Diff(specOf(allowlist(t, first)), specOf(allowlist(t, objs))); diff != "" {
				t.Errorf("%s\nthe allowlist's status changed its spec: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}

// testExistingPolicy renders the example XR naming an existing policy, with InternalIPs: the
// allowlist names the policy by GCP name only, asks for no policy to be created, and passes
// includeInternalIP on.
func testExistingPolicy(t *testing.T, e *env) {
	dir := t.TempDir()
	spec := func(spec map[string]any) {
		spec["policy"] = map[string]any{"name": "shared-edge"}
		spec["nodeSources"].([]any)[0].(map[string]any)["includeInternalIP"] = true
	}
	first := e.renderOK(t, dir, xr(t, spec), nil)
	msg := "every source's ranges are in the allow rules of policy shared-edge, priorities 1000-1099"
	objs := e.renderOK(t, dir, xr(t, spec), observedFrom(t, first, &report{ipCount: 9, ruleCount: 1, current: "True", reason: "Composed", message: msg}))
	golden(t, "existing-policy-internal-ips", objs)
	e.validate(t, dir, objs)
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1}, kinds(objs)); diff != "" {
		t.Errorf("composed resources by kind: -want, +got:\n%s", diff)
	}
	wantSpec := fromYAML(t, exampleAllowlistSpec)
	wantSpec["securityPolicy"] = "shared-edge"
	delete(wantSpec, "createPolicy")
	wantSpec["sources"].([]any)[2].(map[string]any)["nodes"].(map[string]any)["includeInternalIP"] = true
	if diff := cmp.Diff(wantSpec, specOf(allowlist(t, objs))); diff != "" {
		t.Errorf("allowlist spec: -want, +got:\n%s", diff)
	}
	want{
		status:  map[string]any{"ipCount": float64(9), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "shared-edge"},
		current: "True", reason: "Composed", message: msg, ready: "True",
	}.check(t, "existing policy", objs)
}

// earlierComposition is what earlier versions of the function composed for the example, as
// Crossplane observes it: the SecurityPolicy, one of its four rules and the AddressSet of
// pool-web.
const earlierComposition = `---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  annotations:
    crossplane.io/composition-resource-name: policy
  labels:
    crossplane.io/composite: web
  name: web-allowlist
  namespace: default
spec:
  forProvider:
    defaultRule:
      action: deny(403)
    description: Offices and the web node pool
status:
  conditions:
  - {type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Synced, status: "True", reason: ReconcileSuccess, lastTransitionTime: "2026-01-01T00:00:00Z"}
---
apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata:
  annotations:
    crossplane.io/composition-resource-name: rule-1000
  labels:
    crossplane.io/composite: web
  name: web-1000
  namespace: default
spec:
  forProvider:
    action: allow
    description: IPAllowlist default/web
    match:
      config:
        srcIpRanges: [198.18.0.10/32, 198.18.0.11/32, 198.18.0.12/32, 198.18.0.13/32, 198.18.0.14/32,
          198.18.0.15/32, 198.18.0.16/32, 198.18.0.17/32, 198.18.0.18/32, 198.18.0.19/32]
      versionedExpr: SRC_IPS_V1
    priority: 1000
    securityPolicyRef:
      name: web-allowlist
status:
  conditions:
  - {type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Synced, status: "True", reason: ReconcileSuccess, lastTransitionTime: "2026-01-01T00:00:00Z"}
---
apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: AddressSet
metadata:
  annotations:
    crossplane.io/composition-resource-name: nodes-pool-web
  labels:
    crossplane.io/composite: web
  name: web-nodes-pool-web
  namespace: default
  generation: 1
spec:
  nodes:
    matchLabels:
      cloud.google.com/gke-nodepool: web
status:
  addresses: [198.18.0.10, 198.18.0.11, 198.18.0.12]
  addressCount: 3
  nodeCount: 3
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Synced, status: "True", reason: ReconcileSuccess, lastTransitionTime: "2026-01-01T00:00:00Z"}
`

// testUpgrade renders the example XR over what earlier versions of the function composed: its
// policy, rule and AddressSet are composed again exactly as they are, beside the allowlist that
// now carries the policy to create, until the provider adopts them, so an upgrade deletes
// nothing in GCP.
func testUpgrade(t *testing.T, e *env) {
	dir := t.TempDir()
	earlier := decode(t, []byte(earlierComposition))
	first := e.renderOK(t, dir, xr(t, nil), nil)

	for _, step := range []struct {
		golden string
		rep    *report
		want   want
	}{
		{
			golden: "upgrade",
			want:   want{status: reportedStatus(), current: "False", reason: "SourcesPending", message: pending, ready: "False"},
		},
		{
			// The allowlist reports before it has adopted the policy, the rule and the AddressSet.
			rep:  &report{ipCount: 40, ruleCount: 4, current: "True", reason: "Composed", message: composedMsg},
			want: want{status: reportedStatus(), current: "True", reason: "Composed", message: composedMsg, ready: "True"},
		},
	} {
		observed := []byte(earlierComposition)
		if step.rep != nil {
			observed = append(observed, observedFrom(t, []*unstructured.Unstructured{first[0], allowlist(t, first)}, step.rep)...)
		}
		objs := e.renderOK(t, dir, withStatus(t, xr(t, nil), reportedStatus()), observed)
		if step.golden != "" {
			golden(t, step.golden, objs)
		}
		e.validate(t, dir, objs)
		what := "upgrade, allowlist not reported"
		if step.rep != nil {
			what = "upgrade, allowlist reported"
		}
		step.want.check(t, what, objs)
		got := composed(objs)
		for _, o := range earlier {
			name := o.GetAnnotations()[resourceNameAnnotation]
			r, ok := got[name]
			if !ok {
				t.Errorf("%s: %s of the earlier composition not composed: Crossplane would delete it", what, name)
				continue
			}
			if r.GetAPIVersion() != o.GetAPIVersion() || r.GetKind() != o.GetKind() || r.GetName() != o.GetName() {
				t.Errorf("%s: %s composed as %s %s %s, want %s %s %s", what, name, r.GetAPIVersion(), r.GetKind(), r.GetName(), o.GetAPIVersion(), o.GetKind(), o.GetName())
			}
			if diff := cmp.Diff(specOf(o), specOf(r)); diff != "" {
				t.Errorf("%s: %s of the earlier composition changed: -observed, +rendered:\n%s", what, name, diff)
			}
		}
		if diff := cmp.Diff(map[string]int{"SecurityPolicy": 1, "SecurityPolicyAllowlist": 1, "SecurityPolicyRule": 1, "AddressSet": 1}, kinds(objs)); diff != "" {
			t.Errorf("%s: composed resources by kind: -want, +got:\n%s", what, diff)
		}
		if diff := cmp.Diff(fromYAML(t, exampleAllowlistSpec), specOf(allowlist(t, objs))); diff != "" {
			t.Errorf("%s: allowlist spec: -want, +got:\n%s", what, diff)
		}
	}
}

// testAttachTo renders the example XR naming a backend service, over three reconciles: the
// allowlist alone until it is Ready (a policy attached before its allow rules would deny the
// sources it lists), then its SecurityPolicyAttachment, then the XR Attached and Ready once
// the attachment is.
func testAttachTo(t *testing.T, e *env) {
	dir := t.TempDir()
	spec := func(spec map[string]any) { spec["attachTo"] = []any{map[string]any{"backendService": "web-frontend"}} }
	rep := &report{ipCount: 40, ruleCount: 4, current: "True", reason: "Composed", message: composedMsg}
	attached := func(objs []*unstructured.Unstructured) (status, reason, message string) {
		return platform.ConditionOf(objs[0], "Attached")
	}

	first := e.renderOK(t, dir, xr(t, spec), nil)
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1}, kinds(first)); diff != "" {
		t.Errorf("first pass: composed resources by kind: -want, +got:\n%s", diff)
	}
	if st, reason, _ := attached(first); st != "False" || reason != "Attaching" {
		t.Errorf("first pass: XR Attached=%s %s, want False Attaching", st, reason)
	}
	// Ready, but GCP is not confirmed to hold every range yet: still no attachment.
	partial := *rep
	partial.missing = 1
	waiting := e.renderOK(t, dir, withStatus(t, xr(t, spec), reportedStatus()), observedFrom(t, first, &partial))
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1}, kinds(waiting)); diff != "" {
		t.Errorf("allowlist Ready, a range not in GCP: composed resources by kind: -want, +got:\n%s", diff)
	}

	second := e.renderOK(t, dir, withStatus(t, xr(t, spec), reportedStatus()), observedFrom(t, first, rep))
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1, "SecurityPolicyAttachment": 1}, kinds(second)); diff != "" {
		t.Errorf("allowlist Ready: composed resources by kind: -want, +got:\n%s", diff)
	}
	a, ok := composed(second)["attachment-backendService-web-frontend"]
	if !ok {
		t.Fatalf("no attachment composed as resource attachment-backendService-web-frontend")
	}
	wantSpec := fromYAML(t, `
forProvider:
  securityPolicy: web-allowlist
  target: {kind: BackendService, name: web-frontend}
  field: securityPolicy
`)
	if diff := cmp.Diff(wantSpec, specOf(a)); diff != "" {
		t.Errorf("attachment spec: -want, +got:\n%s", diff)
	}
	if readyOf(second[0]) == "True" {
		t.Errorf("allowlist Ready, attachment not yet: the XR is Ready")
	}

	objs := e.renderOK(t, dir, withStatus(t, xr(t, spec), reportedStatus()), observedFrom(t, second, rep))
	golden(t, "attached", objs)
	e.validate(t, dir, objs)
	want{status: reportedStatus(), current: "True", reason: "Composed", message: composedMsg, ready: "True"}.check(t, "attached", objs)
	if st, reason, msg := attached(objs); st != "True" || reason != "Attached" || msg != "backend service web-frontend names policy web-allowlist" {
		t.Errorf("XR Attached=%s %s %q, want True Attached", st, reason, msg)
	}
}
