package gcppolicy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// everyField is a rule with every field GCP returns set, spelled as GCP may
// hold it: unsorted ranges, bare addresses, kind and empty messages.
func everyField(priority int64) *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{
		Kind: "compute#securityPolicyRule", Priority: priority, Action: "throttle", Description: "d", Preview: true,
		Match: &compute.SecurityPolicyRuleMatcher{
			Expr: &compute.Expr{Expression: "evaluatePreconfiguredWaf('sqli-v33-stable')", Title: "t", Description: "e", Location: "l"},
			ExprOptions: &compute.SecurityPolicyRuleMatcherExprOptions{RecaptchaOptions: &compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{
				ActionTokenSiteKeys: []string{"a"}, SessionTokenSiteKeys: []string{"s"}}},
		},
		NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{
			SrcIpRanges: []string{"10.0.0.1/8", "192.0.2.1"}, DestIpRanges: []string{"2001:DB8::/32"},
			IpProtocols: []string{"udp", "tcp"}, SrcPorts: []string{"80"}, DestPorts: []string{"443", "8000-8080"},
			SrcRegionCodes: []string{"US", "CA"}, SrcAsns: []int64{64512, 15169},
			UserDefinedFields: []*compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{{Name: "ttl", Values: []string{"2", "1"}}},
		},
		RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
			RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 10, IntervalSec: 60},
			ConformAction:      "allow", ExceedAction: "redirect",
			ExceedRedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "EXTERNAL_302", Target: "https://example.com/"},
			EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
				{EnforceOnKeyType: "HTTP_HEADER", EnforceOnKeyName: "X-Key"}, {EnforceOnKeyType: "IP"}},
			BanThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{}, BanDurationSec: 600,
		},
		RedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"},
		HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
			{HeaderName: "X-A", HeaderValue: "1"}, {}}},
		PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{{
			TargetRuleSet: "sqli-v33-stable", TargetRuleIds: []string{"owasp-crs-v030301-id942110-sqli"},
			RequestHeadersToExclude:     []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS", Val: "h"}},
			RequestCookiesToExclude:     []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS_ANY"}},
			RequestQueryParamsToExclude: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "STARTS_WITH", Val: "q"}},
			RequestUrisToExclude:        []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "ENDS_WITH", Val: "/u"}},
			RequestBodiesToExclude:      []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "CONTAINS", Val: "b"}},
		}}},
	}
}

// everyFieldObserved is everyField(priority) as status reports it.
func everyFieldObserved(priority int64) v1beta1.RuleObservation {
	return v1beta1.RuleObservation{
		Priority: priority, Action: "throttle", Description: "d", Preview: true,
		Match: &v1beta1.RuleMatcherObservation{
			Expr: &v1beta1.ExprObservation{Expression: "evaluatePreconfiguredWaf('sqli-v33-stable')", Title: "t", Description: "e", Location: "l"},
			ExprOptions: &v1beta1.RuleMatcherExprOptionsObservation{RecaptchaOptions: &v1beta1.RecaptchaOptionsObservation{
				ActionTokenSiteKeys: []string{"a"}, SessionTokenSiteKeys: []string{"s"}}},
		},
		NetworkMatch: &v1beta1.RuleNetworkMatcherObservation{
			SrcIpRanges: []string{"10.0.0.0/8", "192.0.2.1/32"}, DestIpRanges: []string{"2001:db8::/32"},
			IpProtocols: []string{"tcp", "udp"}, SrcPorts: []string{"80"}, DestPorts: []string{"443", "8000-8080"},
			SrcRegionCodes: []string{"CA", "US"}, SrcAsns: []int64{15169, 64512},
			UserDefinedFields: []v1beta1.UserDefinedFieldMatchObservation{{Name: "ttl", Values: []string{"1", "2"}}},
		},
		RateLimitOptions: &v1beta1.RateLimitOptionsObservation{
			RateLimitThreshold: &v1beta1.RateLimitThresholdObservation{Count: 10, IntervalSec: 60},
			ConformAction:      "allow", ExceedAction: "redirect",
			ExceedRedirectOptions: &v1beta1.RedirectOptionsObservation{Type: "EXTERNAL_302", Target: "https://example.com/"},
			EnforceOnKeyConfigs: []v1beta1.EnforceOnKeyConfigObservation{
				{EnforceOnKeyType: "HTTP_HEADER", EnforceOnKeyName: "X-Key"}, {EnforceOnKeyType: "IP"}},
			BanDurationSec: 600,
		},
		RedirectOptions: &v1beta1.RedirectOptionsObservation{Type: "GOOGLE_RECAPTCHA"},
		HeaderAction:    &v1beta1.HTTPHeaderActionObservation{RequestHeadersToAdds: []v1beta1.HTTPHeaderOptionObservation{{HeaderName: "X-A", HeaderValue: "1"}}},
		PreconfiguredWafConfig: &v1beta1.PreconfiguredWafConfigObservation{Exclusions: []v1beta1.WafExclusionObservation{{
			TargetRuleSet: "sqli-v33-stable", TargetRuleIds: []string{"owasp-crs-v030301-id942110-sqli"},
			RequestHeadersToExclude:     []v1beta1.WafExclusionFieldParamsObservation{{Op: "EQUALS", Val: "h"}},
			RequestCookiesToExclude:     []v1beta1.WafExclusionFieldParamsObservation{{Op: "EQUALS_ANY"}},
			RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParamsObservation{{Op: "STARTS_WITH", Val: "q"}},
			RequestUrisToExclude:        []v1beta1.WafExclusionFieldParamsObservation{{Op: "ENDS_WITH", Val: "/u"}},
			RequestBodiesToExclude:      []v1beta1.WafExclusionFieldParamsObservation{{Op: "CONTAINS", Val: "b"}},
		}}},
	}
}

