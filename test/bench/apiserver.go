//go:build bench

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// apiCounts are the kube-apiserver's request counters (apiserver_request_total)
// summed by verb, and the conflicts (409) among the writes. They include the
// benchmark's own requests, which the report names separately.
type apiCounts struct {
	Verbs     map[string]int64 `json:"verbs"`
	Conflicts int64            `json:"conflicts"`
}

// writes counts the requests that change something in etcd.
func (c apiCounts) writes() int64 {
	var n int64
	for _, v := range []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"} {
		n += c.Verbs[v]
	}
	return n
}

func (c apiCounts) minus(o apiCounts) apiCounts {
	d := apiCounts{Verbs: map[string]int64{}, Conflicts: c.Conflicts - o.Conflicts}
	for v, n := range c.Verbs {
		if n -= o.Verbs[v]; n != 0 {
			d.Verbs[v] = n
		}
	}
	return d
}

// apiServerCounts scrapes the API server's /metrics. A failure leaves the
// counts empty rather than failing the run: they explain, they do not judge.
func (e *env) apiServerCounts(ctx context.Context) apiCounts {
	c := apiCounts{Verbs: map[string]int64{}}
	hc, err := rest.HTTPClientFor(e.cp.Config)
	if err != nil {
		return c
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.cp.Config.Host, "/")+"/metrics", nil)
	if err != nil {
		return c
	}
	resp, err := hc.Do(req)
	if err != nil {
		return c
	}
	defer resp.Body.Close() //nolint:errcheck // read-only
	return parseRequestTotals(bufio.NewScanner(resp.Body))
}

// parseRequestTotals sums apiserver_request_total samples of our API groups
// and of events (what a managed reconciler writes) by verb.
func parseRequestTotals(sc *bufio.Scanner) apiCounts {
	c := apiCounts{Verbs: map[string]int64{}}
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
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
		c.Verbs[labels["verb"]] += int64(v)
		if labels["code"] == "409" {
			c.Conflicts += int64(v)
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
	return fmt.Sprintf("%v (409: %d)", c.Verbs, c.Conflicts)
}
