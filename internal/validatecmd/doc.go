// Package validatecmd asks GCP whether it would accept SecurityPolicy and
// SecurityPolicyRule manifests, without writing: it turns each into the
// requests the provider would send and sends them with validateOnly=true.
// It is the `provider-cloudarmor validate` command, for a CI check of a
// GitOps pull request.
package validatecmd
