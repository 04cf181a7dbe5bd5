package gcp

import (
	"container/list"
	"context"
	"sync"

	"golang.org/x/sync/singleflight"
)

// DefaultClientCacheSize bounds a ClientCache. Each entry holds an HTTP
// client and a token source; a provider rarely has more than a handful of
// ProviderConfigs.
const DefaultClientCacheSize = 64

// A BuildFn builds a Client for a cache miss. It gets a context detached
// from the caller's cancellation, because the Client outlives the
// reconcile that happened to build it.
type BuildFn func(ctx context.Context) (*Client, error)

// A ClientCache keeps one Client per credential identity, so Connect (called
// on every reconcile) never builds an HTTP client or token source twice for
// the same credentials. It is safe for concurrent use; concurrent Gets of a
// missing key build once. Build errors are not cached: the next Get retries,
// which is cheap when, as usual, the error is a malformed Secret.
type ClientCache struct {
	size int

	mu      sync.Mutex
	lru     *list.List               // front = most recently used
	entries map[string]*list.Element // key -> *clientEntry
	owners  map[string]string        // owner -> its current key
	group   singleflight.Group
}

type clientEntry struct {
	key, owner string
	client     *Client
}

// NewClientCache returns a ClientCache holding at most size clients
// (DefaultClientCacheSize if size < 1), evicting the least recently used.
func NewClientCache(size int) *ClientCache {
	if size < 1 {
		size = DefaultClientCacheSize
	}
	return &ClientCache{size: size, lru: list.New(),
		entries: map[string]*list.Element{}, owners: map[string]string{}}
}

// Get returns the Client cached under key, building it with build on a
// miss. owner identifies the credential holder (the ProviderConfig UID):
// when an owner arrives with a new key (its Secret or spec changed), the
// owner's previous client is dropped. Build key with IdentityKey, for
// example IdentityKey(uid, creds.Hash()).
func (c *ClientCache) Get(ctx context.Context, owner, key string, build BuildFn) (*Client, error) {
	if cl := c.lookup(owner, key); cl != nil {
		return cl, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		if cl := c.lookup(owner, key); cl != nil {
			return cl, nil
		}
		cl, err := build(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		c.add(owner, key, cl)
		return cl, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Client), nil //nolint:forcetypeassert // Only *Client is stored.
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lookup returns the cached client for key and marks it recently used.
func (c *ClientCache) lookup(owner, key string) *Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	c.owners[owner] = key
	return el.Value.(*clientEntry).client //nolint:forcetypeassert // Only *clientEntry is stored.
}

// add stores a client, replacing the owner's older one and evicting the
// least recently used entries beyond the size bound.
func (c *ClientCache) add(owner, key string, cl *Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.owners[owner]; ok && old != key {
		c.remove(old)
	}
	c.owners[owner] = key
	c.entries[key] = c.lru.PushFront(&clientEntry{key: key, owner: owner, client: cl})
	for c.lru.Len() > c.size {
		c.remove(c.lru.Back().Value.(*clientEntry).key) //nolint:forcetypeassert // Only *clientEntry is stored.
	}
}

// remove drops key. c.mu must be held.
func (c *ClientCache) remove(key string) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	e := el.Value.(*clientEntry) //nolint:forcetypeassert // Only *clientEntry is stored.
	c.lru.Remove(el)
	delete(c.entries, key)
	if c.owners[e.owner] == key {
		delete(c.owners, e.owner)
	}
}

// Forget drops the owner's client, e.g. when its ProviderConfig is deleted.
func (c *ClientCache) Forget(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key, ok := c.owners[owner]; ok {
		c.remove(key)
		delete(c.owners, owner)
	}
}
