package setup

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxCacheLag bounds how long reconciles of an object are put off while the
// informer cache lags behind the provider's own last write of it. Watch
// events normally arrive within milliseconds, and seconds late from a
// saturated API server (docs/performance.md).
const maxCacheLag = 10 * time.Second

// cacheRetryAfter is how soon a reconcile put off for a stale cache comes back.
const cacheRetryAfter = 50 * time.Millisecond

// readYourWrites makes each reconcile of a kind start from an object at least
// as new as the provider's own last write of it.
//
// The managed reconciler reads its object from the informer cache. When a
// reconcile follows closely on the previous one's writes (a requeue after a
// create or an error), the cache may not have those writes yet, and the
// reconcile's first write then fails with a conflict: a wasted API server
// write, a wasted reconcile and a backoff, for most objects of a burst
// (docs/performance.md). It records the resourceVersion every
// successful write of the kind returns; a reconcile of that object that would
// read an older version from the cache is put off (requeued after
// cacheRetryAfter, holding no worker) until the cache has caught up, for at
// most maxCacheLag after the write.
type readYourWrites[T client.Object] struct {
	cache client.Reader
	newT  func() T

	mu      sync.Mutex
	last    map[types.NamespacedName]written
	records int
}

type written struct {
	resourceVersion string
	at              time.Time
}

// newReadYourWrites returns a readYourWrites for objects of type T, read
// through cache (the manager's client).
func newReadYourWrites[T client.Object](cache client.Reader, newT func() T) *readYourWrites[T] {
	return &readYourWrites[T]{cache: cache, newT: newT, last: map[types.NamespacedName]written{}}
}

// Manager returns mgr with a client that records the writes of T. Every
// client a controller gets from it afterwards (the managed reconciler's, its
// finalizer's and its critical annotation updater's) records. The wrapper
// changes no contract of the client: every call reaches the API server as
// before and returns what it returned; a successful Update or Patch of a T
// (status included) also records the resourceVersion it returned.
func (g *readYourWrites[T]) Manager(mgr ctrl.Manager) ctrl.Manager {
	return writeRecordingManager{Manager: mgr, client: g.Client(mgr.GetClient())}
}

// Client returns c recording the writes of T.
func (g *readYourWrites[T]) Client(c client.Client) client.Client {
	return &recordingClient[T]{Client: c, g: g}
}

// Check puts a reconcile off while the cache is older than our last write of
// the object.
func (g *readYourWrites[T]) Check(ctx context.Context, req reconcile.Request) (time.Duration, bool) {
	return cacheRetryAfter, g.stale(ctx, req.NamespacedName)
}

// recorded records o's resourceVersion if the write that returned err
// succeeded, and returns err.
func (g *readYourWrites[T]) recorded(o client.Object, err error) error {
	if err == nil {
		g.record(o)
	}
	return err
}

func (g *readYourWrites[T]) record(o client.Object) {
	if _, ok := o.(T); !ok || o.GetResourceVersion() == "" {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last[client.ObjectKeyFromObject(o)] = written{resourceVersion: o.GetResourceVersion(), at: now}
	// An object deleted after our last write may never be reconciled
	// again; now and then forget what is too old to wait for anyway.
	if g.records++; g.records%1024 == 0 {
		for k, w := range g.last {
			if now.Sub(w.at) > maxCacheLag {
				delete(g.last, k)
			}
		}
	}
}

// stale reports whether the cache holds key at a version older than our last
// write of it, less than maxCacheLag ago. Once it does not, the write is
// forgotten.
func (g *readYourWrites[T]) stale(ctx context.Context, key types.NamespacedName) bool {
	g.mu.Lock()
	w, ok := g.last[key]
	g.mu.Unlock()
	if !ok {
		return false
	}
	obj := g.newT()
	err := g.cache.Get(ctx, key, obj)
	if err == nil && olderThan(obj.GetResourceVersion(), w.resourceVersion) && time.Since(w.at) < maxCacheLag {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// A write made since we looked is kept for the next reconcile.
	if g.last[key] == w {
		delete(g.last, key)
	}
	return false
}

// olderThan reports whether resourceVersion a comes before b. A version
// apimachinery cannot compare is never waited for.
func olderThan(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

type writeRecordingManager struct {
	ctrl.Manager
	client client.Client
}

func (m writeRecordingManager) GetClient() client.Client { return m.client }

// recordingClient records the resourceVersion its writes of T return.
type recordingClient[T client.Object] struct {
	client.Client
	g *readYourWrites[T]
}

func (c *recordingClient[T]) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.g.recorded(obj, c.Client.Update(ctx, obj, opts...))
}

func (c *recordingClient[T]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.g.recorded(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *recordingClient[T]) Status() client.SubResourceWriter {
	return &recordingStatusWriter[T]{SubResourceWriter: c.Client.Status(), g: c.g}
}

// recordingStatusWriter records the resourceVersion its status writes of T
// return.
type recordingStatusWriter[T client.Object] struct {
	client.SubResourceWriter
	g *readYourWrites[T]
}

func (w *recordingStatusWriter[T]) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.g.recorded(obj, w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w *recordingStatusWriter[T]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.g.recorded(obj, w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}
