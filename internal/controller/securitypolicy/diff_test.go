package securitypolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
)

func TestUnclaimed(t *testing.T) {
	type args struct {
		p      v1beta1.SecurityPolicyParameters
		claims securitypolicy.Claims
	}
	r500, r2000 := inline(500, deny403, rangeA), inline(2000, deny403, rangeB)
	cases := map[string]struct {
		reason string
		args   args
		want   v1beta1.SecurityPolicyParameters
	}{
		"RulesUnset": {
			reason: "Unset rules stay unset (hands off).",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("d")}, claims: securitypolicy.Claims{500: claimant}},
			want:   v1beta1.SecurityPolicyParameters{Description: ptr("d")},
		},
		"RulesEmpty": {
			reason: "rules: [] stays [] (own every unclaimed priority), not unset.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}},
		},
		"NoClaims": {
			reason: "Without claims every inline rule is kept, in order.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r2000, r500}}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r2000, r500}},
		},
		"ClaimedRuleDropped": {
			reason: "An inline rule at a claimed priority is dropped.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500, r2000}},
				claims: securitypolicy.Claims{2000: claimant}},
			want: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500}},
		},
		"AllClaimed": {
			reason: "When every inline rule is claimed the policy still owns the other priorities: [] not unset.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500}},
				claims: securitypolicy.Claims{500: claimant}},
			want: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}},
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default priority drops spec.defaultRule.",
			args: args{p: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
				claims: securitypolicy.Claims{defPrio: claimant}},
			want: v1beta1.SecurityPolicyParameters{},
		},
		"DefaultRuleKept": {
			reason: "An unclaimed default rule is kept.",
			args: args{p: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
				claims: securitypolicy.Claims{500: claimant}},
			want: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := *tc.args.p.DeepCopy()
			got := unclaimed(tc.args.p, tc.args.claims)
			// No EquateEmpty: [] and unset rules mean different things.
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nunclaimed(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(in, tc.args.p); diff != "" {
				t.Errorf("\n%s\nunclaimed(...): modified its input: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}

// diffSummary is the part of a policyDiff a test can state exactly (the
// human-readable diffs are go-cmp output, which is deliberately unstable).
type diffSummary struct {
	Patch            bool
	Labels           bool
	DefaultRule      bool
	DefaultClaimedBy string
	Add              []int64
	PatchRules       []int64
	Remove           []int64
	Conflicts        []int64
	UpToDate         bool
}

func summarise(d policyDiff) diffSummary {
	prio := func(rs []*compute.SecurityPolicyRule) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.Priority)
		}
		return out
	}
	s := diffSummary{Patch: d.patch != "", Labels: d.labels, DefaultRule: d.defaultRule != "", DefaultClaimedBy: d.defaultClaimedBy,
		Add: prio(d.plan.Add), PatchRules: prio(d.plan.Patch), Remove: d.plan.Remove, UpToDate: d.upToDate()}
	for _, c := range d.plan.Conflicts {
		s.Conflicts = append(s.Conflicts, c.Priority)
	}
	return s
}

func TestDiff(t *testing.T) {
	type args struct {
		p      v1beta1.SecurityPolicyParameters
		sp     *compute.SecurityPolicy
		claims securitypolicy.Claims
	}
	params := func(m ...policyModifier) v1beta1.SecurityPolicyParameters { return policy(m...).Spec.ForProvider }
	labelled := gcpPolicy(withGCPDescription("edge"), withGCPLabels(map[string]string{"env": "prod"}))
	withRulesAt := gcpPolicy(withGCPRules(gcpRule(1000, deny403, rangeA), gcpRule(2000, deny403, rangeB)))

	cases := map[string]struct {
		reason string
		args   args
		want   diffSummary
	}{
		"EmptySpec": {
			reason: "A spec that sets nothing is up to date with any policy.",
			args:   args{p: params(), sp: withRulesAt},
			want:   diffSummary{UpToDate: true},
		},
		"Description": {
			reason: "A different description needs a patch.",
			args:   args{p: params(withDescription("new")), sp: labelled},
			want:   diffSummary{Patch: true},
		},
		"LabelsNilDontCare": {
			reason: "Unset labels are don't care.",
			args:   args{p: params(withDescription("edge")), sp: labelled},
			want:   diffSummary{UpToDate: true},
		},
		"LabelsEmpty": {
			reason: "labels: {} removes GCP's labels.",
			args:   args{p: params(withLabels(map[string]string{})), sp: labelled},
			want:   diffSummary{Labels: true},
		},
		"LabelsEmptyNoneInGCP": {
			reason: "labels: {} and a policy without labels agree.",
			args:   args{p: params(withLabels(map[string]string{})), sp: gcpPolicy()},
			want:   diffSummary{UpToDate: true},
		},
		"DefaultRule": {
			reason: "A default rule that differs needs a patchRule.",
			args:   args{p: params(withDefaultRule(deny403)), sp: gcpPolicy()},
			want:   diffSummary{DefaultRule: true},
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default priority is not compared, and records its claimant.",
			args:   args{p: params(withDefaultRule(deny403)), sp: gcpPolicy(), claims: securitypolicy.Claims{defPrio: claimant}},
			want:   diffSummary{DefaultClaimedBy: claimant, UpToDate: true},
		},
		"DefaultClaimedButUnset": {
			reason: "A claimed default priority without spec.defaultRule is no conflict.",
			args:   args{p: params(), sp: gcpPolicy(), claims: securitypolicy.Claims{defPrio: claimant}},
			want:   diffSummary{UpToDate: true},
		},
		"RulesEmpty": {
			reason: "rules: [] removes every unclaimed non-default rule.",
			args:   args{p: params(withRules()), sp: withRulesAt, claims: securitypolicy.Claims{2000: claimant}},
			want:   diffSummary{Remove: []int64{1000}},
		},
		"RulesPlanned": {
			reason: "Inline rules are added, patched, kept or reported against what GCP holds.",
			args: args{p: params(withRules(inline(500, deny403, rangeA), inline(1000, "allow", rangeA), inline(2000, deny403, rangeB))),
				sp: withRulesAt, claims: securitypolicy.Claims{2000: claimant}},
			want: diffSummary{Add: []int64{500}, PatchRules: []int64{1000}, Conflicts: []int64{2000}},
		},
		"ConflictsOnly": {
			reason: "Conflicts alone are reported, not written: up to date.",
			args: args{p: params(withRules(inline(1000, deny403, rangeA), inline(2000, "allow", rangeA))),
				sp: withRulesAt, claims: securitypolicy.Claims{2000: claimant}},
			want: diffSummary{Conflicts: []int64{2000}, UpToDate: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summarise(diff(tc.args.p, tc.args.sp, tc.args.claims))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\ndiff(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPolicyDiffString(t *testing.T) {
	cases := map[string]struct {
		reason string
		d      policyDiff
		want   string
	}{
		"Empty": {
			reason: "Nothing to do is an empty diff.",
			d:      policyDiff{},
			want:   "",
		},
		"Everything": {
			reason: "Each part is one line, in the order Update writes them.",
			d: policyDiff{patch: "description (-want +got): ...", labels: true, defaultRule: "default rule (-want +got): ...",
				plan: securitypolicy.RulePlan{Remove: []int64{1000}}},
			want: "description (-want +got): ...\nlabels differ\ndefault rule (-want +got): ...\nremove rules at priorities [1000]",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.d.String()); diff != "" {
				t.Errorf("\n%s\nString(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConflictCondition(t *testing.T) {
	type args struct {
		conflicts        []securitypolicy.Conflict
		defaultClaimedBy string
	}
	c1000 := securitypolicy.Conflict{Priority: 1000, Claimant: claimant, Message: claimMsg(1000)}
	c3000 := securitypolicy.Conflict{Priority: 3000, Claimant: claimant, Message: claimMsg(3000)}
	defMsg := "defaultRule is ignored: SecurityPolicyRule " + claimant + " claims priority 2147483647"

	cases := map[string]struct {
		reason string
		args   args
		want   xpv2.Condition
	}{
		"NoConflict": {
			reason: "No conflicts is RuleConflict False, with no message.",
			args:   args{},
			want:   noConflict(),
		},
		"Conflicts": {
			reason: "Conflicts are joined with \"; \" in the order given (PlanRules sorts them by priority).",
			args:   args{conflicts: []securitypolicy.Conflict{c1000, c3000}},
			want:   conflicting(claimMsg(1000) + "; " + claimMsg(3000)),
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default rule is reported first.",
			args:   args{conflicts: []securitypolicy.Conflict{c1000}, defaultClaimedBy: claimant},
			want:   conflicting(defMsg + "; " + claimMsg(1000)),
		},
		"OnlyDefaultRuleClaimed": {
			reason: "A claimed default rule alone is a conflict.",
			args:   args{defaultClaimedBy: claimant},
			want:   conflicting(defMsg),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := conflictCondition(tc.args.conflicts, tc.args.defaultClaimedBy)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nconflictCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.LastTransitionTime.IsZero() {
				t.Errorf("\n%s\nconflictCondition(...): want a LastTransitionTime", tc.reason)
			}
		})
	}
}

func TestConflictConditionDeterministic(t *testing.T) {
	// Inline rules out of order, claims in a map: the condition must come out
	// the same every time, sorted by priority, or it would flap and spam
	// status updates.
	p := policy(withDefaultRule(deny403), withRules(
		inline(9000, deny403, rangeA), inline(100, deny403, rangeA), inline(4000, deny403, rangeA),
		inline(20, deny403, rangeA), inline(700, deny403, rangeA))).Spec.ForProvider
	claims := securitypolicy.Claims{9000: claimant, 100: claimant, 4000: claimant, 20: claimant, 700: claimant, defPrio: claimant}
	want := conflicting(strings.Join([]string{
		"defaultRule is ignored: SecurityPolicyRule " + claimant + " claims priority 2147483647",
		claimMsg(20), claimMsg(100), claimMsg(700), claimMsg(4000), claimMsg(9000)}, "; "))

	cr := policy()
	for i := range 20 {
		d := diff(p, gcpPolicy(), claims)
		got := conflictCondition(d.plan.Conflicts, d.defaultClaimedBy)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("run %d: conflictCondition(...): -want, +got:\n%s", i, diff)
		}
		cr.SetConditions(got)
	}
	// Setting an equal condition again keeps the first transition time.
	first := cr.GetCondition(TypeRuleConflict).LastTransitionTime
	d := diff(p, gcpPolicy(), claims)
	cr.SetConditions(conflictCondition(d.plan.Conflicts, d.defaultClaimedBy))
	if got := cr.GetCondition(TypeRuleConflict).LastTransitionTime; !got.Equal(&first) {
		t.Errorf("SetConditions(conflictCondition(...)): LastTransitionTime moved from %v to %v", first, got)
	}
	if diff := cmp.Diff([]xpv2.Condition{want}, cr.Status.Conditions, test.EquateConditions()); diff != "" {
		t.Errorf("conditions: -want, +got:\n%s", diff)
	}
	if got := cr.GetCondition(TypeRuleConflict).Status; got != corev1.ConditionTrue {
		t.Errorf("RuleConflict: want True, got %s", got)
	}
}
