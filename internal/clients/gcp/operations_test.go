package gcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

func TestWaitForOperation(t *testing.T) {
	const globalWait = "POST /global/operations/op-1/wait"
	type args struct {
		region string
		op     *compute.Operation
		opts   []waitOption
	}
	type want struct {
		err  error
		kind ErrorKind
		seen []string
	}
	quota := "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."
	cases := map[string]struct {
		reason string
		routes routes
		args   args
		want   want
	}{
		"AlreadyDone": {
			reason: "A DONE operation without error needs no call.",
			args:   args{op: &compute.Operation{Name: "op-1", Status: "DONE"}},
			want:   want{},
		},
		"DoneWithError": {
			reason: "A DONE operation with an error is a failure, verbatim.",
			args: args{op: &compute.Operation{Name: "op-1", Status: "DONE", Error: &compute.OperationError{
				Errors: []*compute.OperationErrorErrors{{Code: "QUOTA_EXCEEDED", Message: quota}}}}},
			want: want{
				err:  &OperationError{Operation: "op-1", Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED", Message: quota}}},
				kind: KindQuotaExceeded,
			},
		},
		"RunningThenDone": {
			reason: "A wait call that returns early is repeated until DONE.",
			routes: routes{globalWait: {ok(opJSON("op-1", "RUNNING")), ok(opJSON("op-1", "RUNNING")), ok(opJSON("op-1", "DONE"))}},
			args:   args{op: &compute.Operation{Name: "op-1", Status: "RUNNING"}},
			want:   want{seen: []string{globalWait, globalWait, globalWait}},
		},
		"RunningThenFailed": {
			reason: "An operation that finishes with an error fails, never succeeds.",
			routes: routes{globalWait: {ok(opErrorJSON("op-1", "QUOTA_EXCEEDED", quota))}},
			args:   args{op: &compute.Operation{Name: "op-1", Status: "PENDING"}},
			want: want{
				err:  &OperationError{Operation: "op-1", Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED", Message: quota}}},
				kind: KindQuotaExceeded,
				seen: []string{globalWait},
			},
		},
		"Regional": {
			reason: "A regional operation is waited for in its region.",
			routes: routes{"POST /regions/r/operations/op-1/wait": {ok(opJSON("op-1", "DONE"))}},
			args:   args{region: "r", op: &compute.Operation{Name: "op-1", Status: "RUNNING"}},
			want:   want{seen: []string{"POST /regions/r/operations/op-1/wait"}},
		},
		"TransientRetried": {
			reason: "A 503 from the wait call is retried.",
			routes: routes{globalWait: {{status: http.StatusServiceUnavailable, body: errJSON(503, "backendError", "Backend Error")}, ok(opJSON("op-1", "DONE"))}},
			args:   args{op: &compute.Operation{Name: "op-1", Status: "RUNNING"}},
			want:   want{seen: []string{globalWait, globalWait}},
		},
		"WaitNotFound": {
			reason: "A wait call that fails for good is reported.",
			routes: routes{globalWait: {{status: http.StatusNotFound, body: errJSON(404, "notFound", "The resource 'operation op-1' was not found")}}},
			args:   args{op: &compute.Operation{Name: "op-1", Status: "RUNNING"}},
			want: want{
				err:  errors.Wrap(apiErr(404, "notFound", "The resource 'operation op-1' was not found"), errWaitOperation),
				kind: KindNotFound,
				seen: []string{globalWait},
			},
		},
		"NoOperation": {
			reason: "A nil operation is an error, not success.",
			want:   want{err: errors.New(errNoOperation)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, svc := newFakeGCP(t, tc.routes)
			opts := append([]waitOption{withPollInterval(time.Millisecond, 2*time.Millisecond)}, tc.args.opts...)
			err := WaitForOperation(context.Background(), svc, "p", tc.args.region, tc.args.op, opts...)
			seen, _ := f.log()
			got := want{err: err, kind: Kind(err), seen: seen}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nWaitForOperation(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWaitForOperationTimeout(t *testing.T) {
	_, svc := newFakeGCP(t, routes{"POST /global/operations/op-1/wait": {ok(opJSON("op-1", "RUNNING"))}})
	start := time.Now()
	err := WaitForOperation(context.Background(), svc, "p", "", &compute.Operation{Name: "op-1", Status: "RUNNING"},
		withOperationTimeout(50*time.Millisecond), withPollInterval(time.Millisecond, 5*time.Millisecond))
	var pe *OperationPendingError
	if !errors.As(err, &pe) || Kind(err) != KindNotReady {
		t.Fatalf("an operation still running at the bound: want *OperationPendingError (NotReady), got %T %v", err, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the wait must respect its bound, took %s", d)
	}
}

// withOperationTimeout bounds how long WaitForOperation waits in total.
func withOperationTimeout(d time.Duration) waitOption {
	return func(c *waitConfig) { c.timeout = d }
}

// withPollInterval sets the first and the largest pause between wait calls
// that returned an unfinished operation.
func withPollInterval(first, largest time.Duration) waitOption {
	return func(c *waitConfig) { c.interval, c.maxInterval = first, max(first, largest) }
}
