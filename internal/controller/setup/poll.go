package setup

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Poll phases: the polls of every managed resource that observes the same
// GCP policy are scheduled into one short window per poll interval.
//
// All rules of a policy, and the policy itself, observe GCP through one
// shared snapshot of the policy that lives for --snapshot-ttl. With
// crossplane-runtime's poll (interval ± random jitter, counted from each
// object's own last reconcile) the polls of a policy's rules drift apart over
// the minute as soon as anything (a slow convergence, an edit, a restart)
// reconciles them at different times, and the snapshot then expires between
// them, and a policy is read several times per poll (docs/performance.md).
// Polling a
// policy's objects together keeps it at one read, however many rules the
// policy has and however they were reconciled before.
//
// Each policy gets a phase in the poll interval from a hash of its GCP name,
// so different policies still spread over the interval as jitter spreads
// them, and the API server sees each policy's burst, not all of them at once.

// A PollGroupFn names what an object's observation reads (the GCP policy
// name, for policies and rules); "" when that is not known yet.
type PollGroupFn func(resource.Managed) string

// pollHook returns a poll interval hook that schedules an object's next poll
// at the next start of its group's window that is at least half an interval
// away, plus a random offset within the window's width (spread). Objects with
// no group are polled after the interval ± jitter, as crossplane-runtime's
// WithPollJitterHook does.
//
// An object's polls are therefore between half and one and a half intervals
// apart (one interval once it polls in its window), so drift is still seen
// within about one interval. Keep spread under the snapshot TTL, so that
// every poll of the window finds the snapshot the first one read.
func pollHook(group PollGroupFn, spread, jitter time.Duration) managed.PollIntervalHook {
	return hook(group, spread, jitter, time.Now, rand.Float64)
}

func hook(group PollGroupFn, spread, jitter time.Duration, now func() time.Time, random func() float64) managed.PollIntervalHook {
	return func(mg resource.Managed, interval time.Duration) time.Duration {
		if interval <= 0 {
			return interval
		}
		g := group(mg)
		if g == "" {
			return interval + time.Duration((random()-0.5)*2*float64(jitter))
		}
		width := min(spread, interval/2)
		return untilWindow(now(), interval, phase(g, interval)) + time.Duration(random()*float64(width))
	}
}

// phase is g's offset in every interval.
func phase(g string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(g))
	return time.Duration(h.Sum64() % uint64(interval))
}

// untilWindow returns how long from now until the first instant at least
// half an interval away whose offset in the interval is phase. Offsets are
// counted from the Unix epoch, so every replica and restart agrees on them.
func untilWindow(now time.Time, interval, phase time.Duration) time.Duration {
	earliest := now.UnixNano() + int64(interval/2)
	offset := (earliest - int64(phase)) % int64(interval)
	if offset < 0 {
		offset += int64(interval)
	}
	wait := time.Duration(earliest - now.UnixNano())
	if offset > 0 {
		wait += interval - time.Duration(offset)
	}
	return wait
}
