package connector

import (
	"sync"
	"time"
)

// SecretTTL is how long a credentials Secret read from the API server is
// reused. Connect runs on every reconcile; without this, a thousand managed
// resources cost the API server a thousand Secret reads per poll. A rotated
// Secret takes effect within this time.
const SecretTTL = 30 * time.Second

// secretCache keeps the data of recently read credentials Secrets, keyed by
// namespace/name/key. Only what Connect already resolved (the namespace a
// namespaced ProviderConfig is confined to included) is ever a key, so the
// cache cannot widen what a config may read.
type secretCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]secretEntry
}

type secretEntry struct {
	data    []byte
	expires time.Time
}

func newSecretCache(ttl time.Duration) *secretCache {
	return &secretCache{ttl: ttl, now: time.Now, entries: map[string]secretEntry{}}
}

func (c *secretCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().After(e.expires) {
		delete(c.entries, key)
		return nil, false
	}
	return e.data, true
}

func (c *secretCache) put(key string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = secretEntry{data: data, expires: c.now().Add(c.ttl)}
}
