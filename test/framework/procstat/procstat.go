// Package procstat reads what Linux's /proc says about a process: its
// memory, CPU time and parent. The benchmarks and the scale suite measure
// the processes they start with it.
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is USER_HZ, 100 on every Linux we run on: /proc counts CPU
// time in these.
const ClockTicks = 100

// Stats is what /proc says about one process.
type Stats struct {
	// RSSKiB is resident memory now, HWMKiB its peak.
	RSSKiB, HWMKiB int64
	// AnonKiB is the resident memory the process allocated (heap,
	// stacks); FileKiB the resident pages of files it maps, its own
	// binary's code and read-only data above all. They add up to RSSKiB.
	AnonKiB, FileKiB int64
	// CPU is user + system time so far.
	CPU time.Duration
	// PPid is the parent's pid.
	PPid int
}

// Read returns the stats of process pid.
func Read(pid int) (Stats, error) {
	var ps Stats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			ps.RSSKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "VmHWM:":
			ps.HWMKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "RssAnon:":
			ps.AnonKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "RssFile:":
			ps.FileKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, err
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) > 12 {
		ps.PPid, _ = strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ps.CPU = time.Duration(ut+st) * time.Second / ClockTicks
	}
	return ps, nil
}

// Descendants returns the stats of every live process below root, keyed by
// the base name of its executable; processes sharing one are summed.
func Descendants(root int) (map[string]Stats, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := map[int]Stats{}
	exe := map[int]string{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		ps, err := Read(pid)
		if err != nil {
			continue // gone meanwhile
		}
		path, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe"))
		if err != nil {
			continue
		}
		all[pid], exe[pid] = ps, filepath.Base(path)
	}
	out := map[string]Stats{}
	for pid, ps := range all {
		for p := ps.PPid; p > 1; p = all[p].PPid {
			if p == root {
				out[exe[pid]] = out[exe[pid]].plus(ps)
				break
			}
		}
	}
	return out, nil
}

// InNamespace returns the stats of every process NamespacePIDs lists for
// pid, keyed by the base name of its executable; processes sharing one are
// summed.
func InNamespace(pid int) (map[string]Stats, error) {
	pids, err := NamespacePIDs(pid)
	if err != nil {
		return nil, err
	}
	out := map[string]Stats{}
	for _, p := range pids {
		ps, err := Read(p)
		if err != nil {
			continue // gone meanwhile
		}
		path, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		if err != nil {
			continue
		}
		out[filepath.Base(path)] = out[filepath.Base(path)].plus(ps)
	}
	return out, nil
}

// NamespacePIDs are the host PIDs of the live processes in the PID namespace
// of pid (the real node's: its components and the containerd shims) or below
// one that is (its containers, in PID namespaces of their own), sorted.
func NamespacePIDs(pid int) ([]int, error) {
	want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil, err
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	in := map[int]bool{}
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		ps, err := Read(p)
		if err != nil {
			continue // gone meanwhile
		}
		parent[p] = ps.PPid
		if ns, err := os.Readlink(filepath.Join("/proc", d.Name(), "ns/pid")); err == nil && ns == want {
			in[p] = true
		}
	}
	var out []int
	for p := range parent {
		for a, hops := p, 0; a > 1 && hops < 64; a, hops = parent[a], hops+1 {
			if in[a] {
				out = append(out, p)
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// plus sums two processes' stats.
func (s Stats) plus(o Stats) Stats {
	s.RSSKiB += o.RSSKiB
	s.HWMKiB += o.HWMKiB
	s.AnonKiB += o.AnonKiB
	s.FileKiB += o.FileKiB
	s.CPU += o.CPU
	return s
}
