package gcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/api/compute/v1"
)

// Snapshot cache defaults.
const (
	// DefaultSnapshotTTL is how long a policy snapshot is served without a
	// GCP read. It is half of crossplane-runtime's default one-minute poll
	// interval: every rule of a policy polled within 30 s shares one GET,
	// and drift made outside the provider still shows within one poll plus
	// 30 s. Our own writes invalidate the snapshot at once, so the TTL only
	// bounds how stale a view of other writers' changes can be. Controllers
	// with a different poll interval should pass about half of it.
	DefaultSnapshotTTL = 30 * time.Second
	// fetchTimeout bounds a shared fetch. It runs detached from the caller
	// that started it, so that caller's cancellation does not fail the
	// others sharing the fetch.
	fetchTimeout = 30 * time.Second
)

// A FetchFn reads one policy from GCP.
type FetchFn func(ctx context.Context) (*compute.SecurityPolicy, error)

// SnapshotStats are a SnapshotCache's counters since it was created, as
// NewCollector exports them.
type SnapshotStats struct {
	// Hits are Gets answered from a live snapshot, including a cached
	// NotFound.
	Hits int64
	// Shared are Gets that joined a fetch another caller had started.
	Shared int64
	// Misses are Gets that started a fetch.
	Misses int64
	// Fetches are completed GCP reads.
	Fetches int64
	// Invalidations are Invalidate calls.
	Invalidations int64
	// Entries is the number of snapshots currently held (one per policy
	// and identity).
	Entries int
}

// A SnapshotCache holds one recent GET of each policy, so that all rules of
// a policy observe it with one GCP read per TTL.
//
// Snapshots are shared and read-only: every caller receives the same
// *compute.SecurityPolicy and must not modify it or anything it points to;
// deep-copy it first when you need to change it. Handing out copies
// would cost an allocation of the whole policy (every rule) per rule Observe,
// which is most of the provider's garbage at 1,000 rules, while the
// conversion code deep-copies the observed policy before overlaying desired
// state anyway.
//
// A NotFound answer is cached like a policy, for the same TTL, so the rules
// of a missing policy do not each ask GCP. Other errors are shared with the
// callers waiting on that fetch but are not cached.
//
// Every snapshot, shared fetch and cached NotFound belongs to one credential
// identity: what GCP answered one set of credentials is never served to
// another, which may not be allowed to read the policy at all. A write
// invalidates the policy for every identity, because it changed the policy
// whoever reads it.
type SnapshotCache struct {
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	entries   map[PolicyKey]map[string]*snapshotEntry // policy -> identity -> entry
	lastSweep time.Time

	hits, shared, misses, fetches, invalidations atomic.Int64
}

// snapshotEntry is one policy's state. gen increases on every Invalidate, so
// a fetch that started before a write cannot store what it read.
type snapshotEntry struct {
	gen      uint64
	policy   *compute.SecurityPolicy
	err      error
	expires  time.Time
	inflight *snapshotCall
}

// snapshotCall is one GCP read shared by all callers that asked meanwhile.
type snapshotCall struct {
	done   chan struct{}
	policy *compute.SecurityPolicy
	err    error
}

// A SnapshotOption configures a SnapshotCache.
type SnapshotOption func(*SnapshotCache)

// WithSnapshotTTL sets how long a snapshot, or a NotFound answer, is served.
func WithSnapshotTTL(d time.Duration) SnapshotOption {
	return func(c *SnapshotCache) { c.ttl = d }
}

// NewSnapshotCache returns an empty SnapshotCache.
func NewSnapshotCache(o ...SnapshotOption) *SnapshotCache {
	c := &SnapshotCache{
		ttl:     DefaultSnapshotTTL,
		now:     time.Now,
		entries: map[PolicyKey]map[string]*snapshotEntry{},
	}
	for _, fn := range o {
		fn(c)
	}
	c.lastSweep = c.now()
	return c
}

// Get returns the policy's snapshot as identity last read it, reading it with
// fetch (which must use identity's credentials) when there is no live one.
// Concurrent callers for one identity and key share one fetch. The returned
// policy is shared: do not modify it.
func (c *SnapshotCache) Get(ctx context.Context, identity string, key PolicyKey, fetch FetchFn) (*compute.SecurityPolicy, error) {
	return c.get(ctx, identity, key, fetch, false)
}

