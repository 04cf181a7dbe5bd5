package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reaperScript waits until its parent (this process) is gone, then kills the pids
// and removes the folders it was given. envtest starts etcd and kube-apiserver in
// their own process groups without a parent-death signal, so a harness that dies
// hard (kill -9, `go test -timeout` expiring) would otherwise leave both running,
// holding ports and CPU on a shared machine. The parent is read from /proc rather
// than $PPID, which never changes, and rather than `kill -0`, which a zombie passes.
const reaperScript = `parent=$1; shift
while :; do
  read -r _ _ _ pp _ < /proc/$$/stat || break
  [ "$pp" = "$parent" ] || break
  sleep 1
done
for a in "$@"; do
  case $a in /*) rm -rf -- "$a" ;; *) kill -KILL "$a" 2>/dev/null ;; esac
done
`

// startReaper guards the control plane's processes and temporary folders against
// this process dying without Stop. It returns a func that dismisses the guard.
func startReaper(binaries []string, dirs []string) (dismiss func()) {
	pids := childPIDs(binaries)
	if len(pids) == 0 {
		return func() {}
	}
	args := append([]string{"-c", reaperScript, "controlplane-reaper", strconv.Itoa(os.Getpid())}, pids...)
	args = append(args, dirs...)
	cmd := exec.Command("/bin/sh", args...)
	// Its own group, so a terminal's Ctrl-C reaches only us and we stop cleanly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return func() {} // best effort: the guard is a safety net, not a requirement
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// childPIDs lists this process's children running one of binaries (resolved
// through symlinks, as /proc/PID/exe is).
func childPIDs(binaries []string) []string {
	want := map[string]bool{}
	for _, b := range binaries {
		if real, err := filepath.EvalSymlinks(b); err == nil {
			want[real] = true
		}
	}
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []string
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// The command name (field 2) is parenthesised and may hold spaces, so
		// count fields after its closing parenthesis: state, then ppid.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != self {
			continue
		}
		dir := filepath.Dir(stat)
		if exe, err := os.Readlink(filepath.Join(dir, "exe")); err == nil && want[exe] {
			pids = append(pids, filepath.Base(dir))
		}
	}
	return pids
}
