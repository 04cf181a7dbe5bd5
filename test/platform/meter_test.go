package platformsuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
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
	// rules says the changes measured now are in mode rules (floorOf).
	rules bool

	// composed counts the updates of the objects composed for the XR.
	composed *updates

	mu sync.Mutex
	// must are the sources that must stay allowed: those wanted before the change, and those
	// GCP has allowed since it began (seen), while the cluster still wants them (wanted).
	must   map[string]bool
	seen   map[string]bool
	wanted func() []string
	kind   string // the change being measured
	// samples counts the samples that checked at least one source.
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
	// events is how many times an object Crossplane composed for the
	// IPAllowlist changed during the change (each one a watch event on the
	// XR that Crossplane's circuit breaker counts).
	events int64
	// statusLag is how long after GCP was right the IPAllowlist's ipCount
	// said so.
	statusLag time.Duration
	// floorWrites is the least GCP writes the change can take, judged from
	// what changed, not from what we wrote (floorOf); floor is how long
	// after the last Node write GCP needs at least to make them.
	floorWrites int64
	floor       time.Duration
	// rules says the allowlist was in mode rules; removal that the change
	// removed sources.
	rules, removal bool
	// trickled says the change's Node writes were spread out (kind says so).
	trickled bool
}

// rangesPerRule is Cloud Armor's limit of source ranges in one rule.
const rangesPerRule = 10

// floorOf is the least a change of changed sources costs in GCP: in mode
// rules a range rule holds ten, so ceil(changed / 10) rule writes; in mode
// addressGroup one addItems or removeItems. The writes go one operation at a
// time per policy; those that fit in the time the burst itself took could be
// made during it, so the floor after the last Node write is what is left,
// and at least the one operation the last Node needs.
func floorOf(changed int, rules bool, burst time.Duration) (writes int64, after time.Duration) {
	switch {
	case changed == 0:
		return 0, 0
	case rules:
		writes = int64((changed + rangesPerRule - 1) / rangesPerRule)
	default:
		writes = 1
	}
	return writes, max(opLatency, time.Duration(writes)*opLatency-burst)
}

// changedSources counts the sources in exactly one of before and after.
func changedSources(before, after []string) int {
	in := map[string]int{}
	for _, s := range before {
		in[s]++
	}
	for _, s := range after {
		in[s]--
	}
	n := 0
	for _, d := range in {
		if d != 0 {
			n++
		}
	}
	return n
}

func (e *env) newMeter(t *testing.T) *meter {
	m := &meter{e: e, quit: make(chan struct{}), done: make(chan struct{}), gaps: map[string]int{}, lost: map[string]string{}}
	go m.sample()
	m.composed = e.watchComposed(t)
	return m
}

func (m *meter) stop() {
	close(m.quit)
	<-m.done
	m.composed.stop()
}

func (m *meter) sample() {
	defer close(m.done)
	for {
		select {
		case <-m.quit:
			return
		case <-time.After(sampleEvery):
		}
		m.mu.Lock()
		wanted := m.wanted
		m.mu.Unlock()
		got := m.e.allowed()
		if got == nil {
			continue
		}
		// Read after GCP: a source removed from the cluster before GCP was read is not required.
		var now []string
		if wanted != nil {
			now = wanted()
		}
		m.mu.Lock()
		m.check(got, now)
		m.mu.Unlock()
	}
}

// check records one sample: what GCP allowed (got) against what must stay allowed of what the
// cluster wants now. A sample that requires nothing is not counted.
func (m *meter) check(got, now []string) {
	allowed := map[string]bool{}
	for _, s := range got {
		allowed[s] = true
	}
	required := 0
	for _, s := range now {
		if !m.must[s] && !m.seen[s] {
			continue
		}
		required++
		if !allowed[s] {
			m.gaps[m.kind]++
			m.lost[m.kind] = s
			break
		}
	}
	for _, s := range now {
		if allowed[s] && m.seen != nil {
			m.seen[s] = true
		}
	}
	if required > 0 {
		m.samples++
	}
}

