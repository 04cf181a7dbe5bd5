package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

// TestRenderGroupMode renders the example allowlist of 37 Nodes moving from rules to an address
// group, one reconcile at a time, each over what the previous one composed once the provider
// has made it Ready: first the group beside the range rules, then the rule that uses it, then
// the range rules gone.
func TestRenderGroupMode(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	nodes := addressSetYAML(t, webNodes(37), false)

	live := e.render(t, dir, xr(t, nil), nodes)
	if live.err != nil {
		t.Fatalf("crossplane render (rules): %v\n%s", live.err, live.stderr)
	}
	liveObjs := decode(t, live.stdout)
	rangeRules := rules(liveObjs)

	toGroup := xr(t, func(spec map[string]any) {
		spec["mode"] = "addressGroup"
		spec["addressGroup"] = map[string]any{"name": "web-allowlist-nodes", "capacity": 1000}
	})
	steps := []struct {
		golden string
		// kinds counts the composed resources of each kind.
		kinds                   map[string]int
		current, reason, ready  string
		rangeRulesKept, hasRule bool
	}{
		{golden: "group-mode-1-group", kinds: map[string]int{"SecurityPolicy": 1, "AddressSet": 1, "AddressGroup": 2, "SecurityPolicyRule": 4}, current: "False", reason: "Switching", ready: "False", rangeRulesKept: true},
		{golden: "group-mode-2-rule", kinds: map[string]int{"SecurityPolicy": 1, "AddressSet": 1, "AddressGroup": 2, "SecurityPolicyRule": 5}, current: "False", reason: "Switching", ready: "False", rangeRulesKept: true, hasRule: true},
		{golden: "group-mode-3-current", kinds: map[string]int{"SecurityPolicy": 1, "AddressSet": 1, "AddressGroup": 2, "SecurityPolicyRule": 1}, current: "True", reason: "Composed", ready: "True", hasRule: true},
	}
	objs := liveObjs
	for _, s := range steps {
		r := e.render(t, dir, toGroup, append(inGCP(t, objs), nodes...))
		if r.err != nil {
			t.Fatalf("crossplane render (%s): %v\n%s", s.golden, r.err, r.stderr)
		}
		objs = decode(t, r.stdout)
		golden(t, s.golden, objs)
		e.validate(t, dir, objs)

		kinds := map[string]int{}
		for _, o := range objs[1:] {
			if o.GetKind() != "Result" {
				kinds[o.GetKind()]++
			}
		}
		if diff := cmp.Diff(s.kinds, kinds); diff != "" {
			t.Errorf("%s: composed resources by kind: -want, +got:\n%s", s.golden, diff)
		}
		got := rules(objs)
		kept := true
		for name, spec := range rangeRules {
			if !cmp.Equal(got[name], spec) {
				kept = false
			}
		}
		if kept != s.rangeRulesKept {
			t.Errorf("%s: range rules kept as they were: %t, want %t", s.golden, kept, s.rangeRulesKept)
		}
		if _, ok := got["web-group-1004"]; ok != s.hasRule {
			t.Errorf("%s: rule web-group-1004 composed: %t, want %t", s.golden, ok, s.hasRule)
		}
		if st, reason, msg := platform.ConditionOf(objs[0], "Current"); st != s.current || reason != s.reason {
			t.Errorf("%s: Current %s %s %q, want %s %s", s.golden, st, reason, msg, s.current, s.reason)
		}
		if c := readyOf(objs[0]); c != s.ready {
			t.Errorf("%s: XR Ready %q, want %q", s.golden, c, s.ready)
		}
	}
}

// inGCP is observedFrom with each AddressGroup's status.atProvider.itemCount set to its items,
// as the provider reports a group it has filled.
func inGCP(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if o.GetKind() == "AddressGroup" {
			o = o.DeepCopy()
			items, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "forProvider", "items")
			if err := unstructured.SetNestedField(o.Object, int64(len(items)), "status", "atProvider", "itemCount"); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, o)
	}
	return observedFrom(t, out)
}
