package gcppolicy

import (
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// versionedExprSrcIPs is the only versioned expression GCP offers: a match on
// match.config.srcIpRanges.
const versionedExprSrcIPs = "SRC_IPS_V1"

// GenerateRule returns the Compute rule for priority and p, ready to send to
// addRule or patchRule.
//
// The Go client omits zero values, so a rule at priority 0 would reach GCP
// without a priority, and an explicit preview: false or description: ""
// would not reach it at all; ForceSendFields sends them. A default rule
// without a condition gets match "*": GCP requires the default rule to match
// every request.
// https://cloud.google.com/armor/docs/security-policy-overview#default_rules
func GenerateRule(priority int64, p v1beta1.RuleParameters) *compute.SecurityPolicyRule {
	r := &compute.SecurityPolicyRule{
		Priority:               priority,
		Action:                 p.Action,
		Description:            deref(p.Description),
		Preview:                deref(p.Preview),
		Match:                  generateMatcher(p.Match),
		NetworkMatch:           generateNetworkMatcher(p.NetworkMatch),
		RateLimitOptions:       generateRateLimitOptions(p.RateLimitOptions),
		RedirectOptions:        generateRedirectOptions(p.RedirectOptions),
		HeaderAction:           generateHeaderAction(p.HeaderAction),
		PreconfiguredWafConfig: generateWafConfig(p.PreconfiguredWafConfig),
	}
	if priority == 0 {
		r.ForceSendFields = append(r.ForceSendFields, "Priority")
	}
	if p.Preview != nil && !*p.Preview {
		r.ForceSendFields = append(r.ForceSendFields, "Preview")
	}
	if p.Description != nil && *p.Description == "" {
		r.ForceSendFields = append(r.ForceSendFields, "Description")
	}
	if priority == v1beta1.DefaultRulePriority && r.Match == nil && r.NetworkMatch == nil {
		r.Match = matchAll()
	}
	return r
}

// GenerateDefaultRule returns the Compute rule for a policy's default rule
// (priority 2147483647) from spec.forProvider.defaultRule.
func GenerateDefaultRule(p v1beta1.RuleParameters) *compute.SecurityPolicyRule {
	return GenerateRule(v1beta1.DefaultRulePriority, p)
}

// matchAll is the condition GCP requires of a default rule.
func matchAll() *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{
		VersionedExpr: versionedExprSrcIPs,
		Config:        &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}},
	}
}

func generateMatcher(m *v1beta1.RuleMatcher) *compute.SecurityPolicyRuleMatcher {
	if m == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleMatcher{VersionedExpr: deref(m.VersionedExpr)}
	if m.Config != nil {
		out.Config = &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: strs(m.Config.SrcIpRanges)}
	}
	if m.Expr != nil {
		out.Expr = &compute.Expr{
			Expression:  m.Expr.Expression,
			Title:       deref(m.Expr.Title),
			Description: deref(m.Expr.Description),
			Location:    deref(m.Expr.Location),
		}
	}
	if m.ExprOptions != nil {
		out.ExprOptions = &compute.SecurityPolicyRuleMatcherExprOptions{}
		if o := m.ExprOptions.RecaptchaOptions; o != nil {
			out.ExprOptions.RecaptchaOptions = &compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{
				ActionTokenSiteKeys:  strs(o.ActionTokenSiteKeys),
				SessionTokenSiteKeys: strs(o.SessionTokenSiteKeys),
			}
		}
	}
	return out
}

func generateNetworkMatcher(m *v1beta1.RuleNetworkMatcher) *compute.SecurityPolicyRuleNetworkMatcher {
	if m == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleNetworkMatcher{
		SrcIpRanges:    strs(m.SrcIpRanges),
		DestIpRanges:   strs(m.DestIpRanges),
		IpProtocols:    strs(m.IpProtocols),
		SrcPorts:       strs(m.SrcPorts),
		DestPorts:      strs(m.DestPorts),
		SrcRegionCodes: strs(m.SrcRegionCodes),
		SrcAsns:        clip(m.SrcAsns),
	}
	for _, f := range m.UserDefinedFields {
		out.UserDefinedFields = append(out.UserDefinedFields,
			&compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{Name: f.Name, Values: strs(f.Values)})
	}
	return out
}

