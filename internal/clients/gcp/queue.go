package gcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A WriteQueue serialises our writes to each policy and lets writes to
// different policies run in parallel. GCP rejects (resourceNotReady) or
// conflicts an operation on a policy while another runs, so running them one
// at a time in the provider is faster than letting GCP refuse them.
//
// Waiting writers are not strictly FIFO. A key's entry exists only while a
// write runs or waits, so the map never outgrows the set of busy policies.
type WriteQueue struct {
	mu    sync.Mutex
	slots map[PolicyKey]*writeSlot

	waits   atomic.Int64
	running atomic.Int64
	// meanWrite is a moving average of how long a write held its policy, in
	// nanoseconds: what Backlog's estimate is made of.
	meanWrite atomic.Int64
	// waitSeconds is how long each write waited for its turn.
	waitSeconds prometheus.Histogram
}

// writeSlot is one policy's token: a buffered channel of size one, so a
// waiter can select on it together with ctx.Done(). refs counts the writers
// holding or waiting for the token; the slot is deleted when it drops to 0.
type writeSlot struct {
	token chan struct{}
	refs  int
}

// QueueStats are a WriteQueue's counters, as NewCollector exports them.
type QueueStats struct {
	// Waits counts writes that had to wait behind another write.
	Waits int64
	// Running is the number of writes running now.
	Running int64
	// Keys is the number of policies with a running or waiting write.
	Keys int
}

// NewWriteQueue returns an empty WriteQueue.
func NewWriteQueue() *WriteQueue {
	return &WriteQueue{slots: map[PolicyKey]*writeSlot{}, waitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "cloudarmor_gcp_write_queue_wait_seconds",
		Help: "Time a write waited for the writes ahead of it to the same policy, zero waits included; writes whose context ended while waiting are not observed.",
		// From no wait at all to several operations queued ahead.
		Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	})}
}

// Do runs fn once no other write to key runs, waiting as long as ctx
// allows. It returns ctx.Err() if ctx ends first, or fn's error.
func (q *WriteQueue) Do(ctx context.Context, key PolicyKey, fn func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := q.acquireRef(key)
	defer q.releaseRef(key, s)
	start := time.Now()
	select {
	case s.token <- struct{}{}:
	default:
		q.waits.Add(1)
		select {
		case s.token <- struct{}{}:
			// The turn and the cancellation may come together, and select
			// then picks either: a caller that has gone starts no write.
			if err := ctx.Err(); err != nil {
				<-s.token
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	q.waitSeconds.Observe(time.Since(start).Seconds())
	q.running.Add(1)
	defer func() { q.running.Add(-1); <-s.token }()
	began := time.Now()
	defer func() { q.observeWrite(time.Since(began)) }()
	return fn(ctx)
}

// observeWrite folds one write's duration into meanWrite, weighting the last
// write by 1/8: a few writes are enough to follow a change of GCP's pace.
func (q *WriteQueue) observeWrite(d time.Duration) {
	for {
		old := q.meanWrite.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/8
		}
		if q.meanWrite.CompareAndSwap(old, next) {
			return
		}
	}
}

// Backlog returns how many writes to key are running or waiting, and the
// recent writes' mean duration (0 before any write finished): together, about
// how long a write queued now would wait.
func (q *WriteQueue) Backlog(key PolicyKey) (writes int, perWrite time.Duration) {
	q.mu.Lock()
	if s := q.slots[key]; s != nil {
		writes = s.refs
	}
	q.mu.Unlock()
	return writes, time.Duration(q.meanWrite.Load())
}

func (q *WriteQueue) acquireRef(key PolicyKey) *writeSlot {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.slots[key]
	if s == nil {
		s = &writeSlot{token: make(chan struct{}, 1)}
		q.slots[key] = s
	}
	s.refs++
	return s
}

func (q *WriteQueue) releaseRef(key PolicyKey, s *writeSlot) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s.refs--
	if s.refs == 0 {
		delete(q.slots, key)
	}
}

// Stats returns the queue's counters.
func (q *WriteQueue) Stats() QueueStats {
	q.mu.Lock()
	n := len(q.slots)
	q.mu.Unlock()
	return QueueStats{Waits: q.waits.Load(), Running: q.running.Load(), Keys: n}
}
