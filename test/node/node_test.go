// Package node tests the real single-node cluster of cluster/node: it boots
// the node, installs Crossplane from its Helm chart, checks that Crossplane,
// its RBAC manager and CoreDNS run, checks by configuration (routes, nft
// rules, resolv.conf, never by sending traffic) that nothing can leave the
// machine, tears the node down and compares the host before and after.
//
// It runs only as root with NODE_TEST=1 (`make node-test`).
package nodesuite

import (
	"context"
	"fmt"
	"net"
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

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// realNode skips unless NODE_TEST=1, fails unless root, and returns the
// node's tools, resolved (built or found in the cache) under dir.
func realNode(t *testing.T, dir string) node.Tools {
	t.Helper()
	if os.Getenv("NODE_TEST") != "1" {
		t.Skip("NODE_TEST=1 runs the real node (root; `make node-test`)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the node test needs root")
	}
	tools, err := node.ResolveTools(repo.Root(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestMain tears down the nodes a test has up when the test binary is
// stopped by a signal (Ctrl-C, kill, a closed terminal), and keeps it alive
// when `go test`'s output goes away.
func TestMain(m *testing.M) {
	stop := node.DownOnSignal()
	code := m.Run()
	stop()
	os.Exit(code)
}

// lockMachine takes the machine-wide node lock, waiting for another run (a
// `make run`, another suite's node) to finish: the host's snapshot must not
// see another node. It then undoes what a run that died without tearing down
// left (node.Recover), so that the snapshot taken next is of the host as
// found, not of an earlier run's leftovers that the first node's start would
// remove. boot hands the lock to the node, whose teardown releases it.
func lockMachine(t *testing.T) *os.File {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	lk, err := node.Lock(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Recover(t.Logf); err != nil {
		_ = lk.Close()
		t.Fatalf("undoing an earlier run's leftovers: %v", err)
	}
	// Released by the node's teardown; here too if the test ends before
	// the node took it (a second Close is harmless).
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// boot brings a node up under lk (lockMachine's) and returns it with its
// teardown, which reports its time and error once, however often it is
// called (deferred, and before the host is compared with its snapshot).
func boot(ctx context.Context, t *testing.T, tools node.Tools, lk *os.File) (*node.Node, func()) {
	t.Helper()
	n, err := node.Up(ctx, node.Config{Tools: tools, Logf: t.Logf, Lock: lk})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return n, func() {
		once.Do(func() {
			s := time.Now()
			err := n.Down()
			t.Logf("teardown took %s", time.Since(s).Round(10*time.Millisecond))
			if err != nil {
				t.Errorf("teardown: %v", err)
			}
		})
	}
}

func TestNode(t *testing.T) {
	tools := realNode(t, t.TempDir())
	lk := lockMachine(t)
	before := snapshot(t, tools.Debs)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	n, down := boot(ctx, t, tools, lk)
	up := time.Since(start)
	defer down()

	s := time.Now()
	if err := n.InstallCrossplane(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("node up in %s; Crossplane installed by helm in %s more", up.Round(10*time.Millisecond), time.Since(s).Round(10*time.Millisecond))

	pods, err := n.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl get pods -A:\n%s", pods)
	checkRunning(ctx, t, n, map[string]string{
		"crossplane-system/crossplane-":              "crossplane",
		"crossplane-system/crossplane-rbac-manager-": "crossplane-rbac-manager",
		"kube-system/coredns-":                       "coredns",
	})
	checkWebhook(ctx, t, n)
	checkForward(ctx, t, n)
	checkDNS(ctx, t, n)
	checkFunctionPackage(ctx, t, n, tools)
	checkComposition(ctx, t, n)
	checkNoEgress(ctx, t, n, tools)
	t.Logf("RSS: the node's processes %d MiB; this process (the registry holding the images, the forwarder) %d MiB",
		nodeRSS(n.Holder())>>20, rss(os.Getpid())>>20)

	down()
	after := snapshot(t, tools.Debs)
	compare(t, before, after)
}

// checkRunning wants, for each namespace/name-prefix, one pod Running with
// every container ready. A name-prefix matches the pod of the longest prefix.
func checkRunning(ctx context.Context, t *testing.T, n *node.Node, want map[string]string) {
	t.Helper()
	out, err := n.Kubectl(ctx, "get", "pods", "-A", "-o",
		`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.phase} {.status.containerStatuses[*].ready}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		best := ""
		for prefix := range want {
			if strings.HasPrefix(f[0], prefix) && len(prefix) > len(best) {
				best = prefix
			}
		}
		if best == "" {
			continue
		}
		ready := len(f) > 2
		for _, r := range f[2:] {
			ready = ready && r == "true"
		}
		if f[1] == "Running" && ready {
			found[want[best]] = true
		}
	}
	for _, name := range want {
		if !found[name] {
			t.Errorf("no %s pod Running and ready:\n%s", name, out)
		}
	}
}

// checkWebhook deletes an object Crossplane's no-usages webhook watches: the
// webhook's failure policy is Fail, so the delete succeeds only if the API
// server reached Crossplane's webhook Service (ClusterIP, rewritten by
// kube-proxy to the pod) and got an answer.
func checkWebhook(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: webhook-probe, namespace: default, labels: {crossplane.io/in-use: \"true\"}}\n"
	if err := n.Apply(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "-n", "default", "delete", "configmap", "webhook-probe"); err != nil {
		t.Errorf("deleting an in-use object through Crossplane's webhook: %v", err)
	}
}

// checkForward reaches CoreDNS's health endpoint, a pod port, from the host
// through a loopback forwarder.
func checkForward(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	ip, err := n.Kubectl(ctx, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[0].status.podIP}")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := n.Forward("127.0.0.1:0", ip+":8080")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatalf("CoreDNS health through the forwarder: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("CoreDNS health through the forwarder: %s", resp.Status)
	}
}

// checkDNS resolves the kubernetes Service at the kube-dns ClusterIP over
// TCP, forwarded into the node: kube-proxy's rules and CoreDNS both answer.
func checkDNS(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	addr, err := n.Forward("127.0.0.1:0", "10.96.0.10:53")
	if err != nil {
		t.Fatal(err)
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr) // not a PacketConn: the resolver frames for TCP
	}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ips, err := r.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
	if err != nil || len(ips) != 1 || ips[0] != "10.96.0.1" {
		t.Errorf("kubernetes.default.svc.cluster.local through the cluster DNS: %v, %v; want 10.96.0.1", ips, err)
	}
}

// checkFunctionPackage installs function-auto-ready from the node's registry
// as a plain single-layer package (package.yaml at the root, the binary as
// entrypoint) and waits for Crossplane's Deployment runtime to run it Healthy.
func checkFunctionPackage(ctx context.Context, t *testing.T, n *node.Node, tools node.Tools) {
	t.Helper()
	bin, meta, err := stack.AutoReadyFiles(tools, os.Getenv("FUNCTION_AUTO_READY_BIN"))
	if err != nil {
		t.Fatal(err) // NODE_TEST=1 (realNode): a tool missing here is a failure, not a skip
	}
	start := time.Now()
	ref, err := n.PushImage(ctx, "function-auto-ready", stack.AutoReadyTag, []string{"/function"},
		map[string]string{"/function": bin, "/package.yaml": meta})
	if err != nil {
		t.Fatal(err)
	}
	fn := fmt.Sprintf("apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata: {name: function-auto-ready}\nspec: {package: %q}\n", ref)
	if err := n.Apply(ctx, fn); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "wait", "function/function-auto-ready", "--for=condition=Healthy", "--timeout=3m"); err != nil {
		out, _ := n.Kubectl(ctx, "get", "function,functionrevision,pods", "-A", "-o", "wide")
		t.Fatalf("function-auto-ready not Healthy: %v\n%s", err, out)
	}
	t.Logf("function-auto-ready installed from the node's registry and Healthy in %s", time.Since(start).Round(10*time.Millisecond))
}

// probeXRD, probeComposition and probeXR make an XR whose Composition calls
// function-auto-ready: core reaches the function pod at its Service's DNS
// name (cluster DNS) with mutual TLS.
const (
	probeXRD = `apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata: {name: probes.node.example.org}
spec:
  group: node.example.org
  names: {kind: Probe, plural: probes}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
`
	probeComposition = `apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: probes}
spec:
  compositeTypeRef: {apiVersion: node.example.org/v1alpha1, kind: Probe}
  mode: Pipeline
  pipeline:
  - step: auto-ready
    functionRef: {name: function-auto-ready}
`
	probeXR = `apiVersion: node.example.org/v1alpha1
kind: Probe
metadata: {name: probe, namespace: default}
spec: {}
`
)

func checkComposition(ctx context.Context, t *testing.T, n *node.Node) {
	t.Helper()
	start := time.Now()
	if err := n.Apply(ctx, probeXRD+"---\n"+probeComposition); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "wait", "xrd/probes.node.example.org", "--for=condition=Established", "--timeout=2m"); err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(ctx, probeXR); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Kubectl(ctx, "-n", "default", "wait", "probe/probe", "--for=condition=Ready", "--timeout=2m"); err != nil {
		out, _ := n.Kubectl(ctx, "-n", "default", "get", "probe/probe", "-o", "yaml")
		t.Fatalf("the XR did not go Ready: %v\n%s", err, out)
	}
	t.Logf("an XR composed through function-auto-ready in the cluster went Ready in %s", time.Since(start).Round(10*time.Millisecond))
}

// checkNoEgress checks by configuration that nothing in the node can reach an
// address off the machine.
func checkNoEgress(ctx context.Context, t *testing.T, n *node.Node, tools node.Tools) {
	t.Helper()
	in := func(script string) string {
		out, err := n.InNode(script)
		if err != nil {
			t.Fatalf("in the node: %s: %v\n%s", script, err, out)
		}
		return out
	}
	// Routes: the pods' bridge and the Service range, nothing else, no default.
	for _, r := range strings.Split(strings.TrimSpace(in("ip -4 -o route show table all type unicast")), "\n") {
		dst := strings.Fields(r)[0]
		if dst != "10.244.0.0/24" && dst != "10.96.0.0/24" {
			t.Errorf("the node has an IPv4 route to %s: %s", dst, r)
		}
	}
	for _, r := range strings.Split(strings.TrimSpace(in("ip -6 -o route show table all type unicast")), "\n") {
		if f := strings.Fields(r); len(f) > 0 && !strings.HasPrefix(f[0], "fe80::") && f[0] != "::1" {
			t.Errorf("the node has an IPv6 route to %s: %s", f[0], r)
		}
	}
	// Links: loopback, the bridge and the pods' veths on it.
	for _, l := range strings.Split(strings.TrimSpace(in("ip -o link")), "\n") {
		f := strings.Fields(l)
		name := strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
		switch {
		case name == "lo" || name == "nodebr0":
		case strings.HasPrefix(name, "veth") && strings.Contains(l, " master nodebr0 "):
		default:
			t.Errorf("the node has a link that is neither loopback, its bridge nor a pod's veth: %s", l)
		}
	}
	// nft: the guard table drops IPv4 outside the node's ranges, and all IPv6
	// off loopback.
	nft := filepath.Join(tools.Debs, "usr/sbin/nft")
	lib := filepath.Join(tools.Debs, "usr/lib/x86_64-linux-gnu")
	rules := in(fmt.Sprintf("LD_LIBRARY_PATH=%s %s list table inet provider-cloudarmor-egress", lib, nft))
	for _, want := range []string{
		"hook output", "hook forward", `oifname "lo" accept`, "meta nfproto ipv6 drop",
		// nft lists set elements in address order.
		"ip daddr != { 10.96.0.0/24, 10.244.0.0/24 } drop",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("the node's nft egress table lacks %q:\n%s", want, rules)
		}
	}
	// DNS: the node's resolv.conf and every pod's name no server off the node;
	// CoreDNS has no forward plugin.
	checkResolv(t, "the node's /etc/resolv.conf", in("cat /etc/resolv.conf"))
	confs, _ := filepath.Glob(filepath.Join(n.WorkDir(), "containerd/root/io.containerd.grpc.v1.cri/sandboxes/*/resolv.conf"))
	if len(confs) == 0 {
		t.Errorf("found no pod resolv.conf under %s", n.WorkDir())
	}
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		checkResolv(t, c, string(b))
	}
	corefile, err := n.Kubectl(ctx, "-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(corefile, "forward") {
		t.Errorf("the Corefile forwards:\n%s", corefile)
	}
	plugins, err := exec.Command(tools.CoreDNS, "-plugins").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plugins), "forward") {
		t.Errorf("the CoreDNS binary has the forward plugin:\n%s", plugins)
	}
}

func checkResolv(t *testing.T, what, conf string) {
	t.Helper()
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" && f[1] != "127.0.0.1" && f[1] != "10.96.0.10" {
			t.Errorf("%s names a server off the node: %s", what, line)
		}
	}
}

// nodeRSS sums the resident memory of every process of the node, pods
// included.
func nodeRSS(holder int) int64 {
	var total int64
	for _, pid := range nodePIDs(holder) {
		total += rss(pid)
	}
	return total
}

// nodePIDs are the host PIDs of the node's processes, pods included.
func nodePIDs(holder int) []int {
	pids, _ := procstat.NamespacePIDs(holder)
	return pids
}

// procStatus is one field of /proc/<pid>/status, trimmed.
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// rss is a process's resident memory in bytes.
func rss(pid int) int64 {
	kb, _ := strconv.ParseInt(strings.TrimSuffix(procStatus(pid, "VmRSS:"), " kB"), 10, 64)
	return kb << 10
}

// hostState is what the node must leave as it found it.
type hostState map[string]string

// nodeCommands are the names of every process a node runs.
var nodeCommands = []string{"etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kubelet", "kube-proxy",
	"containerd", "containerd-shim", "runc", "coredns", "crossplane", "pause", "unshare", "nsenter"}

func snapshot(t *testing.T, debs string) hostState {
	t.Helper()
	s := hostState{}
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	// Processes of the node's kinds, by PID and name, outside the host's
	// network namespace: every node process runs in the node's or a pod's, and
	// other work on this machine (a control plane of another suite) may start
	// an etcd or a kube-apiserver on the host meanwhile.
	hostNet, err := os.Readlink("/proc/thread-self/ns/net") // this thread is never one switched into the node
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if netns, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err != nil || netns == hostNet {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		c := strings.TrimSpace(string(comm))
		for _, k := range nodeCommands {
			if strings.HasPrefix(c, k) {
				procs = append(procs, e.Name()+" "+c)
			}
		}
	}
	sort.Strings(procs)
	s["processes"] = strings.Join(procs, "\n")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	s["mounts"] = string(mounts)
	s["links"] = run("ip", "-o", "link")
	s["addresses"] = run("ip", "-o", "addr")
	s["routes"] = run("ip", "route", "show", "table", "all")
	s["named netns"] = run("ip", "netns", "list")
	s["namespaces"] = namespaces()
	nft := exec.Command(filepath.Join(debs, "usr/sbin/nft"), "list", "tables")
	nft.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(debs, "usr/lib/x86_64-linux-gnu"))
	out, err := nft.CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v\n%s", err, out)
	}
	s["nft tables"] = string(out)
	sys, err := node.ReadSysctls(node.HostSysctls)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sys {
		s["sysctl "+k] = v
	}
	s["cgroups"] = strings.Join(node.CgroupDirs(), "\n")
	var paths []string
	for _, p := range []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/run/containerd",
		"/var/lib/cni", "/var/lib/containerd", "/usr/libexec/kubernetes", "/etc/cni", "/opt/cni", "/run/netns",
		node.DefaultWorkDir, "/run/provider-cloudarmor-node.json"} {
		if _, err := os.Lstat(p); err == nil {
			paths = append(paths, p)
		}
	}
	s["paths"] = strings.Join(paths, "\n")
	s["listening ports"] = listeningPorts(t)
	s["temporary folder"] = harnessTemps(t, os.TempDir())
	for _, d := range []string{"/run", "/run/lock"} {
		s["entries of "+d] = dirNames(t, d)
	}
	return s
}

// harnessPorts are the host ports a node run listens on: the API server's
// and the registry's forwarders, and make run's forwards to the emulator
// and its data plane (cluster/local's emulatorHostAddr, dataPlaneHostAddr). Other ports come and go with other work
// on this machine (a provider's metrics on :8080 was seen), so only these
// are compared.
var harnessPorts = map[uint64]bool{node.APIPort: true, node.RegistryPort: true, 8787: true, 8788: true}

// listeningPorts lists which of harnessPorts the host's network namespace
// listens on, from /proc/net/tcp and tcp6.
func listeningPorts(t *testing.T) string {
	t.Helper()
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st …; st 0A is LISTEN.
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			addr, port, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(port, 16, 16); err == nil && harnessPorts[p] {
				out = append(out, fmt.Sprintf("%s:%d", addr, p))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// harnessTemps lists the folders the harness makes in the temporary folder
// dir: the node's work directory and what node.MkdirTemp makes for make run
// (cluster/local) and cluster/node/cmd/node, but not those of runs still
// alive: another make run on this machine makes its folder before it waits
// for the node lock this test holds. Folders of other tests there come and go.
func harnessTemps(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	for _, e := range strings.Split(dirNames(t, dir), "\n") {
		name, ok := strings.CutPrefix(e, node.TempPrefix)
		if !ok || !(strings.HasPrefix(name, "node") || strings.HasPrefix(name, "local-") || strings.HasPrefix(name, "external-")) {
			continue
		}
		if _, live := node.TempOwner(filepath.Join(dir, e)); !live {
			out = append(out, e)
		}
	}
	return strings.Join(out, "\n")
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	return strings.Join(names, "\n")
}

// namespaces lists the distinct namespaces the host's processes are in. A
// process that exits between the two snapshots can only shrink it.
func namespaces() string {
	set := map[string]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		for _, k := range []string{"net", "mnt", "pid", "uts", "ipc"} {
			if l, err := os.Readlink("/proc/" + e.Name() + "/ns/" + k); err == nil {
				set[l] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func compare(t *testing.T, before, after hostState) {
	t.Helper()
	for k, b := range before {
		a := after[k]
		if k == "namespaces" {
			had := map[string]bool{}
			for _, l := range strings.Split(b, "\n") {
				had[l] = true
			}
			for _, l := range strings.Split(a, "\n") {
				if !had[l] {
					t.Errorf("after teardown a process is in a namespace that was not there before: %s", l)
				}
			}
			continue
		}
		if a != b {
			t.Errorf("host %s changed:\nbefore:\n%s\nafter:\n%s", k, b, a)
		}
	}
}
