//go:build !linux

package provider

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
