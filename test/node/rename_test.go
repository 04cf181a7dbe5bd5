package nodesuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// oldName is the name earlier READMEs installed the provider under, with a
// DeploymentRuntimeConfig, ServiceAccount and grant of the same name.
const oldName = "provider-cloudarmor"

// oldReadme are the install commands of the previous release's README.
var oldReadme = []string{
	"helm repo add crossplane-stable https://charts.crossplane.io/stable",
	"helm install crossplane crossplane-stable/crossplane --version 2.4.0 --namespace crossplane-system --create-namespace --wait",
	"kubectl apply -f provider-runtime.yaml",
	"crossplane xpkg install provider xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0 " + oldName + " --runtime-config=" + oldName + " --wait=5m",
	"crossplane xpkg install configuration xpkg.crossplane.io/armorplane/configuration-ipallowlist:v0.1.0 --wait=5m",
}

// moveSection is the heading of docs/allowlist.md's steps that move the
// provider to the name Crossplane's resolver derives.
const moveSection = "### Moving to the name Crossplane derives"

// TestMoveToDerivedName installs the previous release as its README said,
// under provider-cloudarmor, composes what TestUpgrade composes, and runs
// docs/allowlist.md's steps to the derived name as written. GCP is sampled
// throughout: no gap, no write; every object the composition made keeps its
// UID, every CRD of ours its UID; at the end one Provider,
// armorplane-provider-cloudarmor, Healthy, with its pod running as the
// ServiceAccount of that name.
func TestMoveToDerivedName(t *testing.T) {
	steps := moveSteps(t)
	tools := realNode(t, t.TempDir())
	root := repo.Root()
	previous := previousPackages(t, root)
	autoReadyBin, autoReadyMeta, err := stack.AutoReadyFiles(tools, os.Getenv("FUNCTION_AUTO_READY_BIN"))
	if err != nil {
		t.Fatal(err) // NODE_TEST=1 (realNode): a tool missing here is a failure, not a skip
	}
	opts := stack.Options{
		Tools:    tools,
		RepoRoot: previous, // the previous release's grant, under its own names
		Readme:   oldReadme,
		// The previous release knows no grant flags; this test's
		// ProviderConfigs are cluster-scoped and need none.
		PreviousRelease: true,
		Crossplane:      toolPath(t, "CROSSPLANE_BIN", "crossplane"),
		XpkgDir:         filepath.Join(previous, "xpkg"),
		Emulator:        envOr("NODE_EMULATOR_BIN", filepath.Join(root, "_output/bin/emulator")),
		EmulatorArgs:    []string{"--default-tier=CA_ENTERPRISE_PAYGO"},
		AutoReady:       autoReadyBin,
		AutoReadyMeta:   autoReadyMeta,
		Logf:            t.Logf,
	}
	lk := lockMachine(t)
	before := snapshot(t, tools.Debs)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var times []string
	lap := func(what string, since time.Time) {
		times = append(times, fmt.Sprintf("%-62s %s", what, time.Since(since).Round(10*time.Millisecond)))
	}
	start := time.Now()
	n, down := boot(ctx, t, tools, lk)
	defer down()
	lap("node up", start)
	opts.Cluster = n
	s := time.Now()
	in, err := stack.Install(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	lap("previous release installed as "+oldName+" (its README's commands)", s)
	emu, err := n.Forward("127.0.0.1:0", in.EmulatorIP+":8787")
	if err != nil {
		t.Fatal(err)
	}
	want := applyUpgradeXRs(ctx, t, n, emu)
	composed := map[string][]string{}
	for _, x := range upgradeXRs {
		composed[x.name] = ids(composedBy(ctx, t, n, x))
	}
	crds0 := ourCRDs(ctx, t, n)
	status0 := xrStatus(ctx, t, n)
	st0, err := emulatorState(emu)
	if err != nil {
		t.Fatal(err)
	}

	smp := startSampler(emu, want, st0.priorities())
	providers := watchProviders(ctx, n)
	s = time.Now()
	for _, step := range steps {
		w := time.Now()
		out, err := runStep(ctx, n, opts, step)
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, packageState(ctx, n))
		}
		lap(step.line, w)
		t.Logf("$ %s\n%s", step, strings.TrimSpace(out))
	}
	lap("docs/allowlist.md's steps, all", s)
	for _, x := range upgradeXRs {
		waitXRReady(ctx, t, n, x.name)
	}
	time.Sleep(10 * time.Second)
	res := smp.stop()
	pr := providers.stop()
	t.Logf("sampled the Providers %d times: at most %d at once (%s); the longest one was not Healthy: %s (%s)",
		pr.samples, pr.most, strings.Join(pr.names, ", "), pr.unhealthy.Round(100*time.Millisecond), pr.which)

	for _, x := range upgradeXRs {
		if diff := cmp.Diff(composed[x.name], ids(composedBy(ctx, t, n, x))); diff != "" {
			t.Errorf("what the composition made for %s, by UID, before and after the move (-before +after):\n%s", x.name, diff)
		}
	}
	if diff := cmp.Diff(crds0, ourCRDs(ctx, t, n)); diff != "" {
		t.Errorf("our CRDs, by UID, before and after the move (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(status0, xrStatus(ctx, t, n)); diff != "" {
		t.Errorf("the IPAllowlists' Ready and counts, before and after the move (-before +after):\n%s", diff)
	}
	checkMoved(ctx, t, n)
	st1, err := emulatorState(emu)
	if err != nil {
		t.Fatal(err)
	}
	checkUpgradeSamples(t, res)
	checkGCPKept(t, want, st0, st1)
	checkNoWrites(t, st0, st1)
	t.Logf("sampled GCP %d times every %s over %s: %d gap sample(s), %d sample(s) with a rule missing, %d failed read(s)",
		res.samples, sampleEvery, res.span.Round(100*time.Millisecond), res.gaps, res.ruleGone, res.errors)
	t.Logf("times:\n%s", strings.Join(times, "\n"))

	down()
	compare(t, before, snapshot(t, tools.Debs))
}

