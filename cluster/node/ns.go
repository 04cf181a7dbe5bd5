package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sandbox is the set of namespaces the whole node lives in: a PID namespace
// (killing its first process kills every node process, containers included), a
// network namespace with no link to the outside (only loopback and the pods'
// bridge, no default route), and a private mount namespace (tmpfs over the
// paths the kubelet, containerd and libcni hard-code, and a resolv.conf of our
// own), so nothing the node mounts or writes there reaches the host.
type sandbox struct {
	unshare *exec.Cmd
	holder  int           // the PID namespace's first process, as the host sees it
	done    chan struct{} // closed when unshare has exited
	netns   *os.File
	hostns  *os.File
	pidns   string // "pid:[…]" of the node's PID namespace
}

// newSandbox starts pause as the first process of fresh namespaces.
func newSandbox(pause string, logw io.Writer) (*sandbox, error) {
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--net", "--mount",
		"--propagation", "private", "--kill-child", "--", pause)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logw, &out), io.MultiWriter(logw, &out)
	// If this process dies, unshare dies, and --kill-child takes the node with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("unshare: %w", err)
	}
	s := &sandbox{unshare: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	// Every thread is still in the host's namespace here.
	host, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		_ = cmd.Process.Kill()
		<-s.done
		return nil, fmt.Errorf("open the host's network namespace: %w", err)
	}
	s.hostns = host
	deadline := time.Now().Add(10 * time.Second)
	for s.holder == 0 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.holder, _ = strconv.Atoi(f[0])
			break
		}
		select {
		case <-s.done:
			_ = host.Close()
			return nil, fmt.Errorf("unshare failed (%s): the kernel needs PID, network and mount namespaces", oneLine(out.String()))
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-s.done
			_ = host.Close()
			return nil, fmt.Errorf("unshare started no process in 10 s: the kernel needs PID, network and mount namespaces")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", s.holder))
	if err != nil {
		s.kill()
		return nil, fmt.Errorf("open the node's network namespace: %w", err)
	}
	s.netns = ns
	if s.pidns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", s.holder)); err != nil {
		s.kill()
		return nil, fmt.Errorf("the node's PID namespace: %w", err)
	}
	return s, nil
}

// command runs name inside all three namespaces.
func (s *sandbox) command(name string, args ...string) *exec.Cmd {
	a := append([]string{"--target", strconv.Itoa(s.holder), "--pid", "--net", "--mount", "--", name}, args...)
	cmd := exec.Command("nsenter", a...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// run runs a shell script inside the namespaces and returns its output.
func (s *sandbox) run(script string) error {
	cmd := s.command("/bin/sh", "-ec", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, oneLine(string(out)))
	}
	return nil
}

// oneLine joins a command's output into one line for an error message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " / ")), " ")
}

// lockedBuffer is a bytes.Buffer safe for exec's copying goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// inNetns runs f on a thread switched into the node's network namespace, so
// sockets f creates belong to it (a socket keeps the namespace it was made in).
// The thread is switched back before other goroutines may use it; if that
// fails it stays locked and ends with the goroutine. Threads must not end
// otherwise: a child started with Pdeathsig dies with the thread that forked it.
func (s *sandbox) inNetns(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := setns(s.netns); err != nil {
			errc <- fmt.Errorf("setns into the node's network namespace: %w", err)
			return
		}
		err := f()
		if setns(s.hostns) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// listen opens a TCP listener on addr inside the node's network namespace.
func (s *sandbox) listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := s.inNetns(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// dial connects to addr inside the node's network namespace.
func (s *sandbox) dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := s.inNetns(func() error {
		var err error
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// pipe copies both ways between a and b until both directions are done.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	copyTo := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go copyTo(a, b)
	go copyTo(b, a)
	wg.Wait()
}

// kill ends every process of the node: SIGKILL to the PID namespace's first
// process makes the kernel kill all the others. It returns once none is left
// (a large process takes a moment to exit after SIGKILL) or after 15 s.
func (s *sandbox) kill() {
	if s.holder != 0 {
		_ = syscall.Kill(s.holder, syscall.SIGKILL)
	}
	_ = s.unshare.Process.Kill()
	<-s.done
	for deadline := time.Now().Add(15 * time.Second); s.pidns != "" && time.Now().Before(deadline); {
		if len(pidsIn(s.pidns)) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s.netns != nil {
		_ = s.netns.Close()
	}
	_ = s.hostns.Close()
}

// pidsIn lists the host PIDs of the processes in a PID namespace ("pid:[…]").
func pidsIn(ns string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
			out = append(out, pid)
		}
	}
	return out
}
