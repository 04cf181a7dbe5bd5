package nodesuite

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestSignalTeardown stops the `make run` program (cluster/local, which
// `make run` execs) the ordinary ways, each with its stdout and stderr on a
// pipe whose reader is gone, as with `make run 2>&1 | tee log` when the same
// Ctrl-C has ended tee: Ctrl-C and a closed terminal signal the whole process
// group, `kill` the process alone, and each signal comes twice, the second
// during the teardown. Each time the host must be as before:
// sysctls, mounts, namespaces, links, nft tables, listening ports, processes,
// the temporary folder (the run's own, whole) and /run.
//
// The signal comes once the node is up with CoreDNS, while the program goes
// on to install Crossplane: every host-wide change (the kubelet's sysctls,
// containers' cgroups, the node's namespaces and mounts, the forwarders'
// ports) exists by then, and booting Crossplane as well would only add a
// minute a signal.
func TestSignalTeardown(t *testing.T) {
	tools := realNode(t, t.TempDir())
	local, root := localBinary(t), repo.Root()
	binDir := envOr("NODE_BIN_DIR", filepath.Join(root, "_output/bin"))
	xpkgDir := envOr("NODE_XPKG_DIR", filepath.Join(root, "_output/xpkg"))
	// The program checks these right after the node is up and, missing,
	// would tear down before the signal.
	need := []string{filepath.Join(binDir, "emulator")}
	for _, p := range stack.Packages {
		need = append(need, filepath.Join(xpkgDir, p.File))
	}
	for _, f := range need {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run `make build xpkg` first", err)
		}
	}
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool // the terminal signals its foreground process group
	}{
		{name: "CtrlC", sig: syscall.SIGINT, group: true},
		{name: "Kill", sig: syscall.SIGTERM},
		{name: "TerminalClosed", sig: syscall.SIGHUP, group: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Held from the first snapshot to the last and handed to the
			// program: no other node can start in between.
			lk := lockMachine(t)
			// Should the run leave the host changed, the next one must
			// not find it so.
			t.Cleanup(func() {
				if err := node.Recover(t.Logf); err != nil {
					t.Errorf("undoing what the run left: %v", err)
				}
			})
			tmp := t.TempDir()
			before := snapshot(t, tools.Debs)
			cmd := exec.Command(local, "--bin-dir", binDir, "--xpkg-dir", xpkgDir)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, node.LockFDEnv+"=3",
				"CROSSPLANE_BIN="+toolPath(t, "CROSSPLANE_BIN", "crossplane"))
			cmd.ExtraFiles = []*os.File{lk}
			// Under nohup the program would inherit SIGHUP ignored and keep
			// running, as a node started under nohup must.
			if err := node.HangupDefault(cmd); err != nil {
				t.Fatal(err)
			}
			// A process group of its own, as a shell gives a job; should
			// this test die, the program tears down.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
			r, exited := startPiped(t, cmd)

			start := time.Now()
			if out, ok := readUntil(r, "node: CoreDNS available", 5*time.Minute); !ok {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the node was not up within 5 minutes: exit %v; output:\n%s", <-exited, out)
			}
			// Gone before the signal: its next line gets EPIPE.
			_ = r.Close()
			if _, err := os.Stat("/run/provider-cloudarmor-node.json"); err != nil {
				t.Fatalf("the node is up but its state file is not there: %v", err)
			}
			select {
			case err := <-exited:
				t.Fatalf("make run ended before the signal: %v", err)
			default:
			}
			t.Logf("node up %s after the start; %v to %s", time.Since(start).Round(100*time.Millisecond),
				tc.sig, map[bool]string{true: "its process group", false: "the process"}[tc.group])
			pid := cmd.Process.Pid
			if tc.group {
				pid = -pid
			}
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			// A second one during the teardown (2-5 s), as an impatient
			// user gives: it must not cut the teardown short.
			time.Sleep(500 * time.Millisecond)
			_ = syscall.Kill(pid, tc.sig)
			var exit error
			select {
			case exit = <-exited:
			case <-time.After(3 * time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("make run did not end within 3 minutes of %v", tc.sig)
			}
			t.Logf("make run ended %s after %v: %v", time.Since(stopped).Round(100*time.Millisecond), tc.sig, exit)
			var ee *exec.ExitError
			if errors.As(exit, &ee) {
				if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
					t.Errorf("make run was killed by %v instead of tearing down", ws.Signal())
				}
			}
			compare(t, before, snapshot(t, tools.Debs))
			if left := dirNames(t, tmp); left != "" {
				t.Errorf("make run left in its temporary folder:\n%s", left)
			}
		})
	}
}

// readUntil reads lines from r until one contains want, r ends or d passes;
// it returns what it read.
func readUntil(r *os.File, want string, d time.Duration) (string, bool) {
	_ = r.SetReadDeadline(time.Now().Add(d))
	var out strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), want) {
			return out.String(), true
		}
	}
	return out.String(), false
}

// startPiped starts cmd with its stdout and stderr on a pipe whose read end
// it returns (the test closes it to play a gone reader), and a channel that
// receives cmd's exit.
func startPiped(t *testing.T, cmd *exec.Cmd) (*os.File, <-chan error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return r, exited
}
