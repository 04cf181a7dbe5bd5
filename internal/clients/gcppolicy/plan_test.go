package gcppolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func inlineRule(priority int64, action string, ranges ...v1beta1.IPRange) v1beta1.PolicyRule {
	return v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: action, Match: specSrcIPs(ranges...)}}
}

func inPreview(r v1beta1.PolicyRule) v1beta1.PolicyRule {
	r.Preview = ptr(true)
	return r
}

func TestPlanRules(t *testing.T) {
	type args struct {
		inline    []v1beta1.PolicyRule
		inlineSet bool
		observed  *compute.SecurityPolicy
		claims    Claims
	}
	gcp := func(priority int64, action string, ranges ...string) *compute.SecurityPolicyRule {
		r := rule(priority, action, withMatch(srcIPs(ranges...)))
		asGCPReturnsIt(r)
		return r
	}
	// GCP's text order of priorities: 0, 111111111, 2147483647, 555.
	observed := policy(withRules(
		gcp(0, "allow", "192.0.2.1"),
		gcp(111111111, "allow", "198.51.100.0/24"),
		gcp(v1beta1.DefaultRulePriority, "deny(403)", "*"),
		gcp(555, "allow", "10.0.0.0/8", "203.0.113.7"),
	))
	cases := map[string]struct {
		reason string
		args   args
		want   RulePlan
	}{
		"Absent": {
			reason: "With spec.rules absent the policy touches no rule.",
			args:   args{inlineSet: false, inline: []v1beta1.PolicyRule{inlineRule(1, "allow", "*")}, observed: observed},
			want:   RulePlan{},
		},
		"EmptyOwnsAll": {
			reason: "rules: [] owns every non-default priority and removes them all, in numeric order; the default rule stays.",
			args:   args{inlineSet: true, inline: []v1beta1.PolicyRule{}, observed: observed},
			want:   RulePlan{Remove: []int64{0, 555, 111111111}},
		},
		"UpToDate": {
			reason: "Inline rules equal to GCP's (range order and /32 aside) need nothing, whatever GCP's rule order.",
			args: args{inlineSet: true, observed: observed, inline: []v1beta1.PolicyRule{
				inlineRule(555, "allow", "203.0.113.7/32", "10.0.0.0/8"),
				inlineRule(111111111, "allow", "198.51.100.0/24"),
				inlineRule(0, "allow", "192.0.2.1/32"),
			}},
			want: RulePlan{},
		},
		"AddPatchRemove": {
			reason: "Missing rules are added, changed ones patched, unlisted ones removed, each sorted by priority.",
			args: args{inlineSet: true, observed: observed, inline: []v1beta1.PolicyRule{
				inlineRule(2000, "allow", "192.0.2.9"),
				inlineRule(555, "allow", "10.0.0.0/8"),
				inlineRule(0, "allow", "192.0.2.1"),
				inlineRule(1000, "allow", "192.0.2.8"),
			}},
			want: RulePlan{
				Add: []*compute.SecurityPolicyRule{
					GenerateRule(1000, inlineRule(1000, "allow", "192.0.2.8").RuleParameters),
					GenerateRule(2000, inlineRule(2000, "allow", "192.0.2.9").RuleParameters),
				},
				Patch:  []*compute.SecurityPolicyRule{GenerateRule(555, inlineRule(555, "allow", "10.0.0.0/8").RuleParameters)},
				Remove: []int64{111111111},
			},
		},
		"Claimed": {
			reason: "Claimed priorities are neither removed nor written; an inline rule there is a conflict.",
			args: args{inlineSet: true, observed: observed,
				claims: Claims{0: "team-a/allow-office", 555: "team-b/vpn", 111111111: "team-a/partners"},
				inline: []v1beta1.PolicyRule{inlineRule(555, "deny(403)", "*"), inlineRule(0, "deny(403)", "*")}},
			want: RulePlan{Conflicts: []Conflict{
				{Priority: 0, Claimant: "team-a/allow-office", Message: "inline rule at priority 0 is ignored: SecurityPolicyRule team-a/allow-office claims it"},
				{Priority: 555, Claimant: "team-b/vpn", Message: "inline rule at priority 555 is ignored: SecurityPolicyRule team-b/vpn claims it"},
			}},
		},
		"DefaultRuleNeverPlanned": {
			reason: "An inline rule at the default priority is a conflict; the default rule is never added or removed.",
			args: args{inlineSet: true, observed: policy(withRules(gcp(v1beta1.DefaultRulePriority, "allow", "*"))),
				inline: []v1beta1.PolicyRule{inlineRule(v1beta1.DefaultRulePriority, "deny(403)", "*")}},
			want: RulePlan{Conflicts: []Conflict{{Priority: v1beta1.DefaultRulePriority,
				Message: "inline rule at priority 2147483647 is ignored: set the default rule through defaultRule"}}},
		},
		"DuplicatePriority": {
			reason: "The first of two inline rules at one priority wins; the second is a conflict.",
			args: args{inlineSet: true, observed: policy(withRules(gcp(7, "allow", "*"))),
				inline: []v1beta1.PolicyRule{inlineRule(7, "allow", "*"), inlineRule(7, "deny(403)", "*")}},
			want: RulePlan{Conflicts: []Conflict{{Priority: 7,
				Message: "inline rule at priority 7 is ignored: an earlier inline rule has the same priority"}}},
		},
		"NilObserved": {
			reason: "Against a missing policy every inline rule is added.",
			args:   args{inlineSet: true, inline: []v1beta1.PolicyRule{inlineRule(0, "allow", "*")}},
			want: RulePlan{Add: []*compute.SecurityPolicyRule{
				GenerateRule(0, inlineRule(0, "allow", "*").RuleParameters)}},
		},
		"NilAndDuplicateObserved": {
			reason: "nil rules are skipped and a priority is removed once.",
			args:   args{inlineSet: true, observed: policy(withRules(nil, gcp(3, "allow", "*"), gcp(3, "allow", "*")))},
			want:   RulePlan{Remove: []int64{3}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanRules(tc.args.inline, tc.args.inlineSet, tc.args.observed, tc.args.claims)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nPlanRules(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRulePlanEmptyAndDescribe(t *testing.T) {
	type want struct {
		empty    bool
		describe string
	}
	cases := map[string]struct {
		reason string
		plan   RulePlan
		want   want
	}{
		"Zero": {reason: "A zero plan is empty and says nothing.", want: want{empty: true}},
		"ConflictsOnly": {
			reason: "Conflicts are reported but write nothing.",
			plan:   RulePlan{Conflicts: []Conflict{{Priority: 1, Message: "m1"}, {Priority: 2, Message: "m2"}}},
			want:   want{empty: true, describe: "m1; m2"},
		},
		"Everything": {
			reason: "Every part of the plan is summarised in apply order.",
			plan: RulePlan{
				Add:       []*compute.SecurityPolicyRule{{Priority: 0}, {Priority: 1000}},
				Patch:     []*compute.SecurityPolicyRule{{Priority: 2000}},
				Remove:    []int64{3000},
				Conflicts: []Conflict{{Priority: 4000, Message: "m"}},
			},
			want: want{describe: "add rules at priorities [0 1000]; patch rules at priorities [2000]; remove rules at priorities [3000]; m"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, want{empty: tc.plan.Empty(), describe: tc.plan.Describe()}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nEmpty(), Describe(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlanRulesMakeBeforeBreak replays a plan step by step, as the
// SecurityPolicy controller applies it (Add, Widen, Patch, Remove), and
// checks that every range the desired rules allow and GCP allowed before is
// allowed after every single step. Regression: patches ran by priority, so
// when ranges moved between existing rules (here in a cycle, 100 -> 101 ->
// 102 -> 100) each moved range was missing from GCP between two patches.
func TestPlanRulesMakeBeforeBreak(t *testing.T) {
	gcp := func(priority int64, action string, ranges ...string) *compute.SecurityPolicyRule {
		r := rule(priority, action, withMatch(srcIPs(ranges...)))
		asGCPReturnsIt(r)
		return r
	}
	cases := map[string]struct {
		reason   string
		observed []*compute.SecurityPolicyRule
		inline   []v1beta1.PolicyRule
		widened  int
	}{
		"Cycle": {
			reason:   "Every rule hands its range to the next one; each must be widened first.",
			observed: []*compute.SecurityPolicyRule{gcp(100, "allow", "10.0.0.1"), gcp(101, "allow", "10.0.0.2"), gcp(102, "allow", "10.0.0.3")},
			inline:   []v1beta1.PolicyRule{inlineRule(100, "allow", "10.0.0.3/32"), inlineRule(101, "allow", "10.0.0.1/32"), inlineRule(102, "allow", "10.0.0.2/32")},
			widened:  3,
		},
		"MoveToHigherPriority": {
			reason:   "A range moving from 100 to 200 reaches 200 before it leaves 100: no widening needed, only order.",
			observed: []*compute.SecurityPolicyRule{gcp(100, "allow", "10.0.0.1", "10.0.0.9"), gcp(200, "allow", "10.0.0.2")},
			inline:   []v1beta1.PolicyRule{inlineRule(100, "allow", "10.0.0.9"), inlineRule(200, "allow", "10.0.0.2", "10.0.0.1")},
			widened:  1,
		},
		"MoveToNewRuleAndAction": {
			reason:   "A range leaves a rule that becomes a deny; it is added elsewhere first.",
			observed: []*compute.SecurityPolicyRule{gcp(100, "allow", "10.0.0.1"), gcp(300, "allow", "10.0.0.5")},
			inline:   []v1beta1.PolicyRule{inlineRule(100, "deny(403)", "10.0.0.66"), inlineRule(150, "allow", "10.0.0.1")},
		},
		"ChainOfFullRules": {
			reason: "200 cannot be widened (12 ranges): it must hand its ranges to 300 before 100 hands its ranges to it.",
			observed: []*compute.SecurityPolicyRule{
				gcp(100, "allow", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"),
				gcp(200, "allow", "10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.2.0.5", "10.2.0.6"),
				gcp(300, "allow", "10.3.0.1"),
			},
			inline: []v1beta1.PolicyRule{
				inlineRule(100, "allow", "10.1.0.1"),
				inlineRule(200, "allow", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"),
				inlineRule(300, "allow", "10.3.0.1", "10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.2.0.5", "10.2.0.6"),
			},
			widened: 1,
		},
		"StableRangesNeedNoWidening": {
			reason: "100 and 200 swap ranges and both are full; 10.9.0.1 moves from 100 to 200 but 50, which the plan leaves alone, holds it throughout, so 100 is widened with 10.0.0.99 only and fits in 10 ranges.",
			observed: []*compute.SecurityPolicyRule{
				gcp(50, "allow", "10.9.0.1"),
				gcp(100, "allow", "10.9.0.1", "10.0.0.99", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8"),
				gcp(200, "allow", "10.2.0.99", "10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.2.0.5", "10.2.0.6", "10.2.0.7", "10.2.0.8", "10.2.0.9"),
			},
			inline: []v1beta1.PolicyRule{
				inlineRule(50, "allow", "10.9.0.1"),
				inlineRule(100, "allow", "10.2.0.99", "10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.7", "10.1.0.8"),
				inlineRule(200, "allow", "10.0.0.99", "10.9.0.1", "10.3.0.1", "10.3.0.2", "10.3.0.3", "10.3.0.4", "10.3.0.5", "10.3.0.6", "10.3.0.7", "10.3.0.8"),
			},
			widened: 1,
		},
		"MoveToPreview": {
			reason:   "Regression: a rule switching to preview holds no range, so it must not be widened (a widened preview rule enforces nothing); the rule taking its range over is patched first.",
			observed: []*compute.SecurityPolicyRule{gcp(100, "allow", "10.0.0.1"), gcp(200, "allow", "10.0.0.2")},
			inline: []v1beta1.PolicyRule{
				inPreview(inlineRule(100, "allow", "10.0.0.1")),
				inlineRule(200, "allow", "10.0.0.2", "10.0.0.1"),
			},
		},
		"FullRule": {
			reason:   "Ten ranges cannot be widened; ordering still puts the narrowing patch last.",
			observed: []*compute.SecurityPolicyRule{gcp(100, "allow", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10"), gcp(50, "allow", "10.1.0.1")},
			inline: []v1beta1.PolicyRule{
				inlineRule(100, "allow", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10", "10.0.0.11"),
				inlineRule(50, "allow", "10.1.0.1", "10.0.0.1"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := policy(withRules(append(tc.observed, gcp(v1beta1.DefaultRulePriority, "deny(403)", "*"))...))
			plan := PlanRules(tc.inline, true, observed, nil)
			if len(plan.Widen) != tc.widened {
				t.Errorf("\n%s\nPlanRules(...): %d widened rules, want %d: %+v", tc.reason, len(plan.Widen), tc.widened, plan.Widen)
			}
			// Ranges that must stay allowed: allowed before and after.
			must := map[string]bool{}
			after := PlanRules(tc.inline, true, nil, nil).Add
			for _, r := range after {
				for _, rg := range allowedRanges(r) {
					must[CanonicalRange(rg)] = true
				}
			}
			state := map[int64]*compute.SecurityPolicyRule{}
			for _, r := range observed.Rules {
				state[r.Priority] = r
			}
			for rg := range must {
				if !allowedIn(state, rg) {
					delete(must, rg) // not allowed before: not "still wanted"
				}
			}
			step := func(what string, prio int64, r *compute.SecurityPolicyRule) {
				if r == nil {
					delete(state, prio)
				} else {
					state[prio] = r
				}
				for rg := range must {
					if !allowedIn(state, rg) {
						t.Errorf("\n%s\nafter %s %d: %s is not allowed by any rule", tc.reason, what, prio, rg)
					}
				}
			}
			for _, r := range plan.Add {
				step("add", r.Priority, r)
			}
			for _, r := range plan.Widen {
				step("widen", r.Priority, r)
			}
			for _, r := range plan.Patch {
				step("patch", r.Priority, r)
			}
			for _, p := range plan.Remove {
				step("remove", p, nil)
			}
			final := policy()
			for _, r := range state {
				final.Rules = append(final.Rules, r)
			}
			if again := PlanRules(tc.inline, true, final, nil); !again.Empty() {
				t.Errorf("\n%s\nthe plan does not reach the spec; still to do: %s", tc.reason, again.Describe())
			}
		})
	}
}

func allowedIn(state map[int64]*compute.SecurityPolicyRule, rg string) bool {
	for _, r := range state {
		for _, have := range allowedRanges(r) {
			if CanonicalRange(have) == rg {
				return true
			}
		}
	}
	return false
}
