package setup

import (
	"context"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// FreshnessWait bounds how long reconciles of an object are put off while
// the informer cache lags behind the provider's own last write of it. Watch
// events normally arrive within milliseconds; with the API server saturated
// (a thousand objects applied at once on two cores) they were seen to lag by
// more than three seconds, and by more than ten with twice the workers.
const FreshnessWait = 10 * time.Second

// FreshnessRetry is how soon a reconcile put off for a stale cache comes
// back.
const FreshnessRetry = 50 * time.Millisecond

// ReadYourWrites makes each reconcile of a kind start from an object at
// least as new as the provider's own last write of it.
//
// The managed reconciler reads its object from the informer cache. When a
// reconcile follows closely on the previous one's writes (a requeue after a
// create or an error), the cache may not have those writes yet, and the
// reconcile's first write then fails with a conflict: a wasted API server
// write, a wasted reconcile and a backoff. With 1,000 objects created at once
// that was up to 800 conflicts. ReadYourWrites records the resourceVersion
// every successful write of the kind returns; a reconcile of that object that
// would read an older version from the cache is put off (requeued after
// FreshnessRetry, holding no worker) until the cache has caught up, for at
// most FreshnessWait after the write.
type ReadYourWrites[T client.Object] struct {
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

// NewReadYourWrites returns a ReadYourWrites for objects of type T, read
// through cache (the manager's client).
func NewReadYourWrites[T client.Object](cache client.Reader, newT func() T) *ReadYourWrites[T] {
	return &ReadYourWrites[T]{cache: cache, newT: newT, last: map[types.NamespacedName]written{}}
}

// Manager returns mgr with a client that records the writes of T.
func (f *ReadYourWrites[T]) Manager(mgr ctrl.Manager) ctrl.Manager {
	return writeRecordingManager{Manager: mgr, client: f.Client(mgr.GetClient())}
}

// Client returns c recording the writes of T.
func (f *ReadYourWrites[T]) Client(c client.Client) client.Client {
	return &recordingClient[T]{Client: c, f: f}
}

// Reconciler returns r, put off while the cache is older than our last
// write of the object.
func (f *ReadYourWrites[T]) Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if f.stale(ctx, req.NamespacedName) {
			return reconcile.Result{RequeueAfter: FreshnessRetry}, nil
		}
		return r.Reconcile(ctx, req)
	})
}

// recorded records o's resourceVersion if the write that returned err
// succeeded, and returns err.
func (f *ReadYourWrites[T]) recorded(o client.Object, err error) error {
	if err == nil {
		f.record(o)
	}
	return err
}

func (f *ReadYourWrites[T]) record(o client.Object) {
	if _, ok := o.(T); !ok || o.GetResourceVersion() == "" {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last[client.ObjectKeyFromObject(o)] = written{resourceVersion: o.GetResourceVersion(), at: now}
	// An object deleted after our last write may never be reconciled
	// again; now and then forget what is too old to wait for anyway.
	if f.records++; f.records%1024 == 0 {
		for k, w := range f.last {
			if now.Sub(w.at) > FreshnessWait {
				delete(f.last, k)
			}
		}
	}
}

// stale reports whether the cache holds key at a version older than our last
// write of it, less than FreshnessWait ago. Once it does not, the write is
// forgotten.
func (f *ReadYourWrites[T]) stale(ctx context.Context, key types.NamespacedName) bool {
	f.mu.Lock()
	w, ok := f.last[key]
	f.mu.Unlock()
	if !ok {
		return false
	}
	obj := f.newT()
	err := f.cache.Get(ctx, key, obj)
	if err == nil && olderThan(obj.GetResourceVersion(), w.resourceVersion) && time.Since(w.at) < FreshnessWait {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A write made since we looked is kept for the next reconcile.
	if f.last[key] == w {
		delete(f.last, key)
	}
	return false
}

// olderThan reports whether resourceVersion a comes before b. Kubernetes
// calls resourceVersions opaque, but the API server hands out etcd
// revisions, which grow; anything that is not a number is compared for
// equality only, so an unknown format never waits longer than FreshnessWait.
func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x < y
}

type writeRecordingManager struct {
	ctrl.Manager
	client client.Client
}

func (m writeRecordingManager) GetClient() client.Client { return m.client }

// recordingClient records the resourceVersion its writes of T return.
type recordingClient[T client.Object] struct {
	client.Client
	f *ReadYourWrites[T]
}

func (c *recordingClient[T]) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.f.recorded(obj, c.Client.Update(ctx, obj, opts...))
}

func (c *recordingClient[T]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.f.recorded(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *recordingClient[T]) Status() client.SubResourceWriter {
	return &recordingStatusWriter[T]{SubResourceWriter: c.Client.Status(), f: c.f}
}

// recordingStatusWriter records the resourceVersion its status writes of T
// return.
type recordingStatusWriter[T client.Object] struct {
	client.SubResourceWriter
	f *ReadYourWrites[T]
}

func (w *recordingStatusWriter[T]) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.f.recorded(obj, w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w *recordingStatusWriter[T]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.f.recorded(obj, w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}
