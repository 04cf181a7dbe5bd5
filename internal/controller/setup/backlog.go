package setup

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

const (
	// MaxQueuedWrites is how many writes to one policy may run or wait before
	// reconciles of its objects are put off: one running and two waiting,
	// so the next write is ready the moment GCP's operation ends; more
	// converged no faster and parked more workers (docs/performance.md).
	MaxQueuedWrites = 3

	// MinBacklogRetry and MaxBacklogRetry bound how long a put-off reconcile waits.
	MinBacklogRetry = 50 * time.Millisecond
	MaxBacklogRetry = 2 * time.Second
)

// A WriteQueue reports a policy's write backlog; *gcp.WriteQueue is one.
type WriteQueue interface {
	// Backlog returns how many writes to key are running or waiting, and
	// how long one write takes.
	Backlog(key gcp.PolicyKey) (writes int, perWrite time.Duration)
}

// A PolicyKeyFn returns the GCP policy a request's object writes to, and
// false when that is not known (the object is gone, or its policy is not
// resolved).
type PolicyKeyFn func(ctx context.Context, req reconcile.Request) (gcp.PolicyKey, bool)

// Backlog returns a Check that puts off the reconciles of objects whose GCP policy already
// has writes queued, so that the controller's workers are not all parked on
// one policy's write queue.
//
// GCP runs one operation on a policy at a time, and the provider's write
// queue serialises the writes to each policy. A reconcile that writes waits
// in that queue holding a controller worker. Objects often reach the work
// queue policy by policy (rules that wait for their policy are all woken when
// it becomes Ready), and every worker then soon waits on one policy's queue
// while the other policies get no writes at all, and convergence takes
// several times as long (docs/performance.md). A policy has at most a few writers waiting, and a reconcile that
// would join a longer queue is requeued for when the queue should have room,
// holding no worker meanwhile.
//
// Every reconcile of such an object is put off, not only one that would
// write: nothing about the policy can finish sooner than its queue, and
// telling a write from a read would take the reconcile itself.
func Backlog(queue WriteQueue, key PolicyKeyFn) Check {
	return func(ctx context.Context, req reconcile.Request) (time.Duration, bool) {
		return putOffForBacklog(ctx, queue, key, req)
	}
}

// putOffForBacklog returns how long to put req off, if at all: until the writes beyond
// the ones allowed to wait should have run.
//
// Every object put off on a policy comes back after that same time, and the
// first ones back take the room. Giving each a turn (spacing their returns
// one write apart) was tried: the queue then ran dry whenever an admitted
// object took longer than one write to reach it (its API server writes come
// first), and 1,000 rule objects took 26 s to converge instead of 16 s, for
// no less provider CPU (5.4 s against 5.2 s).
func putOffForBacklog(ctx context.Context, queue WriteQueue, key PolicyKeyFn, req reconcile.Request) (time.Duration, bool) {
	k, ok := key(ctx, req)
	if !ok {
		return 0, false
	}
	writes, perWrite := queue.Backlog(k)
	if writes < MaxQueuedWrites {
		return 0, false
	}
	d := time.Duration(writes-MaxQueuedWrites+1) * perWrite
	return min(max(d, MinBacklogRetry), MaxBacklogRetry), true
}
