// Package gcp is everything in provider-cloudarmor that talks to Google
// Cloud: credentials and client options, a cache of compute clients per
// credential set, a per-policy snapshot cache and write queue, operation
// waits, the classification of GCP errors and the Prometheus metrics of
// all of these.
//
// The package knows nothing about Kubernetes objects or this repository's
// API types. Controllers map ProviderConfigs onto Credentials, obtain a
// *Client from a ClientCache and use the narrow PolicyClient interface. All
// Clients of a process share one SnapshotCache, one WriteQueue and one
// CallCounter, whose counters NewCollector exports. Snapshots are kept per
// credential identity and policy: what one set of credentials read is never
// served to another. The WriteQueue, which returns no data, is keyed by
// policy alone, because GCP serialises operations per policy whoever sends
// them.
package gcp
