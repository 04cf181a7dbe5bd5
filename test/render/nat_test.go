package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// natFile is the IPAllowlist of a private cluster's Cloud NAT egress: one NAT of one Cloud
// Router, read through Compute, and an office.
const natFile = repoRoot + "/examples/allowlist/nat/ipallowlist.yaml"

// natAllowlistSpec is the NAT example's SecurityPolicyAllowlist: the nat source passed on as the
// provider reads it (the XRD's default poll written out), and no address, which the provider
// alone reads.
const natAllowlistSpec = `
securityPolicy: nat-egress-allowlist
createPolicy: {defaultAction: deny(403), description: "A private GKE cluster's Cloud NAT egress and an office"}
priorityRange: {first: 3100, last: 3109}
ruleDescription: IPAllowlist default/nat-egress
mode: rules
sources:
- name: office-paris
  cidrs: [203.0.113.0/26]
- name: egress
  nat: {region: us-central1, router: egress, nat: egress-nat, pollSeconds: 30}
`

// TestRenderNAT renders the NAT example: the first pass composes the allowlist with the nat
// source; a NAT short of addresses, as the allowlist reports it, is a warning on a Current and
// Ready XR (it blocks nothing); a router that cannot be read makes the XR SourceUnreadable, not
// Ready, while GCP keeps the NAT's last addresses.
func TestRenderNAT(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	first := e.renderOK(t, dir, example(t, natFile, nil), nil)
	golden(t, "nat-first-pass", first)
	e.validate(t, dir, first)
	if diff := cmp.Diff(fromYAML(t, natAllowlistSpec), specOf(allowlist(t, first))); diff != "" {
		t.Errorf("allowlist spec: -want, +got:\n%s", diff)
	}
	want{current: "False", reason: "SourcesPending", message: pending, ready: "False"}.check(t, "NAT first pass", first)

	short := `nat source "egress": Cloud NAT us-central1/egress/egress-nat needs 1 more address(es) (minExtraNatIpsNeeded): ` +
		`some VMs get no NAT ports and cannot connect out; add addresses or let it allocate them`
	composed := "every source's ranges are in the allow rules of policy nat-egress-allowlist, priorities 3100-3109"
	status := map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "nat-egress-allowlist"}
	objs := e.renderOK(t, dir, withStatus(t, example(t, natFile, nil), status),
		observedFrom(t, first, &report{ipCount: 3, ruleCount: 1, warnings: []string{short}, current: "True", reason: "Composed", message: composed}))
	golden(t, "nat-needs-addresses", objs)
	e.validate(t, dir, objs)
	want{status: status, current: "True", reason: "Composed", message: composed, ready: "True", warnings: []string{short}}.check(t, "a NAT short of addresses", objs)

	held := `nat source "egress": AddressSet nat-egress-nodes-egress: cannot read Cloud NAT egress-nat of router us-central1/egress ` +
		`of project demo-project since 2026-01-01T00:00:00Z: router us-central1/egress: googleapi: Error 503: ` +
		`The service is currently unavailable., backendError; the addresses shown are the last known`
	objs = e.renderOK(t, dir, withStatus(t, example(t, natFile, nil), status),
		observedFrom(t, first, &report{ipCount: 3, ruleCount: 1, current: "False", reason: "SourceUnreadable", message: held}))
	golden(t, "nat-router-unreadable", objs)
	e.validate(t, dir, objs)
	want{status: status, current: "False", reason: "SourceUnreadable", message: held, ready: "False", warnings: []string{held}}.check(t, "a router out of reach", objs)
}
