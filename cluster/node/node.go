// Package node brings up one real single-node Kubernetes cluster on this
// machine from upstream parts: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy, containerd with runc and the CNI
// plugins, CoreDNS as a pod, and an in-process OCI registry holding every image
// (built without Docker). The whole node runs in PID, network and mount
// namespaces of its own; the host reaches its API server and registry through
// loopback forwarders, and nothing in it has a route off the machine.
package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Name is the node's name (the kubelet's --hostname-override).
const Name = "node-0"

// CrossplaneVersion is the Crossplane core version the node's image and chart
// come from.
const CrossplaneVersion = "v2.4.0"

const (
	// LockPath serialises node runs on the machine.
	LockPath = "/run/lock/provider-cloudarmor-node.lock"
	// statePath lets a run undo a predecessor that died without tearing down.
	statePath = "/run/provider-cloudarmor-node.json"
	// DefaultWorkDir holds a run's files; it is emptied at start and removed at
	// teardown.
	DefaultWorkDir = "/tmp/provider-cloudarmor-node"
)

// Config configures Up.
type Config struct {
	Tools   Tools
	WorkDir string // default DefaultWorkDir
	Logf    func(format string, args ...any)
	// Lock is the machine-wide lock, when the caller took it first with
	// Lock (to look at the host before the node exists); Up takes it
	// otherwise. Down releases it either way.
	Lock *os.File
}

// Lock waits for and takes the machine-wide lock that serialises node runs.
func Lock(ctx context.Context, logf func(format string, args ...any)) (*os.File, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return lock(ctx, LockPath, logf)
}

// LockFDEnv names the descriptor number of a machine-wide lock a process
// inherited from its parent (exec.Cmd.ExtraFiles; the first is 3). A parent
// that holds the lock and hands it down leaves no moment in which a third
// run could take it between the two: flock belongs to the open file, which
// both then share.
const LockFDEnv = "PROVIDER_CLOUDARMOR_NODE_LOCK_FD"

// InheritedLock is the lock named by LockFDEnv, or nil.
func InheritedLock() *os.File {
	fd, err := strconv.Atoi(os.Getenv(LockFDEnv))
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), LockPath)
}

// Node is a running node.
type Node struct {
	// Kubeconfig is an admin kubeconfig for https://127.0.0.1:APIPort on the host.
	Kubeconfig string
	// HostRegistry is the registry as the host reaches it (127.0.0.1:RegistryPort);
	// RegistryHost is the same registry as the node names it.
	HostRegistry string
	// Timings records how long each phase of Up took.
	Timings []Timing

	cfg       Config
	l         layout
	lockf     *os.File
	st        state
	sb        *sandbox
	sbLog     *os.File
	procs     []*proc
	listeners []net.Listener
	servers   []*http.Server
	client    *http.Client
	start     time.Time
	// cancelUp ends Up's context and upDone closes when Up has returned:
	// a teardown on a signal (DownOnSignal) stops an Up in progress and
	// waits for it, rather than tearing down beside it while it goes on
	// making namespaces, processes and sysctl changes.
	cancelUp context.CancelFunc
	upDone   chan struct{}
	// downMu makes a second Down, from a signal handler say, wait for the
	// first to finish.
	downMu sync.Mutex
}

// Timing is one phase of Up and when it ended, from Up's start.
type Timing struct {
	Phase string
	At    time.Duration
}

func (n *Node) mark(phase string) {
	at := time.Since(n.start).Round(10 * time.Millisecond)
	n.Timings = append(n.Timings, Timing{phase, at})
	n.cfg.Logf("node: %s (%s)", phase, at)
}

