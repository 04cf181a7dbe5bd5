// Package pace decides when a status that changes with churn is written.
//
// Crossplane re-runs a composition whenever a composed object changes, its
// status included, and counts each such event against the composite's
// circuit breaker. A status that follows every Node of a burst would spend
// that budget; one written once the data has been quiet for a moment, and
// at least every so often while it keeps changing, costs a handful of events
// per burst whatever its size, and is still current within seconds of the
// burst's end.
package pace

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Defaults: a status is written Quiet after its data last changed, or Max
// after its first unwritten change while the data keeps changing.
const (
	DefaultQuiet = 2 * time.Second
	DefaultMax   = 30 * time.Second
)

// Pacer tracks, per object, when its data last changed and since when a
// change waits to be written. It is safe for concurrent use.
type Pacer struct {
	quiet, max time.Duration

	mu    sync.Mutex
	state map[types.NamespacedName]*entry
}

type entry struct {
	fingerprint string
	changed     time.Time // the data last changed
	pending     time.Time // the first change not written yet; zero when none
}

// New returns a Pacer writing quiet after the last change, and at least every
// max while changes keep coming.
func New(quiet, max time.Duration) *Pacer {
	return &Pacer{quiet: quiet, max: max, state: map[types.NamespacedName]*entry{}}
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
	if quietFor >= p.quiet || waited >= p.max {
		return true, 0
	}
	return false, min(p.quiet-quietFor, p.max-waited)
}

// Written records that the status now holds the data of fingerprint, as of
// now: written because it was due, or at once for another reason (a new spec,
// a condition that changed).
func (p *Pacer) Written(key types.NamespacedName, fingerprint string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.state[key]
	if !ok {
		p.state[key] = &entry{fingerprint: fingerprint, changed: now}
		return
	}
	if e.fingerprint != fingerprint {
		e.fingerprint, e.changed = fingerprint, now
	}
	e.pending = time.Time{}
}

// Forget drops what is known of key (the object is gone).
func (p *Pacer) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.state, key)
}
