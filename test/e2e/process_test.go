package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// providerProcess runs the provider binary as a child process, appending its
// stdout and stderr to one log file across restarts.
type providerProcess struct {
	bin        string
	args       []string
	kubeconfig string
	logPath    string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	killed  bool          // the test stopped it on purpose
	exitErr error
	runs    int
}

// start launches the provider. It must not be running.
func (p *providerProcess) start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		t.Fatal("provider: start while it is still running")
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.runs++
	fmt.Fprintf(f, "=== e2e: %s starting provider (run %d): %s %s\n",
		time.Now().Format(time.RFC3339Nano), p.runs, p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	// A later duplicate wins, so this overrides any KUBECONFIG of the caller.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("provider: cannot start %s: %v", p.bin, err)
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
}

// kill stops the provider with SIGKILL, like a node or OOM kill, and waits
// for it to exit. It does nothing when the provider is not running.
func (p *providerProcess) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
}

// exitedUnexpectedly reports an exit the test did not ask for.
func (p *providerProcess) exitedUnexpectedly() error {
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

// tail returns the last n lines of the provider's log.
func (p *providerProcess) tail(n int) string {
	f, err := os.Open(p.logPath)
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
