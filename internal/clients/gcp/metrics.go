package gcp

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Metric descriptors. The values are read at scrape time from the counters
// the CallCounter, SnapshotCache and WriteQueue keep anyway, so the hot
// paths pay for one atomic add, not a Prometheus metric.
var (
	descCalls = prometheus.NewDesc("cloudarmor_gcp_calls_total",
		"Compute API calls made, by method and response code: the HTTP status (a success counts as 200), "+
			`"error" when no HTTP response came back, or "canceled" when the caller's context ended first. `+
			"WaitOperation counts each operation wait call.", []string{"method", "code"}, nil)
	descOperations = prometheus.NewDesc("cloudarmor_gcp_operations_total",
		`Operations started by writes, by method and how waiting for them ended: "done" (DONE without error), `+
			`"failed" (DONE with an error), "pending" (still running when the wait gave up), "error" (a wait call failed).`,
		[]string{"method", "result"}, nil)

	descSnapshotHits = prometheus.NewDesc("cloudarmor_gcp_snapshot_hits_total",
		"Policy reads answered from a live snapshot, cached NotFound included.", nil, nil)
	descSnapshotShared = prometheus.NewDesc("cloudarmor_gcp_snapshot_shared_total",
		"Policy reads that joined a GCP read another caller had started.", nil, nil)
	descSnapshotMisses = prometheus.NewDesc("cloudarmor_gcp_snapshot_misses_total",
		"Policy reads that started a GCP read.", nil, nil)
	descSnapshotFetches = prometheus.NewDesc("cloudarmor_gcp_snapshot_fetches_total",
		"GCP reads of a policy completed by the snapshot cache.", nil, nil)
	descSnapshotInvalidations = prometheus.NewDesc("cloudarmor_gcp_snapshot_invalidations_total",
		"Policy snapshots dropped after a write.", nil, nil)
	descSnapshotEntries = prometheus.NewDesc("cloudarmor_gcp_snapshot_entries",
		"Policy snapshots held, one per policy and credential identity.", nil, nil)

	descQueueWaits = prometheus.NewDesc("cloudarmor_gcp_write_queue_waits_total",
		"Writes that waited behind another write to the same policy.", nil, nil)
	descQueueRunning = prometheus.NewDesc("cloudarmor_gcp_write_queue_running",
		"Writes to GCP running now.", nil, nil)
	descQueuePolicies = prometheus.NewDesc("cloudarmor_gcp_write_queue_policies",
		"Policies with a write running or waiting.", nil, nil)
)

// Response codes. A call's code is an index into CallCounter's counts: the
// two fixed codes, then every HTTP status from 100 to 599. An HTTP status is
// a bounded label value, and keeping each one (rather than classes such as
// 4xx) tells a 404 from a 412 or a 429, which call for different actions.
const (
	codeError    = iota // no HTTP response: a transport or decoding error
	codeCanceled        // the caller's context ended before a response
	codeHTTP            // HTTP status 100; status s is at codeHTTP+s-100
	numCodes     = codeHTTP + 500
)

// Code label values that are not HTTP statuses.
const (
	CodeError    = "error"
	CodeCanceled = "canceled"
)

// codeOf returns the code index of a call that returned err. The compute
// client returns a *googleapi.Error for any response that is not a 2xx, and
// GCP answers these calls' successes with 200.
func codeOf(err error) int {
	if err == nil {
		return codeHTTP + 200 - 100
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code >= 100 && ge.Code <= 599 {
		return codeHTTP + ge.Code - 100
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return codeCanceled
	}
	return codeError
}

// codeLabel is the code label value of code index i.
func codeLabel(i int) string {
	switch i {
	case codeError:
		return CodeError
	case codeCanceled:
		return CodeCanceled
	}
	return strconv.Itoa(i - codeHTTP + 100)
}

// An opResult is how waiting for an operation ended.
type opResult int

const (
	opDone opResult = iota
	opFailed
	opPending
	opError
	numOpResults
)

var opResultNames = [numOpResults]string{opDone: "done", opFailed: "failed", opPending: "pending", opError: "error"}

// opResultOf classifies what WaitForOperation returned.
func opResultOf(err error) opResult {
	var oe *OperationError
	var pe *OperationPendingError
	switch {
	case err == nil:
		return opDone
	case errors.As(err, &oe):
		return opFailed
	case errors.As(err, &pe):
		return opPending
	}
	return opError
}

// writeMethods are the methods that start operations.
var writeMethods = []Method{MethodInsert, MethodPatch, MethodDelete, MethodAddRule, MethodPatchRule, MethodRemoveRule, MethodSetLabels,
	MethodGroupCreate, MethodGroupPatch, MethodGroupDelete, MethodGroupAddItems, MethodGroupRemoveItems,
	MethodEdgeInsert, MethodEdgePatch, MethodEdgeDelete, MethodSetTier, MethodOrgAddAssociation, MethodOrgRemoveAssociation,
	MethodBackendSetPolicy}

// collector exports the process-wide GCP counters.
type collector struct {
	calls     *CallCounter
	snapshots *SnapshotCache
	queue     *WriteQueue
}

// NewCollector returns a prometheus.Collector of the calls counted by calls
// and of the snapshots' and queue's counters. Pass the ones every Client of
// the process shares; none may be nil.
func NewCollector(calls *CallCounter, snapshots *SnapshotCache, queue *WriteQueue) prometheus.Collector {
	return &collector{calls: calls, snapshots: snapshots, queue: queue}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descOperations,
		descSnapshotHits, descSnapshotShared, descSnapshotMisses, descSnapshotFetches, descSnapshotInvalidations, descSnapshotEntries,
		descQueueWaits, descQueueRunning, descQueuePolicies} {
		ch <- d
	}
	c.calls.opSeconds.Describe(ch)
	c.queue.waitSeconds.Describe(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.collectCalls(ch)
	c.calls.opSeconds.Collect(ch)
	c.queue.waitSeconds.Collect(ch)
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	s := c.snapshots.Stats()
	counter(descSnapshotHits, s.Hits)
	counter(descSnapshotShared, s.Shared)
	counter(descSnapshotMisses, s.Misses)
	counter(descSnapshotFetches, s.Fetches)
	counter(descSnapshotInvalidations, s.Invalidations)
	gauge(descSnapshotEntries, int64(s.Entries))
	q := c.queue.Stats()
	counter(descQueueWaits, q.Waits)
	gauge(descQueueRunning, q.Running)
	gauge(descQueuePolicies, int64(q.Keys))
}

// collectCalls sends the call and operation counters. Every method has a
// code="200" series and every write method a result="done" one, zeros
// included, so rate() sees them from the start; other codes and results
// appear once they happen.
func (c *collector) collectCalls(ch chan<- prometheus.Metric) {
	ok := codeOf(nil)
	for m := range methodCount {
		for code := range numCodes {
			if n := c.calls.n[m][code].Load(); n > 0 || code == ok {
				ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(n), m.String(), codeLabel(code))
			}
		}
	}
	for _, m := range writeMethods {
		for r := range numOpResults {
			if n := c.calls.ops[m][r].Load(); n > 0 || r == opDone {
				ch <- prometheus.MustNewConstMetric(descOperations, prometheus.CounterValue, float64(n), m.String(), opResultNames[r])
			}
		}
	}
}
