package apivalues

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func expr(x string) v1beta1.RuleParameters {
	return v1beta1.RuleParameters{Action: "allow", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: x}}}
}

func TestPolicyFeatures(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1beta1.SecurityPolicyParameters
		want   []Feature
	}{
		"None": {
			reason: "Ranges, WAF expressions and a disabled Adaptive Protection need nothing.",
			p: v1beta1.SecurityPolicyParameters{
				AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{Enable: ptr(false)}},
				DdosProtectionConfig:     &v1beta1.DdosProtectionConfig{DdosProtection: ptr("STANDARD")},
				Rules: []v1beta1.PolicyRule{{Priority: 10, RuleParameters: expr("evaluatePreconfiguredWaf('sqli-v33-stable')")},
					{Priority: 20, RuleParameters: expr("evaluatePreconfiguredExpr('xss-stable')")}},
			},
		},
		"Every": {
			reason: "Each Enterprise feature is found where the spec uses it.",
			p: v1beta1.SecurityPolicyParameters{
				AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{Enable: ptr(true),
					ThresholdConfigs: []v1beta1.ThresholdConfig{{Name: "a"}, {Name: "b", AutoDeployLoadThreshold: ptr(0.5)}}}},
				DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED")},
				DefaultRule:          ptr(expr("evaluateThreatIntelligence('iplist-known-malicious-ips')")),
				Rules: []v1beta1.PolicyRule{
					{Priority: 10, RuleParameters: expr("evaluateAddressGroup('office', origin.ip)")},
					{Priority: 20, RuleParameters: expr(`evaluatePreconfiguredExpr("sourceiplist-fastly") || evaluateOrganizationAddressGroup('corp', origin.ip)`)},
				},
			},
			want: []Feature{
				{Path: "spec.forProvider.adaptiveProtectionConfig.layer7DdosDefenseConfig.enable", Name: FeatureAdaptiveProtection},
				{Path: "spec.forProvider.adaptiveProtectionConfig.layer7DdosDefenseConfig.thresholdConfigs[1]", Name: FeatureAutoDeploy},
				{Path: "spec.forProvider.ddosProtectionConfig.ddosProtection", Name: FeatureAdvancedDdos},
				{Path: "spec.forProvider.defaultRule.match.expr.expression", Name: FeatureThreatIntelligence},
				{Path: "spec.forProvider.rules[priority=10].match.expr.expression", Name: FeatureAddressGroups},
				{Path: "spec.forProvider.rules[priority=20].match.expr.expression", Name: FeatureAddressGroups},
				{Path: "spec.forProvider.rules[priority=20].match.expr.expression", Name: FeatureNamedIPLists},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PolicyFeatures(tc.p)); diff != "" {
				t.Errorf("\n%s\nPolicyFeatures(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTierCondition(t *testing.T) {
	fs := []Feature{
		{Path: "spec.forProvider.rules[priority=20].match.expr.expression", Name: FeatureNamedIPLists},
		{Path: "spec.forProvider.rules[priority=10].match.expr.expression", Name: FeatureAddressGroups},
	}
	uses := "address groups (spec.forProvider.rules[priority=10].match.expr.expression), named IP address lists (spec.forProvider.rules[priority=20].match.expr.expression)"
	cases := map[string]struct {
		reason string
		tier   string
		err    error
		want   xpv2.Condition
	}{
		"Standard": {
			reason: "A Standard project: False, naming the tier, the features and how to change the tier.",
			tier:   "CA_STANDARD",
			want: xpv2.Condition{Type: TypeTier, Status: corev1.ConditionFalse, Reason: ReasonNeedsEnterprise,
				Message: "The spec uses Cloud Armor Enterprise features: " + uses + ". Project p is on CA_STANDARD, so GCP refuses or limits them. " +
					"Enroll the project in Cloud Armor Enterprise: a ProjectCloudArmorTier with spec.forProvider.cloudArmorTier CA_ENTERPRISE_PAYGO (or CA_ENTERPRISE_ANNUAL), " +
					"or gcloud compute project-info update --project p --cloud-armor-tier CA_ENTERPRISE_PAYGO"},
		},
		"Enterprise": {
			reason: "An Enterprise project: True.",
			tier:   "CA_ENTERPRISE_ANNUAL",
			want: xpv2.Condition{Type: TypeTier, Status: corev1.ConditionTrue, Reason: ReasonEnterpriseTier,
				Message: "Project p is on CA_ENTERPRISE_ANNUAL, which the spec's Cloud Armor Enterprise features need: " + uses},
		},
		"Unreadable": {
			reason: "A tier that cannot be read: Unknown, with why.",
			err:    errors.New("googleapi: Error 403:\n forbidden"),
			want: xpv2.Condition{Type: TypeTier, Status: corev1.ConditionUnknown, Reason: ReasonTierUnknown,
				Message: "The spec uses Cloud Armor Enterprise features: " + uses + ". Cannot read the Cloud Armor tier of project p to say whether it has them: googleapi: Error 403: forbidden"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := TierCondition("p", tc.tier, tc.err, fs)
			if diff := cmp.Diff(tc.want, got, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nTierCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReportTier(t *testing.T) {
	used := []Feature{{Path: "spec.forProvider.match.expr.expression", Name: FeatureAddressGroups}}
	cases := map[string]struct {
		reason string
		had    bool
		fs     []Feature
		reads  int
		want   xpv2.Condition
	}{
		"NeverUsed": {
			reason: "A spec that never used an Enterprise feature gets no condition (GetCondition's Unknown), and costs no read.",
			want:   xpv2.Condition{Type: TypeTier, Status: corev1.ConditionUnknown},
		},
		"Used": {
			reason: "A spec that uses one reads the tier once.",
			fs:     used,
			reads:  1,
			want:   TierCondition("p", "CA_STANDARD", nil, used),
		},
		"NoLonger": {
			reason: "A spec that no longer uses one says so, without a read.",
			had:    true,
			want:   xpv2.Condition{Type: TypeTier, Status: corev1.ConditionTrue, Reason: ReasonNoEnterpriseFeature, Message: "The spec uses no Cloud Armor Enterprise feature"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1beta1.SecurityPolicyRule{}
			if tc.had {
				cr.SetConditions(TierCondition("p", "CA_STANDARD", nil, used))
			}
			reads := 0
			ReportTier(cr, "p", tc.fs, func(string) (string, error) { reads++; return "CA_STANDARD", nil })
			if reads != tc.reads {
				t.Errorf("\n%s\nReportTier(...): want %d reads, got %d", tc.reason, tc.reads, reads)
			}
			if diff := cmp.Diff(tc.want, cr.GetCondition(TypeTier), test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nReportTier(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