// setMust starts checking kind: every source of before, and every source GCP allows from now
// on, must stay allowed while wanted says the cluster wants it. A nil wanted checks nothing.
func (m *meter) setMust(kind string, before []string, wanted func() []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kind, m.wanted = kind, wanted
	m.must, m.seen = map[string]bool{}, map[string]bool{}
	for _, s := range before {
		m.must[s] = true
	}
}

// measure makes one change, waits for GCP to allow exactly what the Nodes now
// call for, and records how long that took and how many GCP writes it caused.
func (m *meter) measure(t *testing.T, kind string, c *cluster, change func()) {
	t.Helper()
	before := c.want()
	// During the change and after it, every source wanted before or allowed by GCP since, and
	// still wanted (a Node is forgotten before it is deleted), must stay allowed.
	m.setMust(kind, before, c.want)
	stats := m.e.emu.Stats()
	calls := m.e.functionCalls(t)
	events := m.composed.count()
	begin := time.Now()
	change()
	written := time.Now()
	after := c.want()

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
	right := time.Now()
	// The IPAllowlist shows the new count once the allowlist's paced status
	// reaches it through Crossplane.
	statusLag := m.e.waitXRCount(t, len(after), limit).Sub(right)
	// Writes that follow the right state (a tidy-up) belong to this change
	// too: count until the emulator has seen no write for a second.
	writes, methods := m.settle(stats)
	calls = m.e.functionCalls(t) - calls
	events = m.composed.count() - events
	if st, reason, msg := m.e.xrCondition(context.Background(), t, "Responsive"); st == "False" {
		t.Errorf("%s: Crossplane's circuit breaker opened for the IPAllowlist: Responsive=False %s %q", kind, reason, msg)
	}
	floorWrites, floor := floorOf(changedSources(before, after), m.rules, written.Sub(begin))
	r := result{kind: kind, latency: latency, afterLast: afterLast, writes: writes, methods: methods, calls: calls,
		events: events, statusLag: statusLag, floorWrites: floorWrites, floor: floor, rules: m.rules, removal: len(after) < len(before), trickled: strings.Contains(kind, "trickled")}
	m.mu.Lock()
	m.results = append(m.results, r)
	m.mu.Unlock()
	t.Logf("%-32s %6.2fs (%.2fs after its last write, GCP floor %.2fs) %3d GCP writes %v (floor %d), %d composed-object events, %d function calls, status %.2fs later",
		kind, latency.Seconds(), afterLast.Seconds(), r.floor.Seconds(), writes, methods, floorWrites, events, calls, statusLag.Seconds())
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
	if m.samples == 0 {
		t.Error("the gap meter checked no sample: a figure of 0 gap samples would mean nothing")
	}
	for k, n := range m.gaps {
		if n > 0 {
			t.Errorf("%s: %d samples found a still-wanted source refused by GCP (e.g. %s)", k, n, m.lost[k])
		}
	}
}

// targets fails every change measured that GCP followed later than
// beyondFloor after its floor, or, for additions in mode rules (at once or
// trickled), with more writes than writesAllowed.
// Removals in mode rules are not held to the writes target: Nodes removed in
// an order the packing does not follow empty several rules at once, each
// rewritten as it shrinks when the batch window ends first (200 trickled: 32
// writes for a floor of 20, measured 2026-12-05).
func (m *meter) targets(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.results {
		if r.afterLast > r.floor+beyondFloor {
			t.Errorf("%s: GCP right %.2fs after the last Node write; the floor is %.2fs, the target %s beyond it", r.kind, r.afterLast.Seconds(), r.floor.Seconds(), beyondFloor)
		}
		if allowed := writesAllowed(r.floorWrites); r.rules && !r.removal && r.writes > allowed {
			t.Errorf("%s: %d GCP writes; the floor is %d, the target at most %d (%.1f times it, or two more)", r.kind, r.writes, r.floorWrites, allowed, writesOverFloor)
		}
	}
}

