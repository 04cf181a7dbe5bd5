package nodesuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	emulatorService = "cloudarmor-emulator." + stack.EmulatorNamespace + ".svc.cluster.local:8787"
	emulatorToken   = "node-test-token"
	project         = "node-project"
)

// tenancy: a ClusterProviderConfig admitting only namespaces labelled
// tenant=a, one such namespace and one without the label.
var tenancy = `apiVersion: v1
kind: Secret
metadata: {name: emulator-token, namespace: crossplane-system}
stringData: {token: ` + emulatorToken + `}
---
apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: emulator}
spec:
  projectID: ` + project + `
  endpoint: http://` + emulatorService + `/compute/v1/
  namespaceSelector: {matchLabels: {tenant: a}}
  credentials:
    source: AccessToken
    secretRef: {namespace: crossplane-system, name: emulator-token, key: token}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant-a, labels: {tenant: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant-b}
`

func policy(ns, name string) string {
	return fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: %s, namespace: %s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: emulator}
  forProvider: {description: installed from the node's registry}
`, name, ns)
}

// allowlist composes a policy allowing an office and the node's address (node-0 has only an InternalIP).
const allowlist = `apiVersion: platform.armorplane.io/v1alpha1
kind: IPAllowlist
metadata: {name: nodes, namespace: tenant-a}
spec:
  policy: {name: node-allowlist, create: true, defaultAction: deny(403)}
  priorityRange: {first: 1000, last: 1099}
  providerConfigRef: {kind: ClusterProviderConfig, name: emulator}
  staticSources:
  - {name: office, cidrs: ["203.0.113.0/26"]}
  nodeSources:
  - {name: node-0, matchLabels: {kubernetes.io/hostname: node-0}, includeInternalIP: true}
`

// TestPackages installs Crossplane and our packages the way README.md tells
// a user to, from the node's registry: the provider, the function and the
// Configuration as `make xpkg` builds them, pushed with `crossplane xpkg
// push`, installed with `crossplane xpkg install`. The provider runs with
// provider-runtime.yaml's grant on top of the RBAC manager's, and must never
// be refused; it serves a SecurityPolicy against the emulator, running as a
// pod, through a namespace-selecting ClusterProviderConfig, and an
// IPAllowlist of the real Node's address.
func TestPackages(t *testing.T) {
	tools := realNode(t, t.TempDir())
	root := repo.Root()
	autoReadyBin, autoReadyMeta, err := stack.AutoReadyFiles(tools, os.Getenv("FUNCTION_AUTO_READY_BIN"))
	if err != nil {
		t.Fatal(err) // NODE_TEST=1 (realNode): a tool missing here is a failure, not a skip
	}
	opts := stack.Options{
		Tools:         tools,
		RepoRoot:      root,
		Crossplane:    toolPath(t, "CROSSPLANE_BIN", "crossplane"),
		XpkgDir:       envOr("NODE_XPKG_DIR", filepath.Join(root, "_output/xpkg")),
		Emulator:      envOr("NODE_EMULATOR_BIN", filepath.Join(root, "_output/bin/emulator")),
		AutoReady:     autoReadyBin,
		AutoReadyMeta: autoReadyMeta,
		Logf:          t.Logf,
	}
	lk := lockMachine(t)
	before := snapshot(t, tools.Debs)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	n, down := boot(ctx, t, tools, lk)
	defer down()
	var times []string
	lap := func(what string, took time.Duration) {
		times = append(times, fmt.Sprintf("%-58s %s", what, took.Round(10*time.Millisecond)))
	}
	lap("node up", time.Since(start))
	opts.Cluster = n
	in, err := stack.Install(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range in.Laps {
		lap(l.Step, l.Duration)
	}
	for _, r := range in.Ran {
		if r.Tool == "" {
			t.Logf("not run on the node: %s (%s)", r.README, r.Why)
		} else if r.Why != "" {
			t.Logf("ran %s %s (%s)\n%s", r.Tool, strings.Join(r.Args, " "), r.Why, r.Output)
		}
	}
	checkImage(t, n.HostRegistry, "armorplane/provider-cloudarmor", stack.PackageTag, "/usr/local/bin/provider-cloudarmor")
	checkImage(t, n.HostRegistry, "armorplane/function-ipallowlist", stack.PackageTag, "/usr/local/bin/function-ipallowlist")
	checkSignatures(ctx, t, n, opts.XpkgDir)
	pods, _ := n.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	t.Logf("kubectl get pods -A:\n%s", pods)
	checkRunning(ctx, t, n, map[string]string{
		"crossplane-system/" + rbac.ProviderName + "-":              "provider",
		"crossplane-system/armorplane-function-ipallowlist-":        "function-ipallowlist",
		"crossplane-system/crossplane-contrib-function-auto-ready-": "function-auto-ready",
		stack.EmulatorNamespace + "/cloudarmor-emulator-":           "emulator",
	})
	for exe, what := range map[string]string{
		"/usr/local/bin/provider-cloudarmor":  "the provider",
		"/usr/local/bin/function-ipallowlist": "the function",
		"/emulator":                           "the emulator",
	} {
		uids := processUIDs(n.Holder(), exe)
		if len(uids) == 0 {
			t.Errorf("%s (%s) is not running in the node", what, exe)
		}
		for _, u := range uids {
			if u == 0 {
				t.Errorf("%s runs as root", what)
			}
		}
		t.Logf("%s runs as uid %v, RSS %d MiB", what, uids, processRSS(n.Holder(), exe)>>20)
	}

	checkGrant(ctx, t, n, tools.Kubectl)

	// A namespace-selecting ClusterProviderConfig against the emulator.
	s := time.Now()
	if err := n.Apply(ctx, tenancy); err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(ctx, policy("tenant-a", "admitted")+"---\n"+policy("tenant-b", "refused")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "-n", "tenant-a", "wait", "securitypolicy/admitted", "--for=condition=Ready", "--timeout=3m"); err != nil {
		out, _ := n.Kubectl(ctx, "-n", "tenant-a", "get", "securitypolicy/admitted", "-o", "yaml")
		t.Fatalf("the SecurityPolicy in an admitted namespace did not go Ready: %v\n%s", err, out)
	}
	lap("SecurityPolicy Ready (ClusterProviderConfig applied to Ready)", time.Since(s))
	if _, err := n.Kubectl(ctx, "-n", "tenant-b", "wait", "securitypolicy/refused", "--for=condition=Synced=False", "--timeout=2m"); err != nil {
		t.Fatalf("the SecurityPolicy in a namespace the config does not admit: %v", err)
	}
	msg, _ := n.Kubectl(ctx, "-n", "tenant-b", "get", "securitypolicy/refused", "-o", `jsonpath={.status.conditions[?(@.type=="Synced")].message}`)
	if !strings.Contains(msg, `does not admit namespace "tenant-b"`) {
		t.Errorf("the SecurityPolicy in tenant-b: Synced=False with %q, want it refused by the namespaceSelector", msg)
	}
	// The forwarder takes the Service's address, not its name: the harness
	// must not resolve names with the host's resolver.
	emu, err := n.Forward("127.0.0.1:0", in.EmulatorIP+":8787")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gcpPolicy(emu, "admitted"); err != nil {
		t.Errorf("the emulator pod does not hold the admitted policy: %v", err)
	}
	if _, err := gcpPolicy(emu, "refused"); err == nil {
		t.Errorf("the emulator pod holds the policy of a namespace the config does not admit")
	}

	// An IPAllowlist of the real Node: its InternalIP reaches GCP.
	s = time.Now()
	if err := n.Apply(ctx, allowlist); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "-n", "tenant-a", "wait", "ipallowlist/nodes", "--for=condition=Ready", "--timeout=3m"); err != nil {
		out, _ := n.Kubectl(ctx, "-n", "tenant-a", "get", "ipallowlist,addressset,securitypolicy,securitypolicyrule", "-o", "yaml")
		t.Fatalf("the IPAllowlist did not go Ready: %v\n%s", err, out)
	}
	lap("IPAllowlist of node-0 Ready", time.Since(s))
	got, err := gcpPolicy(emu, "node-allowlist")
	if err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, r := range got.Rules {
		if r.Priority >= 1000 && r.Priority <= 1099 {
			ranges = append(ranges, r.Match.Config.SrcIPRanges...)
		}
	}
	if diff := cmp.Diff([]string{"10.244.0.1/32", "203.0.113.0/26"}, sortedCopy(ranges)); diff != "" {
		t.Errorf("the allow rules in GCP (-want +got):\n%s", diff)
	}

	s = time.Now()
	checkChangeLogs(ctx, t, n, emu)
	lap("change logs: sidecar beside the provider, 3 entries read", time.Since(s))

	checkNotForbidden(ctx, t, n)
	checkNoEgress(ctx, t, n, tools)
	t.Logf("RSS: the node's processes %d MiB; this process (the registry holding the images, the forwarders) %d MiB",
		nodeRSS(n.Holder())>>20, rss(os.Getpid())>>20)
	t.Logf("times:\n%s", strings.Join(times, "\n"))
	checkRefusedWithoutGrant(ctx, t, n)

	down()
	compare(t, before, snapshot(t, tools.Debs))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// toolPath is a tool the Makefile passes in env, or the one
// cluster/toolchain/build.sh builds.
func toolPath(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	out, err := exec.Command(filepath.Join(repo.Root(), "cluster/toolchain/build.sh"), name).Output()
	if err != nil {
		t.Fatalf("cluster/toolchain/build.sh %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// checkImage reads a pushed package's image config from the registry: the
// runtime image is embedded, runs its binary, as the non-root user.
func checkImage(t *testing.T, registry, repo, tag, entrypoint string) {
	t.Helper()
	get := func(path, accept string, into any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+registry+"/v2/"+repo+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s%s: %s: %s", repo, path, resp.Status, b)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("GET %s%s: %v", repo, path, err)
		}
	}
	var manifest struct {
		Config struct{ Digest string } `json:"config"`
	}
	get("/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json", &manifest)
	var cf struct {
		Config struct {
			Entrypoint []string
			User       string
		} `json:"config"`
	}
	get("/blobs/"+manifest.Config.Digest, "*/*", &cf)
	want := cf.Config
	want.Entrypoint, want.User = []string{entrypoint}, "65532"
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("%s:%s's image config (-want +got):\n%s", repo, tag, diff)
	}
}

// processUIDs are the real, effective, saved and filesystem uids of every
// process of the node whose argv[0] is exe.
func processUIDs(holder int, exe string) []int {
	var uids []int
	for _, pid := range nodePIDs(holder) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 != exe {
			continue
		}
		for _, f := range strings.Fields(procStatus(pid, "Uid:")) {
			u, _ := strconv.Atoi(f)
			uids = append(uids, u)
		}
	}
	return uids
}

// processRSS is the resident memory of the node's processes whose argv[0]
// is exe.
func processRSS(holder int, exe string) int64 {
	var total int64
	for _, pid := range nodePIDs(holder) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 == exe {
			total += rss(pid)
		}
	}
	return total
}

// checkGrant: the ClusterRole Crossplane's RBAC manager created for the
// provider is the one cluster/rbac models, and the provider's ServiceAccount
// may do everything clusterrole.yaml lists (the RBAC manager's role plus
// provider-runtime.yaml's) and not the things it must not.
func checkGrant(ctx context.Context, t *testing.T, n *node.Node, kubectl string) {
	t.Helper()
	root := repo.Root()
	rev, err := n.Kubectl(ctx, "get", "providerrevisions", "-l", "pkg.crossplane.io/package="+rbac.ProviderName,
		"-o", "jsonpath={.items[0].metadata.name}")
	if err != nil || rev == "" {
		rev, err = n.Kubectl(ctx, "get", "providerrevisions", "-o", "jsonpath={.items[0].metadata.name}")
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := n.Kubectl(ctx, "get", "clusterrole", "crossplane:provider:"+rev+":system", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var live rbacv1.ClusterRole
	if err := json.Unmarshal([]byte(out), &live); err != nil {
		t.Fatal(err)
	}
	model, err := rbac.RBACManagerRules(filepath.Join(root, rbac.PackageDir))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rbac.Grants(model), rbac.Grants(live.Rules)); diff != "" {
		t.Errorf("the RBAC manager's ClusterRole for the provider is not cluster/rbac's model (-model +live):\n%s", diff)
	}
	subjects, err := n.Kubectl(ctx, "get", "clusterrolebinding", "crossplane:provider:"+rev+":system",
		"-o", `jsonpath={range .subjects[*]}{.namespace}/{.name}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "crossplane-system/" + rbac.ProviderName; strings.TrimSpace(subjects) != want {
		t.Errorf("the RBAC manager bound its role to %q, want the DeploymentRuntimeConfig's %s", subjects, want)
	}

	needs, err := rbac.ClusterRole(filepath.Join(root, rbac.ClusterRoleFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[rbac.Grant]bool{}
	for _, g := range rbac.Grants(needs.Rules) {
		want[g] = true
	}
	for _, g := range []rbac.Grant{
		{Group: "", Resource: "pods", Verb: "get"},
		{Group: "", Resource: "nodes", Verb: "update"},
		{Group: "", Resource: "namespaces", Verb: "delete"},
		{Group: "apps", Resource: "deployments", Verb: "list"},
		// Delete, one object at a time, only for what a SecurityPolicyAllowlist keeps.
		{Group: "cloudarmor.armorplane.io", Resource: "securitypolicies", Verb: "deletecollection"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "create"},
	} {
		want[g] = false
	}
	got := accessReviews(ctx, t, n, kubectl, want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what %s may do live (-want +got):\n%s", stack.ProviderSA, diff)
	}
}

// accessReviews asks the API server, in one SubjectAccessReview each, whether
// the provider's ServiceAccount may do each grant.
func accessReviews(ctx context.Context, t *testing.T, n *node.Node, kubectl string, grants map[rbac.Grant]bool) map[rbac.Grant]bool {
	t.Helper()
	got := map[rbac.Grant]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for g := range grants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, sub, _ := strings.Cut(g.Resource, "/")
			sar := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":%q,"groups":["system:serviceaccounts","system:serviceaccounts:crossplane-system","system:authenticated"],"resourceAttributes":{"namespace":"tenant-a","group":%q,"resource":%q,"subresource":%q,"verb":%q}}}`,
				stack.ProviderSA, g.Group, res, sub, g.Verb)
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig="+n.Kubeconfig, "create", "-f", "-", "-o", "jsonpath={.status.allowed}")
			cmd.Env = n.ClientEnv()
			cmd.Stdin = strings.NewReader(sar)
			out, err := cmd.Output()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("SubjectAccessReview %s: %v", g, err)
				return
			}
			got[g] = strings.TrimSpace(string(out)) == "true"
		}()
	}
	wg.Wait()
	return got
}

