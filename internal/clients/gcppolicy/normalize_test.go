package gcppolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestCanonicalRange(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Star":          {reason: "\"*\" means every address and is kept.", in: "*", want: "*"},
		"BareIPv4":      {reason: "A bare IPv4 address equals its /32.", in: "203.0.113.7", want: "203.0.113.7/32"},
		"BareIPv6":      {reason: "A bare IPv6 address equals its /128, in canonical form.", in: "2001:DB8:0::1", want: "2001:db8::1/128"},
		"CIDR":          {reason: "A canonical CIDR is unchanged.", in: "10.0.0.0/8", want: "10.0.0.0/8"},
		"HostBits":      {reason: "A CIDR with host bits is compared by its network.", in: "10.0.0.1/8", want: "10.0.0.0/8"},
		"IPv6CIDR":      {reason: "IPv6 CIDRs are masked and lower-cased.", in: "2001:DB8::1/32", want: "2001:db8::/32"},
		"Spaces":        {reason: "Surrounding spaces do not matter.", in: " 192.0.2.1 ", want: "192.0.2.1/32"},
		"Invalid":       {reason: "Something that is not a range is compared verbatim.", in: "not-an-ip", want: "not-an-ip"},
		"Zone":          {reason: "An address with a zone cannot be a prefix and is kept.", in: "fe80::1%eth0", want: "fe80::1%eth0"},
		"AllIPv4":       {reason: "0.0.0.0/0 is IPv4 only and stays distinct from \"*\".", in: "0.0.0.0/0", want: "0.0.0.0/0"},
		"Slash32Stable": {reason: "A /32 is already canonical.", in: "203.0.113.7/32", want: "203.0.113.7/32"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CanonicalRange(tc.in)); diff != "" {
				t.Errorf("\n%s\nCanonicalRange(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNormalizeRule(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     *compute.SecurityPolicyRule
		want   *compute.SecurityPolicyRule
	}{
		"Nil": {reason: "nil stays nil."},
		"FillIns": {
			reason: "kind, ForceSendFields, NullFields and empty messages are dropped; ranges are canonical and sorted.",
			in: &compute.SecurityPolicyRule{Kind: "compute#securityPolicyRule", Priority: 0, Action: "allow",
				ForceSendFields: []string{"Priority"}, NullFields: []string{"Description"},
				Match:           srcIPs("10.0.0.9", "10.0.0.0/8", "10.0.0.9/32"),
				HeaderAction:    &compute.SecurityPolicyRuleHttpHeaderAction{},
				RedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{},
				PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{
					Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{nil, {}}},
			},
			want: &compute.SecurityPolicyRule{Priority: 0, Action: "allow", Match: srcIPs("10.0.0.0/8", "10.0.0.9/32")},
		},
		"EmptyMatchParts": {
			reason: "An empty config, expr and exprOptions are absent, and so is a match made only of them.",
			in: &compute.SecurityPolicyRule{Priority: 1, Action: "allow", Match: &compute.SecurityPolicyRuleMatcher{
				Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{}}, Expr: &compute.Expr{},
				ExprOptions: &compute.SecurityPolicyRuleMatcherExprOptions{
					RecaptchaOptions: &compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{ActionTokenSiteKeys: []string{}}}}},
			want: &compute.SecurityPolicyRule{Priority: 1, Action: "allow"},
		},
		"NetworkMatchSets": {
			reason: "networkMatch lists are sets: sorted and de-duplicated; empty user-defined fields dropped.",
			in: &compute.SecurityPolicyRule{Priority: 2, Action: "allow", NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{
				SrcIpRanges: []string{"192.0.2.1", "10.0.0.0/8"}, DestIpRanges: []string{"2001:db8::1"},
				IpProtocols: []string{"udp", "tcp", "tcp"}, SrcPorts: []string{"80", "443"}, DestPorts: []string{"2", "1"},
				SrcRegionCodes: []string{"US", "CH"}, SrcAsns: []int64{2, 1},
				UserDefinedFields: []*compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{
					{Name: "b", Values: []string{"2", "1"}}, nil, {}, {Name: "a"}},
			}},
			want: &compute.SecurityPolicyRule{Priority: 2, Action: "allow", NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{
				SrcIpRanges: []string{"10.0.0.0/8", "192.0.2.1/32"}, DestIpRanges: []string{"2001:db8::1/128"},
				IpProtocols: []string{"tcp", "udp"}, SrcPorts: []string{"443", "80"}, DestPorts: []string{"1", "2"},
				SrcRegionCodes: []string{"CH", "US"}, SrcAsns: []int64{1, 2},
				UserDefinedFields: []*compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{
					{Name: "a"}, {Name: "b", Values: []string{"1", "2"}}},
			}},
		},
		"RateLimitEmpties": {
			reason: "Empty thresholds, redirect options and key configs are absent; key config order is kept.",
			in: &compute.SecurityPolicyRule{Priority: 3, Action: "throttle", RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
				RateLimitThreshold:    &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 1, IntervalSec: 2},
				BanThreshold:          &compute.SecurityPolicyRuleRateLimitOptionsThreshold{},
				ExceedRedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{},
				EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
					{EnforceOnKeyType: "IP"}, nil, {}, {EnforceOnKeyType: "ALL"}},
			}},
			want: &compute.SecurityPolicyRule{Priority: 3, Action: "throttle", RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
				RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 1, IntervalSec: 2},
				EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
					{EnforceOnKeyType: "IP"}, {EnforceOnKeyType: "ALL"}},
			}},
		},
		"EmptyRateLimit": {
			reason: "A rateLimitOptions {} is absent.",
			in:     &compute.SecurityPolicyRule{Priority: 3, Action: "allow", RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{}},
			want:   &compute.SecurityPolicyRule{Priority: 3, Action: "allow"},
		},
		"HeadersAndWafKept": {
			reason: "Header and WAF lists keep their order; empty entries and params are dropped.",
			in: &compute.SecurityPolicyRule{Priority: 4, Action: "allow",
				HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "B"}, nil, {}, {HeaderName: "A", HeaderValue: "1"}}},
				PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{{
					TargetRuleSet: "xss", TargetRuleIds: []string{"2", "1"},
					RequestUrisToExclude: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS", Val: "/"}, nil, {}},
				}}}},
			want: &compute.SecurityPolicyRule{Priority: 4, Action: "allow",
				HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "B"}, {HeaderName: "A", HeaderValue: "1"}}},
				PreconfiguredWafConfig: &compute.SecurityPolicyRulePreconfiguredWafConfig{Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{{
					TargetRuleSet: "xss", TargetRuleIds: []string{"2", "1"},
					RequestUrisToExclude: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS", Val: "/"}},
				}}}},
		},
		"DefaultRuleWithoutMatch": {
			reason: "A default rule without a condition matches \"*\".",
			in:     &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "allow"},
			want:   &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "allow", Match: srcIPs("*")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := NormalizeRule(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nNormalizeRule(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNormalizeRuleDoesNotModifyInput(t *testing.T) {
	in := rule(1, "allow", withMatch(srcIPs("10.0.0.2", "10.0.0.1")))
	in.Kind = "compute#securityPolicyRule"
	_ = NormalizeRule(in)
	want := rule(1, "allow", withMatch(srcIPs("10.0.0.2", "10.0.0.1")))
	want.Kind = "compute#securityPolicyRule"
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("\nNormalizeRule must copy, not modify, its input.\nNormalizeRule(...): -want, +got:\n%s", diff)
	}
}

func TestRuleUpToDate(t *testing.T) {
	type args struct {
		desired  *compute.SecurityPolicyRule
		observed *compute.SecurityPolicyRule
	}
	type want struct {
		upToDate bool
		diffHas  string
	}
	rl := func(mods ...func(*compute.SecurityPolicyRuleRateLimitOptions)) func(*compute.SecurityPolicyRule) {
		return func(r *compute.SecurityPolicyRule) {
			r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{
				RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 10, IntervalSec: 60},
				ConformAction:      "allow", ExceedAction: "deny(429)"}
			for _, m := range mods {
				m(r.RateLimitOptions)
			}
		}
	}
	onKey := func(k string) func(*compute.SecurityPolicyRuleRateLimitOptions) {
		return func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.EnforceOnKey = k }
	}
	onKeyConfigs := func(ks ...string) func(*compute.SecurityPolicyRuleRateLimitOptions) {
		return func(o *compute.SecurityPolicyRuleRateLimitOptions) {
			for _, k := range ks {
				o.EnforceOnKeyConfigs = append(o.EnforceOnKeyConfigs, &compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{EnforceOnKeyType: k})
			}
		}
	}
	fromGCP := func(r *compute.SecurityPolicyRule) *compute.SecurityPolicyRule { asGCPReturnsIt(r); return r }

	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Identical": {
			reason: "A rule equals itself.",
			args:   args{desired: rule(1000, "allow", withMatch(srcIPs("10.0.0.0/8"))), observed: rule(1000, "allow", withMatch(srcIPs("10.0.0.0/8")))},
			want:   want{upToDate: true},
		},
		"GCPFillIns": {
			reason: "kind, description \"\", preview false and headerAction {} as GCP returns them are no drift.",
			args: args{
				desired: GenerateRule(0, v1beta1.RuleParameters{Action: "allow", Preview: ptr(false), Description: ptr(""),
					Match: specSrcIPs("10.0.0.0/8"), HeaderAction: &v1beta1.HTTPHeaderAction{}}),
				observed: fromGCP(rule(0, "allow", withMatch(srcIPs("10.0.0.0/8")))),
			},
			want: want{upToDate: true},
		},
		"HeaderActionEmptyObserved": {
			reason: "GCP echoing headerAction {} for a rule that does not set it is no drift.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("*"))),
				observed: fromGCP(rule(1, "allow", withMatch(srcIPs("*")), func(r *compute.SecurityPolicyRule) {
					r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{}
				}))},
			want: want{upToDate: true},
		},
		"RangeOrder": {
			reason: "A change in srcIpRanges order is no drift.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("10.0.0.0/8", "192.0.2.0/24"))),
				observed: rule(1, "allow", withMatch(srcIPs("192.0.2.0/24", "10.0.0.0/8")))},
			want: want{upToDate: true},
		},
		"RangeContent": {
			reason: "A different srcIpRanges content is drift.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("10.0.0.0/8", "192.0.2.0/24"))),
				observed: rule(1, "allow", withMatch(srcIPs("10.0.0.0/8", "192.0.2.0/25")))},
			want: want{upToDate: false, diffHas: "192.0.2.0/25"},
		},
		"BareIPVersusSlash32": {
			reason: "A bare IP equals its /32.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("203.0.113.7"))),
				observed: rule(1, "allow", withMatch(srcIPs("203.0.113.7/32")))},
			want: want{upToDate: true},
		},
		"NetworkRangeOrder": {
			reason: "networkMatch range order is no drift either.",
			args: args{
				desired: rule(1, "allow", func(r *compute.SecurityPolicyRule) {
					r.NetworkMatch = &compute.SecurityPolicyRuleNetworkMatcher{SrcIpRanges: []string{"b::1", "10.0.0.1"}}
				}),
				observed: rule(1, "allow", func(r *compute.SecurityPolicyRule) {
					r.NetworkMatch = &compute.SecurityPolicyRuleNetworkMatcher{SrcIpRanges: []string{"10.0.0.1/32", "b::1/128"}}
				}),
			},
			want: want{upToDate: true},
		},
		"Action": {
			reason: "A changed action is drift.",
			args:   args{desired: rule(1, "deny(403)", withMatch(srcIPs("*"))), observed: rule(1, "allow", withMatch(srcIPs("*")))},
			want:   want{upToDate: false, diffHas: "Action"},
		},
		"Description": {
			reason: "A removed description is drift.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("*"))),
				observed: rule(1, "allow", withMatch(srcIPs("*")), func(r *compute.SecurityPolicyRule) { r.Description = "old" })},
			want: want{upToDate: false, diffHas: "Description"},
		},
		"Preview": {
			reason: "Preview true versus false is drift.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("*")), func(r *compute.SecurityPolicyRule) { r.Preview = true }),
				observed: rule(1, "allow", withMatch(srcIPs("*")))},
			want: want{upToDate: false, diffHas: "Preview"},
		},
		"Expression": {
			reason: "An edited CEL expression is drift.",
			args: args{
				desired:  rule(1, "deny(403)", withMatch(&compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "a"}})),
				observed: rule(1, "deny(403)", withMatch(&compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "b"}})),
			},
			want: want{upToDate: false, diffHas: "Expression"},
		},
		"EnforceOnKeyToConfigs": {
			reason: "Switching from enforceOnKey to enforceOnKeyConfigs is drift.",
			args:   args{desired: rule(1, "throttle", rl(onKeyConfigs("IP"))), observed: rule(1, "throttle", rl(onKey("IP")))},
			want:   want{upToDate: false, diffHas: "EnforceOnKey"},
		},
		"ConfigsToEnforceOnKey": {
			reason: "Switching from enforceOnKeyConfigs to enforceOnKey is drift.",
			args:   args{desired: rule(1, "throttle", rl(onKey("ALL"))), observed: rule(1, "throttle", rl(onKeyConfigs("HTTP_PATH")))},
			want:   want{upToDate: false, diffHas: "EnforceOnKey"},
		},
		"EnforceOnKeyNotDefaulted": {
			reason: "enforceOnKey ALL versus absent is drift: GCP does not default it.",
			args:   args{desired: rule(1, "throttle", rl(onKey("ALL"))), observed: rule(1, "throttle", rl())},
			want:   want{upToDate: false, diffHas: "ALL"},
		},
		"EmptyConfigsEqualAbsent": {
			reason: "enforceOnKeyConfigs [] equals absent: GCP drops empty arrays.",
			args: args{desired: rule(1, "throttle", rl(onKey("IP"), func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.EnforceOnKeyConfigs = []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{}
			})), observed: rule(1, "throttle", rl(onKey("IP")))},
			want: want{upToDate: true},
		},
		"PriorityZero": {
			reason: "A desired rule at priority 0 equals GCP's rule at priority 0.",
			args: args{desired: GenerateRule(0, v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("*")}),
				observed: fromGCP(rule(0, "allow", withMatch(srcIPs("*"))))},
			want: want{upToDate: true},
		},
		"DefaultRuleImplicitMatch": {
			reason: "A default rule without match equals GCP's default rule matching \"*\".",
			args: args{desired: &compute.SecurityPolicyRule{Priority: v1beta1.DefaultRulePriority, Action: "allow"},
				observed: fromGCP(rule(v1beta1.DefaultRulePriority, "allow", withMatch(srcIPs("*"))))},
			want: want{upToDate: true},
		},
		"Missing": {
			reason: "A nil observed rule is drift.",
			args:   args{desired: rule(1, "allow", withMatch(srcIPs("*")))},
			want:   want{upToDate: false, diffHas: "Action"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, diff := RuleUpToDate(tc.args.desired, tc.args.observed)
			if d := cmp.Diff(tc.want.upToDate, got); d != "" {
				t.Errorf("\n%s\nRuleUpToDate(...): -want, +got:\n%s\ndiff was:\n%s", tc.reason, d, diff)
			}
			if got && diff != "" {
				t.Errorf("\n%s\nRuleUpToDate(...): an up-to-date rule must have no diff, got:\n%s", tc.reason, diff)
			}
			if !strings.Contains(diff, tc.want.diffHas) {
				t.Errorf("\n%s\nRuleUpToDate(...): diff should mention %q, got:\n%s", tc.reason, tc.want.diffHas, diff)
			}
		})
	}
}

// BenchmarkRuleUpToDate measures the comparison each rule poll makes: an
// unchanged rule (the steady state) and a drifted one, which also builds the
// diff shown to the user.
func BenchmarkRuleUpToDate(b *testing.B) {
	desired := rule(1000, "allow", withMatch(srcIPs("10.0.0.0/8", "192.0.2.0/24", "203.0.113.7")),
		func(r *compute.SecurityPolicyRule) { r.Description = "office" })
	same := rule(1000, "allow", withMatch(srcIPs("192.0.2.0/24", "10.0.0.0/8", "203.0.113.7/32")),
		func(r *compute.SecurityPolicyRule) { r.Description = "office" })
	asGCPReturnsIt(same)
	drifted := rule(1000, "allow", withMatch(srcIPs("192.0.2.0/24", "10.0.0.0/8")),
		func(r *compute.SecurityPolicyRule) { r.Description = "office" })
	cases := map[string]*compute.SecurityPolicyRule{"Unchanged": same, "Drifted": drifted}
	for name, observed := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				RuleUpToDate(desired, observed)
			}
		})
	}
}
