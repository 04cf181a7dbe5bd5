package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fleetFile is the IPAllowlist of a fleet: the Nodes of the management cluster, of a workload
// cluster through its kubeconfig Secret, and a GKE node pool's instances through Compute.
const fleetFile = repoRoot + "/examples/allowlist/fleet/ipallowlist.yaml"

// fleetAllowlistSpec is the fleet example's SecurityPolicyAllowlist: every source passed on as
// the provider reads it, the cluster's Secret and the instances' labels included, and no
// address, which the provider alone reads.
const fleetAllowlistSpec = `
securityPolicy: fleet-web-allowlist
createPolicy: {defaultAction: deny(403), description: "Nodes of the management cluster, workload cluster eu and the batch pool"}
priorityRange: {first: 3000, last: 3049}
ruleDescription: IPAllowlist default/fleet-web
mode: rules
sources:
- name: office-paris
  cidrs: [203.0.113.0/26]
- name: pool-web
  nodes:
    matchLabels: {cloud.google.com/gke-nodepool: web}
- name: workload-eu
  nodes:
    matchLabels: {cloud.google.com/gke-nodepool: web}
    cluster:
      kubeconfigSecretRef: {name: workload-eu-kubeconfig, key: value}
      identity: Kubeconfig
- name: batch-private
  instances:
    matchLabels: {goog-k8s-node-pool-name: batch}
    pollSeconds: 30
`

// TestRenderFleet renders the fleet example: the first pass composes the allowlist with the
// remote sources; once the allowlist reports a cluster it cannot read, the XR says so (quoting
// the AddressSet) and is not Ready, while GCP keeps the cluster's last addresses.
func TestRenderFleet(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := e.renderOK(t, dir, example(t, fleetFile, nil), nil)
	golden(t, "fleet-first-pass", first)
	e.validate(t, dir, first)
	if diff := cmp.Diff(fromYAML(t, fleetAllowlistSpec), specOf(allowlist(t, first))); diff != "" {
		t.Errorf("allowlist spec: -want, +got:\n%s", diff)
	}
	want{current: "False", reason: "SourcesPending", message: pending, ready: "False"}.check(t, "fleet first pass", first)

	held := `node source "workload-eu": AddressSet fleet-web-nodes-workload-eu: cannot read the cluster of Secret ` +
		`default/workload-eu-kubeconfig (https://10.0.0.2:6443) since 2026-01-01T00:00:00Z: Get "https://10.0.0.2:6443/api/v1/nodes": ` +
		`dial tcp 10.0.0.2:6443: connect: connection refused; the addresses shown are the last known`
	status := map[string]any{"ipCount": float64(7), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "fleet-web-allowlist"}
	objs := e.renderOK(t, dir, withStatus(t, example(t, fleetFile, nil), status),
		observedFrom(t, first, &report{ipCount: 7, ruleCount: 1, current: "False", reason: "SourceUnreadable", message: held}))
	golden(t, "fleet-cluster-unreachable", objs)
	e.validate(t, dir, objs)
	want{status: status, current: "False", reason: "SourceUnreadable", message: held, ready: "False", warnings: []string{held}}.check(t, "a workload cluster out of reach", objs)
}
