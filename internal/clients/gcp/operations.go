package gcp

import (
	"context"
	"time"

	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Operation wait defaults.
const (
	// DefaultOperationTimeout bounds WaitForOperation. Cloud Armor
	// operations normally finish in seconds; GCP's own wait call gives up
	// after about two minutes too.
	DefaultOperationTimeout = 2 * time.Minute
	// DefaultPollInterval is the first pause after a wait call returns an
	// unfinished operation early. It doubles up to DefaultMaxPollInterval.
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultMaxPollInterval caps the pause between wait calls.
	DefaultMaxPollInterval = 2 * time.Second

	operationDone = "DONE"
)

// Error strings.
const (
	errNoOperation   = "cannot wait for operation: GCP returned no operation"
	errWaitOperation = "cannot wait for operation"
)

// waitConfig is WaitForOperation's configuration.
type waitConfig struct {
	timeout     time.Duration
	interval    time.Duration
	maxInterval time.Duration
	onPoll      func(error)
	now         func() time.Time
	// poll replaces the wait call: global organization operations have
	// no wait method, only get.
	poll func(ctx context.Context, name string) (*compute.Operation, error)
}

// A waitOption configures WaitForOperation. Only the Client (to count wait
// calls) and tests (to poll quickly) set any.
type waitOption func(*waitConfig)

// withPoller makes WaitForOperation read the operation with poll instead of
// calling a wait method.
func withPoller(poll func(ctx context.Context, name string) (*compute.Operation, error)) waitOption {
	return func(c *waitConfig) { c.poll = poll }
}

// withPollHook calls fn with the outcome of each wait call, so a Client can
// count them.
func withPollHook(fn func(error)) waitOption {
	return func(c *waitConfig) { c.onPoll = fn }
}

// WaitForOperation waits until op is DONE and returns its error, if any, as
// an *OperationError: a failed operation is never reported as success.
// region "" means a global operation. Waiting is bounded by ctx and by the
// operation timeout; an operation still running then yields an
// *OperationPendingError (KindNotReady). Transient and rate-limit errors of
// the wait call itself are retried within that bound, because the write
// already happened and only its outcome is unknown.
func WaitForOperation(ctx context.Context, svc *compute.Service, project, region string, op *compute.Operation, o ...waitOption) error {
	if op == nil {
		return errors.New(errNoOperation)
	}
	cfg := waitConfig{timeout: DefaultOperationTimeout, interval: DefaultPollInterval,
		maxInterval: DefaultMaxPollInterval, now: time.Now}
	for _, fn := range o {
		fn(&cfg)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	start := cfg.now()
	pause := cfg.interval
	for op.Status != operationDone {
		next, err := waitOnce(ctx, svc, project, region, op.Name, cfg)
		if err != nil && !retryWait(ctx, err) {
			return pollError(op.Name, err, cfg.now().Sub(start))
		}
		if next != nil {
			op = next
		}
		if op.Status == operationDone {
			break
		}
		if !sleep(ctx, pause) {
			return pollError(op.Name, ctx.Err(), cfg.now().Sub(start))
		}
		pause = min(2*pause, cfg.maxInterval)
	}
	if oe := NewOperationError(op); oe != nil {
		return oe
	}
	return nil
}

// waitOnce asks GCP to wait for the operation. The wait call may return
// early with the operation still running.
func waitOnce(ctx context.Context, svc *compute.Service, project, region, name string, cfg waitConfig) (*compute.Operation, error) {
	var op *compute.Operation
	var err error
	switch {
	case cfg.poll != nil:
		op, err = cfg.poll(ctx, name)
	case region == "":
		op, err = svc.GlobalOperations.Wait(project, name).Context(ctx).Do()
	default:
		op, err = svc.RegionOperations.Wait(project, region, name).Context(ctx).Do()
	}
	if cfg.onPoll != nil {
		cfg.onPoll(err)
	}
	return op, err
}

// retryWait reports whether a failed wait call is worth repeating.
func retryWait(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	k := Kind(err)
	return k == KindTransient || k == KindRateLimited
}

// pollError turns running out of time into an OperationPendingError, since
// the operation may still succeed, and wraps anything else.
func pollError(name string, err error, waited time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &OperationPendingError{Operation: name, Waited: waited}
	}
	return errors.Wrap(err, errWaitOperation)
}

// sleep pauses for d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