func TestGenerateRuleObservation(t *testing.T) {
	cases := map[string]struct {
		reason string
		rule   *compute.SecurityPolicyRule
		want   v1beta1.RuleObservation
	}{
		"Nil": {
			reason: "A nil rule has an empty observation.",
		},
		"EveryField": {
			reason: "Every field GCP returns is reported, in the form the provider compares: canonical sorted ranges, sorted networkMatch sets, empty entries and messages dropped.",
			rule:   everyField(10),
			want:   everyFieldObserved(10),
		},
		"DefaultsNormalisedAway": {
			reason: "GCP's fill-ins (description \"\", preview false, {} messages sent as {}) cost no status.",
			rule: rule(1000, "allow", withMatch(srcIPs("10.0.0.0/8")), func(r *compute.SecurityPolicyRule) {
				r.Kind = "compute#securityPolicyRule"
				r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{}
				r.PreconfiguredWafConfig = &compute.SecurityPolicyRulePreconfiguredWafConfig{}
				r.Match.ExprOptions = &compute.SecurityPolicyRuleMatcherExprOptions{}
				r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{}}
			}),
			want: v1beta1.RuleObservation{Priority: 1000, Action: "allow", Match: &v1beta1.RuleMatcherObservation{
				VersionedExpr: "SRC_IPS_V1", Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{"10.0.0.0/8"}}}},
		},
		"DefaultRuleWithoutMatch": {
			reason: "A default rule without a condition shows the \"*\" match GCP gives it, as it is compared.",
			rule:   rule(v1beta1.DefaultRulePriority, "deny(403)"),
			want: v1beta1.RuleObservation{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)", Match: &v1beta1.RuleMatcherObservation{
				VersionedExpr: "SRC_IPS_V1", Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{"*"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GenerateRuleObservation(tc.rule)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGenerateRuleObservation(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRuleObservationReportsDrift shows that what RuleUpToDate calls drift
// can be seen in status: two rules that differ after normalisation have
// different observations, and two that do not have equal ones.
func TestRuleObservationReportsDrift(t *testing.T) {
	base := everyField(10)
	edits := map[string]func(r *compute.SecurityPolicyRule){
		"RateLimitCount": func(r *compute.SecurityPolicyRule) { r.RateLimitOptions.RateLimitThreshold.Count = 11 },
		"WafExclusionOp": func(r *compute.SecurityPolicyRule) {
			r.PreconfiguredWafConfig.Exclusions[0].RequestUrisToExclude[0].Op = "EQUALS"
		},
		"NetworkMatchPort": func(r *compute.SecurityPolicyRule) { r.NetworkMatch.SrcPorts = []string{"81"} },
		"HeaderValue":      func(r *compute.SecurityPolicyRule) { r.HeaderAction.RequestHeadersToAdds[0].HeaderValue = "2" },
		"RedirectType":     func(r *compute.SecurityPolicyRule) { r.RedirectOptions.Type = "EXTERNAL_302" },
		"Preview":          func(r *compute.SecurityPolicyRule) { r.Preview = false },
		"ExpressionTitle":  func(r *compute.SecurityPolicyRule) { r.Match.Expr.Title = "other" },
		"RecaptchaKey":     func(r *compute.SecurityPolicyRule) { r.Match.ExprOptions.RecaptchaOptions.SessionTokenSiteKeys = nil },
		"SameRangesReworded": func(r *compute.SecurityPolicyRule) {
			r.NetworkMatch.SrcIpRanges = []string{"192.0.2.1/32", "10.0.0.0/8", "10.0.0.0/8"}
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			changed := clone(base)
			edit(changed)
			upToDate, _ := RuleUpToDate(base, changed)
			diff := cmp.Diff(GenerateRuleObservation(base), GenerateRuleObservation(changed))
			if upToDate != (diff == "") {
				t.Errorf("RuleUpToDate says up to date %t, but the observations differ by:\n%s", upToDate, diff)
			}
		})
	}
}

func TestGenerateObservation(t *testing.T) {
	cases := map[string]struct {
		reason   string
		observed *compute.SecurityPolicy
		want     v1beta1.SecurityPolicyObservation
	}{
		"Nil": {reason: "A missing policy has an empty observation."},
		"Full": {
			reason: "Output-only fields are reported and rules sorted by numeric priority, not GCP's text order, each in full.",
			observed: policy(func(p *compute.SecurityPolicy) {
				p.CreationTimestamp = "2023-02-10T13:23:43.497-08:00"
				p.Region = "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1"
			}, withRules(
				rule(0, "allow", withMatch(srcIPs("192.0.2.1"))),
				rule(111111111, "deny(403)", withMatch(&compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "true"}})),
				rule(v1beta1.DefaultRulePriority, "deny(403)", withMatch(srcIPs("*"))),
				nil,
				everyField(555),
			)),
			want: v1beta1.SecurityPolicyObservation{
				ID: "2953638056173439792", Type: "CLOUD_ARMOR", Fingerprint: "C80RqDu3TxA=", LabelFingerprint: "42WmSpB8rSM=",
				SelfLink:          "https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/edge",
				CreationTimestamp: "2023-02-10T13:23:43.497-08:00",
				Region:            "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1",
				RuleCount:         4,
				Rules: []v1beta1.RuleObservation{
					{Priority: 0, Action: "allow", Match: &v1beta1.RuleMatcherObservation{VersionedExpr: "SRC_IPS_V1",
						Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{"192.0.2.1/32"}}}},
					everyFieldObserved(555),
					{Priority: 111111111, Action: "deny(403)", Match: &v1beta1.RuleMatcherObservation{Expr: &v1beta1.ExprObservation{Expression: "true"}}},
					{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)", Match: &v1beta1.RuleMatcherObservation{VersionedExpr: "SRC_IPS_V1",
						Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{"*"}}}},
				},
			},
		},
		"DdosProtectionConfig": {
			reason: "GCP's ddosProtectionConfig is reported; an empty one is not.",
			observed: policy(func(p *compute.SecurityPolicy) {
				p.Id, p.Fingerprint, p.LabelFingerprint, p.SelfLink, p.Type = 0, "", "", "", ""
				p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED",
					DdosAdaptiveProtection: "PREVIEW", DdosImpactedBaselineThreshold: 0.25}
			}),
			want: v1beta1.SecurityPolicyObservation{DdosProtectionConfig: &v1beta1.DdosProtectionConfigObservation{
				DdosProtection: "ADVANCED", DdosAdaptiveProtection: "PREVIEW", DdosImpactedBaselineThreshold: 0.25}},
		},
		"EmptyDdosProtectionConfig": {
			reason:   "A {} ddosProtectionConfig takes no status.",
			observed: &compute.SecurityPolicy{Name: "x", DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{}},
			want:     v1beta1.SecurityPolicyObservation{},
		},
		"NoID": {
			reason:   "An id of 0 is not reported.",
			observed: &compute.SecurityPolicy{Name: "x"},
			want:     v1beta1.SecurityPolicyObservation{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GenerateObservation(tc.observed)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGenerateObservation(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// bigRule is a rule of about 2.3 KiB in status: a 2048-character expression,
// the longest the spec allows, and a WAF exclusion.
func bigRule(priority int64) *compute.SecurityPolicyRule {
	expr := "request.path.matches('/" + strings.Repeat("a", 2048-len("request.path.matches('/')")) + "')"
	return rule(priority, "deny(403)", withMatch(&compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: expr}}),
		func(r *compute.SecurityPolicyRule) {
			r.PreconfiguredWafConfig = everyField(priority).PreconfiguredWafConfig
		})
}

// typicalRule is a rule with ten source ranges and a description.
func typicalRule(priority int64) *compute.SecurityPolicyRule {
	ranges := make([]string, 10)
	for i := range ranges {
		ranges[i] = fmt.Sprintf("198.51.%d.0/24", i)
	}
	return rule(priority, "allow", withMatch(srcIPs(ranges...)), func(r *compute.SecurityPolicyRule) { r.Description = "partner office ranges" })
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestGenerateObservationBudget pins the status size of a policy of 200
// rules, the size GCP's default quota allows per policy being of that order:
// typical rules are all reported in full, 2 KiB rules are summarised once the
// budget is spent, highest priority first kept in full.
func TestGenerateObservationBudget(t *testing.T) {
	const n = 200
	build := func(mk func(int64) *compute.SecurityPolicyRule) *compute.SecurityPolicy {
		rs := make([]*compute.SecurityPolicyRule, 0, n)
		for i := range n - 1 {
			rs = append(rs, mk(int64(i)))
		}
		return policy(withRules(append(rs, rule(v1beta1.DefaultRulePriority, "deny(403)"))...))
	}

	t.Run("Typical", func(t *testing.T) {
		o := GenerateObservation(build(typicalRule))
		size := jsonSize(t, o.Rules)
		t.Logf("%d typical rules: %d bytes in status (%d per rule)", n, size, size/n)
		if o.RulesSummarized != 0 || o.RuleCount != n {
			t.Errorf("want %d rules, none summarised; got ruleCount %d, rulesSummarized %d", n, o.RuleCount, o.RulesSummarized)
		}
		if want := GenerateRuleObservation(typicalRule(7)); !cmp.Equal(want, o.Rules[7]) {
			t.Errorf("rule 7 is not in full: %s", cmp.Diff(want, o.Rules[7]))
		}
	})

	t.Run("Big", func(t *testing.T) {
		o := GenerateObservation(build(bigRule))
		size := jsonSize(t, o.Rules)
		per := jsonSize(t, GenerateRuleObservation(bigRule(1)))
		full := n - o.RulesSummarized
		t.Logf("%d rules of %d bytes: %d bytes in status, %d in full, %d summarised", n, per, size, full, o.RulesSummarized)
		if o.RuleCount != n || len(o.Rules) != n {
			t.Fatalf("every rule is listed: want %d, got ruleCount %d and %d rules", n, o.RuleCount, len(o.Rules))
		}
		if wantFull := ObservedRulesBudget / (per + 1); full != wantFull {
			t.Errorf("rules in full: want %d (the budget over %d bytes a rule), got %d", wantFull, per+1, full)
		}
		// Summaries are {"priority":N,"action":"deny(403)"}: under 50 bytes.
		if limit := ObservedRulesBudget + 50*o.RulesSummarized; size > limit {
			t.Errorf("status rules take %d bytes, over the budget and summaries (%d)", size, limit)
		}
		for i, r := range o.Rules {
			isFull := r.Match != nil
			if isFull != (i < full) {
				t.Fatalf("rule %d (priority %d): in full %t; want the first %d by priority in full", i, r.Priority, isFull, full)
			}
		}
		last := o.Rules[n-1]
		if diff := cmp.Diff(v1beta1.RuleObservation{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)"}, last); diff != "" {
			t.Errorf("a summarised rule carries priority and action only: -want, +got:\n%s", diff)
		}
	})
}
