package nodesuite

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestCrashRecovery kills a running node's harness with SIGKILL, so nothing
// of it tears down, then starts the next node: that start must undo the
// leftovers (sysctls, cgroups, the work directory), and its teardown must
// leave the host as it was before the first.
func TestCrashRecovery(t *testing.T) {
	root, tmp := repo.Root(), t.TempDir()
	tools := realNode(t, tmp)
	harness := filepath.Join(tmp, "node")
	build := exec.Command("go", "build", "-o", harness, "./cluster/node/cmd/node")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cluster/node/cmd/node: %v\n%s", err, out)
	}
	// The test holds the machine's lock from before it looks at the host to
	// the end, and hands it to the harness and then to the second node: no
	// other run on the machine can start in between (and clean up the
	// killed node's leftovers, or change the host, before this test does).
	lk := lockMachine(t)
	before := snapshot(t, tools.Debs)

	cmd := exec.Command(harness, "-crossplane=false")
	cmd.Dir = root
	// Killed, the harness leaves its temporary folder: put it in ours.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, node.LockFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{lk}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			t.Logf("first node: %s", sc.Text())
			if strings.Contains(sc.Text(), "export KUBECONFIG=") {
				once.Do(func() { close(up) })
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the first node was not up within 3 minutes")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	var recovered bool
	logf := func(format string, args ...any) {
		if strings.Contains(format, "did not tear down") {
			recovered = true
		}
		t.Logf(format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := node.Up(ctx, node.Config{Tools: tools, Logf: logf, Lock: lk})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Down(); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if !recovered {
		t.Error("the second start did not clean up after the killed first")
	}
	compare(t, before, snapshot(t, tools.Debs))
}
