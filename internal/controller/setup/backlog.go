package setup

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// maxQueuedWrites is how many writes to one policy may run or wait before
	// reconciles of its objects are put off: one running and two waiting,
	// so the next write is ready the moment GCP's operation ends; more
	// converged no faster and parked more workers (docs/performance.md).
	maxQueuedWrites = 3

	// minBacklogRetry and maxBacklogRetry bound how long a put-off reconcile waits.
	minBacklogRetry = 50 * time.Millisecond
	maxBacklogRetry = 2 * time.Second
)

// A WriteQueue reports the write backlog of what a key K names, one GCP
// object whose writes run one at a time; *gcp.WriteQueue is one, keyed by
// policy.
type WriteQueue[K any] interface {
	// Backlog returns how many writes to key are running or waiting, and
	// how long one write takes.
	Backlog(key K) (writes int, perWrite time.Duration)
}

// A KeyFn returns the key of the write queue a request's object writes
// through, and false when that is not known (the object is gone, or what it
// writes is not resolved).
type KeyFn[K any] func(ctx context.Context, req reconcile.Request) (K, bool)

// Backlog returns a Check that puts off the reconciles of objects whose GCP
// policy already has writes queued, so that the controller's workers are not
// all parked on one policy's write queue.
//
// GCP runs one operation on a policy at a time, and the provider's write
// queue serialises the writes to each policy. A reconcile that writes waits
// in that queue holding a controller worker. Objects often reach the work
// queue policy by policy (rules that wait for their policy are all woken when
// it becomes Ready), and every worker then soon waits on one policy's queue
// while the other policies get no writes at all, and convergence takes
// several times as long (docs/performance.md). A policy has at most a few
// writers waiting, and a reconcile that would join a longer queue is requeued
// for when the queue should have room, holding no worker meanwhile.
//
// Every reconcile of such an object is put off, not only one that would
// write: nothing about the policy can finish sooner than its queue, and
// telling a write from a read would take the reconcile itself.
func Backlog[K any](queue WriteQueue[K], key KeyFn[K]) Check {
	return func(ctx context.Context, req reconcile.Request) (time.Duration, bool) {
		return putOffForBacklog(ctx, queue, key, req)
	}
}

// putOffForBacklog returns how long to put req off, if at all: until the writes beyond
// the ones allowed to wait should have run.
//
// Every object put off on a policy comes back after that same time, and the
// first ones back take the room. Giving each a turn (spacing their returns
// one write apart) made the queue run dry whenever an admitted object took
// longer than one write to reach it (its API server writes come first), and
// convergence slower (docs/performance.md).
func putOffForBacklog[K any](ctx context.Context, queue WriteQueue[K], key KeyFn[K], req reconcile.Request) (time.Duration, bool) {
	k, ok := key(ctx, req)
	if !ok {
		return 0, false
	}
	writes, perWrite := queue.Backlog(k)
	if writes < maxQueuedWrites {
		return 0, false
	}
	d := time.Duration(writes-maxQueuedWrites+1) * perWrite
	return min(max(d, minBacklogRetry), maxBacklogRetry), true
}
