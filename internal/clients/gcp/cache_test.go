package gcp

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

func TestIdentityKey(t *testing.T) {
	cases := map[string]struct {
		reason string
		a, b   []string
		equal  bool
	}{
		"Same":     {reason: "Equal parts give equal keys.", a: []string{"uid", "1"}, b: []string{"uid", "1"}, equal: true},
		"Boundary": {reason: "Part boundaries matter.", a: []string{"ab", "c"}, b: []string{"a", "bc"}},
		"Changed":  {reason: "A changed part changes the key.", a: []string{"uid", "1"}, b: []string{"uid", "2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IdentityKey(tc.a...) == IdentityKey(tc.b...); got != tc.equal {
				t.Errorf("\n%s\nIdentityKey equal: want %v, got %v", tc.reason, tc.equal, got)
			}
		})
	}
	if k := (Credentials{Source: SourceSecret, Data: []byte("secret-key-material")}).Hash(); len(k) != 64 {
		t.Errorf("Hash: want a 64-character hex digest, got %q", k)
	}
}

func TestClientCacheSingleBuild(t *testing.T) {
	c := NewClientCache(0)
	release := make(chan struct{})
	var builds atomic.Int64
	build := func(context.Context) (*Client, error) {
		builds.Add(1)
		<-release
		return &Client{}, nil
	}
	const callers = 32
	var wg sync.WaitGroup
	got := make([]*Client, callers)
	for i := range callers {
		wg.Go(func() {
			cl, err := c.Get(context.Background(), "uid", "k1", build)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			got[i] = cl
		})
	}
	time.Sleep(20 * time.Millisecond) // Let the callers pile up on the build.
	close(release)
	wg.Wait()
	if builds.Load() != 1 {
		t.Errorf("concurrent Gets of one key: want 1 build, got %d", builds.Load())
	}
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("caller %d got a different client", i)
		}
	}
	if _, err := c.Get(context.Background(), "uid", "k1", build); err != nil || builds.Load() != 1 {
		t.Errorf("a later Get must hit the cache: err %v, builds %d", err, builds.Load())
	}
}

func TestClientCacheEntries(t *testing.T) {
	type get struct{ owner, key string }
	type want struct {
		builds int64
		len    int
	}
	cases := map[string]struct {
		reason string
		size   int
		gets   []get
		forget string
		want   want
	}{
		"Reuse": {
			reason: "The same key is built once.",
			gets:   []get{{"a", "k1"}, {"a", "k1"}, {"a", "k1"}},
			want:   want{builds: 1, len: 1},
		},
		"NewKeyReplacesOld": {
			reason: "A new key for an owner drops the owner's old client.",
			gets:   []get{{"a", "k1"}, {"a", "k2"}},
			want:   want{builds: 2, len: 1},
		},
		"OwnersIndependent": {
			reason: "Different owners keep their own clients.",
			gets:   []get{{"a", "k1"}, {"b", "k2"}, {"a", "k1"}},
			want:   want{builds: 2, len: 2},
		},
		"LRU": {
			reason: "The least recently used client is evicted beyond the bound.",
			size:   2,
			gets:   []get{{"a", "k1"}, {"b", "k2"}, {"a", "k1"}, {"c", "k3"}, {"a", "k1"}, {"b", "k2"}},
			want:   want{builds: 4, len: 2},
		},
		"Forget": {
			reason: "Forget drops the owner's client.",
			gets:   []get{{"a", "k1"}, {"b", "k2"}},
			forget: "a",
			want:   want{builds: 2, len: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewClientCache(tc.size)
			var builds int64
			build := func(context.Context) (*Client, error) { builds++; return &Client{}, nil }
			for _, g := range tc.gets {
				if _, err := c.Get(context.Background(), g.owner, g.key, build); err != nil {
					t.Fatalf("Get: %v", err)
				}
			}
			if tc.forget != "" {
				c.Forget(tc.forget)
			}
			c.mu.Lock()
			got := want{builds: builds, len: c.lru.Len()}
			c.mu.Unlock()
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientCacheErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		ctx    func() context.Context
		build  BuildFn
		want   error
	}{
		"BuildError": {
			reason: "A build error is returned and not cached.",
			ctx:    context.Background,
			build:  func(context.Context) (*Client, error) { return nil, errBoom },
			want:   errBoom,
		},
		"Cancelled": {
			reason: "A caller whose context ends stops waiting.",
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			build: func(ctx context.Context) (*Client, error) {
				// The build's own context is detached from the caller's.
				time.Sleep(10 * time.Millisecond)
				return &Client{}, ctx.Err()
			},
			want: context.Canceled,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewClientCache(0)
			_, err := c.Get(tc.ctx(), "a", "k", tc.build)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nGet(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