// checkNotForbidden fails on any "forbidden" in the provider's and the
// function's logs and in the cluster's Events: a refused list or watch shows
// in the log (client-go logs it whatever the level), a refused write as a
// Warning Event on the object.
func checkNotForbidden(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	logs := podLogs(ctx, t, n, rbac.ProviderName+"-", "armorplane-function-ipallowlist-")
	if len(logs) < 2 {
		t.Errorf("found %d provider and function pods to check, want 2", len(logs))
	}
	for p, log := range logs {
		t.Logf("%s: %d lines of log", p, strings.Count(log, "\n"))
		for _, line := range forbidden(log) {
			t.Errorf("%s: %s", p, line)
		}
	}
	events, err := n.Kubectl(ctx, "get", "events", "-A", "-o",
		`jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range forbidden(events) {
		t.Errorf("event: %s", line)
	}
}

// checkRefusedWithoutGrant is the control of checkNotForbidden and of
// provider-runtime.yaml: with its ClusterRoleBinding deleted, a new provider
// pod is refused (its Namespace and Node informers) and says so in its log.
func checkRefusedWithoutGrant(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	start := time.Now()
	old := podLogs(ctx, t, n, rbac.ProviderName+"-")
	if _, err := n.Kubectl(ctx, "delete", "clusterrolebinding", rbac.ProviderName+":beyond-rbac-manager"); err != nil {
		t.Fatal(err)
	}
	for p := range old {
		if _, err := n.Kubectl(ctx, "-n", "crossplane-system", "delete", "pod", p, "--wait=false"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for p, log := range podLogs(ctx, t, n, rbac.ProviderName+"-") {
			if _, ok := old[p]; ok {
				continue
			}
			if lines := forbidden(log); len(lines) > 0 {
				t.Logf("without provider-runtime.yaml's binding, a new provider pod is refused %s after the binding is deleted: %s",
					time.Since(start).Round(100*time.Millisecond), lines[0])
				return
			}
		}
		time.Sleep(2 * time.Second)
	}
	t.Errorf("without provider-runtime.yaml's binding, no new provider pod logged a refusal in 2m: the log check would not see one")
}

// podLogs returns the logs of the pods in crossplane-system whose names
// start with one of prefixes. A pod not started yet has no log and is left out.
func podLogs(ctx context.Context, t *testing.T, n *node.Node, prefixes ...string) map[string]string {
	t.Helper()
	names, err := n.Kubectl(ctx, "-n", "crossplane-system", "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, p := range strings.Fields(names) {
		for _, prefix := range prefixes {
			if !strings.HasPrefix(p, prefix) {
				continue
			}
			if log, err := n.Kubectl(ctx, "-n", "crossplane-system", "logs", p, "--all-containers"); err == nil {
				logs[p] = log
			}
		}
	}
	return logs
}

// forbidden returns the lines of text that say "forbidden", in any case.
func forbidden(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			out = append(out, line)
		}
	}
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// gcpPolicyJSON is what the test reads of a GCP policy.
type gcpPolicyJSON struct {
	Description string `json:"description"`
	Rules       []struct {
		Priority int `json:"priority"`
		Match    struct {
			Config struct {
				SrcIPRanges []string `json:"srcIpRanges"`
			} `json:"config"`
		} `json:"match"`
	} `json:"rules"`
}

// gcpPolicy reads a global policy from the emulator pod through a forwarder.
func gcpPolicy(addr, policy string) (gcpPolicyJSON, error) {
	var p gcpPolicyJSON
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/compute/v1/projects/%s/global/securityPolicies/%s", addr, project, policy), nil)
	if err != nil {
		return p, err
	}
	req.Header.Set("Authorization", "Bearer "+emulatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("GET policy %s: %s: %s", policy, resp.Status, b)
	}
	return p, json.Unmarshal(b, &p)
}
