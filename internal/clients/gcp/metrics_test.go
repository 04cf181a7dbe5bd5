package gcp

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

// gather returns every sample of reg as `TYPE name{label="value",...}` ->
// value; a histogram gives its _count and each bucket's cumulative count.
// (prometheus/testutil needs github.com/kylelemons/godebug, which go.mod
// does not require.)
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			key := func(suffix string, extra ...string) string {
				ls := append(append([]string(nil), labels...), extra...)
				sort.Strings(ls)
				return mf.GetType().String() + " " + mf.GetName() + suffix + "{" + strings.Join(ls, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key("_count")] = float64(m.GetHistogram().GetSampleCount())
				for _, b := range m.GetHistogram().GetBucket() {
					out[key("_bucket", "le="+strconv.Quote(strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))] = float64(b.GetCumulativeCount())
				}
			default:
				t.Errorf("%s: unexpected metric type", key(""))
			}
		}
	}
	return out
}

// nonZero drops the samples that are 0 and, since their timings vary, the
// histograms' buckets.
func nonZero(in map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range in {
		if v != 0 && !strings.Contains(k, "_bucket{") {
			out[k] = v
		}
	}
	return out
}

// newCollector returns a pedantic registry, which also checks that Collect
// matches Describe, holding a collector of the given parts.
func newCollector(t *testing.T, calls *CallCounter, snapshots *SnapshotCache, queue *WriteQueue) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(calls, snapshots, queue)); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestCollectorCalls(t *testing.T) {
	const addRule = "POST " + policyPath + "/addRule"
	const waitOp = "POST /global/operations/op-1/wait"
	type want struct {
		// samples are the non-zero samples, histogram buckets left out.
		samples map[string]float64
	}
	cases := map[string]struct {
		reason  string
		routes  routes
		timeout time.Duration // of the context of each call; 0 means none
		opts    []ClientOption
		calls   func(ctx context.Context, p PolicyClient)
		want    want
	}{
		"Success": {
			reason: "A read and a write count one call each with code 200, the write's wait call too, and the operation as done, timed once.",
			routes: routes{
				"GET " + policyPath: {ok(policyJSON)},
				addRule:             {ok(opJSON("op-1", "RUNNING"))},
				waitOp:              {ok(opJSON("op-1", "DONE"))},
			},
			calls: func(ctx context.Context, p PolicyClient) {
				_, _ = p.Get(ctx, "n")
				_ = p.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5})
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="Get"}`:             1,
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="AddRule"}`:         1,
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="WaitOperation"}`:   1,
				`COUNTER cloudarmor_gcp_operations_total{method="AddRule",result="done"}`: 1,
				`HISTOGRAM cloudarmor_gcp_operation_wait_seconds_count{method="AddRule"}`: 1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:               1,
				`COUNTER cloudarmor_gcp_snapshot_misses_total{}`:                          1,
				`COUNTER cloudarmor_gcp_snapshot_fetches_total{}`:                         1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:                   1,
			}},
		},
		"HTTPErrors": {
			reason: "Each refused call counts under its HTTP status, and a write GCP refused starts no operation.",
			routes: routes{
				"GET " + policyPath:                  {{status: 404, body: errJSON(404, "notFound", "not found")}},
				"PATCH " + policyPath:                {{status: 412, body: errJSON(412, "conditionNotMet", "stale fingerprint")}},
				"POST " + policyPath + "/removeRule": {{status: 429, body: errJSON(429, "rateLimitExceeded", "slow down")}},
				"POST " + policyPath + "/patchRule":  {{status: 400, body: errJSON(400, "invalid", "bad rule")}},
				"POST " + policyPath + "/setLabels":  {{status: 503, body: errJSON(503, "backendError", "try again")}},
			},
			calls: func(ctx context.Context, p PolicyClient) {
				_, _ = p.Get(ctx, "n")
				_ = p.Patch(ctx, "n", &compute.SecurityPolicy{Name: "n"})
				_ = p.RemoveRule(ctx, "n", 5)
				_ = p.PatchRule(ctx, "n", 5, &compute.SecurityPolicyRule{})
				_ = p.SetLabels(ctx, "n", nil, "fp")
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="404",method="Get"}`:        1,
				`COUNTER cloudarmor_gcp_calls_total{code="412",method="Patch"}`:      1,
				`COUNTER cloudarmor_gcp_calls_total{code="429",method="RemoveRule"}`: 1,
				`COUNTER cloudarmor_gcp_calls_total{code="400",method="PatchRule"}`:  1,
				`COUNTER cloudarmor_gcp_calls_total{code="503",method="SetLabels"}`:  1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:          4,
				`COUNTER cloudarmor_gcp_snapshot_misses_total{}`:                     1,
				`COUNTER cloudarmor_gcp_snapshot_fetches_total{}`:                    1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:              4,
			}},
		},
		"TransportError": {
			reason: `A call that gets no HTTP response counts as "error".`,
			routes: routes{addRule: {{abort: true}}},
			calls: func(ctx context.Context, p PolicyClient) {
				_ = p.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5})
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="error",method="AddRule"}`: 1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:         1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:             1,
			}},
		},
		"Canceled": {
			reason:  `A call whose context ends before GCP answers counts as "canceled".`,
			routes:  routes{addRule: {{delay: 5 * time.Second, body: opJSON("op-1", "DONE")}}},
			timeout: 50 * time.Millisecond,
			calls: func(ctx context.Context, p PolicyClient) {
				_ = p.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5})
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="canceled",method="AddRule"}`: 1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:            1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:                1,
			}},
		},
		"OperationFailed": {
			reason: "An operation that ends DONE with an error counts as failed and is still timed: it reached DONE.",
			routes: routes{
				addRule: {ok(opJSON("op-1", "RUNNING"))},
				waitOp:  {ok(opErrorJSON("op-1", "INVALID_ARGUMENT", "bad expression"))},
			},
			calls: func(ctx context.Context, p PolicyClient) {
				_ = p.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5})
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="AddRule"}`:           1,
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="WaitOperation"}`:     1,
				`COUNTER cloudarmor_gcp_operations_total{method="AddRule",result="failed"}`: 1,
				`HISTOGRAM cloudarmor_gcp_operation_wait_seconds_count{method="AddRule"}`:   1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:                 1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:                     1,
			}},
		},
		"OperationPending": {
			reason: "An operation still running when the wait gives up counts as pending, is not timed, and its cut-off wait call counts as canceled.",
			routes: routes{
				addRule: {ok(opJSON("op-1", "RUNNING"))},
				waitOp:  {{delay: 5 * time.Second, body: opJSON("op-1", "DONE")}},
			},
			opts: []ClientOption{withWaitOptions(withOperationTimeout(50 * time.Millisecond))},
			calls: func(ctx context.Context, p PolicyClient) {
				_ = p.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5})
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="AddRule"}`:            1,
				`COUNTER cloudarmor_gcp_calls_total{code="canceled",method="WaitOperation"}`: 1,
				`COUNTER cloudarmor_gcp_operations_total{method="AddRule",result="pending"}`: 1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:                  1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:                      1,
			}},
		},
		"WaitError": {
			reason: "A wait call GCP refuses counts under its status, and the operation as error: its outcome is unknown.",
			routes: routes{
				"DELETE " + policyPath: {ok(opJSON("op-1", "RUNNING"))},
				waitOp:                 {{status: 400, body: errJSON(400, "invalid", "bad operation")}},
			},
			calls: func(ctx context.Context, p PolicyClient) {
				_ = p.Delete(ctx, "n")
			},
			want: want{samples: map[string]float64{
				`COUNTER cloudarmor_gcp_calls_total{code="200",method="Delete"}`:          1,
				`COUNTER cloudarmor_gcp_calls_total{code="400",method="WaitOperation"}`:   1,
				`COUNTER cloudarmor_gcp_operations_total{method="Delete",result="error"}`: 1,
				`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:               1,
				`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`:                   1,
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, svc := newFakeGCP(t, tc.routes)
			calls, snapshots, queue := NewCallCounter(), NewSnapshotCache(), NewWriteQueue()
			reg := newCollector(t, calls, snapshots, queue)
			opts := append([]ClientOption{WithCallCounter(calls), fastWait}, tc.opts...)
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			tc.calls(ctx, NewClient(svc, snapshots, queue, opts...).Policies("p", ""))
			if diff := cmp.Diff(tc.want.samples, nonZero(gather(t, reg))); diff != "" {
				t.Errorf("\n%s\ngathered metrics: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCollectorSharedAndZeros(t *testing.T) {
	_, svc := newFakeGCP(t, routes{
		"GET " + policyPath:                 {ok(policyJSON)},
		"POST " + policyPath + "/addRule":   {ok(opJSON("op-1", "RUNNING"))},
		"POST /global/operations/op-1/wait": {ok(opJSON("op-1", "DONE"))},
	})
	calls, snapshots, queue := NewCallCounter(), NewSnapshotCache(), NewWriteQueue()
	reg := newCollector(t, calls, snapshots, queue)

	// Two Clients, as for two credential sets, count into one counter.
	a := NewClient(svc, snapshots, queue, WithIdentity("a"), WithCallCounter(calls), fastWait).Policies("p", "")
	b := NewClient(svc, snapshots, queue, WithIdentity("b"), WithCallCounter(calls), fastWait).Policies("p", "")
	ctx := context.Background()
	for _, step := range []func() error{
		func() error { _, err := a.Get(ctx, "n"); return err },                                // miss, fetch
		func() error { _, err := a.Get(ctx, "n"); return err },                                // hit
		func() error { return b.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 5}) }, // invalidates; one wait call
		func() error { _, err := b.Get(ctx, "n"); return err },                                // miss, fetch
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	// Hold a write to another policy so the queue's gauges show it.
	hold, holding, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = queue.Do(ctx, PolicyKey{Project: "p", Name: "other"}, func(context.Context) error { close(holding); <-hold; return nil })
	}()
	<-holding
	got := gather(t, reg)
	close(hold)
	<-done
	for k := range got {
		if strings.Contains(k, "_bucket{") {
			delete(got, k)
		}
	}

	want := map[string]float64{
		`COUNTER cloudarmor_gcp_snapshot_hits_total{}`:          1,
		`COUNTER cloudarmor_gcp_snapshot_shared_total{}`:        0,
		`COUNTER cloudarmor_gcp_snapshot_misses_total{}`:        2,
		`COUNTER cloudarmor_gcp_snapshot_fetches_total{}`:       2,
		`COUNTER cloudarmor_gcp_snapshot_invalidations_total{}`: 1,
		`GAUGE cloudarmor_gcp_snapshot_entries{}`:               1,
		`COUNTER cloudarmor_gcp_write_queue_waits_total{}`:      0,
		`GAUGE cloudarmor_gcp_write_queue_running{}`:            1,
		`GAUGE cloudarmor_gcp_write_queue_policies{}`:           1,
		// Both writes, the one still running included, had their turn.
		`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`: 2,
	}
	// Every method has a code="200" series and every write method a
	// result="done" series and an operation wait histogram, zeros included.
	for m := range methodCount {
		want[`COUNTER cloudarmor_gcp_calls_total{code="200",method="`+m.String()+`"}`] = 0
	}
	for _, m := range writeMethods {
		want[`COUNTER cloudarmor_gcp_operations_total{method="`+m.String()+`",result="done"}`] = 0
		want[`HISTOGRAM cloudarmor_gcp_operation_wait_seconds_count{method="`+m.String()+`"}`] = 0
	}
	want[`COUNTER cloudarmor_gcp_calls_total{code="200",method="Get"}`] = 2
	want[`COUNTER cloudarmor_gcp_calls_total{code="200",method="AddRule"}`] = 1
	want[`COUNTER cloudarmor_gcp_calls_total{code="200",method="WaitOperation"}`] = 1
	want[`COUNTER cloudarmor_gcp_operations_total{method="AddRule",result="done"}`] = 1
	want[`HISTOGRAM cloudarmor_gcp_operation_wait_seconds_count{method="AddRule"}`] = 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gathered metrics: -want, +got:\n%s", diff)
	}
}

