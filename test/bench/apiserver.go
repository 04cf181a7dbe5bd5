//go:build bench

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
)

// apiCounts are the kube-apiserver's request counters (apiserver_request_total)
// summed by verb, by verb and resource, and the conflicts (409) among the
// writes. They include the benchmark's own requests, which the report names
// separately.
type apiCounts struct {
	Verbs      map[string]int64 `json:"verbs"`
	ByResource map[string]int64 `json:"byResource"` // "PUT securitypolicyrules/status"
	Conflicts  int64            `json:"conflicts"`
}

// writes counts the requests that change something in etcd.
func (c apiCounts) writes() int64 {
	var n int64
	for _, v := range []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"} {
		n += c.Verbs[v]
	}
	return n
}

// terminated counts the watches the API server closed because their client
// did not keep up.
func (c apiCounts) terminated() int64 {
	var n int64
	for k, v := range c.ByResource {
		if strings.HasPrefix(k, "TERMINATED ") {
			n += v
		}
	}
	return n
}

func (c apiCounts) minus(o apiCounts) apiCounts {
	d := apiCounts{Verbs: map[string]int64{}, ByResource: map[string]int64{}, Conflicts: c.Conflicts - o.Conflicts}
	for v, n := range c.Verbs {
		if n -= o.Verbs[v]; n != 0 {
			d.Verbs[v] = n
		}
	}
	for k, n := range c.ByResource {
		if n -= o.ByResource[k]; n != 0 {
			d.ByResource[k] = n
		}
	}
	return d
}

// apiServerCounts scrapes the API server's /metrics. A failure leaves the
// counts empty rather than failing the run: they explain, they do not judge.
func (e *env) apiServerCounts(ctx context.Context) apiCounts {
	c := apiCounts{Verbs: map[string]int64{}, ByResource: map[string]int64{}}
	resp, err := get(ctx, e.apiHTTP, strings.TrimSuffix(e.cp.Config.Host, "/")+"/metrics")
	if err != nil {
		return c
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	return parseRequestTotals(bufio.NewScanner(resp.Body))
}

// parseRequestTotals sums apiserver_request_total samples of our API groups
// and of events (what a managed reconciler writes) by verb.
func parseRequestTotals(sc *bufio.Scanner) apiCounts {
	c := apiCounts{Verbs: map[string]int64{}, ByResource: map[string]int64{}}
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "apiserver_terminated_watchers_total{") {
			// Watches the API server closed because the client did not
			// keep up: its informer then lags until it watches again.
			if end := strings.LastIndexByte(line, '}'); end > 0 {
				labels := parseLabels(line[len("apiserver_terminated_watchers_total{"):end])
				if v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64); err == nil {
					c.ByResource["TERMINATED "+labels["resource"]] += int64(v)
				}
			}
			continue
		}
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := parseLabels(line[len("apiserver_request_total{"):end])
		if !strings.HasSuffix(labels["group"], "armorplane.io") && labels["resource"] != "events" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		res := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		c.Verbs[labels["verb"]] += int64(v)
		c.ByResource[labels["verb"]+" "+res] += int64(v)
		if labels["code"] == "409" {
			c.Conflicts += int64(v)
			c.ByResource["409 "+labels["verb"]+" "+res] += int64(v)
		}
	}
	return c
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		out[k] = v
	}
	return out
}

func (c apiCounts) String() string {
	return fmt.Sprintf("%v (409: %d)", c.ByResource, c.Conflicts)
}

// findPid returns the pid of a process named name whose command line holds
// needle, or 0. The control plane's processes are started by envtest, which
// does not hand out their pids; the command line names their ports.
func findPid(name, needle string) int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == name && strings.Contains(string(b), needle) {
			return pid
		}
	}
	return 0
}

// controlPlanePids finds the kube-apiserver serving host and the etcd it
// stores into.
func controlPlanePids(host string) (apiserver, etcd int) {
	u, err := url.Parse(host)
	if err != nil {
		return 0, 0
	}
	apiserver = findPid("kube-apiserver", "--secure-port="+u.Port())
	if apiserver == 0 {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", apiserver))
	if err != nil {
		return apiserver, 0
	}
	for _, a := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			if eu, err := url.Parse(strings.Split(v, ",")[0]); err == nil {
				etcd = findPid("etcd", "127.0.0.1:"+eu.Port())
			}
		}
	}
	return apiserver, etcd
}

// machineBusy is the CPU time all processors spent not idle, from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / procstat.ClockTicks
}

// controlPlaneCPU is the CPU time kube-apiserver and etcd have used so far.
func (e *env) controlPlaneCPU() time.Duration {
	var d time.Duration
	for _, pid := range []int{e.apiserverPid, e.etcdPid} {
		if pid == 0 {
			continue
		}
		if ps, err := procstat.Read(pid); err == nil {
			d += ps.CPU
		}
	}
	return d
}
