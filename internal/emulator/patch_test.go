package emulator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

func ipMatch(ranges ...string) *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
		Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: ranges}}
}

// patchRuleBase is the rule most patchRule cases start from: the fields a
// rule can have in both scopes set, so that a case shows which ones a patch
// keeps.
func patchRuleBase() *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Priority: 1000, Action: "allow", Description: "keep me", Preview: true,
		Match: ipMatch("10.0.0.0/8", "10.1.0.0/16")}
}

func throttleBase() *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Priority: 1000, Action: "throttle", Description: "keep me",
		Match: ipMatch("10.0.0.0/8"),
		RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow", ExceedAction: "deny(429)",
			EnforceOnKey: "IP", RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 10, IntervalSec: 60}}}
}

// ruleWith returns base with the rule kind GCP adds and mods applied.
func ruleWith(base *compute.SecurityPolicyRule, mods ...func(r *compute.SecurityPolicyRule)) *compute.SecurityPolicyRule {
	base.Kind = "compute#securityPolicyRule"
	for _, m := range mods {
		m(base)
	}
	return base
}

func TestPatchRuleMerge(t *testing.T) {
	type args struct {
		base *compute.SecurityPolicyRule
		body *compute.SecurityPolicyRule
		mask string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *compute.SecurityPolicyRule
	}{
		"DescriptionOnly": {
			reason: "gcloud's rules update --description sends only priority and description; every other field is kept.",
			args:   args{base: patchRuleBase(), body: &compute.SecurityPolicyRule{Priority: 1000, Description: "new"}},
			want:   ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Description = "new" }),
		},
		"ActionAndMatchKeepDescription": {
			reason: "A body with action and match but no description keeps the description and preview.",
			args: args{base: patchRuleBase(),
				body: &compute.SecurityPolicyRule{Action: "deny(403)", Match: ipMatch("1.2.3.4")}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) {
				r.Action, r.Match = "deny(403)", ipMatch("1.2.3.4")
			}),
		},
		"ListsReplaced": {
			reason: "A list in the body replaces the stored list; it is not appended to (R2: [\"*\"] stays [\"*\"]).",
			args: args{base: patchRuleBase(),
				body: &compute.SecurityPolicyRule{Match: ipMatch("1.2.3.4")}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Match = ipMatch("1.2.3.4") }),
		},
		"PreviewFalseSent": {
			reason: "preview: false sent through ForceSendFields sets preview to false.",
			args: args{base: patchRuleBase(),
				body: &compute.SecurityPolicyRule{Preview: false, ForceSendFields: []string{"Preview"}}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Preview = false }),
		},
		"PreviewFalseNotSent": {
			reason: "The Go client drops preview: false, so the stored preview: true is kept.",
			args:   args{base: patchRuleBase(), body: &compute.SecurityPolicyRule{Action: "deny(404)", Preview: false}},
			want:   ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Action = "deny(404)" }),
		},
		"EmptyDescriptionSent": {
			reason: "description: \"\" sent through ForceSendFields sets it to \"\".",
			args: args{base: patchRuleBase(),
				body: &compute.SecurityPolicyRule{ForceSendFields: []string{"Description"}}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Description = "" }),
		},
		"NullClears": {
			reason: "A field sent as null (NullFields) is cleared, as JSON merge patch says.",
			args: args{base: patchRuleBase(),
				body: &compute.SecurityPolicyRule{NullFields: []string{"Description"}}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Description = "" }),
		},
		"NestedSubFieldMerged": {
			reason: "A nested object merges field by field: a new threshold keeps conformAction, exceedAction and enforceOnKey.",
			args: args{base: throttleBase(), body: &compute.SecurityPolicyRule{
				RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
					RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 20, IntervalSec: 120}}}},
			want: ruleWith(throttleBase(), func(r *compute.SecurityPolicyRule) {
				r.RateLimitOptions.RateLimitThreshold = &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 20, IntervalSec: 120}
			}),
		},
		"MaskClearsAbsentField": {
			reason: "A field the mask names and the body leaves out is cleared.",
			args: args{base: patchRuleBase(), mask: "description",
				body: &compute.SecurityPolicyRule{Action: "deny(403)", Match: ipMatch("1.2.3.4")}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) {
				r.Action, r.Match, r.Description = "deny(403)", ipMatch("1.2.3.4"), ""
			}),
		},
		"MaskedFieldInBodySet": {
			reason: "A field the mask names and the body sends takes the body's value.",
			args: args{base: patchRuleBase(), mask: "action,description",
				body: &compute.SecurityPolicyRule{Action: "deny(404)", Description: "d2"}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) { r.Action, r.Description = "deny(404)", "d2" }),
		},
		"MaskedObjectReplacedWhole": {
			reason: "An object the mask names is cleared before the body is merged, so none of its old sub-fields survive.",
			args: args{base: patchRuleBase(), mask: "match",
				body: &compute.SecurityPolicyRule{Match: &compute.SecurityPolicyRuleMatcher{
					Expr: &compute.Expr{Expression: "origin.region_code == 'CH'"}}}},
			want: ruleWith(patchRuleBase(), func(r *compute.SecurityPolicyRule) {
				r.Match = &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: "origin.region_code == 'CH'"}}
			}),
		},
		"MaskedSubPathCleared": {
			reason: "A masked sub-path is cleared and its siblings kept (snake_case paths, as Terraform sends them).",
			args: args{base: throttleBase(), mask: "rate_limit_options.enforce_on_key",
				body: &compute.SecurityPolicyRule{}},
			want: ruleWith(throttleBase(), func(r *compute.SecurityPolicyRule) { r.RateLimitOptions.EnforceOnKey = "" }),
		},
		"ProviderFullBodyAndMask": {
			reason: "The provider's flow: the full desired rule plus a mask of every field either side sets; the result is exactly the body.",
			args: args{base: patchRuleBase(), mask: "action,description,match,preview",
				body: &compute.SecurityPolicyRule{Priority: 1000, Action: "deny(403)", Match: ipMatch("1.2.3.4"),
					ForceSendFields: []string{"Priority"}}},
			want: &compute.SecurityPolicyRule{Kind: "compute#securityPolicyRule", Priority: 1000, Action: "deny(403)",
				Match: ipMatch("1.2.3.4")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scopes(t, Options{}, func(t *testing.T, _ *Running, api policyAPI) {
				wait := waiter(t, api)
				wait(api.Insert(policyWith("p", tc.args.base)))
				wait(api.PatchRule("p", 1000, tc.args.mask, tc.args.body))
				got, err := api.GetRule("p", 1000)
				if err != nil {
					t.Fatal(err)
				}
				got.ServerResponse = googleapi.ServerResponse{}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("\n%s\npatchRule(%s): -want, +got:\n%s", tc.reason, tc.args.mask, diff)
				}
			})
		})
	}
}

