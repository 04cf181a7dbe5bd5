package platform_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

// sampleEvery is how often the meter reads the policy from the emulator's
// memory, as the chaos suite's allowlist storm does.
const sampleEvery = 20 * time.Millisecond

// meter times node changes and watches, between and during them, that GCP
// never stops allowing a source that is wanted both before and after.
type meter struct {
	e    *env
	quit chan struct{}
	done chan struct{}

	// limit is how long a change may take to reach GCP; converge unless set.
	limit time.Duration

	mu      sync.Mutex
	must    map[string]bool // sources that must stay allowed right now
	kind    string          // the change being measured
	samples int
	gaps    map[string]int    // gap samples by kind of change
	lost    map[string]string // by kind: one example of a lost source
	results []result
}

type result struct {
	kind    string
	latency time.Duration
	// afterLast is the latency from the change's last Node write.
	afterLast time.Duration
	writes    int64
	methods   map[string]int64
	// calls is how many times Crossplane ran the function for the change.
	calls int64
}

func (e *env) newMeter(t *testing.T) *meter {
	m := &meter{e: e, quit: make(chan struct{}), done: make(chan struct{}), gaps: map[string]int{}, lost: map[string]string{}}
	go m.sample()
	return m
}

func (m *meter) stop() {
	close(m.quit)
	<-m.done
}

func (m *meter) sample() {
	defer close(m.done)
	for {
		select {
		case <-m.quit:
			return
		case <-time.After(sampleEvery):
		}
		got := m.e.allowed()
		m.mu.Lock()
		if got != nil && m.must != nil {
			m.samples++
			allowed := map[string]bool{}
			for _, s := range got {
				allowed[s] = true
			}
			for s := range m.must {
				if !allowed[s] {
					m.gaps[m.kind]++
					m.lost[m.kind] = s
					break
				}
			}
		}
		m.mu.Unlock()
	}
}

func (m *meter) setMust(kind string, sources ...[]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kind = kind
	m.must = map[string]bool{}
	if len(sources) == 0 {
		return
	}
	for _, s := range sources[0] {
		m.must[s] = true
	}
	for _, other := range sources[1:] {
		for s := range m.must {
			if !slices.Contains(other, s) {
				delete(m.must, s)
			}
		}
	}
}

