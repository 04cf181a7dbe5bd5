// Package gcp is everything in provider-cloudarmor that talks to Google
// Cloud: credentials and client options, a cache of compute clients per
// credential set, a per-policy snapshot cache and write queue, operation
// waits and the classification of GCP errors.
//
// The package knows nothing about Kubernetes objects or this repository's
// API types. Controllers map ProviderConfigs onto Credentials, obtain a
// *Client from a ClientCache and use the narrow PolicyClient interface. All
// Clients of a process share one SnapshotCache and one WriteQueue, both keyed
// by PolicyKey, because two credential sets may point at the same policy and
// GCP serialises operations per policy whoever sends them.
package gcp
