package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalHelperEnv makes this test binary the helper of TestNotifyContext.
const signalHelperEnv = "NODE_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if out := os.Getenv(signalHelperEnv); out != "" {
		signalHelper(out)
		return
	}
	os.Exit(m.Run())
}

// signalHelper behaves as `make run`: it says it is up, waits for a signal,
// then writes on a stdout that is closed by now while it "tears down" for a
// second (a second signal arrives meanwhile), and records that it finished.
func signalHelper(out string) {
	ctx, stop := NotifyContext(context.Background())
	defer stop()
	fmt.Println("up")
	<-ctx.Done()
	for i := 0; i < 10; i++ {
		fmt.Println("tearing down…")
		fmt.Fprintln(os.Stderr, "tearing down…")
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(out, []byte("torn down"), 0o600); err != nil {
		os.Exit(3)
	}
}

// TestNotifyContext runs a process that uses NotifyContext with its stdout and
// stderr on a pipe closed before the signal, once per stop signal, and
// signals it twice: it must finish its "teardown" and exit 0, neither killed
// by SIGPIPE on its first line nor by the second signal.
func TestNotifyContext(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			done := filepath.Join(t.TempDir(), "done")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), signalHelperEnv+"="+done)
			// Under nohup the helper would inherit SIGHUP ignored and keep
			// running, as a node started under nohup must (TestParentGone).
			if err := HangupDefault(cmd); err != nil {
				t.Fatal(err)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = w, w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = w.Close()
			if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "up\n" {
				t.Fatalf("the helper said %q (%v), want up", line, err)
			}
			_ = r.Close()
			_ = cmd.Process.Signal(sig)
			time.Sleep(300 * time.Millisecond)
			_ = cmd.Process.Signal(sig)
			err = cmd.Wait()
			if b, _ := os.ReadFile(done); err != nil || string(b) != "torn down" {
				t.Errorf("after %v and a second one during teardown, with stdout and stderr closed: exit %v, finished %q; want exit 0 after finishing", sig, err, b)
			}
		})
	}
}

// TestParentGone runs the helper as a shell runs a job, in the background of
// an sh, and kills the sh with SIGKILL, which passes nothing on: the helper,
// given another parent, must tear down as on SIGHUP. Started under nohup
// (SIGHUP ignored from the start) it must heed neither SIGHUP nor its
// parent's death, and still stop on SIGTERM.
func TestParentGone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nohup bool
	}{
		{name: "TearsDown"},
		{name: "UnderNohupRunsOn", nohup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := filepath.Join(t.TempDir(), "done")
			// Under nohup the TearsDown helper starts with SIGHUP's default
			// disposition, as it would in a terminal.
			script := HangupDefaultPrefix() + `"$0" -test.run='^$' & echo $!; wait`
			if tc.nohup {
				script = `trap "" HUP; "$0" -test.run='^$' & echo $!; wait`
			}
			sh := exec.Command("/bin/sh", "-c", script, os.Args[0])
			sh.Env = append(os.Environ(), signalHelperEnv+"="+done)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			sh.Stdout, sh.Stderr = w, w
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			_ = w.Close()
			br := bufio.NewReader(r)
			pidLine, _ := br.ReadString('\n')
			helper, err := strconv.Atoi(strings.TrimSpace(pidLine))
			if err != nil {
				t.Fatalf("sh said %q, want the helper's PID", pidLine)
			}
			t.Cleanup(func() { _ = syscall.Kill(helper, syscall.SIGKILL) })
			if line, err := br.ReadString('\n'); err != nil || line != "up\n" {
				t.Fatalf("the helper said %q (%v), want up", line, err)
			}
			_ = r.Close()
			_ = sh.Process.Kill()
			_ = sh.Wait()
			if tc.nohup {
				_ = syscall.Kill(helper, syscall.SIGHUP)
				// Over two of watchParent's polls.
				time.Sleep(2500 * time.Millisecond)
				if _, err := os.Stat(done); err == nil || !running(helper) {
					t.Fatal("started under nohup, the helper stopped on SIGHUP or on its parent's death")
				}
				_ = syscall.Kill(helper, syscall.SIGTERM)
			}
			deadline := time.Now().Add(10 * time.Second)
			for running(helper) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if b, _ := os.ReadFile(done); string(b) != "torn down" {
				t.Errorf("the helper did not finish its teardown (running: %v)", running(helper))
			}
		})
	}
}

// running reports whether pid is a process that has not exited (a zombie
// has: its new parent may be slow to reap it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && !strings.HasPrefix(string(b)[i+1:], " Z")
}

// TestTrackWhileStopping: once DownOnSignal has listed the nodes to tear
// down, no other may start (Up fails rather than boot beside the teardown).
func TestTrackWhileStopping(t *testing.T) {
	t.Cleanup(func() {
		live.Lock()
		live.stopping = false
		live.Unlock()
	})
	a, b := &Node{}, &Node{}
	if !track(a, true) {
		t.Fatal("tracking a node before any signal was refused")
	}
	if got := stopTracking(); len(got) != 1 || got[0] != a {
		t.Errorf("stopTracking = %v, want the one node tracked", got)
	}
	if track(b, true) {
		t.Error("a node was tracked after stopTracking: it would boot beside the teardown")
	}
	track(a, false)
}