// docStep is one command of a document's shell block, with the text of its
// here-document (`<<'EOF'` … `EOF`) as standard input, if it has one.
type docStep struct {
	line, stdin string
}

func (s docStep) String() string {
	if s.stdin == "" {
		return s.line
	}
	return s.line + " <<'EOF'\n" + s.stdin + "EOF"
}

// hereDoc is how the docs open a here-document: quoted, so the shell
// expands nothing in it.
const hereDoc = " <<'EOF'"

// docSteps splits a shell block into its commands: backslash continuations
// joined, blank lines and comments dropped, and a here-document's lines
// (indentation kept) made the standard input of the command that opens it.
func docSteps(block string) ([]docStep, error) {
	var steps []docStep
	var plain []string // lines before the next here-document
	flush := func() {
		for _, l := range shellLines(strings.Join(plain, "\n")) {
			steps = append(steps, docStep{line: l})
		}
		plain = nil
	}
	lines := strings.Split(block, "\n")
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		cmd, ok := strings.CutSuffix(t, hereDoc)
		if !ok {
			plain = append(plain, lines[i])
			continue
		}
		flush()
		var in strings.Builder
		for i++; i < len(lines) && lines[i] != "EOF"; i++ {
			in.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%q: the here-document has no EOF line", t)
		}
		steps = append(steps, docStep{line: strings.Join(strings.Fields(cmd), " "), stdin: in.String()})
	}
	flush()
	return steps, nil
}

// moveSteps are docs/allowlist.md's steps, at the version the previous
// release is installed as.
func moveSteps(t *testing.T) []docStep {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repo.Root(), "docs/allowlist.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced(readmeSection(string(doc), moveSection))["sh"]
	if len(blocks) == 0 {
		t.Fatalf("docs/allowlist.md has no sh block under %q", moveSection)
	}
	steps, err := docSteps(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		steps[i].line = strings.ReplaceAll(steps[i].line, "vX.Y.Z", stack.PackageTag)
		steps[i].stdin = strings.ReplaceAll(steps[i].stdin, "vX.Y.Z", stack.PackageTag)
	}
	return steps
}

