package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const reaperHelperEnv = "CONTROLPLANE_REAPER_HELPER"

// TestReaperAfterHardExit kills -9 a process holding a control plane and expects
// etcd, kube-apiserver and the temporary folders to be gone shortly after.
func TestReaperAfterHardExit(t *testing.T) {
	if os.Getenv(reaperHelperEnv) == "1" {
		reaperHelper()
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestReaperAfterHardExit$")
	helper.Env = append(os.Environ(), reaperHelperEnv+"=1")
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	pids, dirs := readHelperReport(t, stdout)
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (anyAlive(pids) || anyExists(dirs)) {
		time.Sleep(200 * time.Millisecond)
	}
	if anyAlive(pids) {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL) // don't leak them from the test either
		}
		t.Fatalf("control plane processes %v survived their parent", pids)
	}
	if anyExists(dirs) {
		t.Errorf("temporary folders %v survived their parent", dirs)
	}
}

// reaperHelper runs in the child: start, report, then wait to be killed.
func reaperHelper() {
	cp, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	plane := cp.Env.ControlPlane
	pids := childPIDs([]string{plane.APIServer.Path, plane.Etcd.Path})
	fmt.Printf("READY %s|%s\n", strings.Join(pids, " "),
		strings.Join([]string{cp.tmpDir, plane.APIServer.CertDir, plane.Etcd.DataDir, cp.Env.WebhookInstallOptions.LocalServingCertDir}, " "))
	time.Sleep(time.Minute)
	os.Exit(1)
}

func readHelperReport(t *testing.T, r io.Reader) (pids []int, dirs []string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR") {
			t.Fatal(line)
		}
		rest, ok := strings.CutPrefix(line, "READY ")
		if !ok {
			continue
		}
		p, d, _ := strings.Cut(rest, "|")
		for _, f := range strings.Fields(p) {
			var n int
			if _, err := fmt.Sscan(f, &n); err == nil {
				pids = append(pids, n)
			}
		}
		if len(pids) != 2 {
			t.Fatalf("want 2 child processes, got %q", p)
		}
		return pids, strings.Fields(d)
	}
	t.Fatalf("helper exited without reporting: %v", sc.Err())
	return nil, nil
}

func anyAlive(pids []int) bool {
	for _, p := range pids {
		if syscall.Kill(p, 0) == nil {
			return true
		}
	}
	return false
}

func anyExists(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// TestStartCancelled: an interrupt during start (Ctrl-C in `make run`) returns the
// context's error and leaves nothing running.
func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cp, err := Start(ctx, Options{})
	if err == nil {
		_ = cp.Stop()
		t.Fatal("Start succeeded despite a cancelled context")
	}
	if !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Errorf("want the context's error, got %v", err)
	}
	if pids := childPIDs(binaryPaths(t)); len(pids) != 0 {
		t.Errorf("processes left running: %v", pids)
	}
}

func binaryPaths(t *testing.T) []string {
	dir, err := AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")}
}
