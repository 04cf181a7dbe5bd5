// Package wait polls a condition until it holds, failing the test with the
// condition's last error when it does not in time.
package wait

import (
	"testing"
	"time"
)

// DefaultInterval is how often Eventually polls unless told otherwise.
const DefaultInterval = 200 * time.Millisecond

// Option configures Eventually.
type Option func(*options)

type options struct {
	interval time.Duration
	abort    func() error
}

// Every polls every d instead of DefaultInterval.
func Every(d time.Duration) Option { return func(o *options) { o.interval = d } }

// AbortOn fails the wait at once when f returns an error, e.g. when the
// process that should make cond true has died.
func AbortOn(f func() error) Option { return func(o *options) { o.abort = f } }

// Eventually polls cond until it returns nil, failing the test with what and
// cond's last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error, opts ...Option) {
	t.Helper()
	o := options{interval: DefaultInterval}
	for _, opt := range opts {
		opt(&o)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if o.abort != nil {
			if aerr := o.abort(); aerr != nil {
				t.Fatalf("waiting for %s: %v (last: %v)", what, aerr, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(o.interval)
	}
}
