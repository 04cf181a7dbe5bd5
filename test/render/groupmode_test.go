package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// groupFile is the example IPAllowlist of a large node pool kept in an address group.
const groupFile = repoRoot + "/examples/allowlist/address-group/ipallowlist.yaml"

// TestRenderGroupMode renders the address-group example, and the example allowlist of 37 Nodes
// moving from rules to an address group: the function passes mode and group on to the
// allowlist, and the XR shows each step the provider reports.
func TestRenderGroupMode(t *testing.T) {
	e := setup(t)
	t.Run("Example", func(t *testing.T) { testGroupExample(t, e) })
	t.Run("FromRules", func(t *testing.T) { testGroupFromRules(t, e) })
}

// testGroupExample renders examples/allowlist/address-group: an allowlist in mode addressGroup
// with its group's name and capacity, then the allowlist reporting its group and rule.
func testGroupExample(t *testing.T, e *env) {
	dir := t.TempDir()
	first := e.renderOK(t, dir, example(t, groupFile, nil), nil)
	golden(t, "group-mode-example-first-pass", first)
	e.validate(t, dir, first)
	wantSpec := fromYAML(t, `
securityPolicy: batch-allowlist
createPolicy: {defaultAction: deny(403), description: Offices and the batch node pool}
priorityRange: {first: 1000, last: 1009}
ruleDescription: IPAllowlist default/batch
mode: addressGroup
addressGroup: {name: batch-allowlist-nodes, capacity: 5000}
sources:
- name: office-paris
  cidrs: [203.0.113.0/26, "2001:db8:10::/48"]
- name: pool-batch
  nodes:
    matchLabels: {cloud.google.com/gke-nodepool: batch}
`)
	if diff := cmp.Diff(wantSpec, specOf(allowlist(t, first))); diff != "" {
		t.Errorf("allowlist spec: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"SecurityPolicyAllowlist": 1}, kinds(first)); diff != "" {
		t.Errorf("composed resources by kind: -want, +got:\n%s", diff)
	}
	want{current: "False", reason: "SourcesPending", message: pending, ready: "False"}.check(t, "first pass", first)

	status := func(rules int) map[string]any {
		return map[string]any{"ipCount": float64(42), "ruleCount": float64(rules), "unmatchedSources": []any{},
			"policyName": "batch-allowlist", "addressGroup": "batch-allowlist-nodes"}
	}
	filling := "every source's ranges are in address group batch-allowlist-nodes; the rule of policy batch-allowlist that uses it comes once GCP has the group"
	current := "every source's ranges are in address group batch-allowlist-nodes, allowed by the rule at priority 1000 of policy batch-allowlist"
	for _, step := range []struct {
		golden string
		rep    report
		want   want
	}{
		{
			// A new allowlist has no rule to keep: its group being filled is Current, not Ready.
			rep:  report{ipCount: 42, addressGroup: "batch-allowlist-nodes", current: "True", reason: "Composed", message: filling, notInGCP: 1},
			want: want{status: status(0), current: "True", reason: "Composed", message: filling, ready: "False"},
		},
		{
			golden: "group-mode-example-current",
			rep:    report{ipCount: 42, ruleCount: 1, addressGroup: "batch-allowlist-nodes", current: "True", reason: "Composed", message: current},
			want:   want{status: status(1), current: "True", reason: "Composed", message: current, ready: "True"},
		},
	} {
		objs := e.renderOK(t, dir, example(t, groupFile, nil), observedFrom(t, first, &step.rep))
		if step.golden != "" {
			golden(t, step.golden, objs)
		}
		e.validate(t, dir, objs)
		step.want.check(t, step.rep.message, objs)
	}
}

// testGroupFromRules renders the example XR, whose allowlist holds 40 ranges in 4 rules, set to
// mode addressGroup: the allowlist's spec says so at once, and the XR follows what the provider
// reports: nothing yet on the new spec, then Switching while the group is filled beside the
// rules, then the group's rule in place.
func testGroupFromRules(t *testing.T, e *env) {
	dir := t.TempDir()
	toGroup := func(spec map[string]any) {
		spec["mode"] = "addressGroup"
		spec["addressGroup"] = map[string]any{"name": "web-allowlist-nodes", "capacity": 1000}
	}
	group := e.renderOK(t, dir, xr(t, toGroup), nil)
	wantSpec := fromYAML(t, exampleAllowlistSpec)
	wantSpec["mode"] = "addressGroup"
	wantSpec["addressGroup"] = map[string]any{"name": "web-allowlist-nodes", "capacity": float64(1000)}
	if diff := cmp.Diff(wantSpec, specOf(allowlist(t, group))); diff != "" {
		t.Errorf("allowlist spec in mode addressGroup: -want, +got:\n%s", diff)
	}

	status := func(rules int, group string) map[string]any {
		s := map[string]any{"ipCount": float64(40), "ruleCount": float64(rules), "unmatchedSources": []any{}, "policyName": "web-allowlist"}
		if group != "" {
			s["addressGroup"] = group
		}
		return s
	}
	switching := "address group web-allowlist-nodes is being created or filled; the previous rules stay in place until it is"
	current := "every source's ranges are in address group web-allowlist-nodes, allowed by the rule at priority 1004 of policy web-allowlist"
	steps := []struct {
		golden string
		// xrStatus is the XR's status before the render.
		xrStatus map[string]any
		rep      report
		want     want
	}{
		{
			golden:   "group-mode-1-pending",
			xrStatus: status(4, ""),
			rep: report{generation: 2, observedGeneration: 1, ipCount: 40, ruleCount: 4, current: "True", reason: "Composed",
				message: composedMsg},
			want: want{status: status(4, ""), current: "False", reason: "SourcesPending", message: pending, ready: "True"},
		},
		{
			golden:   "group-mode-2-switching",
			xrStatus: status(4, ""),
			rep: report{generation: 2, ipCount: 40, addressGroup: "web-allowlist-nodes", current: "False", reason: "Switching",
				message: switching},
			want: want{status: status(0, "web-allowlist-nodes"), current: "False", reason: "Switching", message: switching, ready: "False"},
		},
		{
			golden:   "group-mode-3-current",
			xrStatus: status(0, "web-allowlist-nodes"),
			rep: report{generation: 2, ipCount: 40, ruleCount: 1, addressGroup: "web-allowlist-nodes", current: "True", reason: "Composed",
				message: current},
			want: want{status: status(1, "web-allowlist-nodes"), current: "True", reason: "Composed", message: current, ready: "True"},
		},
	}
	for _, s := range steps {
		// Crossplane observes the allowlist as it applied it, in mode addressGroup: its
		// generation 2, the first (rules) being what the provider reported 40 ranges in 4 rules on.
		objs := e.renderOK(t, dir, withStatus(t, xr(t, toGroup), s.xrStatus), observedFrom(t, group, &s.rep))
		golden(t, s.golden, objs)
		e.validate(t, dir, objs)
		s.want.check(t, s.golden, objs)
		if diff := cmp.Diff(specOf(allowlist(t, group)), specOf(allowlist(t, objs))); diff != "" {
			t.Errorf("%s: allowlist spec: -want, +got:\n%s", s.golden, diff)
		}
	}
}