// Up boots the node and returns when it is Ready and CoreDNS is available. On
// error it tears down whatever it started.
func Up(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.WorkDir == "" {
		cfg.WorkDir = DefaultWorkDir
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if err := preflight(cfg.Tools, nil); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n = &Node{cfg: cfg, l: layout{cfg.WorkDir}, start: time.Now(),
		Kubeconfig: filepath.Join(cfg.WorkDir, "admin.kubeconfig"), HostRegistry: fmt.Sprintf("127.0.0.1:%d", RegistryPort),
		cancelUp: cancel, upDone: make(chan struct{})}
	// Closed last, after a failed start's teardown below.
	defer close(n.upDone)
	if n.lockf = cfg.Lock; n.lockf == nil {
		if n.lockf, err = lock(ctx, LockPath, cfg.Logf); err != nil {
			return nil, err
		}
	}
	if !track(n, true) {
		if cfg.Lock == nil {
			_ = n.lockf.Close()
		}
		return nil, errors.New("not starting a node: this process is stopping on a signal")
	}
	defer func() {
		if err != nil {
			if derr := n.Down(); derr != nil {
				cfg.Logf("node: teardown after a failed start: %v", derr)
			}
			n = nil
		}
	}()
	if err := Recover(cfg.Logf); err != nil {
		return n, err
	}
	// Ports only now: a run we waited for held them until it finished.
	if err := preflight(cfg.Tools, []int{APIPort, RegistryPort}); err != nil {
		return n, err
	}
	sys, err := ReadSysctls(HostSysctls)
	if err != nil {
		return n, err
	}
	n.st = state{WorkDir: cfg.WorkDir, Sysctls: sys, Cgroups: CgroupDirs()}
	if err := writeState(statePath, n.st); err != nil {
		return n, err
	}
	if err := os.RemoveAll(cfg.WorkDir); err != nil {
		return n, err
	}
	for _, d := range []string{"logs", "etcd", "pod-logs", "flexvolume", "kubelet", "bin"} {
		if err := os.MkdirAll(n.l.p(d), 0o755); err != nil {
			return n, err
		}
	}
	if err := pki(n.l.p("pki")); err != nil {
		return n, fmt.Errorf("pki: %w", err)
	}
	if err := writeConfigs(n.l, cfg.Tools.Debs); err != nil {
		return n, err
	}
	if err := n.iptablesBin(); err != nil {
		return n, err
	}

	hostNS, err := hostNamespaces()
	if err != nil {
		return n, err
	}
	if err := os.WriteFile(n.l.p("egress.nft"), []byte(EgressTable), 0o600); err != nil {
		return n, err
	}
	if n.sbLog, err = os.Create(n.l.p("logs/sandbox.log")); err != nil {
		return n, err
	}
	if n.sb, err = newSandbox(cfg.Tools.Pause, n.sbLog); err != nil {
		return n, err
	}
	n.st.Unshare, n.st.Holder = n.sb.unshare.Process.Pid, n.sb.holder
	if err := writeState(statePath, n.st); err != nil {
		return n, err
	}
	if err := n.sb.run(nsSetup(n.l, cfg.Tools.Debs, hostNS)); err != nil {
		return n, fmt.Errorf("set up the node's namespaces: %w (the kernel needs bridge and tmpfs support)", err)
	}
	n.mark("namespaces ready")

	if err := n.serve(); err != nil {
		return n, err
	}
	pushed := make(chan error, 1)
	go func() { pushed <- n.pushImages(ctx) }()

	if err := n.controlPlane(ctx); err != nil {
		return n, err
	}
	n.mark("API server ready")
	if err := <-pushed; err != nil {
		return n, err
	}
	// Building the layers took several copies of each binary; the registry
	// keeps one. Hand the rest back now rather than when the scavenger gets to it.
	debug.FreeOSMemory()
	n.mark("images pushed")
	if err := n.worker(ctx); err != nil {
		return n, err
	}
	n.mark("node Ready")
	if err := n.coreDNS(ctx); err != nil {
		return n, err
	}
	n.mark("CoreDNS available")
	return n, nil
}

// nsSetup is the script that makes the namespaces a node: loopback up, the
// pods' bridge holding NodeIP, a route for Service IPs onto the bridge (the API
// server dials webhooks at their ClusterIP, which kube-proxy rewrites to a pod)
// and no other route; an nftables table that drops anything addressed outside
// loopback, the pod range and the Service range, should a route ever appear;
// tmpfs over /run, /var/lib and /var/log, where the kubelet, containerd and
// libcni write outside their configured folders; sysfs of the node's own
// network namespace; our resolv.conf. It refuses to run in the host's
// mount or network namespace (hostNS). mount(8) keeps its userspace table
// in the work directory: by default it makes /run/mount, and a mount
// namespace shares the host's files until the tmpfs is over /run.
func nsSetup(l layout, debs string, hostNS [2]string) string {
	return fmt.Sprintf(`
if [ "$(readlink /proc/self/ns/mnt)" = %[7]q ] || [ "$(readlink /proc/self/ns/net)" = %[8]q ]; then
  echo "refusing to set up the node in the host's namespaces" >&2; exit 1
fi
export LIBMOUNT_UTAB=%[9]s
ip link set lo up
ip link add %[1]s type bridge
ip addr add %[2]s/24 dev %[1]s
ip link set %[1]s up
ip route add %[3]s dev %[1]s
LD_LIBRARY_PATH=%[5]s/usr/lib/x86_64-linux-gnu %[5]s/usr/sbin/nft -f %[6]s
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mount -t tmpfs -o mode=0755 tmpfs /var/log
mkdir /run/cgroup
mount --rbind /sys/fs/cgroup /run/cgroup
mount -t sysfs sysfs /sys
mount --move /run/cgroup /sys/fs/cgroup
rmdir /run/cgroup
mount --bind %[4]s /etc/resolv.conf
`, bridge, NodeIP, serviceCIDR, l.p("resolv.conf"), debs, l.p("egress.nft"), hostNS[0], hostNS[1], l.p("mount-utab"))
}

// hostNamespaces is this process's mount and network namespace ("mnt:[…]",
// "net:[…]").
func hostNamespaces() ([2]string, error) {
	m, err := os.Readlink("/proc/thread-self/ns/mnt")
	if err != nil {
		return [2]string{}, err
	}
	n, err := os.Readlink("/proc/thread-self/ns/net")
	return [2]string{m, n}, err
}

// EgressTable is the node's nftables guard. Filter hooks see addresses after
// kube-proxy's DNAT, so Service traffic shows its pod or node address here.
const EgressTable = `table inet provider-cloudarmor-egress {
	chain output {
		type filter hook output priority filter; policy accept;
		oifname "lo" accept
		meta nfproto ipv6 drop
		ip daddr != { 10.244.0.0/24, 10.96.0.0/24 } drop
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		meta nfproto ipv6 drop
		ip daddr != { 10.244.0.0/24, 10.96.0.0/24 } drop
	}
}
`

// iptablesBin links the iptables commands kube-proxy runs to the extracted
// nft backend. Only kube-proxy gets this folder on its PATH: a kubelet that
// finds iptables adds firewall chains it does not need.
func (n *Node) iptablesBin() error {
	multi := filepath.Join(n.cfg.Tools.Debs, "usr/sbin/xtables-nft-multi")
	for _, c := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		if err := os.Symlink(multi, n.l.p("bin", c)); err != nil {
			return err
		}
	}
	return os.Symlink(filepath.Join(n.cfg.Tools.Debs, "usr/sbin/conntrack"), n.l.p("bin", "conntrack"))
}

