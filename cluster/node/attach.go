package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Attachment describes a running node to other processes: `make test` boots
// one node (cluster/local --ready-file writes this as JSON) and each test
// suite attaches to it.
type Attachment struct {
	// Kubeconfig is an admin kubeconfig for the API server on host loopback.
	Kubeconfig string `json:"kubeconfig"`
	// HostRegistry is the node's registry as the host reaches it.
	HostRegistry string `json:"hostRegistry"`
	// Holder is the host PID of the node's first process: its network
	// namespace is /proc/<Holder>/ns/net.
	Holder int `json:"holder"`
	// Kubectl is the kubectl binary.
	Kubectl string `json:"kubectl"`
	// Installed says what the booting process installed, by name (e.g. the
	// emulator's cluster IP).
	Installed map[string]string `json:"installed,omitempty"`
}

// Attachment describes n for other processes.
func (n *Node) Attachment(installed map[string]string) Attachment {
	return Attachment{Kubeconfig: n.Kubeconfig, HostRegistry: n.HostRegistry, Holder: n.sb.holder,
		Kubectl: n.cfg.Tools.Kubectl, Installed: installed}
}

// WriteAttachment writes a to path, atomically: a reader sees all or nothing.
func WriteAttachment(path string, a Attachment) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Attached is a node another process booted.
type Attached struct {
	Attachment
	sb        *sandbox
	listeners []net.Listener
}

// Attach reads the attachment at path and opens the node's network namespace
// for forwarding. Close releases it; the node stays up.
func Attach(path string) (*Attached, error) {
	if err := RequireRoot(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the shared node's attachment: %w", err)
	}
	var a Attachment
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", a.Holder))
	if err != nil {
		return nil, fmt.Errorf("the shared node (holder PID %d) is not running: %w", a.Holder, err)
	}
	host, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		_ = netns.Close()
		return nil, err
	}
	return &Attached{Attachment: a, sb: &sandbox{holder: a.Holder, netns: netns, hostns: host}}, nil
}

// Close stops the forwarders and releases the namespace.
func (a *Attached) Close() {
	for _, l := range a.listeners {
		_ = l.Close()
	}
	_ = a.sb.netns.Close()
	_ = a.sb.hostns.Close()
}

// Forward is Node.Forward for an attached node.
func (a *Attached) Forward(hostAddr, target string) (string, error) {
	l, err := forwardInto(a.sb, hostAddr, target)
	if err != nil {
		return "", err
	}
	a.listeners = append(a.listeners, l)
	return l.Addr().String(), nil
}

// Expose makes hostTarget (a host loopback address and port, e.g. an emulator
// a test runs in-process) reachable inside the node at NodeIP on a free port,
// which it returns: pods reach it through the bridge's gateway, which is
// local to the node, so nothing crosses into the host's network but this
// one forwarded port.
func (a *Attached) Expose(hostTarget string) (string, error) {
	if h, _, err := net.SplitHostPort(hostTarget); err != nil || !net.ParseIP(h).IsLoopback() {
		return "", fmt.Errorf("expose: %q is not a host loopback address", hostTarget)
	}
	l, err := a.sb.listen(NodeIP + ":0")
	if err != nil {
		return "", fmt.Errorf("expose: %w", err)
	}
	a.listeners = append(a.listeners, l)
	go serveForward(l, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", hostTarget)
	})
	return l.Addr().String(), nil
}

// Kubectl runs kubectl against the node and returns its stdout.
func (a *Attached) Kubectl(ctx context.Context, args ...string) (string, error) {
	return RunKubectl(ctx, a.Attachment.Kubectl, a.Kubeconfig, append(os.Environ(), "KUBECONFIG="+a.Kubeconfig), args...)
}

// RunKubectl runs the kubectl bin against kubeconfig with env and returns
// its stdout; an error carries its stderr.
func RunKubectl(ctx context.Context, bin, kubeconfig string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// forwardInto listens on hostAddr (host loopback; port 0 picks one) and
// forwards each connection to target inside the node (an IP address and
// port, never a name: a name would be looked up with the host's resolver).
func forwardInto(sb *sandbox, hostAddr, target string) (net.Listener, error) {
	if h, _, err := net.SplitHostPort(hostAddr); err != nil || !net.ParseIP(h).IsLoopback() {
		return nil, fmt.Errorf("forward: %q is not a host loopback address", hostAddr)
	}
	if h, _, err := net.SplitHostPort(target); err != nil || net.ParseIP(h) == nil {
		return nil, fmt.Errorf("forward: target %q is not an IP address and port (look up a Service's clusterIP first)", target)
	}
	l, err := net.Listen("tcp", hostAddr)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	go serveForward(l, func(ctx context.Context) (net.Conn, error) { return sb.dial(ctx, target) })
	return l, nil
}

// serveForward accepts on l and pipes each connection to one dial makes,
// until l is closed.
func serveForward(l net.Listener, dial func(context.Context) (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			u, err := dial(ctx)
			cancel()
			if err != nil {
				return
			}
			defer func() { _ = u.Close() }()
			pipe(c, u)
		}()
	}
}
