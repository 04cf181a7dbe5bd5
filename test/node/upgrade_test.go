package nodesuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// upgradeTag is the version the packages of this checkout are published as,
// beside the previous release's stack.PackageTag.
const upgradeTag = "v0.2.0"

const (
	upgradeNS      = "upgrade"
	labelAllowlist = "cloudarmor.armorplane.io/allowlist"
	// sampleEvery is how often the sampler reads GCP during the upgrade.
	sampleEvery = 150 * time.Millisecond
)

// upgradeXR is one IPAllowlist the previous release composes.
type upgradeXR struct {
	name, policy string
	first, last  int
	group        string // the address group, in mode addressGroup
	cidrs        []string
	// rules are the SecurityPolicyRules the previous release composes.
	rules int
}

// upgradeXRs: rules mode with four rules of ten (35 CIDRs and the node), and
// addressGroup mode (a group and the rule that allows it).
var upgradeXRs = []upgradeXR{
	{name: "offices", policy: "upgrade-rules", first: 1000, last: 1099, cidrs: addresses("198.51.100.%d/32", 35), rules: 4},
	{name: "pool", policy: "upgrade-group", first: 2000, last: 2009, group: "upgrade-pool", cidrs: addresses("192.0.2.%d/32", 12), rules: 1},
}

func addresses(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i+1)
	}
	return out
}

func (x upgradeXR) manifest() string {
	mode := ""
	if x.group != "" {
		mode = fmt.Sprintf("  mode: addressGroup\n  addressGroup: {name: %s, capacity: 100}\n", x.group)
	}
	return fmt.Sprintf(`apiVersion: platform.armorplane.io/v1alpha1
kind: IPAllowlist
metadata: {name: %s, namespace: %s}
spec:
  policy: {name: %s, create: true, defaultAction: deny(403)}
  priorityRange: {first: %d, last: %d}
  providerConfigRef: {kind: ClusterProviderConfig, name: emulator}
%s  staticSources:
  - {name: partners, cidrs: [%s]}
  nodeSources:
  - {name: node-0, matchLabels: {kubernetes.io/hostname: node-0}, includeInternalIP: true}
`, x.name, upgradeNS, x.policy, x.first, x.last, mode, strings.Join(x.cidrs, ", "))
}

var upgradeSetup = `apiVersion: v1
kind: Secret
metadata: {name: emulator-token, namespace: crossplane-system}
stringData: {token: ` + emulatorToken + `}
---
apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: emulator}
spec:
  projectID: ` + project + `
  endpoint: ` + stack.EmulatorEndpoint + `
  credentials:
    source: AccessToken
    secretRef: {namespace: crossplane-system, name: emulator-token, key: token}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + upgradeNS + `}
