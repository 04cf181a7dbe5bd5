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

func TestWriteQueueWaitEndsWithContext(t *testing.T) {
	q := NewWriteQueue()
	hold, holding := make(chan struct{}), make(chan struct{})
	go func() {
		_ = q.Do(context.Background(), testKey, func(context.Context) error { close(holding); <-hold; return nil })
	}()
	<-holding
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	ran := false
	err := q.Do(ctx, testKey, func(context.Context) error { ran = true; return nil })
	got := q.Stats()
	close(hold)
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("Do behind a busy policy: want context.DeadlineExceeded without running, got %v, ran %v", err, ran)
	}
	if want := (QueueStats{Waits: 1, Running: 1, Keys: 1}); got != want {
		t.Errorf("while the first write runs: want stats %+v, got %+v", want, got)
	}
	waitFor(t, func() bool { return q.Stats().Keys == 0 })
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
			err := q.Do(context.Background(), testKey, func(context.Context) error { return tc.fnErr })
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nDo(...): -want, +got:\n%s", tc.reason, diff)
			}
			if s := q.Stats(); s.Keys != 0 || s.Running != 0 {
				t.Errorf("the policy must not stay busy after the write, stats %+v", s)
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

func TestWriteQueueBacklog(t *testing.T) {
	q := NewWriteQueue()
	other := PolicyKey{Project: testKey.Project, Name: "other"}
	// One write of 20 ms finishes first, so the queue has a mean to estimate
	// with.
	if err := q.Do(context.Background(), testKey, func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_ = q.Do(context.Background(), testKey, func(context.Context) error { <-release; return nil })
		})
	}
	for q.Stats().Running != 1 || q.Stats().Waits < 2 {
		runtime.Gosched()
	}
	writes, perWrite := q.Backlog(testKey)
	if writes != 3 || perWrite < 20*time.Millisecond || perWrite > time.Second {
		t.Errorf("Backlog(busy key): want 3 writes of about 20 ms each, got %d writes of %s", writes, perWrite)
	}
	if writes, _ := q.Backlog(other); writes != 0 {
		t.Errorf("Backlog(idle key): want no writes, got %d", writes)
	}
	close(release)
	wg.Wait()
	if writes, _ := q.Backlog(testKey); writes != 0 {
		t.Errorf("Backlog(key after its writes): want 0 writes, got %d", writes)
	}
}
