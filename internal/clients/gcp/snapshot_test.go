package gcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

// fakeClock is a settable clock for cache tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var testKey = PolicyKey{Project: "p", Name: "n"}

const testIdentity = "tenant-a"

// countingFetch returns a FetchFn that counts its calls and answers with
// the policy (with Fingerprint set to the call number) or err.
func countingFetch(n *atomic.Int64, err error) FetchFn {
	return func(_ context.Context) (*compute.SecurityPolicy, error) {
		c := n.Add(1)
		if err != nil {
			return nil, err
		}
		return &compute.SecurityPolicy{Name: "n", Fingerprint: string(rune('0' + c))}, nil
	}
}

func TestPolicyKeyString(t *testing.T) {
	cases := map[string]struct {
		reason string
		key    PolicyKey
		want   string
	}{
		"Global":   {reason: "A global policy has no region.", key: PolicyKey{Project: "p", Name: "n"}, want: "projects/p/global/securityPolicies/n"},
		"Regional": {reason: "A regional policy names its region.", key: PolicyKey{Project: "p", Region: "r", Name: "n"}, want: "projects/p/regions/r/securityPolicies/n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.key.String()); diff != "" {
				t.Errorf("\n%s\nString(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSnapshotCacheSequences(t *testing.T) {
	notFound := apiErr(404, "notFound", "gone")
	type step struct {
		advance    time.Duration
		invalidate bool
		refresh    bool
	}
	type want struct {
		fetches     int64
		fingerprint string
		err         error
	}
	cases := map[string]struct {
		reason   string
		fetchErr error
		steps    []step
		want     want
	}{
		"Hit": {
			reason: "A second Get within the TTL is served from the snapshot.",
			steps:  []step{{}, {advance: 5 * time.Second}},
			want:   want{fetches: 1, fingerprint: "1"},
		},
		"Expired": {
			reason: "A Get after the TTL reads again.",
			steps:  []step{{}, {advance: 11 * time.Second}},
			want:   want{fetches: 2, fingerprint: "2"},
		},
		"Invalidated": {
			reason: "A Get after Invalidate reads again.",
			steps:  []step{{}, {invalidate: true}},
			want:   want{fetches: 2, fingerprint: "2"},
		},
		"Refresh": {
			reason: "Refresh reads again even within the TTL.",
			steps:  []step{{}, {refresh: true}},
			want:   want{fetches: 2, fingerprint: "2"},
		},
		"RefreshStores": {
			reason: "What Refresh read serves later Gets.",
			steps:  []step{{}, {refresh: true}, {advance: time.Second}},
			want:   want{fetches: 2, fingerprint: "2"},
		},
		"NotFoundCached": {
			reason:   "A NotFound is cached, so rules of a missing policy cost one read.",
			fetchErr: notFound,
			steps:    []step{{}, {}, {advance: 3 * time.Second}},
			want:     want{fetches: 1, err: notFound},
		},
		"NotFoundExpires": {
			reason:   "A cached NotFound expires with the TTL.",
			fetchErr: notFound,
			steps:    []step{{}, {advance: 11 * time.Second}},
			want:     want{fetches: 2, err: notFound},
		},
		"TransientNotCached": {
			reason:   "A transient error is not cached.",
			fetchErr: errBoom,
			steps:    []step{{}, {}},
			want:     want{fetches: 2, err: errBoom},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			c := NewSnapshotCache(WithSnapshotTTL(10*time.Second), withSnapshotClock(clk.Now))
			var n atomic.Int64
			fetch := countingFetch(&n, tc.fetchErr)
			var p *compute.SecurityPolicy
			var err error
			for _, s := range tc.steps {
				clk.Advance(s.advance)
				if s.invalidate {
					c.Invalidate(testKey)
				}
				if s.refresh {
					p, err = c.Refresh(context.Background(), testIdentity, testKey, fetch)
					continue
				}
				p, err = c.Get(context.Background(), testIdentity, testKey, fetch)
			}
			got := want{fetches: n.Load(), err: err}
			if p != nil {
				got.fingerprint = p.Fingerprint
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nGet(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSnapshotCacheSingleFlight(t *testing.T) {
	c := NewSnapshotCache()
	release := make(chan struct{})
	var n atomic.Int64
	fetch := func(_ context.Context) (*compute.SecurityPolicy, error) {
		n.Add(1)
		<-release
		return &compute.SecurityPolicy{Name: "n"}, nil
	}
	const callers = 50
	var wg sync.WaitGroup
	results := make([]*compute.SecurityPolicy, callers)
	for i := range callers {
		wg.Go(func() {
			results[i], _ = c.Get(context.Background(), testIdentity, testKey, fetch)
		})
	}
	waitFor(t, func() bool { s := c.Stats(); return s.Misses+s.Shared == callers })
	close(release)
	wg.Wait()
	if got := n.Load(); got != 1 {
		t.Errorf("concurrent Gets: want 1 fetch, got %d", got)
	}
	for i, p := range results {
		if p != results[0] {
			t.Fatalf("caller %d got a different snapshot; all callers must share one", i)
		}
	}
}

// TestSnapshotCacheIdentities proves that one credential identity is never
// served what another read: not a snapshot, not a shared fetch, not a cached
// NotFound. A write invalidates the policy for every identity.
func TestSnapshotCacheIdentities(t *testing.T) {
	forbidden := &googleapi.Error{Code: http.StatusForbidden, Message: "Required 'compute.securityPolicies.get' permission"}
	notFound := &googleapi.Error{Code: http.StatusNotFound}
	answers := map[string]struct {
		p   *compute.SecurityPolicy
		err error
	}{
		"tenant-a": {p: &compute.SecurityPolicy{Name: "n", Description: "a's view"}},
		"tenant-b": {err: forbidden},
		"tenant-c": {err: notFound},
	}
	type result struct {
		Description string
		Code        int
	}
	fetches := map[string]int{}
	var mu sync.Mutex
	get := func(c *SnapshotCache, identity string) result {
		p, err := c.Get(context.Background(), identity, testKey, func(context.Context) (*compute.SecurityPolicy, error) {
			mu.Lock()
			fetches[identity]++
			mu.Unlock()
			a := answers[identity]
			return a.p, a.err
		})
		var r result
		if p != nil {
			r.Description = p.Description
		}
		var gerr *googleapi.Error
		if errors.As(err, &gerr) {
			r.Code = gerr.Code
		}
		return r
	}

	c := NewSnapshotCache()
	got := map[string]result{}
	for _, id := range []string{"tenant-a", "tenant-b", "tenant-c", "tenant-a", "tenant-b", "tenant-c"} {
		got[id] = get(c, id)
	}
	want := map[string]result{
		"tenant-a": {Description: "a's view"},
		"tenant-b": {Code: http.StatusForbidden},
		"tenant-c": {Code: http.StatusNotFound},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("each identity gets its own answer: -want, +got:\n%s", diff)
	}
	// a's snapshot and c's NotFound are cached for them alone; b's 403 is
	// not cached at all.
	if diff := cmp.Diff(map[string]int{"tenant-a": 1, "tenant-b": 2, "tenant-c": 1}, fetches); diff != "" {
		t.Errorf("fetches per identity: -want, +got:\n%s", diff)
	}
	c.Invalidate(testKey)
	_ = get(c, "tenant-a")
	_ = get(c, "tenant-c")
	if diff := cmp.Diff(map[string]int{"tenant-a": 2, "tenant-b": 2, "tenant-c": 2}, fetches); diff != "" {
		t.Errorf("a write invalidates every identity's snapshot: -want, +got:\n%s", diff)
	}
}

func TestSnapshotCacheInvalidateDuringFetch(t *testing.T) {
	c := NewSnapshotCache()
	started, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int64
	fetch := func(_ context.Context) (*compute.SecurityPolicy, error) {
		if n.Add(1) == 1 {
			close(started)
			<-release
			return &compute.SecurityPolicy{Fingerprint: "stale"}, nil
		}
		return &compute.SecurityPolicy{Fingerprint: "fresh"}, nil
	}
	done := make(chan *compute.SecurityPolicy)
	go func() {
		p, _ := c.Get(context.Background(), testIdentity, testKey, fetch)
		done <- p
	}()
	<-started
	c.Invalidate(testKey) // A write finished while the first read ran.
	close(release)
	if p := <-done; p.Fingerprint != "stale" {
		t.Errorf("the waiting caller gets its own fetch's result, got %q", p.Fingerprint)
	}
	p, _ := c.Get(context.Background(), testIdentity, testKey, fetch)
	if p.Fingerprint != "fresh" {
		t.Errorf("a read that started before a write must not be cached: got %q", p.Fingerprint)
	}
}

func TestSnapshotCacheCallerCancel(t *testing.T) {
	c := NewSnapshotCache()
	release := make(chan struct{})
	fetch := func(ctx context.Context) (*compute.SecurityPolicy, error) {
		<-release
		return &compute.SecurityPolicy{Name: "n"}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.Get(ctx, testIdentity, testKey, fetch)
		errc <- err
	}()
	waitFor(t, func() bool { return c.Stats().Misses == 1 })
	cancel()
	if diff := cmp.Diff(context.Canceled, <-errc, test.EquateErrors()); diff != "" {
		t.Errorf("cancelled caller: -want, +got:\n%s", diff)
	}
	close(release)
	// The shared fetch was not cancelled with its first caller, so its
	// result is stored for the next one.
	waitFor(t, func() bool { return c.Stats().Fetches == 1 })
	if _, err := c.Get(context.Background(), testIdentity, testKey, fetch); err != nil {
		t.Errorf("Get after the shared fetch: %v", err)
	}
	if s := c.Stats(); s.Hits != 1 {
		t.Errorf("want the fetch started by a cancelled caller to be cached, stats %+v", s)
	}
}

func TestSnapshotCacheEviction(t *testing.T) {
	clk := newFakeClock()
	c := NewSnapshotCache(WithSnapshotTTL(10*time.Second), withSnapshotClock(clk.Now))
	var n atomic.Int64
	for i := range 100 {
		k := PolicyKey{Project: "p", Name: string(rune('a'+i%26)) + string(rune('a'+i/26))}
		_, _ = c.Get(context.Background(), testIdentity, k, countingFetch(&n, nil))
	}
	if got := c.Stats().Entries; got != 100 {
		t.Fatalf("want 100 live entries, got %d", got)
	}
	clk.Advance(11 * time.Second)
	_, _ = c.Get(context.Background(), testIdentity, testKey, countingFetch(&n, nil))
	if got := c.Stats().Entries; got != 1 {
		t.Errorf("expired entries must be evicted: want 1 entry, got %d", got)
	}
	c.Invalidate(testKey)
	if got := c.Stats().Entries; got != 0 {
		t.Errorf("Invalidate must drop an idle entry: want 0, got %d", got)
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// withSnapshotClock replaces time.Now, for tests.
func withSnapshotClock(now func() time.Time) SnapshotOption {
	return func(c *SnapshotCache) { c.now = now }
}
