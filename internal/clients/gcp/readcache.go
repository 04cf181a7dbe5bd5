package gcp

import (
	"context"
	"sync"
	"time"
)

// DefaultProjectReadTTL is how long a Client keeps a project-wide read (the
// project's Cloud Armor tier, the lists of its backend services and edge
// security services) by default: one minute, crossplane-runtime's default
// poll interval, so that all the policies of a project, whose polls spread
// over the interval, share one read per interval. The provider passes its
// --poll.
const DefaultProjectReadTTL = time.Minute

// A readCache keeps one Client's project-wide reads, each under a key that
// names what was read and the project ("tier/p", "backends/p"), for a TTL.
// Concurrent readers of one key share one fetch. Answers are kept, and so
// are refusals that will not change by asking again within the TTL (the
// credentials may not read it, or it is not there); other errors are handed
// to the readers waiting on that fetch and not kept.
//
// It is a Client's own: the ClientCache keeps one Client per config and
// credentials, so nothing read with one tenant's credentials is served to
// another's.
type readCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*readEntry
}

type readEntry struct {
	gen      uint64
	val      any
	err      error
	expires  time.Time
	inflight *readCall
}

type readCall struct {
	done chan struct{}
	val  any
	err  error
}

func newReadCache(ttl time.Duration, now func() time.Time) *readCache {
	if ttl <= 0 {
		ttl = DefaultProjectReadTTL
	}
	return &readCache{ttl: ttl, now: now, entries: map[string]*readEntry{}}
}

// get returns what key holds, fetching it when it holds nothing live (or
// always, when fresh).
func (c *readCache) get(ctx context.Context, key string, fresh bool, fetch func(context.Context) (any, error)) (any, error) {
	c.mu.Lock()
	now := c.now()
	c.sweep(now)
	e := c.entries[key]
	if e == nil {
		e = &readEntry{}
		c.entries[key] = e
	}
	if !fresh && e.inflight == nil && now.Before(e.expires) {
		v, err := e.val, e.err
		c.mu.Unlock()
		return v, err
	}
	call := e.inflight
	if call == nil {
		call = &readCall{done: make(chan struct{})}
		e.inflight = call
		go c.fetch(context.WithoutCancel(ctx), key, e.gen, call, fetch)
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.val, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *readCache) fetch(ctx context.Context, key string, gen uint64, call *readCall, fetch func(context.Context) (any, error)) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	call.val, call.err = fetch(ctx)

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(call.done)
	e := c.entries[key]
	if e == nil || e.gen != gen || e.inflight != call {
		return
	}
	e.inflight = nil
	switch k := Kind(call.err); {
	case call.err == nil, k == KindNotFound, k == KindPermissionDenied:
		e.val, e.err, e.expires = call.val, call.err, c.now().Add(c.ttl)
	default:
		e.val, e.err, e.expires = nil, nil, time.Time{}
	}
}

// put stores v under key, as a fetch would have.
func (c *readCache) put(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		e = &readEntry{}
		c.entries[key] = e
	}
	e.gen++
	e.inflight = nil
	e.val, e.err, e.expires = v, nil, c.now().Add(c.ttl)
}

// invalidate drops key: the next get fetches. A fetch in flight serves the
// readers already waiting on it but is not kept.
func (c *readCache) invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		e.gen++
		e.inflight = nil
		e.val, e.err, e.expires = nil, nil, time.Time{}
	}
}

// sweep deletes expired, idle entries, so memory follows the projects read
// recently. A Client reads a handful of projects, so the walk is short.
// c.mu must be held.
func (c *readCache) sweep(now time.Time) {
	for k, e := range c.entries {
		if e.inflight == nil && !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}
