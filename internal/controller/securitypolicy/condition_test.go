package securitypolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

func TestConflictCondition(t *testing.T) {
	type args struct {
		conflicts        []gcppolicy.Conflict
		defaultClaimedBy string
		refused          []ownership.Refusal
	}
	c1000 := gcppolicy.Conflict{Priority: 1000, Claimant: claimant, Message: claimMsg(1000)}
	c3000 := gcppolicy.Conflict{Priority: 3000, Claimant: claimant, Message: claimMsg(3000)}
	defMsg := "defaultRule is ignored: SecurityPolicyRule " + claimant + " claims priority 2147483647"
	refusal := ownership.Refusal{Rule: "team-b/sneaky", Priority: 100,
		Message: `SecurityPolicyRule team-b/sneaky may not claim priority 100: namespace "team-b" is not admitted by spec.allowedRules`}

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
			args:   args{conflicts: []gcppolicy.Conflict{c1000, c3000}},
			want:   conflicting(claimMsg(1000) + "; " + claimMsg(3000)),
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default rule is reported first.",
			args:   args{conflicts: []gcppolicy.Conflict{c1000}, defaultClaimedBy: claimant},
			want:   conflicting(defMsg + "; " + claimMsg(1000)),
		},
		"OnlyDefaultRuleClaimed": {
			reason: "A claimed default rule alone is a conflict.",
			args:   args{defaultClaimedBy: claimant},
			want:   conflicting(defMsg),
		},
		"ClaimRefused": {
			reason: "A rule object from a namespace the policy does not admit is reported, with its own reason.",
			args:   args{refused: []ownership.Refusal{refusal}},
			want: xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionTrue, Reason: ReasonClaimRefused,
				Message: refusal.Message},
		},
		"ConflictAndClaimRefused": {
			reason: "Inline conflicts and refused claims are reported together, conflicts first.",
			args:   args{conflicts: []gcppolicy.Conflict{c1000}, refused: []ownership.Refusal{refusal}},
			want:   conflicting(claimMsg(1000) + "; " + refusal.Message),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := conflictCondition(tc.args.conflicts, tc.args.defaultClaimedBy, tc.args.refused)
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
	claims := gcppolicy.Claims{9000: claimant, 100: claimant, 4000: claimant, 20: claimant, 700: claimant, defPrio: claimant}
	want := conflicting(strings.Join([]string{
		"defaultRule is ignored: SecurityPolicyRule " + claimant + " claims priority 2147483647",
		claimMsg(20), claimMsg(100), claimMsg(700), claimMsg(4000), claimMsg(9000)}, "; "))

	cr := policy()
	for i := range 20 {
		d := gcppolicy.PlanPolicy(p, gcpPolicy(), gcppolicy.Ownership{Claims: claims})
		got := conflictCondition(d.Rules.Conflicts, d.DefaultClaimedBy, nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("run %d: conflictCondition(...): -want, +got:\n%s", i, diff)
		}
		cr.SetConditions(got)
	}
	// Setting an equal condition again keeps the first transition time.
	first := cr.GetCondition(TypeRuleConflict).LastTransitionTime
	d := gcppolicy.PlanPolicy(p, gcpPolicy(), gcppolicy.Ownership{Claims: claims})
	cr.SetConditions(conflictCondition(d.Rules.Conflicts, d.DefaultClaimedBy, nil))
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
