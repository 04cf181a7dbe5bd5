package gcp

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

func TestWriteQueueSerialisesOneKey(t *testing.T) {
	q := NewWriteQueue()
	var inside, maxInside, runs atomic.Int64
	fn := func(context.Context) error {
		n := inside.Add(1)
		for {
			m := maxInside.Load()
			if n <= m || maxInside.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		runs.Add(1)
		inside.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := q.Do(context.Background(), testKey, fn); err != nil {
				t.Errorf("Do: %v", err)
			}
		})
	}
	wg.Wait()
	if runs.Load() != 20 || maxInside.Load() != 1 {
		t.Errorf("want 20 runs never overlapping, got %d runs with up to %d at once", runs.Load(), maxInside.Load())
	}
	if s := q.Stats(); s.Keys != 0 || s.Running != 0 {
		t.Errorf("an idle queue must hold no keys, stats %+v", s)
	}
}

func TestWriteQueueParallelKeys(t *testing.T) {
	q := NewWriteQueue()
	const keys = 4
	var arrived sync.WaitGroup
	arrived.Add(keys)
	all := make(chan struct{})
	var wg sync.WaitGroup
	for i := range keys {
		k := PolicyKey{Project: "p", Name: string(rune('a' + i))}
		wg.Go(func() {
			_ = q.Do(context.Background(), k, func(context.Context) error {
				arrived.Done()
				<-all // Returns only once every key's write is running.
				return nil
			})
		})
	}
	done := make(chan struct{})
	go func() { arrived.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("writes to different policies did not run in parallel")
	}
	close(all)
	wg.Wait()
}

func TestWriteQueueWhileBusy(t *testing.T) {
	type want struct {
		err  error
		ran  bool
		busy bool
	}
	cases := map[string]struct {
		reason string
		call   func(ctx context.Context, q *WriteQueue, fn func(context.Context) error) error
		ctx    func() (context.Context, context.CancelFunc)
		want   want
	}{
		"TryDo": {
			reason: "TryDo on a busy policy returns a BusyError at once.",
			call: func(ctx context.Context, q *WriteQueue, fn func(context.Context) error) error {
				return q.TryDo(ctx, testKey, fn)
			},
			want: want{err: &BusyError{Policy: testKey}, busy: true},
		},
		"DoWithin": {
			reason: "DoWithin gives up with a BusyError after its wait.",
			call: func(ctx context.Context, q *WriteQueue, fn func(context.Context) error) error {
				return q.DoWithin(ctx, testKey, 10*time.Millisecond, fn)
			},
			want: want{err: &BusyError{Policy: testKey}, busy: true},
		},
		"DoContext": {
			reason: "Do gives up when its context ends.",
			call: func(ctx context.Context, q *WriteQueue, fn func(context.Context) error) error {
				return q.Do(ctx, testKey, fn)
			},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Millisecond)
			},
			want: want{err: context.DeadlineExceeded, busy: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := NewWriteQueue()
			hold, holding := make(chan struct{}), make(chan struct{})
			go func() {
				_ = q.Do(context.Background(), testKey, func(context.Context) error { close(holding); <-hold; return nil })
			}()
			<-holding
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			ran := false
			err := tc.call(ctx, q, func(context.Context) error { ran = true; return nil })
			got := want{err: err, ran: ran, busy: q.Busy(testKey)}
			close(hold)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
			waitFor(t, func() bool { return !q.Busy(testKey) })
		})
	}
}

func TestWriteQueueReturnsFnError(t *testing.T) {
	cases := map[string]struct {
		reason string
		fnErr  error
		want   error
	}{
		"Error":   {reason: "fn's error is returned.", fnErr: errBoom, want: errBoom},
		"Success": {reason: "A successful fn returns nil.", fnErr: nil, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := NewWriteQueue()
			err := q.TryDo(context.Background(), testKey, func(context.Context) error { return tc.fnErr })
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nTryDo(...): -want, +got:\n%s", tc.reason, diff)
			}
			if q.Busy(testKey) {
				t.Errorf("the policy must not stay busy after the write")
			}
		})
	}
}

func TestWriteQueueCancelledWaitersLeaveNoTrace(t *testing.T) {
	before := runtime.NumGoroutine()
	q := NewWriteQueue()
	hold, holding := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = q.Do(context.Background(), testKey, func(context.Context) error { close(holding); <-hold; return nil })
	})
	<-holding
	ctx, cancel := context.WithCancel(context.Background())
	for range 20 {
		wg.Go(func() {
			if err := q.Do(ctx, testKey, func(context.Context) error { return nil }); !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled waiter: want context.Canceled, got %v", err)
			}
		})
	}
	waitFor(t, func() bool { return q.Stats().Waits == 20 })
	cancel()
	close(hold)
	wg.Wait()
	if s := q.Stats(); s.Keys != 0 || s.Running != 0 {
		t.Errorf("an idle queue must hold no keys, stats %+v", s)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}