func generateRateLimitOptions(o *v1beta1.RateLimitOptions) *compute.SecurityPolicyRuleRateLimitOptions {
	if o == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleRateLimitOptions{
		RateLimitThreshold:    generateThreshold(o.RateLimitThreshold),
		ConformAction:         deref(o.ConformAction),
		ExceedAction:          deref(o.ExceedAction),
		ExceedRedirectOptions: generateRedirectOptions(o.ExceedRedirectOptions),
		EnforceOnKey:          deref(o.EnforceOnKey),
		EnforceOnKeyName:      deref(o.EnforceOnKeyName),
		BanThreshold:          generateThreshold(o.BanThreshold),
		BanDurationSec:        deref(o.BanDurationSec),
	}
	for _, c := range o.EnforceOnKeyConfigs {
		out.EnforceOnKeyConfigs = append(out.EnforceOnKeyConfigs, &compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
			EnforceOnKeyType: c.EnforceOnKeyType,
			EnforceOnKeyName: deref(c.EnforceOnKeyName),
		})
	}
	return out
}

func generateThreshold(t *v1beta1.RateLimitThreshold) *compute.SecurityPolicyRuleRateLimitOptionsThreshold {
	if t == nil {
		return nil
	}
	return &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: t.Count, IntervalSec: t.IntervalSec}
}

func generateRedirectOptions(o *v1beta1.RedirectOptions) *compute.SecurityPolicyRuleRedirectOptions {
	if o == nil {
		return nil
	}
	return &compute.SecurityPolicyRuleRedirectOptions{Type: o.Type, Target: deref(o.Target)}
}

func generateHeaderAction(a *v1beta1.HTTPHeaderAction) *compute.SecurityPolicyRuleHttpHeaderAction {
	if a == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleHttpHeaderAction{}
	for _, h := range a.RequestHeadersToAdds {
		out.RequestHeadersToAdds = append(out.RequestHeadersToAdds, &compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
			HeaderName:  h.HeaderName,
			HeaderValue: deref(h.HeaderValue),
		})
	}
	return out
}

func generateWafConfig(c *v1beta1.PreconfiguredWafConfig) *compute.SecurityPolicyRulePreconfiguredWafConfig {
	if c == nil {
		return nil
	}
	out := &compute.SecurityPolicyRulePreconfiguredWafConfig{}
	for _, e := range c.Exclusions {
		out.Exclusions = append(out.Exclusions, &compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{
			TargetRuleSet:               e.TargetRuleSet,
			TargetRuleIds:               strs(e.TargetRuleIds),
			RequestHeadersToExclude:     generateWafParams(e.RequestHeadersToExclude),
			RequestCookiesToExclude:     generateWafParams(e.RequestCookiesToExclude),
			RequestQueryParamsToExclude: generateWafParams(e.RequestQueryParamsToExclude),
			RequestUrisToExclude:        generateWafParams(e.RequestUrisToExclude),
			RequestBodiesToExclude:      generateWafParams(e.RequestBodiesToExclude),
		})
	}
	return out
}

func generateWafParams(ps []v1beta1.WafExclusionFieldParams) []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams {
	var out []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams
	for _, p := range ps {
		out = append(out, &compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{Op: p.Op, Val: deref(p.Val)})
	}
	return out
}

// deref returns the value p points to, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// strs copies a list of string-like values into a fresh []string, nil when
// empty so that generated and observed objects agree on "absent".
func strs[T ~string](in []T) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// clip copies in, nil when empty.
func clip[T any](in []T) []T {
	if len(in) == 0 {
		return nil
	}
	return append([]T(nil), in...)
}
