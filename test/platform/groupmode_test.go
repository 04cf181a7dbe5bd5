package platformsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// groupName is the address group the suite moves the example allowlist to.
const groupName = "web-allowlist-nodes"

// TestGroupMode moves the example allowlist from rules to an address group and
// back while the meter samples GCP every 20 ms for a wanted source it does not
// allow: first on Cloud Armor Standard, where GCP refuses the rule that uses
// the group and the range rules must stay, with GCP's reason in the
// IPAllowlist's Current condition; then the project moves to Enterprise and
// the switch completes by itself; Node changes in group mode are addItems and
// removeItems calls; then back to rules; then a storm of mode and group name
// edits.
func TestGroupMode(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	c := newCluster(e)
	for range 3 {
		c.addNode(ctx, t, pool)
	}
	e.applyXR(ctx, t)
	e.waitAllowlist(t, c.want())
	e.waitXRReady(ctx, t, len(c.want()))

	m := e.newMeter(t)
	defer m.stop()
	m.setMust("switch to an address group", c.want(), c.want)

	t.Run("StandardTierKeepsRules", func(t *testing.T) {
		e.patchXR(ctx, t, fmt.Sprintf(`{"spec":{"mode":"addressGroup","addressGroup":{"name":%q}}}`, groupName))
		wait.Eventually(t, converge, "the IPAllowlist to say GCP refuses the group rule", func() error {
			st, reason, msg := e.xrCondition(ctx, t, "Current")
			if st != "False" || reason != "Switching" || !strings.Contains(msg, "Enterprise") {
				return fmt.Errorf("Current=%s %s %q", st, reason, msg)
			}
			return nil
		})
		_, _, msg := e.xrCondition(ctx, t, "Current")
		t.Logf("Current=False Switching: %s", msg)
		if st, _ := e.xrReady(ctx, t); st == "True" {
			t.Error("IPAllowlist Ready while GCP refuses the rule that uses its address group")
		}
		if kinds := e.ruleKinds(); kinds["ranges"] == 0 || kinds["groups"] != 0 {
			t.Errorf("rules in the priority range: %v, want the range rules only", kinds)
		}
	})

	t.Run("EnterpriseCompletesTheSwitch", func(t *testing.T) {
		begin := time.Now()
		if err := e.emu.SetTier(project, "CA_ENTERPRISE_PAYGO"); err != nil {
			t.Fatal(err)
		}
		e.waitRuleKinds(t, converge, map[string]int{"groups": 1})
		e.waitAllowlist(t, c.want())
		t.Logf("the project on Enterprise: the group rule in GCP and the range rules gone %.1fs later (the rule's create was backing off)", time.Since(begin).Seconds())
		e.waitCurrent(ctx, t, "True", "Composed")
		if got := e.groups()[groupName+"-ipv6"]; !slices.Equal(got, []string{"2001:db8:10::/48"}) {
			t.Errorf("IPv6 group %s-ipv6 holds %v, want the IPv6 office", groupName, got)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("Admission", func(t *testing.T) {
		// The XRD's rules, as the API server enforces them on the XR.
		cases := map[string]struct{ patch, want string }{
			"CapacityAlone":    {`{"spec":{"addressGroup":{"name":"` + groupName + `","capacity":5000}}}`, "addressGroup.capacity is fixed when GCP creates the group"},
			"GroupWithoutName": {`{"spec":{"addressGroup":null}}`, "mode addressGroup needs addressGroup.name"},
			"UnknownMode":      {`{"spec":{"mode":"groups"}}`, `Unsupported value: "groups"`},
		}
		for name, tc := range cases {
			xr := &unstructured.Unstructured{}
			xr.SetGroupVersionKind(xrGVK)
			xr.SetNamespace("default")
			xr.SetName(e.xr)
			err := e.cp.Client.Patch(ctx, xr, client.RawPatch(types.MergePatchType, []byte(tc.patch)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: patch %s: got error %v, want one saying %q", name, tc.patch, err, tc.want)
			}
		}
	})

	t.Run("NodeChanges", func(t *testing.T) {
		for range 3 {
			m.measure(t, "group: add 1 node", c, func() { c.addNode(ctx, t, pool) })
		}
		m.measure(t, "group: add 100 nodes", c, func() {
			for range 100 {
				c.addNode(ctx, t, pool)
			}
		})
		for range 3 {
			m.measure(t, "group: node deleted", c, func() { c.deleteNode(ctx, t) })
		}
		for _, r := range m.results {
			if !strings.HasPrefix(r.kind, "group: ") {
				continue
			}
			for verb, n := range r.methods {
				if verb != "addItems" && verb != "removeItems" {
					t.Errorf("%s: %d %s calls; in group mode a Node change is addItems or removeItems only", r.kind, n, verb)
				}
			}
		}
	})

	t.Run("BackToRules", func(t *testing.T) {
		m.setMust("switch back to rules", c.want(), c.want)
		begin := time.Now()
		e.patchXR(ctx, t, `{"spec":{"mode":"rules"}}`)
		e.waitRuleKinds(t, converge, map[string]int{"ranges": (len(c.want()) + 9) / 10})
		t.Logf("back to %d range rules, the group rule gone, %.1fs after the edit", (len(c.want())+9)/10, time.Since(begin).Seconds())
		e.waitAllowlist(t, c.want())
		e.waitCurrent(ctx, t, "True", "Composed")
		t.Logf("back to rules: Current=True %.1fs after the edit", time.Since(begin).Seconds())
		wait.Eventually(t, converge, "the address groups to be deleted", func() error {
			if g := e.groups(); len(g) > 0 {
				return fmt.Errorf("groups left: %v", len(g))
			}
			return nil
		})
	})
	t.Run("SwitchStorm", func(t *testing.T) {
		// Modes and group names changed faster than a switch completes,
		// Nodes added meanwhile: every source wanted before the storm stays
		// allowed at every sample, and the allowlist settles on the last
		// spec.
		m.setMust("mode switch storm", c.want(), c.want)
		specs := []string{
			fmt.Sprintf(`{"spec":{"mode":"addressGroup","addressGroup":{"name":%q}}}`, groupName+"-b"),
			`{"spec":{"mode":"rules"}}`,
			fmt.Sprintf(`{"spec":{"mode":"addressGroup","addressGroup":{"name":%q}}}`, groupName),
		}
		begin := time.Now()
		for i := range 9 {
			e.patchXR(ctx, t, specs[i%len(specs)])
			c.addNode(ctx, t, pool)
			time.Sleep(time.Duration(200+350*(i%4)) * time.Millisecond)
		}
		storm := time.Since(begin)
		// The last spec is group web-allowlist-nodes. So many composed
		// objects created and deleted may open core's circuit breaker,
		// which then drops the events of the composed objects; the
		// function's 15 s TTL while switching runs it again anyway.
		var steps []string
		step := func(what string) {
			steps = append(steps, fmt.Sprintf("%s %.1fs", what, (time.Since(begin)-storm).Seconds()))
		}
		e.waitRuleKinds(t, 3*converge, map[string]int{"groups": 1})
		step("group rule")
		e.waitAllowlist(t, c.want())
		step("GCP allows all")
		e.waitCurrent(ctx, t, "True", "Composed")
		step("Current")
		wait.Eventually(t, 3*converge, "only the last spec's groups to be left", func() error {
			if g := e.groups(); len(g) != 2 {
				return fmt.Errorf("groups %v", slices.Sorted(maps.Keys(g)))
			}
			return nil
		})
		step("other groups gone")
		t.Logf("after the storm: %s", strings.Join(steps, ", "))
		m.mu.Lock()
		gaps := m.gaps["mode switch storm"] + m.gaps["switch to an address group"] + m.gaps["switch back to rules"]
		m.mu.Unlock()
		t.Logf("mode switch storm: 9 edits over %.1fs, settled on the last %.1fs after the storm ended; %d gap samples in all switches", storm.Seconds(), (time.Since(begin) - storm).Seconds(), gaps)
	})

	m.report(t)
}

// patchXR merge-patches the example IPAllowlist.
func (e *env) patchXR(ctx context.Context, t *testing.T, patch string) {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	xr.SetNamespace("default")
	xr.SetName(e.xr)
	if err := e.cp.Client.Patch(ctx, xr, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// xrReady is the IPAllowlist's Ready status and message.
func (e *env) xrReady(ctx context.Context, t *testing.T) (string, string) {
	t.Helper()
	st, _, msg := e.xrCondition(ctx, t, "Ready")
	return st, msg
}

func (e *env) waitCurrent(ctx context.Context, t *testing.T, status, reason string) {
	t.Helper()
	wait.Eventually(t, converge, "the IPAllowlist's Current condition to be "+status+" "+reason, func() error {
		if st, r, _ := e.xrCondition(ctx, t, "Current"); st != status || r != reason {
			return fmt.Errorf("%s; composed groups: %s", e.xrSays(t), e.groupObjects(ctx, t))
		}
		if st, msg := e.xrReady(ctx, t); (st == "True") != (status == "True") {
			return fmt.Errorf("Ready=%s %q", st, msg)
		}
		return nil
	})
}

// groupObjects says, for a failure's message, what the function reads of each
// composed AddressGroup: its generation, whether it is being deleted, its Ready
// and Synced conditions (with the generation Synced is about) and its item count.
func (e *env) groupObjects(ctx context.Context, t *testing.T) string {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cloudarmor.armorplane.io/v1alpha1")
	l.SetKind("AddressGroupList")
	if err := e.cp.Client.List(ctx, l, client.InNamespace("default")); err != nil {
		return err.Error()
	}
	var out []string
	for _, g := range l.Items {
		n, _, _ := unstructured.NestedInt64(g.Object, "status", "atProvider", "itemCount")
		items, _, _ := unstructured.NestedStringSlice(g.Object, "spec", "forProvider", "items")
		ready, _, _ := platform.ConditionOf(&g, "Ready")
		synced, reason, msg := platform.ConditionOf(&g, "Synced")
		var syncedGen int64
		conds, _, _ := unstructured.NestedSlice(g.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Synced" {
				syncedGen, _ = m["observedGeneration"].(int64)
			}
		}
		out = append(out, fmt.Sprintf("%s generation %d deleting=%t itemCount %d of %d items, Ready=%s, Synced=%s %s %q about generation %d",
			g.GetName(), g.GetGeneration(), g.GetDeletionTimestamp() != nil, n, len(items), ready, synced, reason, msg, syncedGen))
	}
	return strings.Join(out, "; ")
}

// ruleKinds counts the allow rules in the allowlist's priority range: "ranges"
// match source ranges, "groups" evaluate address groups.
func (e *env) ruleKinds() map[string]int {
	out := map[string]int{}
	sp := e.snapshot()
	if sp == nil {
		return out
	}
	for _, r := range sp.Rules {
		if r.Priority < 1000 || r.Priority > 1099 || r.Match == nil {
			continue
		}
		switch {
		case r.Match.Config != nil:
			out["ranges"]++
		case r.Match.Expr != nil && evaluateAddressGroup.MatchString(r.Match.Expr.Expression):
			out["groups"]++
		}
	}
	return out
}

// waitRuleKinds waits up to within for the rules ruleKinds counts to be want.
func (e *env) waitRuleKinds(t *testing.T, within time.Duration, want map[string]int) {
	t.Helper()
	wait.Eventually(t, within, fmt.Sprintf("the priority range to hold rules %v", want), func() error {
		if got := e.ruleKinds(); !maps.Equal(got, want) {
			return fmt.Errorf("rules %v", got)
		}
		return nil
	})
}