`

// TestUpgrade upgrades in place, as CHANGELOG.md tells a user to, from the
// previous release (hack/xpkg-previous.sh), whose function composed every
// rule, group and AddressSet itself, to this checkout's packages, whose
// function composes one SecurityPolicyAllowlist that adopts them. The
// previous release is installed with README.md's commands, under the names
// they give. GCP is sampled throughout: every address must stay allowed in
// every sample, no rule may be removed, and the same objects (by UID) must
// end up the allowlist's. The Providers are sampled too: one, never a
// second, and never other than Healthy for longer than a revision roll takes.
// Nothing is deleted by hand.
func TestUpgrade(t *testing.T) {
	tools := realNode(t, t.TempDir())
	root := repo.Root()
	previous := previousPackages(t, root)
	autoReadyBin, autoReadyMeta, err := stack.AutoReadyFiles(tools, os.Getenv("FUNCTION_AUTO_READY_BIN"))
	if err != nil {
		t.Fatal(err) // NODE_TEST=1 (realNode): a tool missing here is a failure, not a skip
	}
	opts := stack.Options{
		Tools: tools,
		// The previous release's grant: the upgrade applies this checkout's.
		RepoRoot:   previousGrant(t, previous),
		Crossplane: toolPath(t, "CROSSPLANE_BIN", "crossplane"),
		XpkgDir:    filepath.Join(previous, "xpkg"),
		Emulator:   envOr("NODE_EMULATOR_BIN", filepath.Join(root, "_output/bin/emulator")),
		// Address groups need Cloud Armor Enterprise.
		EmulatorArgs:  []string{"--default-tier=CA_ENTERPRISE_PAYGO"},
		AutoReady:     autoReadyBin,
		AutoReadyMeta: autoReadyMeta,
		Logf:          t.Logf,
		// The previous release knows no grant flags; this test's
		// ProviderConfigs are cluster-scoped and need none.
		PreviousRelease: true,
	}
	newXpkg := envOr("NODE_XPKG_DIR", filepath.Join(root, "_output/xpkg"))
	for _, p := range stack.Packages {
		if _, err := os.Stat(filepath.Join(newXpkg, p.File)); err != nil {
			t.Fatalf("%v: run `make xpkg` (PLATFORMS=linux/amd64 is enough)", err)
		}
	}
	lk := lockMachine(t)
	before := snapshot(t, tools.Debs)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
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
	lap("previous release installed (README's commands)", s)
	emu, err := n.Forward("127.0.0.1:0", in.EmulatorIP+":8787")
	if err != nil {
		t.Fatal(err)
	}

	s = time.Now()
	want := applyUpgradeXRs(ctx, t, n, emu)
	lap("previous release: IPAllowlists Ready, GCP allows every address", s)
	composed := map[string][]kubeObject{}
	for _, x := range upgradeXRs {
		composed[x.name] = composedBy(ctx, t, n, x)
	}
	status0 := xrStatus(ctx, t, n)
	st0, err := emulatorState(emu)
	if err != nil {
		t.Fatal(err)
	}

	smp := startSampler(emu, want, st0.priorities())
	providers := watchProviders(ctx, n)
	s = time.Now()
	upgrade(ctx, t, n, opts, newXpkg, lap)
	for _, x := range upgradeXRs {
		w := time.Now()
		waitAdopted(ctx, t, n, x, composed[x.name])
		lap("adopted by its SecurityPolicyAllowlist, Ready: "+x.name, w)
	}
	lap("upgrade, from the first push to every object adopted", s)
	checkPackages(ctx, t, n)
	time.Sleep(10 * time.Second)
	res := smp.stop()
	checkProviders(t, providers.stop())
	if diff := cmp.Diff(status0, xrStatus(ctx, t, n)); diff != "" {
		t.Errorf("the IPAllowlists' Ready and counts, before and after the upgrade (-before +after):\n%s", diff)
	}

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

// checkPackages: one provider and one function of ours, at upgradeTag.
func checkPackages(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	pkgs, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io,functions.pkg.crossplane.io", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.spec.package}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	want := sortedCopy([]string{
		"armorplane-function-ipallowlist=xpkg.crossplane.io/armorplane/function-ipallowlist:" + upgradeTag,
		"crossplane-contrib-function-auto-ready=xpkg.crossplane.io/" + stack.AutoReadyRepo + ":" + stack.AutoReadyTag,
		rbac.ProviderName + "=xpkg.crossplane.io/armorplane/provider-cloudarmor:" + upgradeTag,
	})
	if diff := cmp.Diff(want, sortedCopy(strings.Fields(pkgs))); diff != "" {
		t.Errorf("the providers and functions after the upgrade (-want +got):\n%s", diff)
	}
}

// checkGCPKept: GCP allows what it allowed before the upgrade, in rules at
// the same priorities.
func checkGCPKept(t *testing.T, want map[string][]string, before, after emulatorStats) {
	t.Helper()
	if diff := cmp.Diff(before.allowedBy(want), after.allowedBy(want)); diff != "" {
		t.Errorf("what GCP allows, before and after the upgrade (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.priorities(), after.priorities()); diff != "" {
		t.Errorf("the rules in GCP, before and after the upgrade (-before +after):\n%s", diff)
	}
}

// checkNoWrites: the adopted objects already hold the ranges, so the upgrade
// writes nothing to GCP (docs/allowlist.md), least of all a removal.
func checkNoWrites(t *testing.T, before, after emulatorStats) {
	t.Helper()
	writes := after.writesSince(before)
	t.Logf("GCP calls that wrote during the upgrade: %v (%d mutations)", writes, after.Mutations-before.Mutations)
	for m := range writes {
		if removes(m) {
			t.Errorf("the upgrade called %s %d time(s): a rule, group or policy was removed", m, writes[m])
		}
	}
	if d := after.Mutations - before.Mutations; d != 0 {
		t.Errorf("the upgrade wrote to GCP %d time(s), want none: %v", d, writes)
	}
}

// previousPackages is the cache folder of the previous release's packages,
// built once by hack/xpkg-previous.sh (which names the release).
func previousPackages(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack/xpkg-previous.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/xpkg-previous.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// upgrade publishes this checkout's packages as upgradeTag and upgrades as
// CHANGELOG.md says: this release's grant first, then the provider, the
// function (a dependency Crossplane does not upgrade by itself) and the
// Configuration, each by its package reference.
func upgrade(ctx context.Context, t *testing.T, n *node.Node, o stack.Options, xpkg string, lap func(string, time.Time)) {
	t.Helper()
	s := time.Now()
	o.XpkgDir = xpkg
	if err := stack.PushPackages(ctx, o, upgradeTag); err != nil {
		t.Fatal(err)
	}
	lap("new packages pushed (crossplane xpkg push)", s)
	s = time.Now()
	if _, err := n.Kubectl(ctx, "apply", "-f", filepath.Join(repo.Root(), rbac.ProviderRuntimeFile)); err != nil {
		t.Fatal(err)
	}
	lap("kubectl apply -f provider-runtime.yaml (this release's grant)", s)
	for _, p := range []struct{ kind, name, repo string }{
		{"providers.pkg.crossplane.io", rbac.ProviderName, stack.Packages[0].Repo},
		{"functions.pkg.crossplane.io", "armorplane-function-ipallowlist", stack.Packages[1].Repo},
		{"configurations.pkg.crossplane.io", "armorplane-configuration-ipallowlist", stack.Packages[2].Repo},
	} {
		s := time.Now()
		ref := "xpkg.crossplane.io/" + p.repo + ":" + upgradeTag
		patch := fmt.Sprintf(`{"spec":{"package":%q}}`, ref)
		if _, err := n.Kubectl(ctx, "patch", p.kind, p.name, "--type=merge", "-p", patch); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, p.kind+" "+p.name+" at "+upgradeTag+", Healthy", 5*time.Minute, func() error {
			out, err := n.Kubectl(ctx, "get", p.kind, p.name, "-o",
				`jsonpath={.status.currentIdentifier} {.status.conditions[?(@.type=="Installed")].status} {.status.conditions[?(@.type=="Healthy")].status}`)
			if err != nil {
				return err
			}
			if f := strings.Fields(out); len(f) != 3 || !strings.HasSuffix(f[0], ":"+upgradeTag) || f[1] != "True" || f[2] != "True" {
				return fmt.Errorf("identifier, Installed, Healthy: %s", out)
			}
			return nil
		})
		lap(p.kind+" upgraded and Healthy", s)
	}
}

// checkProviders: from the first push to the end, one Provider at a time,
// the one README.md names, and never unhealthy for longer than a revision
// roll takes.
func checkProviders(t *testing.T, r providerReport) {
	t.Helper()
	t.Logf("sampled the Providers %d times: at most %d at once (%s); the longest one was not Healthy: %s (%s); %d failed read(s)",
		r.samples, r.most, strings.Join(r.names, ", "), r.unhealthy.Round(100*time.Millisecond), r.which, r.errors)
	if r.most != 1 || !slices.Equal(r.names, []string{rbac.ProviderName}) {
		t.Errorf("Providers during the upgrade: %v, at most %d at once; want only %s", r.names, r.most, rbac.ProviderName)
	}
	if r.unhealthy > rollLimit {
		t.Errorf("Provider %s was not Healthy for %s, longer than a revision roll takes (%s)", r.which, r.unhealthy.Round(100*time.Millisecond), rollLimit)
	}
	if r.samples == 0 || r.errors*20 > r.samples {
		t.Errorf("%d reads of the Providers failed, %d succeeded", r.errors, r.samples)
	}
}

// previousGrant is a repository root whose cluster/rbac/provider-runtime.yaml
// is the previous release's grant under the names README.md now installs
// with: that release named the Provider, its DeploymentRuntimeConfig,
// ServiceAccount and binding provider-cloudarmor.
func previousGrant(t *testing.T, previous string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(previous, rbac.ProviderRuntimeFile))
	if err != nil {
		t.Fatal(err)
	}
	grant := strings.ReplaceAll(string(b), "name: provider-cloudarmor", "name: "+rbac.ProviderName)
	root := t.TempDir()
	f := filepath.Join(root, rbac.ProviderRuntimeFile)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(grant), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// waitFor polls f every half second until it returns nil, failing the test
// with f's last error after timeout.
func waitFor(ctx context.Context, t *testing.T, what string, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting %s for %s: %v", timeout, what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// applyUpgradeXRs applies upgradeSetup and upgradeXRs, waits until each
// IPAllowlist is Ready and GCP (the emulator at emu) allows every address
// of each, and returns those addresses by IPAllowlist.
func applyUpgradeXRs(ctx context.Context, t *testing.T, n *node.Node, emu string) map[string][]string {
	t.Helper()
	if err := n.Apply(ctx, upgradeSetup); err != nil {
		t.Fatal(err)
	}
	for _, x := range upgradeXRs {
		if err := n.Apply(ctx, x.manifest()); err != nil {
			t.Fatal(err)
		}
	}
	nodeIP := internalIP(ctx, t, n)
	want := map[string][]string{}
	for _, x := range upgradeXRs {
		want[x.name] = canonicalAll(append(slices.Clone(x.cidrs), nodeIP))
		waitXRReady(ctx, t, n, x.name)
	}
	waitFor(ctx, t, "GCP to allow every address of each IPAllowlist", 3*time.Minute, func() error {
		st, err := emulatorState(emu)
		if err != nil {
			return err
		}
		return st.missing(want)
	})
	return want
}

func waitXRReady(ctx context.Context, t *testing.T, n *node.Node, name string) {
	t.Helper()
	if _, err := n.Kubectl(ctx, "-n", upgradeNS, "wait", "ipallowlist/"+name, "--for=condition=Ready", "--timeout=3m"); err != nil {
		out, _ := n.Kubectl(ctx, "-n", upgradeNS, "get", "ipallowlist,securitypolicy,securitypolicyrule,addressgroup,addressset", "-o", "yaml")
		t.Fatalf("IPAllowlist %s not Ready: %v\n%s", name, err, out)
	}
}

// xrStatus is each IPAllowlist's Ready, ipCount and ruleCount: CHANGELOG.md
// says an upgrade leaves them as they were.
func xrStatus(ctx context.Context, t *testing.T, n *node.Node) []string {
	t.Helper()
	out, err := n.Kubectl(ctx, "-n", upgradeNS, "get", "ipallowlist", "-o",
		`jsonpath={range .items[*]}{.metadata.name} Ready={.status.conditions[?(@.type=="Ready")].status} ips={.status.ipCount} rules={.status.ruleCount}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

