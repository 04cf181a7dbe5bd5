package securitypolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
)

func TestClaimedInline(t *testing.T) {
	cases := map[string]struct {
		reason string
		plan   gcppolicy.PolicyPlan
		want   int
	}{
		"None": {
			reason: "A plan without conflicts counts nothing.",
		},
		"Claimed": {
			reason: "Each inline rule a SecurityPolicyRule claims counts once; a conflict with no claimant (a duplicate priority) is not an ownership conflict.",
			plan: gcppolicy.PolicyPlan{Rules: gcppolicy.RulePlan{Conflicts: []gcppolicy.Conflict{
				{Priority: 100, Claimant: "team-a/r100"},
				{Priority: 200, Claimant: "team-b/r200"},
				{Priority: 300},
			}}},
			want: 2,
		},
		"DefaultRule": {
			reason: "A defaultRule a SecurityPolicyRule claims counts too.",
			plan:   gcppolicy.PolicyPlan{DefaultClaimedBy: "team-a/default"},
			want:   1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, claimedInline(tc.plan)); diff != "" {
				t.Errorf("\n%s\nclaimedInline(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
