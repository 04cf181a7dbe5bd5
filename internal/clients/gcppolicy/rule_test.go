package gcppolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func ptr[T any](v T) *T { return &v }

// srcIPs returns a basic match on ranges.
func srcIPs(ranges ...string) *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{
		VersionedExpr: "SRC_IPS_V1",
		Config:        &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: ranges},
	}
}

// specSrcIPs returns a spec basic match on ranges.
func specSrcIPs(ranges ...v1beta1.IPRange) *v1beta1.RuleMatcher {
	return &v1beta1.RuleMatcher{VersionedExpr: ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: ranges}}
}

// rule builds a Compute rule from modifiers.
func rule(priority int64, action string, mods ...func(*compute.SecurityPolicyRule)) *compute.SecurityPolicyRule {
	r := &compute.SecurityPolicyRule{Priority: priority, Action: action}
	for _, m := range mods {
		m(r)
	}
	return r
}

func withMatch(m *compute.SecurityPolicyRuleMatcher) func(*compute.SecurityPolicyRule) {
	return func(r *compute.SecurityPolicyRule) { r.Match = m }
}

// asGCPReturnsIt adds the fill-ins GCP adds to every rule it returns.
func asGCPReturnsIt(r *compute.SecurityPolicyRule) {
	r.Kind = "compute#securityPolicyRule"
	r.ForceSendFields = nil
}

