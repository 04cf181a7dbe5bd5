package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// restoreGC puts the test binary's collector settings back.
func restoreGC(t *testing.T) {
	t.Helper()
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestSetGCAppliesTheFlags(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)

	setGC(50, 48)
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GC percent: got %d, want 50", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 48<<20 {
		t.Errorf("memory limit: got %d, want %d", got, 48<<20)
	}
}

// GOGC and GOMEMLIMIT, read by the runtime at start, win over the flags; 0
// leaves the runtime's setting as it is.
func TestSetGCLeavesTheEnvironmentAndZeroAlone(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "200")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(200)
	debug.SetMemoryLimit(1 << 30)

	setGC(50, 48)
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GC percent with GOGC set: got %d, want 200", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit with GOMEMLIMIT set: got %d, want %d", got, 1<<30)
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	setGC(0, 0)
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GC percent with --gc-percent=0: got %d, want 200", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit with --memory-limit=0: got %d, want %d", got, 1<<30)
	}
}