// measure makes one change, waits for GCP to allow exactly what the Nodes now
// call for, and records how long that took and how many GCP writes it caused.
func (m *meter) measure(t *testing.T, kind string, c *cluster, change func()) {
	t.Helper()
	before := c.want()
	// While the change is written the meter cannot tell which sources it
	// removes (a burst of deletions takes a second or more); from its end
	// on, every source wanted both before and after must stay allowed.
	m.setMust(kind)
	stats := m.e.emu.Stats()
	calls := m.e.functionCalls(t)
	begin := time.Now()
	change()
	written := time.Now()
	after := c.want()
	m.setMust(kind, before, after)

	var latency, afterLast time.Duration
	limit := converge
	if m.limit > 0 {
		limit = m.limit
	}
	deadline := begin.Add(limit)
	for {
		if got := m.e.allowed(); got != nil && slices.Equal(got, after) {
			// The emulator applies a write when it accepts it and reports its
			// operation DONE opLatency later; GCP's change counts as made then.
			latency = time.Since(begin) + opLatency
			afterLast = time.Since(written) + opLatency
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GCP did not follow within %s: allows %d sources, want %d; the IPAllowlist says %s", kind, limit, len(m.e.allowed()), len(after), m.e.xrSays(t))
		}
		if err := m.e.plat.Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Writes that follow the right state (a tidy-up) belong to this change
	// too: count until the emulator has seen no write for a second.
	writes, methods := m.settle(stats)
	calls = m.e.functionCalls(t) - calls
	m.mu.Lock()
	m.results = append(m.results, result{kind: kind, latency: latency, afterLast: afterLast, writes: writes, methods: methods, calls: calls})
	m.mu.Unlock()
	t.Logf("%-32s %6.2fs (%.2fs after its last write) %3d GCP writes %v, %d function calls", kind, latency.Seconds(), afterLast.Seconds(), writes, methods, calls)
}

// settle waits until no GCP write happened for a second and returns the
// writes made since from, by method.
func (m *meter) settle(from emulator.Stats) (int64, map[string]int64) {
	last, quietSince := int64(-1), time.Now()
	for {
		n, methods := writesSince(from, m.e.emu.Stats())
		if n != last {
			last, quietSince = n, time.Now()
		}
		if time.Since(quietSince) >= time.Second {
			return n, methods
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writesSince counts the mutating calls between two stats snapshots.
func writesSince(from, to emulator.Stats) (int64, map[string]int64) {
	methods := map[string]int64{}
	var n int64
	for method, count := range to.Methods {
		verb := method[strings.LastIndexByte(method, '.')+1:]
		switch verb {
		case "insert", "patch", "delete", "addRule", "patchRule", "removeRule", "setLabels", "create", "addItems", "removeItems":
		default:
			continue
		}
		if d := count - from.Methods[method]; d > 0 {
			methods[verb] += d
			n += d
		}
	}
	return n, methods
}

// report prints the latency table and asserts that no still-wanted source
// was ever refused.
func (m *meter) report(t *testing.T) {
	t.Helper()
	table := m.table()
	t.Log("\n" + table)
	if out := os.Getenv("PLATFORM_LATENCY_OUT"); out != "" {
		_ = os.MkdirAll(filepath.Dir(out), 0o755)
		_ = os.WriteFile(out, []byte(table), 0o644)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range m.gaps {
		if n > 0 {
			t.Errorf("%s: %d samples found a still-wanted source refused by GCP (e.g. %s)", k, n, m.lost[k])
		}
	}
}

// table is the latency table of every change measured so far.
func (m *meter) table() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var kinds []string
	by := map[string][]result{}
	for _, r := range m.results {
		if _, ok := by[r.kind]; !ok {
			kinds = append(kinds, r.kind)
		}
		by[r.kind] = append(by[r.kind], r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "node change → GCP right (emulator operations %s; %d samples every %s)\n", opLatency, m.samples, sampleEvery)
	fmt.Fprintf(&b, "| change | n | p50 | p95 | max | p95 after the last write | GCP writes per change | function calls per change | gap samples |\n|---|---|---|---|---|---|---|---|---|\n")
	var all []time.Duration
	for _, k := range kinds {
		rs := by[k]
		var lat []time.Duration
		var writes, calls []string
		var fromLast []time.Duration
		for _, r := range rs {
			lat = append(lat, r.latency)
			fromLast = append(fromLast, r.afterLast)
			writes = append(writes, fmt.Sprint(r.writes))
			calls = append(calls, fmt.Sprint(r.calls))
		}
		all = append(all, lat...)
		fmt.Fprintf(&b, "| %s | %d | %.2fs | %.2fs | %.2fs | %.2fs | %s | %s | %d |\n", k, len(rs),
			quantile(lat, 0.5).Seconds(), quantile(lat, 0.95).Seconds(), slices.Max(lat).Seconds(), quantile(fromLast, 0.95).Seconds(),
			strings.Join(writes, ", "), strings.Join(calls, ", "), m.gaps[k])
	}
	fmt.Fprintf(&b, "| all | %d | %.2fs | %.2fs | %.2fs | | | | %d |\n", len(all),
		quantile(all, 0.5).Seconds(), quantile(all, 0.95).Seconds(), slices.Max(all).Seconds(), sum(m.gaps))
	return b.String()
}

// quantile is the nearest-rank q-quantile of d.
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*q+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// functionCalls is how many times Crossplane has run our function so far.
func (e *env) functionCalls(t *testing.T) int64 {
	t.Helper()
	n, err := e.plat.FunctionCalls(context.Background())
	if err != nil {
		t.Fatalf("cannot read the function's call count: %v", err)
	}
	return n
}