func internalIP(ctx context.Context, t *testing.T, n *node.Node) string {
	t.Helper()
	ip, err := n.Kubectl(ctx, "get", "node", "node-0", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil || ip == "" {
		t.Fatalf("node-0's InternalIP: %q, %v", ip, err)
	}
	return strings.TrimSpace(ip)
}

// composedKinds are the kinds the previous release composed.
const composedKinds = "securitypolicies.cloudarmor.armorplane.io,securitypolicyrules.cloudarmor.armorplane.io," +
	"addressgroups.cloudarmor.armorplane.io,addresssets.cloudarmor.armorplane.io"

// kubeObject is what the test reads of a composed object.
type kubeObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		UID             string            `json:"uid"`
		Labels          map[string]string `json:"labels"`
		OwnerReferences []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Controller bool   `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
}

// id names an object by kind, name and UID: an object deleted and made again
// has another.
func (o kubeObject) id() string { return o.Kind + "/" + o.Metadata.Name + " " + o.Metadata.UID }

func (o kubeObject) controller() string {
	for _, r := range o.Metadata.OwnerReferences {
		if r.Controller {
			return r.Kind + "/" + r.Name
		}
	}
	return ""
}

func getObjects(ctx context.Context, t *testing.T, n *node.Node, selector string) []kubeObject {
	t.Helper()
	out, err := n.Kubectl(ctx, "-n", upgradeNS, "get", composedKinds, "-l", selector, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var l struct{ Items []kubeObject }
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// composedBy lists what the previous release composed for x: the policy, its
// rules, and its group and AddressSet.
func composedBy(ctx context.Context, t *testing.T, n *node.Node, x upgradeXR) []kubeObject {
	t.Helper()
	objs := getObjects(ctx, t, n, "crossplane.io/composite="+x.name)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Kind]++
	}
	want := map[string]int{"SecurityPolicy": 1, "SecurityPolicyRule": x.rules, "AddressSet": 1}
	if x.group != "" {
		want["AddressGroup"] = 1
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("what the previous release composed for %s, by kind (-want +got):\n%s", x.name, diff)
	}
	return objs
}

// waitAdopted waits until x composes a Ready SecurityPolicyAllowlist that
// controls every object the previous release composed (the same objects, by
// UID) and nothing else, and until Crossplane lists none of them among x's
// resources.
func waitAdopted(ctx context.Context, t *testing.T, n *node.Node, x upgradeXR, composed []kubeObject) {
	t.Helper()
	var want []string
	for _, o := range composed {
		want = append(want, o.id()+" SecurityPolicyAllowlist/"+x.name)
	}
	sort.Strings(want)
	waitFor(ctx, t, x.name+"'s objects adopted by its SecurityPolicyAllowlist", 5*time.Minute, func() error {
		ready, err := n.Kubectl(ctx, "-n", upgradeNS, "get", "securitypolicyallowlist.cloudarmor.armorplane.io", x.name,
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || ready != "True" {
			return fmt.Errorf("SecurityPolicyAllowlist Ready=%q %v", ready, err)
		}
		var got []string
		for _, o := range getObjects(ctx, t, n, labelAllowlist+"="+x.name) {
			got = append(got, o.id()+" "+o.controller())
		}
		sort.Strings(got)
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("the allowlist's objects, by controller (-the previous release's +now):\n%s", diff)
		}
		refs, err := n.Kubectl(ctx, "-n", upgradeNS, "get", "ipallowlist", x.name, "-o", `jsonpath={.spec.crossplane.resourceRefs[*].kind}`)
		if err != nil {
			return err
		}
		if k := strings.Fields(refs); !slices.Equal(k, []string{"SecurityPolicyAllowlist"}) {
			return fmt.Errorf("the IPAllowlist's resourceRefs are of kinds %v, want only the SecurityPolicyAllowlist", k)
		}
		return nil
	})
}

// emulatorStats is what the test reads of GET /_emulator/stats: the state of
// every policy and address group, and the calls made.
type emulatorStats struct {
	Methods   map[string]int64 `json:"methods"`
	Mutations int64            `json:"mutations"`
	State     map[string]struct {
		Rules []struct {
			Priority int    `json:"priority"`
			Action   string `json:"action"`
			Preview  bool   `json:"preview"`
			Match    struct {
				Config struct {
					SrcIPRanges []string `json:"srcIpRanges"`
				} `json:"config"`
				Expr struct {
					Expression string `json:"expression"`
				} `json:"expr"`
			} `json:"match"`
		} `json:"rules"`
	} `json:"state"`
	AddressGroups map[string]struct {
		Items []string `json:"items"`
	} `json:"addressGroups"`
}

// upgradeClient bounds each read, so that a stuck forwarder shows as failed
// reads rather than as a quiet sampler.
var upgradeClient = &http.Client{Timeout: 5 * time.Second}

func emulatorState(addr string) (emulatorStats, error) {
	var st emulatorStats
	resp, err := upgradeClient.Get("http://" + addr + "/_emulator/stats")
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /_emulator/stats: %s: %s", resp.Status, b)
	}
	return st, json.Unmarshal(b, &st)
}

var evaluateAddressGroup = regexp.MustCompile(`evaluateAddressGroup\('([^']+)', origin\.ip\)`)

