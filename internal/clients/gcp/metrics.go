package gcp

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metric descriptors. The values are read at scrape time from the counters
// the CallCounter, SnapshotCache and WriteQueue keep anyway, so the hot
// paths pay for one atomic add, not a Prometheus metric.
var (
	descCalls = prometheus.NewDesc("cloudarmor_gcp_calls_total",
		"Compute API calls made, by method. WaitOperation counts each operation wait call.", []string{"method"}, nil)

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
	for _, d := range []*prometheus.Desc{descCalls,
		descSnapshotHits, descSnapshotShared, descSnapshotMisses, descSnapshotFetches, descSnapshotInvalidations, descSnapshotEntries,
		descQueueWaits, descQueueRunning, descQueuePolicies} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	// Every method, zeros included, so rate() sees a series from the start.
	for m := range methodCount {
		ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(c.calls.Count(m)), m.String())
	}
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
