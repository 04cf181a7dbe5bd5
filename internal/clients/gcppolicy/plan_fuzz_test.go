package gcppolicy

import (
	"fmt"
	"testing"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// fuzzRules turns bytes into up to 8 rules at priorities 0..15, each allow
// or deny with 1..10 ranges out of 24 addresses.
func fuzzRules(b []byte) map[int64][]string {
	out := map[int64][]string{}
	for i := 0; i+1 < len(b) && len(out) < 8; i += 2 {
		prio := int64(b[i] % 16)
		n := 1 + int(b[i+1]%10)
		var rs []string
		seen := map[int]bool{}
		for j := range n {
			a := (int(b[i+1]) + 7*j + int(b[i])) % 24
			if !seen[a] {
				seen[a] = true
				rs = append(rs, fmt.Sprintf("10.0.0.%d/32", a))
			}
		}
		if b[i]&0x80 != 0 {
			rs = append([]string{"deny"}, rs...)
		}
		out[prio] = rs
	}
	return out
}

func actionAndRanges(rs []string) (string, []string) {
	if len(rs) > 0 && rs[0] == "deny" {
		return "deny(403)", rs[1:]
	}
	return "allow", rs
}

// FuzzPlanRules checks PlanRules and GeneratePolicy on arbitrary observed and
// desired rule sets: the plan never touches the default rule or a claimed
// priority, widened rules stay within GCP's 10 ranges and are each patched
// to their final version, applying the plan reaches the spec (a second plan
// is empty), and GeneratePolicy's body has unique priorities with the
// default rule last.
func FuzzPlanRules(f *testing.F) {
	f.Add([]byte{1, 3, 2, 5, 3, 9}, []byte{1, 5, 2, 9, 3, 3}, uint8(0))
	f.Add([]byte{1, 9, 2, 9}, []byte{1, 8, 2, 9, 130, 1}, uint8(2))
	f.Fuzz(func(t *testing.T, observedBytes, desiredBytes []byte, claim uint8) {
		observed := policy()
		for prio, rs := range fuzzRules(observedBytes) {
			action, ranges := actionAndRanges(rs)
			observed.Rules = append(observed.Rules, rule(prio, action, withMatch(srcIPs(ranges...))))
		}
		observed.Rules = append(observed.Rules, rule(v1beta1.DefaultRulePriority, "deny(403)", withMatch(srcIPs("*"))))
		var inline []v1beta1.PolicyRule
		for prio, rs := range fuzzRules(desiredBytes) {
			action, ranges := actionAndRanges(rs)
			ips := make([]v1beta1.IPRange, len(ranges))
			for i, r := range ranges {
				ips[i] = v1beta1.IPRange(r)
			}
			inline = append(inline, inlineRule(prio, action, ips...))
		}
		claims := Claims{int64(claim % 16): "ns/claimant"}

		plan := PlanRules(inline, true, observed, claims)
		patched := map[int64]bool{}
		for _, r := range plan.Patch {
			patched[r.Priority] = true
		}
		for _, rs := range [][]*compute.SecurityPolicyRule{plan.Add, plan.Widen, plan.Patch} {
			for _, r := range rs {
				if r.Priority == v1beta1.DefaultRulePriority {
					t.Fatalf("the plan writes the default rule: %+v", r)
				}
				if _, ok := claims[r.Priority]; ok {
					t.Fatalf("the plan writes claimed priority %d", r.Priority)
				}
			}
		}
		for _, p := range plan.Remove {
			if _, ok := claims[p]; ok || p == v1beta1.DefaultRulePriority {
				t.Fatalf("the plan removes priority %d", p)
			}
		}
		for _, w := range plan.Widen {
			if n := len(w.Match.Config.SrcIpRanges); n > maxSrcIPRanges {
				t.Fatalf("widened rule %d has %d ranges", w.Priority, n)
			}
			if !patched[w.Priority] {
				t.Fatalf("widened rule %d is never patched to its final version", w.Priority)
			}
		}
		state := map[int64]*compute.SecurityPolicyRule{}
		for _, r := range observed.Rules {
			state[r.Priority] = r
		}
		for _, rs := range [][]*compute.SecurityPolicyRule{plan.Add, plan.Widen, plan.Patch} {
			for _, r := range rs {
				state[r.Priority] = r
			}
		}
		for _, p := range plan.Remove {
			delete(state, p)
		}
		after := policy()
		for _, r := range state {
			after.Rules = append(after.Rules, r)
		}
		if again := PlanRules(inline, true, after, claims); !again.Empty() {
			t.Fatalf("applying the plan does not reach the spec; left: %s", again.Describe())
		}

		body := GeneratePolicy("p", v1beta1.SecurityPolicyParameters{Rules: inline, DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"}})
		seen := map[int64]bool{}
		for _, r := range body.Rules {
			if seen[r.Priority] {
				t.Fatalf("GeneratePolicy: duplicate priority %d", r.Priority)
			}
			seen[r.Priority] = true
		}
		if last := body.Rules[len(body.Rules)-1]; last.Priority != v1beta1.DefaultRulePriority || last.Action != "deny(403)" {
			t.Fatalf("GeneratePolicy: the default rule is not last or not deny: %+v", last)
		}
	})
}