// allowed is what GCP allows through x's priority range: the ranges of its
// allow rules and the items of the groups they allow.
func (st emulatorStats) allowed(x upgradeXR) []string {
	p := st.State[fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, x.policy)]
	var out []string
	for _, r := range p.Rules {
		if r.Priority < x.first || r.Priority > x.last || r.Action != "allow" || r.Preview {
			continue
		}
		out = append(out, r.Match.Config.SrcIPRanges...)
		for _, m := range evaluateAddressGroup.FindAllStringSubmatch(r.Match.Expr.Expression, -1) {
			out = append(out, st.AddressGroups[fmt.Sprintf("projects/%s/locations/global/addressGroups/%s", project, m[1])].Items...)
		}
	}
	return canonicalAll(out)
}

// allowedBy is what GCP allows for each XR of want.
func (st emulatorStats) allowedBy(want map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, x := range upgradeXRs {
		if _, ok := want[x.name]; ok {
			out[x.name] = st.allowed(x)
		}
	}
	return out
}

// missing says which XR lacks which wanted address in GCP.
func (st emulatorStats) missing(want map[string][]string) error {
	var msgs []string
	for name, got := range st.allowedBy(want) {
		var gone []string
		for _, a := range want[name] {
			if _, ok := slices.BinarySearch(got, a); !ok {
				gone = append(gone, a)
			}
		}
		if len(gone) > 0 {
			msgs = append(msgs, fmt.Sprintf("%s: %d of %d not allowed (%s)", name, len(gone), len(want[name]), strings.Join(gone, ", ")))
		}
	}
	if len(msgs) > 0 {
		sort.Strings(msgs)
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// priorities lists the priorities of each XR's policy's rules in its range.
func (st emulatorStats) priorities() map[string][]int {
	out := map[string][]int{}
	for _, x := range upgradeXRs {
		for _, r := range st.State[fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, x.policy)].Rules {
			if r.Priority >= x.first && r.Priority <= x.last {
				out[x.name] = append(out[x.name], r.Priority)
			}
		}
		slices.Sort(out[x.name])
	}
	return out
}

// writesSince counts the calls of each method that writes, made since from.
func (st emulatorStats) writesSince(from emulatorStats) map[string]int64 {
	out := map[string]int64{}
	for m, c := range st.Methods {
		if d := c - from.Methods[m]; d > 0 && !reads(m) {
			out[m] = d
		}
	}
	return out
}

// reads reports whether a method only reads (or waits on an operation).
func reads(method string) bool {
	_, verb, _ := strings.Cut(method, ".")
	return verb == "get" || verb == "list" || verb == "wait" || verb == "aggregatedList" ||
		strings.HasPrefix(verb, "get") || strings.HasPrefix(verb, "list") || strings.HasSuffix(method, "Operations.get")
}

// removes reports whether a method removes a rule, a group's items, a group or
// a policy.
func removes(method string) bool {
	_, verb, _ := strings.Cut(method, ".")
	return verb == "removeRule" || verb == "removeItems" || verb == "delete"
}

// canonicalAll writes each address as the prefix GCP stores, sorted and
// without duplicates.
func canonicalAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked().String())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()).String())
		} else {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sampleResult is what the sampler saw.
type sampleResult struct {
	samples, gaps, ruleGone, errors int
	firstGap, firstGone             string
	span                            time.Duration
}

type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	res  sampleResult
}

