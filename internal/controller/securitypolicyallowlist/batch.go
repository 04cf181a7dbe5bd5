package securitypolicyallowlist

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// rangeBatchWindow is how long a range rule's change that arrives while the
// allowlist's range rules were written moments ago may wait for the rest of
// a burst. Cloud Armor writes one operation per policy at a time and a range
// rule holds ten ranges, so the least a burst of N addresses costs is N/10
// rule writes. Writing each rule once per intermediate state of a trickle
// (ten Nodes a second) cost 2.7 writes per rule (135 for 500 Nodes, measured
// with TestScale on 2026-12-04); a rule that waits until it is full, or until
// this window has passed since it began to wait, is written about once. A
// change after a quiet window is written at once, so a single Node is no
// slower; one in the middle of a burst waits at most this long.
const rangeBatchWindow = 2 * time.Second

// batcher decides, per allowlist and range rule, whether a rule's change is
// written now or waits for more of a burst. It is safe for concurrent use.
type batcher struct {
	window time.Duration
	mu     sync.Mutex
	state  map[types.NamespacedName]*batch
}

type batch struct {
	wrote time.Time // the allowlist's range rules were last written
	// since is when each waiting rule's change first waited, by priority.
	since map[int64]time.Time
}

// ruleChange is how a plan changes one range rule.
type ruleChange struct {
	// complete: the rule ends full, so no later change of the burst writes
	// it again.
	complete bool
	// deferrable: waiting keeps no range from GCP that it allows now; the
	// change only adds ranges no rule holds, or removes some.
	deferrable bool
}

func newBatcher(window time.Duration) *batcher {
	return &batcher{window: window, state: map[types.NamespacedName]*batch{}}
}

// hold returns the priorities of changes that wait, and when to ask again.
// Every other change is written now, and recorded as such.
func (b *batcher) hold(key types.NamespacedName, changes map[int64]ruleChange, now time.Time) (map[int64]bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.state[key]
	if !ok || now.Sub(s.wrote) >= b.window {
		s = &batch{since: map[int64]time.Time{}}
		b.state[key] = s
	}
	wait := map[int64]bool{}
	var after time.Duration
	for prio, ch := range changes {
		if !s.wrote.IsZero() && !ch.complete && ch.deferrable {
			since, ok := s.since[prio]
			if !ok {
				since = now
				s.since[prio] = now
			}
			if waited := now.Sub(since); waited < b.window {
				wait[prio] = true
				after = sooner(after, b.window-waited)
				continue
			}
		}
		delete(s.since, prio)
	}
	for prio := range s.since {
		if _, ok := changes[prio]; !ok {
			delete(s.since, prio) // changed back: nothing waits
		}
	}
	if len(wait) < len(changes) {
		s.wrote = now
	}
	return wait, after
}

// forget drops what is known of an allowlist that is gone.
func (b *batcher) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, key)
}

// rangeChanges are the range rules p writes, by priority: those it creates
// or changes. Rules p deletes are not among them: removals decides those.
func rangeChanges(c children, p plan) map[int64]ruleChange {
	held := map[netip.Prefix]bool{}
	for _, r := range c.ranges {
		for _, pf := range ruleRanges(r) {
			held[pf] = true
		}
	}
	out := map[int64]ruleChange{}
	for _, rule := range p.ranges {
		var before []netip.Prefix
		if have, ok := c.ranges[rule.Priority]; ok {
			before = ruleRanges(have)
		}
		if slices.Equal(before, rule.Ranges) {
			continue
		}
		ch := ruleChange{complete: len(rule.Ranges) == iprange.MaxPerRule, deferrable: true}
		for _, pf := range rule.Ranges {
			if !slices.Contains(before, pf) && held[pf] {
				ch.deferrable = false // it moves from another rule, which may lose it now
			}
		}
		out[rule.Priority] = ch
	}
	return out
}
