package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// noContainer reports no container memory limit.
func noContainer() (int64, bool) { return 0, false }

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

	setGC(50, 48, noContainer)
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

	setGC(50, 48, noContainer)
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GC percent with GOGC set: got %d, want 200", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit with GOMEMLIMIT set: got %d, want %d", got, 1<<30)
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	setGC(0, -1, noContainer)
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("GC percent with --gc-percent=0: got %d, want 200", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit with --memory-limit=-1: got %d, want %d", got, 1<<30)
	}
}

// With --memory-limit=0 the limit is 90% of the container's, or none.
func TestSetGCFollowsTheContainer(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")

	debug.SetMemoryLimit(math.MaxInt64)
	setGC(0, 0, func() (int64, bool) { return 512 << 20, true })
	if got := debug.SetMemoryLimit(-1); got != 512<<20/10*9 {
		t.Errorf("memory limit in a 512 MiB container: got %d, want %d", got, 512<<20/10*9)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	setGC(0, 0, noContainer)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit with no container limit: got %d, want none (%d)", got, int64(math.MaxInt64))
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	type want struct {
		Bytes int64
		OK    bool
	}
	cases := map[string]struct {
		reason string
		files  map[string]string
		want   want
	}{
		"V2Limit": {
			reason: "cgroup v2's memory.max holds the limit in bytes.",
			files:  map[string]string{"memory.max": "268435456\n"},
			want:   want{Bytes: 256 << 20, OK: true},
		},
		"V2NoLimit": {
			reason: "cgroup v2 writes max when there is no limit.",
			files:  map[string]string{"memory.max": "max\n"},
		},
		"V1Limit": {
			reason: "cgroup v1 holds the limit in memory/memory.limit_in_bytes.",
			files:  map[string]string{"memory/memory.limit_in_bytes": "134217728\n"},
			want:   want{Bytes: 128 << 20, OK: true},
		},
		"V1NoLimit": {
			reason: "cgroup v1 reports no limit as the largest page-aligned value.",
			files:  map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"},
		},
		"NoCgroupFilesystem": {
			reason: "Outside a cgroup filesystem there is no limit.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for f, content := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, f), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var got want
			got.Bytes, got.OK = cgroupMemoryLimit(root)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncgroupMemoryLimit(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