// startSampler reads GCP every sampleEvery until stopped, counting the
// samples in which an address of want is not allowed (a gap) and those in
// which a rule of rules (by priority) is missing.
func startSampler(addr string, want map[string][]string, rules map[string][]int) *sampler {
	s := &sampler{done: make(chan struct{})}
	start := time.Now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			s.sample(addr, want, rules, start)
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample(addr string, want map[string][]string, rules map[string][]int, start time.Time) {
	st, err := emulatorState(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.span = time.Since(start)
	if err != nil {
		s.res.errors++
		return
	}
	s.res.samples++
	at := time.Since(start).Round(10 * time.Millisecond)
	if err := st.missing(want); err != nil {
		if s.res.gaps == 0 {
			s.res.firstGap = fmt.Sprintf("at %s: %v", at, err)
		}
		s.res.gaps++
	}
	now := st.priorities()
	for name, ps := range rules {
		for _, p := range ps {
			if _, ok := slices.BinarySearch(now[name], p); !ok {
				if s.res.ruleGone == 0 {
					s.res.firstGone = fmt.Sprintf("at %s: %s's rule %d is not in GCP", at, name, p)
				}
				s.res.ruleGone++
				return
			}
		}
	}
}

func (s *sampler) stop() sampleResult {
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res
}

func checkUpgradeSamples(t *testing.T, r sampleResult) {
	t.Helper()
	if r.gaps > 0 {
		t.Errorf("%d of %d samples had a gap; the first %s", r.gaps, r.samples, r.firstGap)
	}
	if r.ruleGone > 0 {
		t.Errorf("%d of %d samples lacked a rule; the first %s", r.ruleGone, r.samples, r.firstGone)
	}
	// Failed reads are samples not taken: a few are tolerable, many would
	// leave the claim unproven.
	if r.samples == 0 || r.errors*20 > r.samples {
		t.Errorf("%d reads of GCP failed, %d succeeded", r.errors, r.samples)
	}
}
