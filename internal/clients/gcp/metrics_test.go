package gcp

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/api/compute/v1"
)

// gather returns every sample of reg as "TYPE name{label=value}" -> value.
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
			key := mf.GetType().String() + " " + mf.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + strconv.Quote(l.GetValue()) + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			default:
				t.Errorf("%s: unexpected metric type", key)
			}
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	_, svc := newFakeGCP(t, routes{
		"GET " + policyPath:                 {ok(policyJSON)},
		"POST " + policyPath + "/addRule":   {ok(opJSON("op-1", "RUNNING"))},
		"POST /global/operations/op-1/wait": {ok(opJSON("op-1", "DONE"))},
	})
	calls, snapshots, queue := NewCallCounter(), NewSnapshotCache(), NewWriteQueue()
	// A pedantic registry also checks that Collect matches Describe.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(calls, snapshots, queue))

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

	want := map[string]float64{
		`COUNTER cloudarmor_gcp_snapshot_hits_total`:          1,
		`COUNTER cloudarmor_gcp_snapshot_shared_total`:        0,
		`COUNTER cloudarmor_gcp_snapshot_misses_total`:        2,
		`COUNTER cloudarmor_gcp_snapshot_fetches_total`:       2,
		`COUNTER cloudarmor_gcp_snapshot_invalidations_total`: 1,
		`GAUGE cloudarmor_gcp_snapshot_entries`:               1,
		`COUNTER cloudarmor_gcp_write_queue_waits_total`:      0,
		`GAUGE cloudarmor_gcp_write_queue_running`:            1,
		`GAUGE cloudarmor_gcp_write_queue_policies`:           1,
	}
	// Every method has a series, zeros included.
	for m := range methodCount {
		want[`COUNTER cloudarmor_gcp_calls_total{method="`+m.String()+`"}`] = 0
	}
	want[`COUNTER cloudarmor_gcp_calls_total{method="Get"}`] = 2
	want[`COUNTER cloudarmor_gcp_calls_total{method="AddRule"}`] = 1
	want[`COUNTER cloudarmor_gcp_calls_total{method="WaitOperation"}`] = 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gathered metrics: -want, +got:\n%s", diff)
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
