package policyeval

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestFromCompute(t *testing.T) {
	sp := &compute.SecurityPolicy{
		AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{UserIpRequestHeaders: []string{"X-Client"}},
		Rules: []*compute.SecurityPolicyRule{
			{Priority: 2147483647, Action: "deny(403)", Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
				Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}}}},
			{Priority: 1000, Action: "throttle", Preview: true, Match: &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "true"}},
				RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow", ExceedAction: "deny(429)", EnforceOnKey: "IP",
					RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 10, IntervalSec: 60}},
				HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "X-A", HeaderValue: "1"}}}},
		},
	}
	want := Policy{Name: "p", UserIPHeaders: []string{"X-Client"}, Rules: []Rule{
		{Priority: 1000, Source: SourceGCP, RuleParameters: v1beta1.RuleParameters{Action: "throttle", Preview: ptr(true),
			Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "true"}},
			RateLimitOptions: &v1beta1.RateLimitOptions{ConformAction: ptr("allow"), ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("IP"),
				RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 10, IntervalSec: 60}},
			HeaderAction: &v1beta1.HTTPHeaderAction{RequestHeadersToAdds: []v1beta1.HTTPHeaderOption{{HeaderName: "X-A", HeaderValue: ptr("1")}}}}},
		{Priority: DefaultPriority, Source: SourceGCP, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)",
			Match: &v1beta1.RuleMatcher{VersionedExpr: ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: []v1beta1.IPRange{"*"}}}}},
	}}
	got, err := FromCompute("p", sp)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("\nEvery rule is kept, in priority order, with every field.\nFromCompute(...): -want, +got:\n%s", diff)
	}
}

func TestAddressGroupNames(t *testing.T) {
	rule := func(e string) Rule {
		return Rule{Priority: 1, RuleParameters: v1beta1.RuleParameters{Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: e}}}}
	}
	p := Policy{Rules: []Rule{
		rule("evaluateAddressGroup('offices', origin.ip) || evaluateOrganizationAddressGroup('corp', origin.ip)"),
		rule("!evaluateAddressGroup('partners', origin.ip) && evaluateAddressGroup('offices', origin.ip)"),
		rule("evaluateAddressGroup(request.headers['x'], origin.ip)"),
		rule("this does not parse ("),
		{Priority: 2},
	}}
	type names struct{ Project, Org []string }
	project, org := AddressGroupNames(p)
	want := names{Project: []string{"offices", "partners"}, Org: []string{"corp"}}
	if diff := cmp.Diff(want, names{project, org}); diff != "" {
		t.Errorf("\nLiteral names, each once, in rule order.\nAddressGroupNames(...): -want, +got:\n%s", diff)
	}
}
