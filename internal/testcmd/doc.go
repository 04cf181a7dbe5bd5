// Package testcmd is the provider's `test` command: it evaluates request
// cases against SecurityPolicy, SecurityPolicyRule and AddressGroup
// manifests offline, with package policyeval, and says per case whether
// Cloud Armor would do what the case expects.
//
// Exit status: 0 when every case passes, 1 when any fails, 2 when the input
// (a manifest, the cases file, the command line) is wrong.
package testcmd