func TestCollectorQueueWait(t *testing.T) {
	calls, snapshots, queue := NewCallCounter(), NewSnapshotCache(), NewWriteQueue()
	reg := newCollector(t, calls, snapshots, queue)
	key := PolicyKey{Project: "p", Name: "n"}
	ctx := context.Background()

	// The first write holds the policy; the second waits behind it for at
	// least hold, the third gives up first.
	const hold = 100 * time.Millisecond
	release, holding, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = queue.Do(ctx, key, func(context.Context) error { close(holding); <-release; return nil })
	}()
	<-holding
	second := make(chan struct{})
	go func() {
		defer close(second)
		_ = queue.Do(ctx, key, func(context.Context) error { return nil })
	}()
	for queue.Stats().Waits < 1 {
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error)
	go func() { gaveUp <- queue.Do(short, key, func(context.Context) error { return nil }) }()
	for queue.Stats().Waits < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; err == nil {
		t.Error("a write whose context ends while it waits: want an error")
	}
	time.Sleep(hold)
	close(release)
	<-done
	<-second

	got := gather(t, reg)
	want := map[string]float64{
		`COUNTER cloudarmor_gcp_write_queue_waits_total{}`: 2,
		// Observed: the first write, at once, and the second, after hold.
		// The write that gave up is not.
		`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_count{}`:           2,
		`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_bucket{le="0.01"}`: 1,
		`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_bucket{le="0.05"}`: 1, // The second waited at least hold.
		`HISTOGRAM cloudarmor_gcp_write_queue_wait_seconds_bucket{le="1"}`:    2,
	}
	sub := map[string]float64{}
	for k := range want {
		sub[k] = got[k]
	}
	if diff := cmp.Diff(want, sub); diff != "" {
		t.Errorf("gathered metrics: -want, +got:\n%s", diff)
	}
}

func TestCodeLabel(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   string
	}{
		"Success":  {reason: "A nil error is a 200.", want: "200"},
		"Status":   {reason: "A GCP error carries its HTTP status.", err: &googleapi.Error{Code: 404}, want: "404"},
		"Canceled": {reason: "A context that ended is canceled, wrapped or not.", err: context.DeadlineExceeded, want: CodeCanceled},
		"Other":    {reason: "Anything else had no HTTP response.", err: errBoom, want: CodeError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, codeLabel(codeOf(tc.err))); diff != "" {
				t.Errorf("\n%s\ncodeLabel(codeOf(...)): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClientWithoutCallCounter(t *testing.T) {
	_, svc := newFakeGCP(t, routes{"GET " + policyPath: {ok(policyJSON)}})
	// A Client built without WithCallCounter has a nil counter, which must
	// count nothing rather than panic.
	if _, err := NewClient(svc, nil, nil).Policies("p", "").Get(context.Background(), "n"); err != nil {
		t.Fatal(err)
	}
}
