package nodesuite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
)

// bootHelperEnv makes TestBootHelper, in a test binary TestSuiteSignalTeardown
// starts, boot a node.
const bootHelperEnv = "NODE_BOOT_HELPER"

// TestBootHelper is TestSuiteSignalTeardown's stand-in for a node suite: it
// boots a node as the suites do (boot, under TestMain's node.DownOnSignal,
// with the lock its parent hands down) and waits.
func TestBootHelper(t *testing.T) {
	if os.Getenv(bootHelperEnv) == "" {
		t.Skip("TestSuiteSignalTeardown's helper")
	}
	tools := realNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, down := boot(ctx, t, tools, node.InheritedLock())
	defer down()
	t.Log("helper: node up")
	<-ctx.Done()
}

// TestSuiteSignalTeardown stops a test binary that boots a node, as `make
// test` and `make node-test` run them, with its output on a pipe whose reader
// is gone: by SIGINT while its node is still coming up (Up must stop and
// tear down what it started, not race a teardown), and by the death of its
// parent once the node is up, as when `go test` is killed with SIGTERM (it
// passes nothing to the test binary; here an sh killed with SIGKILL). Each
// time the host must be as before.
func TestSuiteSignalTeardown(t *testing.T) {
	tools := realNode(t, t.TempDir())
	for _, tc := range []struct {
		name string
		// at is the helper's line after which it is stopped.
		at         string
		parentGone bool
	}{
		{name: "SIGINTDuringUp", at: "node: namespaces ready"},
		{name: "GoTestGone", at: "helper: node up", parentGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lk := lockMachine(t)
			t.Cleanup(func() {
				if err := node.Recover(t.Logf); err != nil {
					t.Errorf("undoing what the helper left: %v", err)
				}
			})
			tmp := t.TempDir()
			before := snapshot(t, tools.Debs)
			h := startBootHelper(t, tmp, lk, tc.parentGone)
			start := time.Now()
			if out, ok := readUntil(h.out, tc.at, 5*time.Minute); !ok {
				t.Fatalf("the helper did not say %q within 5 minutes; it said:\n%s", tc.at, out)
			}
			_ = h.out.Close()
			t.Logf("%q %s after the start", tc.at, time.Since(start).Round(100*time.Millisecond))
			stopped := time.Now()
			h.stop()
			if !h.gone(time.Minute) {
				t.Fatal("the helper did not end within a minute of being stopped (its teardown takes seconds)")
			}
			t.Logf("the helper ended %s after it was stopped", time.Since(stopped).Round(100*time.Millisecond))
			compare(t, before, snapshot(t, tools.Debs))
			if left := harnessTemps(t, tmp); left != "" {
				t.Errorf("the helper left in its temporary folder:\n%s", left)
			}
		})
	}
}

// bootHelper is a running TestBootHelper.
type bootHelper struct {
	out  *os.File // its stdout and stderr
	stop func()
	gone func(time.Duration) bool
}

// startBootHelper starts this test binary as TestBootHelper, with lk as its
// inherited lock and tmp as its temporary folder, directly or (parentGone)
// in the background of an sh that stop kills with SIGKILL.
func startBootHelper(t *testing.T, tmp string, lk *os.File, parentGone bool) bootHelper {
	t.Helper()
	args := []string{"-test.run=^TestBootHelper$", "-test.v"}
	cmd := exec.Command(os.Args[0], args...)
	if parentGone {
		// Under nohup the helper starts with SIGHUP's default disposition,
		// as `go test` in a terminal would start it.
		cmd = exec.Command("/bin/sh", append([]string{"-c", node.HangupDefaultPrefix() + `"$0" "$@" & echo $!; wait`, os.Args[0]}, args...)...)
	}
	cmd.Env = append(os.Environ(), bootHelperEnv+"=1", "TMPDIR="+tmp, node.LockFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{lk}
	// Should this test die, the helper (or its sh) is told.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	r, exited := startPiped(t, cmd)
	pid := cmd.Process.Pid
	if parentGone {
		line := readLine(r)
		var err error
		if pid, err = strconv.Atoi(line); err != nil {
			t.Fatalf("sh said %q, want the helper's PID", line)
		}
	}
	helper := pid
	t.Cleanup(func() { _ = syscall.Kill(helper, syscall.SIGKILL) })
	if parentGone {
		return bootHelper{out: r,
			stop: func() { _ = cmd.Process.Kill() },
			gone: func(d time.Duration) bool { return waitGone(helper, d) }}
	}
	return bootHelper{out: r,
		stop: func() { _ = syscall.Kill(helper, syscall.SIGINT) },
		gone: func(d time.Duration) bool {
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
						t.Errorf("the helper was killed by %v instead of tearing down", ws.Signal())
					}
				}
				return true
			case <-time.After(d):
				return false
			}
		}}
}

// waitGone waits up to d for pid, not a child of this process, to exit (a
// zombie has: its new parent may be slow to reap it).
func waitGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b)[i+1:], " Z") {
			return true
		}
	}
	return false
}

// readLine reads one line from r a byte at a time, leaving the rest unread
// for readUntil.
func readLine(r *os.File) string {
	var b strings.Builder
	c := make([]byte, 1)
	for {
		if n, err := r.Read(c); n == 0 || err != nil || c[0] == '\n' {
			return b.String()
		}
		b.WriteByte(c[0])
	}
}