// policyBase is the policy every PATCH case starts from. Adaptive
// Protection and reCAPTCHA options exist only in global CLOUD_ARMOR policies.
func policyBase(global bool) *compute.SecurityPolicy {
	p := &compute.SecurityPolicy{Name: "p", Description: "keep me",
		AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "STANDARD", LogLevel: "VERBOSE",
			UserIpRequestHeaders: []string{"x-a", "x-b"}},
	}
	if global {
		p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{
			Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{
				Enable: true, RuleVisibility: "STANDARD"}}
		p.RecaptchaOptionsConfig = &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "key"}
	}
	return p
}

// patchPolicy patches through the official client with an updateMask.
func patchPolicy(api policyAPI, name string, p *compute.SecurityPolicy, mask string) (*compute.Operation, error) {
	switch a := api.(type) {
	case globalAPI:
		return a.svc.SecurityPolicies.Patch(project, name, p).UpdateMask(mask).Do()
	case regionalAPI:
		return a.svc.RegionSecurityPolicies.Patch(project, region, name, p).UpdateMask(mask).Do()
	}
	panic("unknown policyAPI")
}

// settableFields is the part of a policy a PATCH can change.
type settableFields struct {
	Description string
	Labels      map[string]string
	Adaptive    *compute.SecurityPolicyAdaptiveProtectionConfig
	Advanced    *compute.SecurityPolicyAdvancedOptionsConfig
	Recaptcha   *compute.SecurityPolicyRecaptchaOptionsConfig
}

func settableOf(p *compute.SecurityPolicy) settableFields {
	return settableFields{Description: p.Description, Labels: p.Labels, Adaptive: p.AdaptiveProtectionConfig,
		Advanced: p.AdvancedOptionsConfig, Recaptcha: p.RecaptchaOptionsConfig}
}

