package app

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// setGC sets the collector's target percentage and soft memory limit,
// unless GOGC and GOMEMLIMIT are set. A limitMiB of 0 takes 90% of the
// container's memory limit, if any: the limit is there to collect harder
// before the kernel kills the process, not to hold the heap to a size, which
// made the collector run without pause (docs/performance.md).
func setGC(percent int, limitMiB int64, container func() (int64, bool)) {
	if os.Getenv("GOGC") == "" && percent > 0 {
		debug.SetGCPercent(percent)
	}
	if os.Getenv("GOMEMLIMIT") != "" || limitMiB < 0 {
		return
	}
	if limitMiB > 0 {
		debug.SetMemoryLimit(limitMiB << 20)
		return
	}
	if bytes, ok := container(); ok {
		debug.SetMemoryLimit(bytes / 10 * 9)
	}
}

// cgroupMemoryLimit returns the memory limit of the cgroup the process runs
// in, read from the cgroup filesystem under root: cgroup v2's memory.max,
// else cgroup v1's memory.limit_in_bytes. No limit ("max", or v1's
// page-rounded maximum) and no cgroup filesystem are reported as none.
func cgroupMemoryLimit(root string) (int64, bool) {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
