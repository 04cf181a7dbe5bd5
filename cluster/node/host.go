package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HostSysctls are the host-wide kernel settings a node changes: the kubelet
// sets the first five on every start (vm.overcommit_memory 0→1, kernel.panic
// 1→10 and kernel.panic_on_oops 0→1 were seen changing here), and the CNI bridge
// plugin turns on IP forwarding. Forwarding is per network namespace and the
// node has its own, but the host's value is checked and restored all the same.
var HostSysctls = []string{
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
	"net.ipv4.ip_forward",
}

// ReadSysctls reads the given settings from /proc/sys.
func ReadSysctls(names []string) (map[string]string, error) {
	m := make(map[string]string, len(names))
	for _, n := range names {
		b, err := os.ReadFile(sysctlPath(n))
		if err != nil {
			return nil, err
		}
		m[n] = strings.TrimSpace(string(b))
	}
	return m, nil
}

// restoreSysctls writes back every setting that differs from saved.
func restoreSysctls(saved map[string]string) error {
	var errs []error
	now, err := ReadSysctls(keys(saved))
	if err != nil {
		return err
	}
	for n, v := range saved {
		if now[n] == v {
			continue
		}
		if err := os.WriteFile(sysctlPath(n), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s=%s: %w", n, v, err))
		}
	}
	return errors.Join(errs...)
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RequireRoot fails unless this process runs as root.
func RequireRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("the node needs root (PID, network and mount namespaces, a bridge, cgroups, sysctls): run as root")
	}
	return nil
}

// preflight fails with one line saying what is missing and how to fix it.
func preflight(t Tools, hostPorts []int) error {
	if err := RequireRoot(); err != nil {
		return err
	}
	fsList, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return fmt.Errorf("read /proc/filesystems: %w", err)
	}
	for _, f := range []string{"overlay", "tmpfs", "sysfs"} {
		if !strings.Contains(string(fsList), "\t"+f+"\n") {
			return fmt.Errorf("the kernel has no %s filesystem: load it (modprobe %s) or use a kernel with it", f, f)
		}
	}
	if !cgroupsPresent() {
		return errors.New("no cgroup memory, cpu and pids controllers under /sys/fs/cgroup: mount cgroup v1 controllers or cgroup v2 there")
	}
	for _, c := range []string{"unshare", "nsenter", "ip", "mount"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%s not found on PATH: install util-linux and iproute2", c)
		}
	}
	for name, p := range map[string]string{
		"etcd": t.Etcd, "kube-apiserver": t.KubeAPIServer, "kube-controller-manager": t.KubeControllerManager,
		"kube-scheduler": t.KubeScheduler, "kubelet": t.Kubelet, "kube-proxy": t.KubeProxy, "kubectl": t.Kubectl,
		"coredns": t.CoreDNS, "crossplane": t.CrossplaneCore, "helm": t.Helm, "pause": t.Pause,
		"containerd": filepath.Join(t.Debs, "usr/bin/containerd"), "runc": filepath.Join(t.Debs, "usr/sbin/runc"),
		"CNI bridge plugin": filepath.Join(t.Debs, "usr/lib/cni/bridge"),
	} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s missing at %q: run `make node-tools`", name, p)
		}
	}
	for _, port := range hostPorts {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("port 127.0.0.1:%d is taken (%v): stop what listens there (ss -ltnp 'sport = :%d')", port, err, port)
		}
		_ = l.Close()
	}
	return nil
}

func cgroupsPresent() bool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return true
	}
	for _, c := range []string{"memory", "cpu", "pids"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
			return false
		}
	}
	return true
}

// lock takes the machine-wide lock: the kubelet's sysctls and cgroups are
// shared by the whole machine, so one node runs at a time. A second run waits,
// says so, and gives up when ctx ends.
func lock(ctx context.Context, path string, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for said := false; ; said = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !said {
			holder, _ := os.ReadFile(path)
			logf("another node run holds %s (pid %s); waiting for it to finish", path, strings.TrimSpace(string(holder)))
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// state is what a run needs to undo a predecessor that died without tearing
// down: written before anything changes the host, removed after teardown.
type state struct {
	Unshare int               `json:"unshare"`
	Holder  int               `json:"holder"`
	WorkDir string            `json:"workDir"`
	Sysctls map[string]string `json:"sysctls"`
	Cgroups []string          `json:"cgroups"`
}

func writeState(path string, s state) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readState(path string) (state, bool) {
	var s state
	b, err := os.ReadFile(path)
	if err != nil {
		return s, false
	}
	return s, json.Unmarshal(b, &s) == nil
}

// CgroupDirs lists the directories containerd and the kubelet make in the
// host's cgroup hierarchies (k8s.io/<container> under each controller, or
// kubepods). They are host-wide; teardown removes the ones that were not there
// before. Other directories there belong to others and are left alone.
func CgroupDirs() []string {
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		for _, part := range strings.Split(p, "/") {
			if part == "k8s.io" || strings.HasPrefix(part, "kubepods") {
				out = append(out, p)
				break
			}
		}
		return nil
	})
	return out
}

// removeNewCgroups removes directories under /sys/fs/cgroup absent from
// before, deepest first. They are empty once the node's processes are gone.
func removeNewCgroups(before []string) error {
	had := make(map[string]bool, len(before))
	for _, d := range before {
		had[d] = true
	}
	var fresh []string
	for _, d := range CgroupDirs() {
		if !had[d] {
			fresh = append(fresh, d)
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return len(fresh[i]) > len(fresh[j]) })
	var errs []error
	for _, d := range fresh {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