// serve starts the registry, listening on NodeIP inside the node and on host
// loopback, and the API server's loopback forwarder.
func (n *Node) serve() error {
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	inside, err := n.sb.listen(RegistryHost)
	if err != nil {
		return fmt.Errorf("registry on %s: %w", RegistryHost, err)
	}
	host, err := net.Listen("tcp", n.HostRegistry)
	if err != nil {
		_ = inside.Close()
		return fmt.Errorf("registry on %s: %w", n.HostRegistry, err)
	}
	api, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", APIPort))
	if err != nil {
		_ = inside.Close()
		_ = host.Close()
		return fmt.Errorf("API server forwarder on 127.0.0.1:%d: %w", APIPort, err)
	}
	n.listeners = append(n.listeners, inside, host, api)
	for _, l := range []net.Listener{inside, host} {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		n.servers = append(n.servers, srv)
		go func() { _ = srv.Serve(l) }()
	}
	apiInside := fmt.Sprintf("127.0.0.1:%d", APIPort)
	go serveForward(api, func(ctx context.Context) (net.Conn, error) { return n.sb.dial(ctx, apiInside) })
	return nil
}

func (n *Node) pushImages(ctx context.Context) error {
	imgs := nodeImages(n.cfg.Tools)
	errs := make([]error, len(imgs))
	var wg sync.WaitGroup
	for i, img := range imgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = img.push(ctx, n.Registry().base())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// controlPlane starts etcd and the API server, waits for it, then starts the
// controller manager and the scheduler.
func (n *Node) controlPlane(ctx context.Context) error {
	t, l := n.cfg.Tools, n.l
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	if err := n.startProc("etcd", nil, t.Etcd, "--name=node", "--data-dir="+l.p("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=node="+peerURL, "--unsafe-no-fsync=true", "--listen-metrics-urls=", "--log-level=warn"); err != nil {
		return err
	}
	if err := n.startProc("kube-apiserver", nil, t.KubeAPIServer,
		"--bind-address=0.0.0.0", "--advertise-address="+NodeIP, fmt.Sprintf("--secure-port=%d", APIPort),
		"--etcd-servers="+etcdURL, "--cert-dir="+l.p("pki/apiserver-certs"),
		"--tls-cert-file="+l.p("pki/apiserver.crt"), "--tls-private-key-file="+l.p("pki/apiserver.key"),
		"--client-ca-file="+l.p("pki/ca.crt"), "--token-auth-file="+l.p("pki/tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+l.p("pki/sa.pub"), "--service-account-signing-key-file="+l.p("pki/sa.key"),
		"--service-cluster-ip-range="+serviceCIDR, "--allow-privileged=true",
		"--kubelet-client-certificate="+l.p("pki/apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+l.p("pki/apiserver-kubelet-client.key"),
		// Without it, `kubectl logs` looks the node's name up in DNS.
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-admission-plugins=NodeRestriction", "--profiling=false"); err != nil {
		return err
	}
	if err := n.waitAPI(ctx); err != nil {
		return err
	}
	if err := n.startProc("kube-controller-manager", nil, t.KubeControllerManager,
		"--kubeconfig="+l.p("controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+l.p("controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+l.p("controller-manager.kubeconfig"),
		"--service-account-private-key-file="+l.p("pki/sa.key"), "--root-ca-file="+l.p("pki/ca.crt"),
		"--use-service-account-credentials=true", "--leader-elect=false", "--secure-port=0", "--profiling=false",
		// Else it creates /usr/libexec/kubernetes/kubelet-plugins on the host.
		"--flex-volume-plugin-dir="+l.p("flexvolume")); err != nil {
		return err
	}
	return n.startProc("kube-scheduler", nil, t.KubeScheduler,
		"--kubeconfig="+l.p("scheduler.kubeconfig"),
		"--authentication-kubeconfig="+l.p("scheduler.kubeconfig"),
		"--authorization-kubeconfig="+l.p("scheduler.kubeconfig"),
		"--leader-elect=false", "--secure-port=0", "--profiling=false")
}

// worker starts containerd, the kubelet and kube-proxy and waits for the Node
// to be Ready.
func (n *Node) worker(ctx context.Context) error {
	t, l := n.cfg.Tools, n.l
	debs := t.Debs
	lib := filepath.Join(debs, "usr/lib/x86_64-linux-gnu")
	basePath := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if err := n.startProc("containerd", []string{"PATH=" + filepath.Join(debs, "usr/bin") + ":" + filepath.Join(debs, "usr/sbin") + ":" + basePath},
		filepath.Join(debs, "usr/bin/containerd"), "--config="+l.p("containerd/config.toml")); err != nil {
		return err
	}
	if err := n.waitFile(ctx, l.p("containerd/containerd.sock"), 30*time.Second); err != nil {
		return err
	}
	if err := n.startProc("kubelet", []string{"PATH=" + basePath}, t.Kubelet,
		"--config="+l.p("kubelet-config.yaml"), "--kubeconfig="+l.p("kubelet.kubeconfig"),
		"--root-dir="+l.p("kubelet"), "--cert-dir="+l.p("kubelet/pki"),
		"--hostname-override="+Name, "--node-ip="+NodeIP, "-v=1"); err != nil {
		return err
	}
	if err := n.startProc("kube-proxy", []string{"PATH=" + l.p("bin") + ":" + basePath, "LD_LIBRARY_PATH=" + lib, "XTABLES_LIBDIR=" + filepath.Join(lib, "xtables")},
		t.KubeProxy, "--config="+l.p("kube-proxy-config.yaml")); err != nil {
		return err
	}
	return n.poll(ctx, Name+" Ready", 2*time.Minute, func() (bool, error) {
		out, err := n.Kubectl(ctx, "get", "node", Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && strings.TrimSpace(out) == "True", nil
	})
}

func (n *Node) coreDNS(ctx context.Context) error {
	if err := n.Apply(ctx, coreDNSManifests); err != nil {
		return err
	}
	_, err := n.Kubectl(ctx, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=3m")
	return err
}

// Apply applies manifests with kubectl.
func (n *Node) Apply(ctx context.Context, manifests string) error {
	cmd := n.kubectlCmd(ctx, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

// Kubectl runs kubectl against the node and returns its stdout.
func (n *Node) Kubectl(ctx context.Context, args ...string) (string, error) {
	return RunKubectl(ctx, n.cfg.Tools.Kubectl, n.Kubeconfig, n.ClientEnv(), args...)
}

func (n *Node) kubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, n.cfg.Tools.Kubectl, append([]string{"--kubeconfig=" + n.Kubeconfig}, args...)...)
	cmd.Env = n.ClientEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// ClientEnv is the environment for kubectl and helm run against the node:
// their caches and config go under the work directory, not $HOME.
func (n *Node) ClientEnv() []string { return ClientEnv(n.Kubeconfig, n.l.dir) }

// ClientEnv is the environment of kubectl and helm run against kubeconfig,
// with their caches and config under dir, not $HOME.
func ClientEnv(kubeconfig, dir string) []string {
	return append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(dir, "client/kubecache"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "client/helm/cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "client/helm/config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "client/helm/data"),
	)
}

// Forward listens on hostAddr (a host loopback address; port 0 picks one) and
// forwards each connection to target inside the node (a pod or Service
// IP address and port, never a name). It returns the address it listens on; Down closes it.
func (n *Node) Forward(hostAddr, target string) (string, error) {
	l, err := forwardInto(n.sb, hostAddr, target)
	if err != nil {
		return "", err
	}
	n.listeners = append(n.listeners, l)
	return l.Addr().String(), nil
}

// WorkDir is the run's work directory (logs under logs/).
func (n *Node) WorkDir() string { return n.l.dir }

// Holder is the host PID of the first process in the node's namespaces:
// /proc/<Holder>/ns/net is the node's network namespace.
func (n *Node) Holder() int { return n.sb.holder }

// InNode runs a shell script inside the node's namespaces.
func (n *Node) InNode(script string) (string, error) {
	out, err := n.sb.command("/bin/sh", "-ec", script).CombinedOutput()
	return string(out), err
}

func (n *Node) waitAPI(ctx context.Context) error {
	ca, err := os.ReadFile(n.l.p("pki/ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	n.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return n.poll(ctx, "API server /readyz", 2*time.Minute, func() (bool, error) {
		resp, err := n.client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", APIPort))
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (n *Node) waitFile(ctx context.Context, path string, d time.Duration) error {
	return n.poll(ctx, path, d, func() (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
}

// poll calls f every 250 ms until it is true, a process of the node exits, or
// d passes.
func (n *Node) poll(ctx context.Context, what string, d time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := f()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		for _, p := range n.procs {
			if p.exited() {
				return fmt.Errorf("waiting for %s: %s exited; see %s", what, p.name, p.log)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %s; logs in %s", what, d, n.l.p("logs"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// proc is one node process, started through nsenter.
type proc struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// pid is the process itself: nsenter forks it into the PID namespace and
// waits for it.
func (p *proc) pid() int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.cmd.Process.Pid, p.cmd.Process.Pid))
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

func (n *Node) startProc(name string, env []string, bin string, args ...string) error {
	logPath := n.l.p("logs", name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := n.sb.command(bin, args...)
	cmd.Env = append([]string{"HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }()
	n.procs = append(n.procs, p)
	return nil
}

// stop sends SIGTERM and waits up to grace, then SIGKILL.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	if pid := p.pid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	if pid := p.pid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (n *Node) proc(name string) *proc {
	for _, p := range n.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// abortUp ends an Up of n in progress and waits for it to return (having
// torn down what it started, as it does on error).
func (n *Node) abortUp() {
	if n.cancelUp == nil {
		return
	}
	n.cancelUp()
	<-n.upDone
}

// Down stops the node and leaves the host as it was: no processes, mounts,
// namespaces, links, cgroups or changed sysctls. It is safe to call twice,
// and from two goroutines at once: the second returns once the first is done.
func (n *Node) Down() error {
	if n == nil {
		return nil
	}
	n.downMu.Lock()
	defer n.downMu.Unlock()
	if n.lockf == nil {
		return nil
	}
	defer track(n, false)
	start := time.Now()
	var errs []error
	if n.sb != nil {
		// The kubelet first, so it restarts nothing; then every container
		// through containerd, so runc removes their cgroups; then everything
		// else at once. Nothing is kept (etcd's data goes with the work
		// directory), so nothing needs a graceful stop: the API server alone
		// takes over 3 s to exit on SIGTERM.
		if p := n.proc("kubelet"); p != nil {
			p.stop(0)
		}
		if p := n.proc("containerd"); p != nil && !p.exited() {
			n.killContainers()
		}
		n.sb.kill()
		for _, p := range n.procs {
			<-p.done
		}
	}
	if n.sbLog != nil {
		_ = n.sbLog.Close()
	}
	for _, s := range n.servers {
		_ = s.Close()
	}
	for _, l := range n.listeners {
		_ = l.Close()
	}
	// Sysctls are saved together with the cgroup list, before anything runs.
	if n.st.Sysctls != nil {
		if err := restoreSysctls(n.st.Sysctls); err != nil {
			errs = append(errs, err)
		}
		if err := removeNewCgroupsRetry(n.st.Cgroups); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(n.l.dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	_ = n.lockf.Close()
	n.lockf = nil
	n.cfg.Logf("node: down in %s", time.Since(start).Round(10*time.Millisecond))
	return errors.Join(errs...)
}

// killContainers kills and deletes every container task through containerd.
func (n *Node) killContainers() {
	ctr := filepath.Join(n.cfg.Tools.Debs, "usr/bin/ctr")
	sock := n.l.p("containerd/containerd.sock")
	run := func(args ...string) string {
		cmd := exec.Command(ctr, append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...)
		out, _ := cmd.Output()
		return string(out)
	}
	ids := strings.Fields(run("containers", "list", "--quiet"))
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run("tasks", "kill", "--signal", "SIGKILL", id)
			run("tasks", "delete", "--force", id)
			run("containers", "delete", id)
		}()
	}
	wg.Wait()
}

// removeNewCgroupsRetry retries for a few seconds: a cgroup stays busy
// briefly after its last process is killed.
func removeNewCgroupsRetry(before []string) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = removeNewCgroups(before); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

// Recover undoes what runs that died without tearing down left: the node
// recorded in the state file (recoverStale) and the folders MkdirTemp made in
// the temporary folder. Call it holding the machine-wide lock (Lock); Up does.
// A host left as found is left alone.
func Recover(logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return errors.Join(recoverStale(logf), removeDeadTemps(os.TempDir(), logf))
}

// recoverStale undoes a run that died without tearing down: kills its
// namespaces' processes, restores the sysctls it saved, removes its cgroups
// and work directory.
func recoverStale(logf func(string, ...any)) error {
	s, ok := readState(statePath)
	if !ok {
		return nil
	}
	logf("node: cleaning up after a run that did not tear down (%s)", statePath)
	for _, pid := range []int{s.Holder, s.Unshare} {
		if pid > 0 && isOurs(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(500 * time.Millisecond)
	var errs []error
	if s.Sysctls != nil {
		errs = append(errs, restoreSysctls(s.Sysctls), removeNewCgroupsRetry(s.Cgroups))
	}
	if s.WorkDir != "" {
		errs = append(errs, os.RemoveAll(s.WorkDir))
	}
	errs = append(errs, os.Remove(statePath))
	return errors.Join(errs...)
}

// isOurs reports whether pid is still a node's unshare or pause process, not
// a recycled PID.
func isOurs(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	c := string(b)
	return strings.HasPrefix(c, "unshare\x00--pid") || strings.Contains(filepath.Base(strings.SplitN(c, "\x00", 2)[0]), "pause")
}