func TestGenerateRule(t *testing.T) {
	type args struct {
		priority int64
		p        v1beta1.RuleParameters
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *compute.SecurityPolicyRule
	}{
		"BasicMatch": {
			reason: "A basic source-IP match should be sent with the ranges as written.",
			args: args{priority: 1000, p: v1beta1.RuleParameters{
				Action: "allow", Description: ptr("office"), Preview: ptr(true),
				Match: specSrcIPs("203.0.113.0/24", "198.51.100.7"),
			}},
			want: &compute.SecurityPolicyRule{Priority: 1000, Action: "allow", Description: "office", Preview: true,
				Match: srcIPs("203.0.113.0/24", "198.51.100.7")},
		},
		"PriorityZero": {
			reason: "Priority 0 must be force-sent, or the Go client drops it.",
			args:   args{priority: 0, p: v1beta1.RuleParameters{Action: "deny(403)", Match: specSrcIPs("*")}},
			want: &compute.SecurityPolicyRule{Priority: 0, Action: "deny(403)", Match: srcIPs("*"),
				ForceSendFields: []string{"Priority"}},
		},
		"ExplicitFalseAndEmpty": {
			reason: "An explicit preview false and description \"\" must be force-sent so patchRule clears them.",
			args: args{priority: 5, p: v1beta1.RuleParameters{Action: "allow", Preview: ptr(false), Description: ptr(""),
				Match: specSrcIPs("*")}},
			want: &compute.SecurityPolicyRule{Priority: 5, Action: "allow", Match: srcIPs("*"),
				ForceSendFields: []string{"Preview", "Description"}},
		},
		"AdvancedMatch": {
			reason: "Every expr field and the reCAPTCHA options should be converted.",
			args: args{priority: 10, p: v1beta1.RuleParameters{Action: "deny(403)", Match: &v1beta1.RuleMatcher{
				Expr: &v1beta1.Expr{Expression: "origin.region_code == 'XX'", Title: ptr("t"), Description: ptr("d"), Location: ptr("l")},
				ExprOptions: &v1beta1.RuleMatcherExprOptions{RecaptchaOptions: &v1beta1.RecaptchaOptions{
					ActionTokenSiteKeys: []string{"a"}, SessionTokenSiteKeys: []string{"s1", "s2"}}},
			}}},
			want: &compute.SecurityPolicyRule{Priority: 10, Action: "deny(403)", Match: &compute.SecurityPolicyRuleMatcher{
				Expr: &compute.Expr{Expression: "origin.region_code == 'XX'", Title: "t", Description: "d", Location: "l"},
				ExprOptions: &compute.SecurityPolicyRuleMatcherExprOptions{RecaptchaOptions: &compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{
					ActionTokenSiteKeys: []string{"a"}, SessionTokenSiteKeys: []string{"s1", "s2"}}},
			}},
		},
		"EmptyExprOptions": {
			reason: "exprOptions {} is sent as {}; normalisation makes it equal to absent.",
			args: args{priority: 10, p: v1beta1.RuleParameters{Action: "allow", Match: &v1beta1.RuleMatcher{
				Expr: &v1beta1.Expr{Expression: "true"}, ExprOptions: &v1beta1.RuleMatcherExprOptions{}}}},
			want: &compute.SecurityPolicyRule{Priority: 10, Action: "allow", Match: &compute.SecurityPolicyRuleMatcher{
				Expr: &compute.Expr{Expression: "true"}, ExprOptions: &compute.SecurityPolicyRuleMatcherExprOptions{}}},
		},
		"NetworkMatch": {
			reason: "Every networkMatch field, user-defined fields included, should be converted.",
			args: args{priority: 20, p: v1beta1.RuleParameters{Action: "allow", NetworkMatch: &v1beta1.RuleNetworkMatcher{
				SrcIpRanges: []v1beta1.IPRange{"10.0.0.0/8"}, DestIpRanges: []v1beta1.IPRange{"192.0.2.1"},
				IpProtocols: []string{"tcp"}, SrcPorts: []string{"1000-2000"}, DestPorts: []string{"443"},
				SrcRegionCodes: []string{"CH"}, SrcAsns: []int64{15169},
				UserDefinedFields: []v1beta1.UserDefinedFieldMatch{{Name: "ttl", Values: []string{"0x10-0x20"}}, {Name: "flags"}},
			}}},
			want: &compute.SecurityPolicyRule{Priority: 20, Action: "allow", NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{
				SrcIpRanges: []string{"10.0.0.0/8"}, DestIpRanges: []string{"192.0.2.1"},
				IpProtocols: []string{"tcp"}, SrcPorts: []string{"1000-2000"}, DestPorts: []string{"443"},
				SrcRegionCodes: []string{"CH"}, SrcAsns: []int64{15169},
				UserDefinedFields: []*compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{
					{Name: "ttl", Values: []string{"0x10-0x20"}}, {Name: "flags"}},
			}},
		},
		"RateLimitEnforceOnKey": {
			reason: "Every rateLimitOptions field should be converted.",
			args: args{priority: 30, p: v1beta1.RuleParameters{Action: "rate_based_ban", Match: specSrcIPs("*"),
				RateLimitOptions: &v1beta1.RateLimitOptions{
					RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 100, IntervalSec: 60},
					ConformAction:      ptr("allow"), ExceedAction: ptr("redirect"),
					ExceedRedirectOptions: &v1beta1.RedirectOptions{Type: "EXTERNAL_302", Target: ptr("https://example.com")},
					EnforceOnKey:          ptr("HTTP_HEADER"), EnforceOnKeyName: ptr("X-Client"),
					BanThreshold: &v1beta1.RateLimitThreshold{Count: 1000, IntervalSec: 600}, BanDurationSec: ptr(int64(3600)),
				}}},
			want: &compute.SecurityPolicyRule{Priority: 30, Action: "rate_based_ban", Match: srcIPs("*"),
				RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
					RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 100, IntervalSec: 60},
					ConformAction:      "allow", ExceedAction: "redirect",
					ExceedRedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "EXTERNAL_302", Target: "https://example.com"},
					EnforceOnKey:          "HTTP_HEADER", EnforceOnKeyName: "X-Client",
					BanThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 1000, IntervalSec: 600}, BanDurationSec: 3600,
				}},
		},
		"RateLimitEnforceOnKeyConfigs": {
			reason: "enforceOnKeyConfigs should be converted in order.",
			args: args{priority: 31, p: v1beta1.RuleParameters{Action: "throttle", Match: specSrcIPs("*"),
				RateLimitOptions: &v1beta1.RateLimitOptions{EnforceOnKeyConfigs: []v1beta1.EnforceOnKeyConfig{
					{EnforceOnKeyType: "HTTP_PATH"}, {EnforceOnKeyType: "HTTP_COOKIE", EnforceOnKeyName: ptr("session")}}}}},
			want: &compute.SecurityPolicyRule{Priority: 31, Action: "throttle", Match: srcIPs("*"),
				RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
					{EnforceOnKeyType: "HTTP_PATH"}, {EnforceOnKeyType: "HTTP_COOKIE", EnforceOnKeyName: "session"}}}},
		},
		"RedirectAndHeaders": {
			reason: "redirectOptions and headerAction should be converted.",
			args: args{priority: 40, p: v1beta1.RuleParameters{Action: "redirect", Match: specSrcIPs("*"),
				RedirectOptions: &v1beta1.RedirectOptions{Type: "GOOGLE_RECAPTCHA"},
				HeaderAction: &v1beta1.HTTPHeaderAction{RequestHeadersToAdds: []v1beta1.HTTPHeaderOption{
					{HeaderName: "X-A", HeaderValue: ptr("1")}, {HeaderName: "X-B"}}}}},
			want: &compute.SecurityPolicyRule{Priority: 40, Action: "redirect", Match: srcIPs("*"),
				RedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"},
				HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "X-A", HeaderValue: "1"}, {HeaderName: "X-B"}}}},
		},
		"EmptyHeaderAction": {
			reason: "headerAction {} is sent as {}.",
			args: args{priority: 41, p: v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("*"),
				HeaderAction: &v1beta1.HTTPHeaderAction{}}},
			want: &compute.SecurityPolicyRule{Priority: 41, Action: "allow", Match: srcIPs("*"),
				HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{}},
		},
		"WafExclusions": {
			reason: "All five field-parameter lists of a WAF exclusion should be converted.",
			args: args{priority: 50, p: v1beta1.RuleParameters{Action: "deny(403)",
				Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "evaluatePreconfiguredWaf('sqli-v33-stable')"}},
				PreconfiguredWafConfig: &v1beta1.PreconfiguredWafConfig{Exclusions: []v1beta1.WafExclusion{{
					TargetRuleSet: "sqli-v33-stable", TargetRuleIds: []string{"owasp-crs-v030301-id942110-sqli"},
					RequestHeadersToExclude:     []v1beta1.WafExclusionFieldParams{{Op: "EQUALS", Val: ptr("h")}},
					RequestCookiesToExclude:     []v1beta1.WafExclusionFieldParams{{Op: "STARTS_WITH", Val: ptr("c")}},
					RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParams{{Op: "ENDS_WITH", Val: ptr("q")}},
					RequestUrisToExclude:        []v1beta1.WafExclusionFieldParams{{Op: "CONTAINS", Val: ptr("/u")}},
					RequestBodiesToExclude:      []v1beta1.WafExclusionFieldParams{{Op: "EQUALS_ANY"}},
				}}}}},
			want: &compute.SecurityPolicyRule{Priority: 50, Action: "deny(403)",
				Match: &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "evaluatePreconfiguredWaf('sqli-v33-stable')"}},
				PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{{
					TargetRuleSet: "sqli-v33-stable", TargetRuleIds: []string{"owasp-crs-v030301-id942110-sqli"},
					RequestHeadersToExclude:     []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS", Val: "h"}},
					RequestCookiesToExclude:     []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "STARTS_WITH", Val: "c"}},
					RequestQueryParamsToExclude: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "ENDS_WITH", Val: "q"}},
					RequestUrisToExclude:        []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "CONTAINS", Val: "/u"}},
					RequestBodiesToExclude:      []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS_ANY"}},
				}}}},
		},
		"DefaultRuleMatchesAll": {
			reason: "A default rule without a condition must match \"*\": GCP requires it.",
			args:   args{priority: v1beta1.DefaultRulePriority, p: v1beta1.RuleParameters{Action: "deny(403)"}},
			want:   &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)", Match: srcIPs("*")},
		},
		"DefaultRuleNetworkMatch": {
			reason: "A default rule with a networkMatch keeps it and gets no match.",
			args: args{priority: v1beta1.DefaultRulePriority, p: v1beta1.RuleParameters{Action: "allow",
				NetworkMatch: &v1beta1.RuleNetworkMatcher{SrcIpRanges: []v1beta1.IPRange{"*"}}}},
			want: &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "allow",
				NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{SrcIpRanges: []string{"*"}}},
		},
		"EmptyLists": {
			reason: "Empty lists in the spec are generated as absent.",
			args: args{priority: 60, p: v1beta1.RuleParameters{Action: "allow",
				NetworkMatch:           &v1beta1.RuleNetworkMatcher{SrcIpRanges: []v1beta1.IPRange{}, SrcAsns: []int64{}},
				PreconfiguredWafConfig: &v1beta1.PreconfiguredWafConfig{Exclusions: []v1beta1.WafExclusion{}}}},
			want: &compute.SecurityPolicyRule{Priority: 60, Action: "allow",
				NetworkMatch:           &compute.SecurityPolicyRuleNetworkMatcher{},
				PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GenerateRule(tc.args.priority, tc.args.p)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGenerateRule(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGenerateDefaultRule(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1beta1.RuleParameters
		want   *compute.SecurityPolicyRule
	}{
		"DenyAll": {
			reason: "The default rule is at priority 2147483647 and matches everything.",
			p:      v1beta1.RuleParameters{Action: "deny(403)", Description: ptr("Default rule")},
			want: &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)",
				Description: "Default rule", Match: srcIPs("*")},
		},
		"ExplicitMatch": {
			reason: "An explicit match on the default rule is sent as written.",
			p:      v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("*")},
			want:   &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "allow", Match: srcIPs("*")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GenerateDefaultRule(tc.p)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGenerateDefaultRule(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
