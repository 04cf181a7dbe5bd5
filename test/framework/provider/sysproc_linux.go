package provider

import "syscall"

// sysProcAttr makes the kernel kill the provider if the test binary dies
// without running its cleanups (e.g. a panic in another goroutine).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
