package provider

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process runs the provider binary as a child process, appending its stdout
// and stderr to one log file across restarts. Set the exported fields, then
// Start it; it may be killed and started again.
type Process struct {
	Bin  string
	Args []string
	// Kubeconfig is passed as KUBECONFIG, overriding the caller's.
	Kubeconfig string
	// LogPath receives the output; it is appended to, never truncated.
	LogPath string
	// Label opens the line written to the log at each start; "provider"
	// when empty.
	Label string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	killed  bool          // the test stopped it on purpose
	exitErr error
	// Starts counts how often the process was started.
	Starts int
}

// Start launches the provider, failing the test when it cannot. It must
// not be running.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	if err := p.Launch(); err != nil {
		t.Fatal(err)
	}
}

// Launch launches the provider. It must not be running.
func (p *Process) Launch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("provider: start while it is still running")
	}
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	label := p.Label
	if label == "" {
		label = "provider"
	}
	p.Starts++
	fmt.Fprintf(f, "=== %s: %s starting provider (run %d): %s %s\n",
		label, time.Now().Format(time.RFC3339Nano), p.Starts, p.Bin, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	// A later duplicate wins, so this overrides any KUBECONFIG of the caller.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.Kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("provider: cannot start %s: %w", p.Bin, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.killed, p.exitErr = cmd, done, false, nil
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Kill stops the provider with SIGKILL, like a node or OOM kill, and waits
// for it to exit. It does nothing when the provider is not running.
func (p *Process) Kill() { p.Stop(os.Kill, 0) }

// Stop sends sig, waits up to grace for the provider to exit and then kills
// it. It does nothing when the provider is not running.
func (p *Process) Stop(sig os.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if sig != os.Kill {
		select {
		case <-done:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-done
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
}

// ExitedUnexpectedly reports an exit the test did not ask for.
func (p *Process) ExitedUnexpectedly() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.killed {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("the provider process exited on its own: %v", p.exitErr)
	default:
		return nil
	}
}

// Pid is the running provider's process id, or 0.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Log returns the whole log.
func (p *Process) Log() []byte {
	b, _ := os.ReadFile(p.LogPath)
	return b
}

// Tail returns the last n lines of the log.
func (p *Process) Tail(n int) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close() //nolint:errcheck // read only
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
