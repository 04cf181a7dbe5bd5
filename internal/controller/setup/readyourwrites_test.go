package setup

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

func newRule() *v1beta1.SecurityPolicyRule { return &v1beta1.SecurityPolicyRule{} }

// laggingCache serves a rule whose resourceVersion is behind for the first
// few reads, like an informer that has not had the watch event yet.
type laggingCache struct {
	client.Reader
	versions []string // served in turn; the last one stays
	gone     bool
	reads    int
}

func (c *laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.reads++
	if c.gone {
		return kerrors.NewNotFound(schema.GroupResource{Resource: "securitypolicyrules"}, key.Name)
	}
	i := min(c.reads, len(c.versions)) - 1
	obj.SetResourceVersion(c.versions[i])
	return nil
}

func TestReadYourWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "rule"}
	rule := func(rv string) client.Object {
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: rv}}
	}
	type args struct {
		written client.Object // what the reconciler last wrote, if anything
		status  bool          // through the status writer
		patch   bool          // with Patch rather than Update
		cache   *laggingCache
	}
	type want struct {
		putOff int // reconciles requeued before the reconciler ran
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NothingWritten": {
			reason: "A reconcile of an object we have not written is not put off.",
			args:   args{cache: &laggingCache{versions: []string{"5"}}},
			want:   want{putOff: 0},
		},
		"CacheLagsBehindUpdate": {
			reason: "After our Update at 7, reconciles are put off until the cache serves 7.",
			args:   args{written: rule("7"), cache: &laggingCache{versions: []string{"5", "6", "7"}}},
			want:   want{putOff: 2},
		},
		"CacheLagsBehindStatusUpdate": {
			reason: "A status update counts as a write too.",
			args:   args{written: rule("7"), status: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheLagsBehindPatch": {
			reason: "A patch counts as a write too.",
			args:   args{written: rule("7"), patch: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheLagsBehindStatusPatch": {
			reason: "So does a status patch.",
			args:   args{written: rule("7"), status: true, patch: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheIsNewer": {
			reason: "Someone wrote after us: a newer version in the cache is fresh enough.",
			args:   args{written: rule("7"), cache: &laggingCache{versions: []string{"9"}}},
			want:   want{putOff: 0},
		},
		"ObjectGone": {
			reason: "An object deleted after our write is reconciled at once.",
			args:   args{written: rule("7"), cache: &laggingCache{gone: true}},
			want:   want{putOff: 0},
		},
		"OtherKind": {
			reason: "Writes of other kinds (a ProviderConfigUsage with the same name) are not waited for.",
			args: args{written: &pcv1beta1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: "7"}},
				cache: &laggingCache{versions: []string{"5"}}},
			want: want{putOff: 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newReadYourWrites(tc.args.cache, newRule)
			kube := g.Client(&test.MockClient{
				MockUpdate:       test.NewMockUpdateFn(nil),
				MockPatch:        test.NewMockPatchFn(nil),
				MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil),
				MockStatusPatch:  test.NewMockSubResourcePatchFn(nil),
			})
			if tc.args.written != nil {
				var err error
				ctx, o := context.Background(), tc.args.written
				switch {
				case tc.args.status && tc.args.patch:
					err = kube.Status().Patch(ctx, o, client.Merge)
				case tc.args.status:
					err = kube.Status().Update(ctx, o)
				case tc.args.patch:
					err = kube.Patch(ctx, o, client.Merge)
				default:
					err = kube.Update(ctx, o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			ran := 0
			r, _ := gated(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				ran++
				return reconcile.Result{}, nil
			}), newControllerRateLimiter(), g.Check)
			putOff := 0
			for ran == 0 && putOff < 10 {
				got, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
				if err != nil {
					t.Fatal(err)
				}
				if ran == 0 {
					putOff++
					if diff := cmp.Diff(reconcile.Result{RequeueAfter: cacheRetryAfter}, got); diff != "" {
						t.Errorf("\n%s\nReconcile(...) put off: -want, +got:\n%s", tc.reason, diff)
					}
				}
			}
			if diff := cmp.Diff(tc.want.putOff, putOff); diff != "" {
				t.Errorf("\n%s\nreconciles put off: -want, +got:\n%s", tc.reason, diff)
			}
			// The write is waited for once, not on every later reconcile.
			reads := tc.args.cache.reads
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(reads, tc.args.cache.reads); diff != "" {
				t.Errorf("\n%s\ncache reads by a later Reconcile: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// A reconcile is put off only when apimachinery says the cache's version
// comes before ours; a version it cannot compare is never waited for.
func TestReadYourWritesComparesResourceVersions(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "rule"}
	type args struct {
		cached, written string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool // put off
	}{
		"Older":              {reason: "The cache is behind our write.", args: args{cached: "99", written: "100"}, want: true},
		"Same":               {reason: "The cache has our write.", args: args{cached: "100", written: "100"}, want: false},
		"Newer":              {reason: "Someone wrote after us.", args: args{cached: "101", written: "100"}, want: false},
		"LongerIsNewer":      {reason: "Versions compare as numbers, not strings.", args: args{cached: "1000", written: "999"}, want: false},
		"ShorterIsOlder":     {reason: "Versions compare as numbers, not strings.", args: args{cached: "999", written: "1000"}, want: true},
		"CachedNotANumber":   {reason: "A version we cannot compare is not waited for.", args: args{cached: "x", written: "100"}, want: false},
		"WrittenNotANumber":  {reason: "A version we cannot compare is not waited for.", args: args{cached: "99", written: "x"}, want: false},
		"LeadingZero":        {reason: "A version that is not well formed is not waited for.", args: args{cached: "099", written: "100"}, want: false},
		"CachedZero":         {reason: "Zero is never a live version.", args: args{cached: "0", written: "100"}, want: false},
		"NotNumbersDiffer":   {reason: "Formats we cannot compare never wait, even when they differ.", args: args{cached: "a", written: "b"}, want: false},
		"CachedEmptyVersion": {reason: "An object without a version in the cache is not waited for.", args: args{cached: "", written: "100"}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newReadYourWrites(&laggingCache{versions: []string{tc.args.cached}}, newRule)
			w := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: tc.args.written}}
			if err := g.Client(&test.MockClient{MockUpdate: test.NewMockUpdateFn(nil)}).Update(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			_, got := g.Check(context.Background(), reconcile.Request{NamespacedName: key})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nReconcile(...) put off: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// A cache that never catches up (say, our write's watch event was lost) must
// not put reconciles off for longer than maxCacheLag after the write.
func TestReadYourWritesGivesUp(t *testing.T) {
	cache := &laggingCache{versions: []string{"5"}}
	g := newReadYourWrites(cache, newRule)
	key := types.NamespacedName{Name: "rule"}
	g.last[key] = written{resourceVersion: "7", at: time.Now().Add(-maxCacheLag - time.Millisecond)}
	if g.stale(context.Background(), key) {
		t.Errorf("stale(...): a write older than maxCacheLag still puts reconciles off")
	}
	if _, ok := g.last[key]; ok {
		t.Errorf("stale(...): a write older than maxCacheLag is still remembered")
	}
}

// A put-off is not an outcome of the object's reconcile: the Forget
// controller-runtime answers it with must leave the object's failures, and
// so its backoff, as they were. Any other Forget clears them.
func TestRateLimiterKeepsBackoffAcrossPutOff(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "rule"}
	req := reconcile.Request{NamespacedName: key}
	type args struct {
		failures int  // rate-limited requeues before the reconcile
		stale    bool // the cache lags behind our write: the reconcile is put off
		forgets  int  // Forgets after the reconcile
	}
	type want struct {
		NumRequeues int
		When        time.Duration
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"PutOffKeepsBackoff": {
			reason: "The Forget after a put-off keeps the failures: the next one backs off further.",
			args:   args{failures: 3, stale: true, forgets: 1},
			want:   want{NumRequeues: 3, When: 8 * time.Millisecond},
		},
		"ReconcileForgets": {
			reason: "The Forget after a reconcile that ran clears the failures, as without the gate.",
			args:   args{failures: 3, forgets: 1},
			want:   want{NumRequeues: 0, When: time.Millisecond},
		},
		"OnlyThePutOffsOwnForget": {
			reason: "A put-off spares one Forget, its own; the next clears the failures.",
			args:   args{failures: 3, stale: true, forgets: 2},
			want:   want{NumRequeues: 0, When: time.Millisecond},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cached := "7"
			if tc.args.stale {
				cached = "6"
			}
			g := newReadYourWrites(&laggingCache{versions: []string{cached}}, newRule)
			ran := false
			r, rl := gated(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				ran = true
				return reconcile.Result{}, nil
			}), workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second), g.Check)
			for range tc.args.failures {
				rl.When(req)
			}
			w := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: "7"}}
			if err := g.Client(&test.MockClient{MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil)}).Status().Update(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(!tc.args.stale, ran); diff != "" {
				t.Fatalf("\n%s\nReconcile(...) ran: -want, +got:\n%s", tc.reason, diff)
			}
			for range tc.args.forgets {
				rl.Forget(req)
			}
			got := want{NumRequeues: rl.NumRequeues(req), When: rl.When(req)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nRateLimiter(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// behindCache is an informer cache one read behind every write: the first
// read after a write still serves the version before it.
type behindCache struct {
	client.Reader
	mu      sync.Mutex
	version int
	behind  bool
}

func (c *behindCache) write() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	c.behind = true
	return strconv.Itoa(c.version)
}

func (c *behindCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.version
	if c.behind {
		v--
		c.behind = false
	}
	obj.SetResourceVersion(strconv.Itoa(v))
	return nil
}

// whenRecorder records the delays its rate limiter hands out.
type whenRecorder struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	mu    sync.Mutex
	whens []time.Duration
}

func (r *whenRecorder) When(req reconcile.Request) time.Duration {
	d := r.TypedRateLimiter.When(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.whens = append(r.whens, d)
	return d
}

// An object that fails on every reconcile, whose cache lags behind the
// status write each failure makes, is put off before every retry. Through a
// real controller-runtime controller its backoff must still grow (a limiter
// that each put-off's Forget reset stayed at the base delay).
func TestBackoffGrowsThroughPutOffs(t *testing.T) {
	const failures = 5
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}}
	type args struct {
		priorityQueue bool
	}
	type want struct {
		whens       []time.Duration
		numRequeues int // after the reconcile that finally succeeds
	}
	growing := []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond, 16 * time.Millisecond}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"PriorityQueue": {
			reason: "controller-runtime's default queue: the backoff doubles across put-offs.",
			args:   args{priorityQueue: true},
			want:   want{whens: growing},
		},
		"RateLimitingQueue": {
			reason: "client-go's rate-limiting queue: the backoff doubles across put-offs.",
			args:   args{},
			want:   want{whens: growing},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cache := &behindCache{version: 1}
			g := newReadYourWrites(cache, newRule)
			kube := g.Client(&test.MockClient{
				MockStatusUpdate: func(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
					obj.SetResourceVersion(cache.write())
					return nil
				},
			})
			rec := &whenRecorder{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second)}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runs := 0
			r, rl := gated(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				if runs++; runs > failures {
					cancel()
					return reconcile.Result{}, nil
				}
				// As the managed reconciler does after an error: write the
				// condition, then ask for a rate-limited requeue.
				cr := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
				if err := kube.Status().Update(ctx, cr); err != nil {
					return reconcile.Result{}, err
				}
				return reconcile.Result{Requeue: true}, nil //nolint:staticcheck // What crossplane-runtime's managed reconciler returns.
			}), rec, g.Check)
			skipNameValidation := true
			c, err := controller.NewTypedUnmanaged("test", controller.TypedOptions[reconcile.Request]{
				Reconciler:         r,
				RateLimiter:        rl,
				UsePriorityQueue:   &tc.args.priorityQueue,
				SkipNameValidation: &skipNameValidation,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Watch(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
				q.Add(req)
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			// Start returns once its workers are done: every Forget made.
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if runs <= failures {
				t.Fatalf("\n%s\ncontroller stopped after %d reconciles, before the object succeeded", tc.reason, runs)
			}
			rec.mu.Lock()
			got := want{whens: rec.whens, numRequeues: rec.NumRequeues(req)}
			rec.mu.Unlock()
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nrate-limited requeues: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
