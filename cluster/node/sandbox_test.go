package node

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSandbox sets up the node's namespaces without Kubernetes and checks that
// the host sees none of it, and that a listener inside is reached only
// through the forwarder. It needs root and the extracted node debs (for nft):
// NODE_TEST=1 NODE_DEBS=<root printed by `cluster/toolchain/build.sh node-debs`>.
func TestSandbox(t *testing.T) {
	debs := os.Getenv("NODE_DEBS")
	if os.Getenv("NODE_TEST") != "1" || debs == "" || os.Geteuid() != 0 {
		t.Skip("set NODE_TEST=1 and NODE_DEBS, as root")
	}
	dir := t.TempDir()
	pause := filepath.Join(dir, "pause")
	if out, err := exec.Command("go", "build", "-o", pause, "./pause").CombinedOutput(); err != nil {
		t.Fatalf("build pause: %v\n%s", err, out)
	}
	l := layout{dir}
	if err := os.WriteFile(l.p("resolv.conf"), []byte(resolvConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.p("egress.nft"), []byte(EgressTable), 0o600); err != nil {
		t.Fatal(err)
	}
	mountsBefore, _ := os.ReadFile("/proc/self/mountinfo")
	linksBefore, _ := exec.Command("ip", "-o", "link").Output()

	host, err := hostNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := newSandbox(pause, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.kill()
	if err := sb.run(nsSetup(l, debs, host)); err != nil {
		t.Fatal(err)
	}
	out, err := sb.command("/bin/sh", "-c", "ip -o route; cat /etc/resolv.conf; ls /sys/class/net").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("inside:\n%s", out)
	if strings.Contains(string(out), "default") || !strings.Contains(string(out), "no upstream DNS") {
		t.Errorf("inside the node: want no default route and our resolv.conf, got:\n%s", out)
	}
	if m, _ := os.ReadFile("/proc/self/mountinfo"); string(m) != string(mountsBefore) {
		t.Errorf("the host's mounts changed while the sandbox runs")
	}
	if ln, _ := exec.Command("ip", "-o", "link").Output(); string(ln) != string(linksBefore) {
		t.Errorf("the host's links changed while the sandbox runs")
	}

	inside, err := sb.listen(NodeIP + ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inside.Close() }()
	go func() {
		c, err := inside.Accept()
		if err == nil {
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()
	fwd, err := forwardInto(sb, "127.0.0.1:0", inside.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fwd.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	_ = c.Close()
	if err != nil || string(b) != "hello" {
		t.Fatalf("through the forwarder: %q, %v", b, err)
	}
	if ns, _ := os.Readlink("/proc/thread-self/ns/net"); ns != host[1] {
		t.Fatalf("this thread is left in %s, want the host's %s", ns, host[1])
	}
}
