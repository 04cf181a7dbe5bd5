package nodesuite

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
)

// rollLimit bounds how long a Provider may be other than Healthy while its
// revision rolls: the new revision's package is pulled from the node's
// registry, its objects established and its pod started. Two Providers of one
// package are unhealthy until one is deleted (crossplane/crossplane#7454),
// for minutes or hours, never within this.
const rollLimit = time.Minute

// providerSample is what `kubectl get providers` showed at one moment: each
// Provider by name and whether it was Healthy.
type providerSample struct {
	at      time.Duration
	healthy map[string]bool
}

// providerReport is what a run of samples says about the Providers.
type providerReport struct {
	samples, errors int
	// most is the most Providers seen at once, names every one seen.
	most  int
	names []string
	// unhealthy is the longest a Provider was other than Healthy (to the
	// first sample that showed it Healthy again, or the last), which that
	// Provider.
	unhealthy time.Duration
	which     string
}

// reportProviders reads a run of samples, in time order.
func reportProviders(samples []providerSample) providerReport {
	var r providerReport
	seen := map[string]bool{}
	since := map[string]time.Duration{} // the start of each open unhealthy span
	for _, s := range samples {
		r.samples++
		r.most = max(r.most, len(s.healthy))
		for name := range since {
			if _, ok := s.healthy[name]; !ok {
				delete(since, name) // gone: its span ends
			}
		}
		for name, healthy := range s.healthy {
			seen[name] = true
			begun, open := since[name]
			if !open && !healthy {
				since[name], begun, open = s.at, s.at, true
			}
			if d := s.at - begun; open && d > r.unhealthy {
				r.unhealthy, r.which = d, name
			}
			if healthy {
				delete(since, name)
			}
		}
	}
	for name := range seen {
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r
}

// providerWatch samples the Providers every half second until stopped.
type providerWatch struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []providerSample
	errors  int
}

func watchProviders(ctx context.Context, n *node.Node) *providerWatch {
	w := &providerWatch{done: make(chan struct{})}
	start := time.Now()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			out, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io", "-o",
				`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Healthy")].status}{"\n"}{end}`)
			w.mu.Lock()
			if err != nil {
				w.errors++
			} else {
				s := providerSample{at: time.Since(start), healthy: map[string]bool{}}
				for _, line := range strings.Fields(out) {
					name, status, _ := strings.Cut(line, "=")
					s.healthy[name] = status == "True"
				}
				w.samples = append(w.samples, s)
			}
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *providerWatch) stop() providerReport {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	r := reportProviders(w.samples)
	r.errors = w.errors
	return r
}
