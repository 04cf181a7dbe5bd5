// Package pace decides when a status that changes with churn is written.
//
// Crossplane re-runs a composition whenever a composed object changes, its
// status included, and counts each such event against the composite's
// circuit breaker. A status that follows every Node of a burst would spend
// that budget; one written once the data has been quiet for a moment, and
// at least every so often while it keeps changing, costs a handful of events
// per burst whatever its size, and is still current within seconds of the
// burst's end.
//
// Each paced write costs the composite about four of the breaker's tokens
// (the composed object's update, mapped for its old and new state, and
// Crossplane's write of the composite's status that follows, the same), and
// the breaker refills one token a second: paced writes are also kept at
// least Every apart, so that data changing just slower than Quiet, for
// ever, cannot drain it.
package pace

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Defaults: a status is written Quiet after its data last changed, or Max
// after its first unwritten change while the data keeps changing, and never
// sooner than Every after the last write. At one paced write every 5 s the
// composite spends 0.8 of the 1 token a second Crossplane's breaker refills
// by default.
const (
	DefaultQuiet = 2 * time.Second
	DefaultMax   = 30 * time.Second
	DefaultEvery = 5 * time.Second
)

// Pacer tracks, per object, when its data last changed and since when a
// change waits to be written. It is safe for concurrent use.
type Pacer struct {
	quiet, max, every time.Duration

	mu    sync.Mutex
	state map[types.NamespacedName]*entry
}

type entry struct {
	fingerprint string
	changed     time.Time // the data last changed
	pending     time.Time // the first change not written yet; zero when none
	written     time.Time // the last write; zero when none is known
}

// New returns a Pacer writing quiet after the last change, at least every
// max while changes keep coming, and at most once every every.
func New(quiet, max, every time.Duration) *Pacer {
	return &Pacer{quiet: quiet, max: max, every: every, state: map[types.NamespacedName]*entry{}}
}

// Due records the data's fingerprint as of now and reports whether a status
// holding it should be written now. written says whether the status already
// holds it. When not due, after is when to ask again.
func (p *Pacer) Due(key types.NamespacedName, fingerprint string, written bool, now time.Time) (due bool, after time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.state[key]
	if !ok {
		// The first look since the provider started: nothing is known of
		// how the data moved, so a status that differs is written at once.
		p.state[key] = &entry{fingerprint: fingerprint, changed: now}
		return !written, 0
	}
	if e.fingerprint != fingerprint {
		e.fingerprint, e.changed = fingerprint, now
	}
	if written {
		e.pending = time.Time{}
		return false, 0
	}
	if e.pending.IsZero() {
		e.pending = now
	}
	quietFor, waited := now.Sub(e.changed), now.Sub(e.pending)
	if quietFor < p.quiet && waited < p.max {
		return false, min(p.quiet-quietFor, p.max-waited)
	}
	if since := now.Sub(e.written); !e.written.IsZero() && since < p.every {
		return false, p.every - since
	}
	return true, 0
}

// Written records that the status now holds the data of fingerprint, as of
// now: written because it was due, or at once for another reason (a new spec,
// a condition that changed).
func (p *Pacer) Written(key types.NamespacedName, fingerprint string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.state[key]
	if !ok {
		p.state[key] = &entry{fingerprint: fingerprint, changed: now, written: now}
		return
	}
	if e.fingerprint != fingerprint {
		e.fingerprint, e.changed = fingerprint, now
	}
	e.pending, e.written = time.Time{}, now
}

// Forget drops what is known of key (the object is gone).
func (p *Pacer) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.state, key)
}