// Refresh is Get without the live snapshot: it reads the policy again (or
// joins a read already in flight, which started after our last write) and
// stores the result for later Gets.
func (c *SnapshotCache) Refresh(ctx context.Context, identity string, key PolicyKey, fetch FetchFn) (*compute.SecurityPolicy, error) {
	return c.get(ctx, identity, key, fetch, true)
}

func (c *SnapshotCache) get(ctx context.Context, identity string, key PolicyKey, fetch FetchFn, fresh bool) (*compute.SecurityPolicy, error) {
	c.mu.Lock()
	now := c.now()
	c.sweep(now)
	byIdentity := c.entries[key]
	if byIdentity == nil {
		byIdentity = map[string]*snapshotEntry{}
		c.entries[key] = byIdentity
	}
	e := byIdentity[identity]
	if e == nil {
		e = &snapshotEntry{}
		byIdentity[identity] = e
	}
	if !fresh && e.inflight == nil && now.Before(e.expires) {
		p, err := e.policy, e.err
		c.mu.Unlock()
		c.hits.Add(1)
		return p, err
	}
	call := e.inflight
	if call == nil {
		call = &snapshotCall{done: make(chan struct{})}
		e.inflight = call
		c.misses.Add(1)
		go c.fetch(context.WithoutCancel(ctx), identity, key, e.gen, call, fetch)
	} else {
		c.shared.Add(1)
	}
	c.mu.Unlock()
	return wait(ctx, call)
}

func wait(ctx context.Context, call *snapshotCall) (*compute.SecurityPolicy, error) {
	select {
	case <-call.done:
		return call.policy, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch runs one shared read and stores its result unless the key was
// invalidated meanwhile.
func (c *SnapshotCache) fetch(ctx context.Context, identity string, key PolicyKey, gen uint64, call *snapshotCall, fetch FetchFn) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	call.policy, call.err = fetch(ctx)
	c.fetches.Add(1)

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(call.done)
	e := c.entries[key][identity]
	if e == nil || e.gen != gen || e.inflight != call {
		return
	}
	e.inflight = nil
	c.store(e, call)
}

// store records a fetch result. Only policies and NotFound are worth
// keeping; a transient error must not hide the policy for a whole TTL.
func (c *SnapshotCache) store(e *snapshotEntry, call *snapshotCall) {
	now := c.now()
	switch {
	case call.err == nil:
		e.policy, e.err, e.expires = call.policy, nil, now.Add(c.ttl)
	case IsNotFound(call.err):
		e.policy, e.err, e.expires = nil, call.err, now.Add(c.ttl)
	default:
		e.policy, e.err, e.expires = nil, nil, time.Time{}
	}
}

// Invalidate drops the policy's snapshots, for every identity. Call it after
// every write to the policy, successful or not. A fetch in flight keeps
// serving the callers already waiting on it, but its result is not stored
// and new callers start a new fetch.
func (c *SnapshotCache) Invalidate(key PolicyKey) {
	c.invalidations.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for identity, e := range c.entries[key] {
		if e.inflight == nil {
			delete(c.entries[key], identity)
			continue
		}
		e.gen++
		e.inflight = nil
		e.policy, e.err, e.expires = nil, nil, time.Time{}
	}
	if len(c.entries[key]) == 0 {
		delete(c.entries, key)
	}
}

// sweep deletes expired, idle entries at most once per TTL, so memory
// follows the number of policies read recently, not ever. c.mu must be held.
func (c *SnapshotCache) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.ttl {
		return
	}
	c.lastSweep = now
	for k, byIdentity := range c.entries {
		for identity, e := range byIdentity {
			if e.inflight == nil && !now.Before(e.expires) {
				delete(byIdentity, identity)
			}
		}
		if len(byIdentity) == 0 {
			delete(c.entries, k)
		}
	}
}

// Stats returns the cache's counters.
func (c *SnapshotCache) Stats() SnapshotStats {
	c.mu.Lock()
	n := 0
	for _, byIdentity := range c.entries {
		n += len(byIdentity)
	}
	c.mu.Unlock()
	return SnapshotStats{
		Hits:          c.hits.Load(),
		Shared:        c.shared.Load(),
		Misses:        c.misses.Load(),
		Fetches:       c.fetches.Load(),
		Invalidations: c.invalidations.Load(),
		Entries:       n,
	}
}
