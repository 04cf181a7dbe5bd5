package securitypolicyrule

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
)

// TestObserveTier checks that a rule whose expression needs Cloud Armor
// Enterprise reports its project's tier in the Tier condition, from the
// Client's kept tier, and that other rules read no tier.
func TestObserveTier(t *testing.T) {
	withExpr := func(x string) ruleModifier {
		return func(cr *v1beta1.SecurityPolicyRule) {
			cr.Spec.ForProvider.Match = &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: x}}
		}
	}
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicyRule
		tier   string
		calls  []string
		want   corev1.ConditionStatus
	}{
		"NamedListStandard": {
			reason: "A named IP list in a Standard project: Tier=False.",
			cr:     rule(withExpr("evaluatePreconfiguredExpr('sourceiplist-fastly')")),
			tier:   gcp.TierStandard,
			calls:  []string{"Tier p"},
			want:   corev1.ConditionFalse,
		},
		"AddressGroupEnterprise": {
			reason: "An address group in an Enterprise project: Tier=True.",
			cr:     rule(withExpr("evaluateAddressGroup('office', origin.ip)")),
			tier:   gcp.TierEnterprisePaygo,
			calls:  []string{"Tier p"},
			want:   corev1.ConditionTrue,
		},
		"Ranges": {
			reason: "A rule of ranges reads no tier and has no Tier condition.",
			cr:     rule(withRanges("10.0.0.0/8")),
			want:   corev1.ConditionUnknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &gcptest.Projects{TierFn: func(string) (string, error) { return tc.tier, nil }}
			e := &external{policies: &fakePolicies{GetFn: getReturns(gcpPolicy(), nil)}, owners: fakeOwners{},
				key: gcp.PolicyKey{Project: "p", Name: policy}, projects: p}
			if _, err := e.Observe(context.Background(), tc.cr); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.calls, p.Calls); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if got := tc.cr.GetCondition(apivalues.TypeTier).Status; got != tc.want {
				t.Errorf("\n%s\nObserve(...): want Tier %s, got %s", tc.reason, tc.want, got)
			}
		})
	}
}