// writesAllowed is the most rule writes an addition of floor rules' worth of
// ranges may take: writesOverFloor times the floor, and never less than two
// writes beyond it. The floor assumes fresh rules, and two writes are more
// whatever the burst's size: the packing keeps ranges in order, so a burst's
// first ranges go into the rule the earlier ones left partly filled, and a
// trickle that outlasts the batch window (2 s) writes the rule still filling
// when its window ends, then again when it is full. For a floor of 2 that is
// twice the floor (1,000 Nodes, 20 added at once: 3 writes; trickled over 2 s:
// 4, measured 2026-12-06).
func writesAllowed(floor int64) int64 {
	return max(int64(writesOverFloor*float64(floor)), floor+2)
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
	fmt.Fprintf(&b, "| change | n | p50 | p95 | max | p95 after the last write | GCP floor after the last write (max) | GCP writes per change (floor) | composed-object events per change | function calls per change | status current (max, after GCP) | gap samples |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var all []time.Duration
	for _, k := range kinds {
		rs := by[k]
		var lat []time.Duration
		var writes, calls, events []string
		var fromLast, floors, lags []time.Duration
		for _, r := range rs {
			lat = append(lat, r.latency)
			fromLast = append(fromLast, r.afterLast)
			floors = append(floors, r.floor)
			lags = append(lags, r.statusLag)
			writes = append(writes, fmt.Sprintf("%d (%d)", r.writes, r.floorWrites))
			calls = append(calls, fmt.Sprint(r.calls))
			events = append(events, fmt.Sprint(r.events))
		}
		all = append(all, lat...)
		fmt.Fprintf(&b, "| %s | %d | %.2fs | %.2fs | %.2fs | %.2fs | %.2fs | %s | %s | %s | %.2fs | %d |\n", k, len(rs),
			quantile(lat, 0.5).Seconds(), quantile(lat, 0.95).Seconds(), slices.Max(lat).Seconds(), quantile(fromLast, 0.95).Seconds(),
			slices.Max(floors).Seconds(), strings.Join(writes, ", "), strings.Join(events, ", "), strings.Join(calls, ", "), slices.Max(lags).Seconds(), m.gaps[k])
	}
	fmt.Fprintf(&b, "| all | %d | %.2fs | %.2fs | %.2fs | | | | | | | %d |\n", len(all),
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

// updates counts the updates of the objects Crossplane composed for the XR
// (the SecurityPolicyAllowlist and the SecurityPolicy): each is a watch event
// Crossplane sees for the XR and counts against its circuit breaker.
type updates struct {
	n     atomic.Int64
	stops []func()
}

func (u *updates) count() int64 { return u.n.Load() }

func (u *updates) stop() {
	for _, s := range u.stops {
		s()
	}
}

func (e *env) watchComposed(t *testing.T) *updates {
	t.Helper()
	u := &updates{}
	wc, err := client.NewWithWatch(e.cp.Config, client.Options{Scheme: kube.SchemeT(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAllowlistList"},
		{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicyList"},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		w, err := wc.Watch(context.Background(), l, client.InNamespace("default"), client.MatchingLabels{"crossplane.io/composite": e.xr})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified {
					u.n.Add(1)
				}
			}
		}()
		u.stops = append(u.stops, func() { w.Stop(); <-done })
	}
	return u
}

// waitXRCount waits until the IPAllowlist's status.ipCount is want, and
// returns when it was.
func (e *env) waitXRCount(t *testing.T, want int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		xr := &unstructured.Unstructured{}
		xr.SetGroupVersionKind(xrGVK)
		if err := e.cp.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: e.xr}, xr); err == nil {
			if got, _, _ := unstructured.NestedInt64(xr.Object, "status", "ipCount"); int(got) == want {
				return time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the IPAllowlist's status.ipCount did not reach %d within %s; it says %s", want, within, e.xrSays(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
