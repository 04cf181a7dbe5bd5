package emulator

import (
	"sync"
)

// Stats are counters of the API calls served since start or the last Reset.
// Tests and benchmarks use them to assert on API cost.
type Stats struct {
	// Total is the number of API requests (debug endpoints excluded).
	Total int64 `json:"total"`
	// Methods counts requests per method, e.g. "securityPolicies.get",
	// "regionSecurityPolicies.patchRule", "globalOperations.get".
	Methods map[string]int64 `json:"methods"`
	// Policies counts requests per policy path
	// ("projects/p/global/securityPolicies/n") and method. Operation polls
	// count against the policy the operation targets.
	Policies map[string]map[string]int64 `json:"policies"`
	// Mutations counts accepted mutating calls (each returned an operation).
	Mutations int64 `json:"mutations"`
	// DryRuns counts accepted validateOnly calls, which changed nothing.
	// Methods counts them under "securityPolicies.insert?validateOnly" etc.
	DryRuns int64 `json:"dryRuns"`
	// NotReady counts mutations rejected with resourceNotReady.
	NotReady int64 `json:"notReady"`
	// Unauthenticated counts requests rejected with 401.
	Unauthenticated int64 `json:"unauthenticated"`
	// Forbidden counts requests rejected with 403 by Options.Grants.
	Forbidden int64 `json:"forbidden"`
	// InjectedErrors counts requests failed by fault injection.
	InjectedErrors int64 `json:"injectedErrors"`
}

// counters is the mutable, locked form of Stats.
type counters struct {
	mu sync.Mutex
	s  Stats
}

func newCounters() *counters {
	c := &counters{}
	c.reset()
	return c
}

func (c *counters) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s = Stats{Methods: map[string]int64{}, Policies: map[string]map[string]int64{}}
}

func (c *counters) request(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Total++
	c.s.Methods[method]++
}

func (c *counters) policy(path, method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.s.Policies[path]
	if m == nil {
		m = map[string]int64{}
		c.s.Policies[path] = m
	}
	m[method]++
}

func (c *counters) add(field *int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*field++
}

func (c *counters) mutation()        { c.add(&c.s.Mutations) }
func (c *counters) dryRun()          { c.add(&c.s.DryRuns) }
func (c *counters) notReady()        { c.add(&c.s.NotReady) }
func (c *counters) unauthenticated() { c.add(&c.s.Unauthenticated) }
func (c *counters) forbidden()       { c.add(&c.s.Forbidden) }
func (c *counters) injected()        { c.add(&c.s.InjectedErrors) }

// snapshot returns a deep copy.
func (c *counters) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.s
	out.Methods = make(map[string]int64, len(c.s.Methods))
	for k, v := range c.s.Methods {
		out.Methods[k] = v
	}
	out.Policies = make(map[string]map[string]int64, len(c.s.Policies))
	for p, m := range c.s.Policies {
		cm := make(map[string]int64, len(m))
		for k, v := range m {
			cm[k] = v
		}
		out.Policies[p] = cm
	}
	return out
}
