package gcppolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

func TestRuleUpdateMask(t *testing.T) {
	type args struct {
		desired  *compute.SecurityPolicyRule
		observed *compute.SecurityPolicyRule
	}
	rl := func(o *compute.SecurityPolicyRuleRateLimitOptions) func(*compute.SecurityPolicyRule) {
		return func(r *compute.SecurityPolicyRule) { r.RateLimitOptions = o }
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"Nil": {reason: "Two nil rules need no mask."},
		"Basic": {
			reason: "Fields set on either side are named, sorted.",
			args: args{desired: rule(1, "allow", withMatch(srcIPs("*"))),
				observed: rule(1, "deny(403)", withMatch(srcIPs("*")), func(r *compute.SecurityPolicyRule) {
					r.Description = "old"
					r.Preview = true
					r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{}
				})},
			want: []string{"action", "description", "match", "preview"},
		},
		"AllTopLevel": {
			reason: "Every top-level message is named when set.",
			args: args{desired: rule(1, "redirect", func(r *compute.SecurityPolicyRule) {
				r.NetworkMatch = &compute.SecurityPolicyRuleNetworkMatcher{SrcPorts: []string{"1"}}
				r.RedirectOptions = &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"}
				r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{{HeaderName: "a"}}}
				r.PreconfiguredWafConfig = &compute.SecurityPolicyRulePreconfiguredWafConfig{Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{{TargetRuleSet: "x"}}}
			})},
			want: []string{"action", "header_action", "network_match", "preconfigured_waf_config", "redirect_options"},
		},
		"RateLimitRemoved": {
			reason: "rateLimitOptions no longer wanted is cleared as a whole.",
			args: args{desired: rule(1, "allow"),
				observed: rule(1, "throttle", rl(&compute.SecurityPolicyRuleRateLimitOptions{EnforceOnKey: "IP"}))},
			want: []string{"action", "rate_limit_options"},
		},
		"EnforceOnKeySwitch": {
			reason: "Switching enforceOnKey to enforceOnKeyConfigs names both so the old one is cleared.",
			args: args{
				desired: rule(1, "throttle", rl(&compute.SecurityPolicyRuleRateLimitOptions{ExceedAction: "deny(429)",
					EnforceOnKeyConfigs: []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{{EnforceOnKeyType: "HTTP_PATH"}}})),
				observed: rule(1, "throttle", rl(&compute.SecurityPolicyRuleRateLimitOptions{ExceedAction: "deny(429)", EnforceOnKey: "ALL"})),
			},
			want: []string{"action", "rate_limit_options.enforce_on_key", "rate_limit_options.enforce_on_key_configs", "rate_limit_options.exceed_action"},
		},
		"RateLimitEverySubField": {
			reason: "Every rateLimitOptions sub-field is named when set.",
			args: args{desired: rule(1, "rate_based_ban", rl(&compute.SecurityPolicyRuleRateLimitOptions{
				RateLimitThreshold:    &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 1, IntervalSec: 1},
				ConformAction:         "allow",
				ExceedRedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"},
				EnforceOnKeyName:      "h",
				BanThreshold:          &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 1, IntervalSec: 1},
				BanDurationSec:        60,
			}))},
			want: []string{"action", "rate_limit_options.ban_duration_sec", "rate_limit_options.ban_threshold",
				"rate_limit_options.conform_action", "rate_limit_options.enforce_on_key_name",
				"rate_limit_options.exceed_redirect_options", "rate_limit_options.rate_limit_threshold"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := RuleUpdateMask(tc.args.desired, tc.args.observed)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nRuleUpdateMask(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRuleClearedFields(t *testing.T) {
	described := func(r *compute.SecurityPolicyRule) { r.Description = "old" }
	cases := map[string]struct {
		reason            string
		desired, observed *compute.SecurityPolicyRule
		want              []string
	}{
		"Missing": {
			reason:  "Nothing observed: nothing to clear.",
			desired: rule(1, "allow", withMatch(srcIPs("*"))),
		},
		"Changed": {
			reason:   "Fields both sides set are replaced, not cleared.",
			desired:  rule(1, "allow", withMatch(srcIPs("*"))),
			observed: rule(1, "deny(403)", withMatch(srcIPs("192.0.2.0/24"))),
		},
		"DescriptionRemoved": {
			reason:   "A field only GCP holds must be cleared.",
			desired:  rule(1, "allow", withMatch(srcIPs("*"))),
			observed: rule(1, "allow", withMatch(srcIPs("*")), described),
			want:     []string{"description"},
		},
		"RateLimitRemoved": {
			reason:  "rateLimitOptions no longer wanted is cleared as a whole.",
			desired: rule(1, "allow", withMatch(srcIPs("*"))),
			observed: rule(1, "throttle", withMatch(srcIPs("*")), func(r *compute.SecurityPolicyRule) {
				r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{EnforceOnKey: "IP"}
			}),
			want: []string{"rate_limit_options"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RuleClearedFields(tc.desired, tc.observed)); diff != "" {
				t.Errorf("\n%s\nRuleClearedFields(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