func TestPatchPolicyMerge(t *testing.T) {
	type args struct {
		body *compute.SecurityPolicy
		mask string
	}
	cases := map[string]struct {
		reason     string
		globalOnly bool // the case patches fields regional policies cannot have
		args       args
		want       func(p *compute.SecurityPolicy)
	}{
		"OneNestedSubField": {
			reason: "A PATCH of one sub-field of advancedOptionsConfig keeps its other sub-fields and the other objects.",
			args: args{body: &compute.SecurityPolicy{
				AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "NORMAL"}}},
			want: func(p *compute.SecurityPolicy) { p.AdvancedOptionsConfig.LogLevel = "NORMAL" },
		},
		"DeepSubField": {
			reason:     "Merging goes to any depth: layer7DdosDefenseConfig.ruleVisibility alone keeps enable.",
			globalOnly: true,
			args: args{body: &compute.SecurityPolicy{AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{
				Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{RuleVisibility: "PREMIUM"}}}},
			want: func(p *compute.SecurityPolicy) {
				p.AdaptiveProtectionConfig.Layer7DdosDefenseConfig.RuleVisibility = "PREMIUM"
			},
		},
		"FalseSent": {
			reason:     "enable: false sent through ForceSendFields sets it to false and keeps ruleVisibility.",
			globalOnly: true,
			args: args{body: &compute.SecurityPolicy{AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{
				Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{
					ForceSendFields: []string{"Enable"}}}}},
			want: func(p *compute.SecurityPolicy) { p.AdaptiveProtectionConfig.Layer7DdosDefenseConfig.Enable = false },
		},
		"ListReplaced": {
			reason: "A list replaces the stored one whole.",
			args: args{body: &compute.SecurityPolicy{AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{
				UserIpRequestHeaders: []string{"x-c"}}}},
			want: func(p *compute.SecurityPolicy) { p.AdvancedOptionsConfig.UserIpRequestHeaders = []string{"x-c"} },
		},
		"EmptyListSent": {
			reason: "An empty list sent through ForceSendFields clears the list (the provider clears lists this way).",
			args: args{body: &compute.SecurityPolicy{AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{
				ForceSendFields: []string{"UserIpRequestHeaders"}}}},
			want: func(p *compute.SecurityPolicy) { p.AdvancedOptionsConfig.UserIpRequestHeaders = nil },
		},
		"MaskClearsObject": {
			reason: "updateMask names fields to clear; the body leaves advancedOptionsConfig out.",
			args:   args{body: &compute.SecurityPolicy{Description: "new"}, mask: "advanced_options_config"},
			want:   func(p *compute.SecurityPolicy) { p.Description, p.AdvancedOptionsConfig = "new", nil },
		},
		"MaskedSubFieldInBody": {
			reason: "A masked path the body sends is set from the body; its siblings are kept.",
			args: args{mask: "advancedOptionsConfig.logLevel", body: &compute.SecurityPolicy{
				AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "NORMAL"}}},
			want: func(p *compute.SecurityPolicy) { p.AdvancedOptionsConfig.LogLevel = "NORMAL" },
		},
		"LabelsIgnored": {
			reason: "Labels can only be changed by setLabels ([DOC]); a PATCH carrying labels leaves them alone.",
			args:   args{body: &compute.SecurityPolicy{Labels: map[string]string{"env": "prod"}}},
			want:   func(p *compute.SecurityPolicy) {},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scopes(t, Options{}, func(t *testing.T, _ *Running, api policyAPI) {
				_, global := api.(globalAPI)
				if tc.globalOnly && !global {
					t.Skip("global CLOUD_ARMOR policies only")
				}
				wait := waiter(t, api)
				wait(api.Insert(policyBase(global)))
				wait(patchPolicy(api, "p", tc.args.body, tc.args.mask))
				got, err := api.Get("p")
				if err != nil {
					t.Fatal(err)
				}
				want := policyBase(global)
				tc.want(want)
				if diff := cmp.Diff(settableOf(want), settableOf(got)); diff != "" {
					t.Errorf("\n%s\npatch(%s): -want, +got:\n%s", tc.reason, tc.args.mask, diff)
				}
			})
		})
	}
}