// runStep runs one step as a user would: kubectl against the node, the
// crossplane CLI with the node's client environment. provider-runtime.yaml
// is this checkout's; `kubectl apply -f -` reads the step's here-document.
func runStep(ctx context.Context, n *node.Node, o stack.Options, step docStep) (string, error) {
	args, err := shellWords(step.line)
	if err != nil {
		return "", err
	}
	if step.stdin != "" {
		if !slices.Equal(args, []string{"kubectl", "apply", "-f", "-"}) {
			return "", fmt.Errorf("%q: only kubectl apply -f - reads a here-document here", step.line)
		}
		return "applied from standard input", n.Apply(ctx, step.stdin)
	}
	switch args[0] {
	case "kubectl":
		if slices.Equal(args, []string{"kubectl", "apply", "-f", stack.ReadmeRuntimeFile}) {
			args[3] = filepath.Join(repo.Root(), rbac.ProviderRuntimeFile)
		}
		return n.Kubectl(ctx, args[1:]...)
	case "crossplane":
		cmd := exec.CommandContext(ctx, o.Crossplane, args[1:]...)
		cmd.Env = append(n.ClientEnv(), "HOME="+filepath.Join(n.WorkDir(), "client/home"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%w: %s", err, out)
		}
		return string(out), nil
	}
	return "", fmt.Errorf("no way to run %q", step.line)
}

// shellWords splits a command line as the shell does for what the docs
// use: words separated by blanks, single quotes kept literally.
func shellWords(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("\"$`\\|&;<>(){}*?", r):
			return nil, fmt.Errorf("%q: %q outside single quotes is not run here", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("%q: unterminated quote", line)
	}
	if inWord {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: nothing to run", line)
	}
	return out, nil
}

func ids(objs []kubeObject) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.id())
	}
	slices.Sort(out)
	return out
}

// ourCRDs lists the CRDs of our API groups by name and UID: one deleted
// and made again (which takes every object of its kind with it) has another.
func ourCRDs(ctx context.Context, t *testing.T, n *node.Node) []string {
	t.Helper()
	out, err := n.Kubectl(ctx, "get", "crds", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, _, _ := strings.Cut(l, " "); strings.HasSuffix(name, "armorplane.io") {
			crds = append(crds, l)
		}
	}
	if len(crds) == 0 {
		t.Fatal("no CRD of ours")
	}
	slices.Sort(crds)
	return crds
}

// checkMoved: one Provider, the derived name, Healthy and at the previous
// release; its pod runs as the ServiceAccount of that name; nothing of the
// old name is left.
func checkMoved(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	pkgs, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.spec.package} {.status.conditions[?(@.type=="Healthy")].status}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{rbac.ProviderName + "=xpkg.crossplane.io/armorplane/provider-cloudarmor:" + stack.PackageTag + " True"}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(pkgs), "\n")); diff != "" {
		t.Errorf("the Providers after the move (-want +got):\n%s", diff)
	}
	sa, err := n.Kubectl(ctx, "-n", "crossplane-system", "get", "pods", "-l", "pkg.crossplane.io/provider="+rbac.ProviderName,
		"-o", `jsonpath={range .items[*]}{.spec.serviceAccountName}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(sa); !slices.Equal(got, []string{rbac.ProviderName}) {
		t.Errorf("the provider pods run as %v, want one as %s", got, rbac.ProviderName)
	}
	left, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io,providerrevisions,deploymentruntimeconfigs,clusterroles,clusterrolebindings", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Fields(left) {
		if _, name, _ := strings.Cut(l, "/"); strings.HasPrefix(name, oldName) {
			t.Errorf("%s is left after the move", l)
		}
	}
}

// packageState is what a failed step leaves to read: the packages, their
// revisions' conditions, the runtime objects and Crossplane's own account.
func packageState(ctx context.Context, n *node.Node) string {
	var b strings.Builder
	for _, args := range [][]string{
		{"get", "pkg,pkgrev,pods", "-A", "-o", "wide"},
		{"get", "providerrevisions", "-o", `jsonpath={range .items[*]}{.metadata.name} desired={.spec.desiredState}{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}`},
		{"get", "deploy,sa,svc", "-n", "crossplane-system"},
		{"get", "events", "-n", "crossplane-system", "--sort-by=.lastTimestamp"},
		{"get", "events", "--sort-by=.lastTimestamp"},
		{"logs", "-n", "crossplane-system", "deploy/crossplane", "--tail=40"},
	} {
		out, err := n.Kubectl(ctx, args...)
		fmt.Fprintf(&b, "$ kubectl %s\n%s%v\n", strings.Join(args, " "), out, err)
	}
	return b.String()
}
