package gcppolicy

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// ObservedRulesBudget bounds the JSON size of the rules a SecurityPolicy
// reports in status.atProvider. The API server refuses objects over about
// 1.5 MiB (etcd's default request limit), and a policy's spec may itself hold
// hundreds of rules, plus kubectl's last-applied copy of it and the managed
// fields. Measured (TestGenerateObservationBudget): a rule with ten ranges
// and a description takes about 300 bytes, so 256 KiB holds about 880 of
// them; a rule with a 2048-character expression and a WAF exclusion takes
// 2.5 KiB, so 103 of those fit. Rules past the budget are summarised, never
// dropped, so that ruleCount and the list agree.
const ObservedRulesBudget = 256 << 10

// GenerateObservation returns status.atProvider for a policy as GCP reports
// it. Rules are sorted by numeric priority (GCP sorts them as text: 0,
// 111111111, 2147483647, 555) and reported in full, as GenerateRuleObservation
// does, until their JSON passes ObservedRulesBudget; the rest carry only
// priority and action and are counted in RulesSummarized.
func GenerateObservation(observed *compute.SecurityPolicy) v1beta1.SecurityPolicyObservation {
	if observed == nil {
		return v1beta1.SecurityPolicyObservation{}
	}
	o := v1beta1.SecurityPolicyObservation{
		SelfLink:          observed.SelfLink,
		Fingerprint:       observed.Fingerprint,
		LabelFingerprint:  observed.LabelFingerprint,
		CreationTimestamp: observed.CreationTimestamp,
		Type:              observed.Type,
		Region:            observed.Region,
	}
	if d := observed.DdosProtectionConfig; d != nil {
		o.DdosProtectionConfig = nilIfZero(&v1beta1.DdosProtectionConfigObservation{
			DdosProtection:                d.DdosProtection,
			DdosAdaptiveProtection:        d.DdosAdaptiveProtection,
			DdosImpactedBaselineThreshold: d.DdosImpactedBaselineThreshold,
		})
	}
	// An id of 0 means GCP did not report one; "0" would read as a real id.
	if observed.Id != 0 {
		o.ID = strconv.FormatUint(observed.Id, 10)
	}
	rules := make([]*compute.SecurityPolicyRule, 0, len(observed.Rules))
	for _, r := range observed.Rules {
		if r != nil {
			rules = append(rules, r)
		}
	}
	slices.SortStableFunc(rules, func(a, b *compute.SecurityPolicyRule) int { return cmp.Compare(a.Priority, b.Priority) })
	used := 0
	for _, r := range rules {
		ro := GenerateRuleObservation(r)
		if o.RulesSummarized == 0 {
			used += observedSize(ro)
		}
		if o.RulesSummarized > 0 || used > ObservedRulesBudget {
			// Once one rule is summarised every later one is too, so that
			// the full rules are exactly the first ones by priority.
			ro = v1beta1.RuleObservation{Priority: ro.Priority, Action: ro.Action}
			o.RulesSummarized++
		}
		o.Rules = append(o.Rules, ro)
	}
	o.RuleCount = len(o.Rules)
	return o
}

// observedSize is the JSON size of one rule in status, its separator
// included.
func observedSize(r v1beta1.RuleObservation) int {
	b, err := json.Marshal(r)
	if err != nil {
		// These types always marshal; count nothing rather than guess.
		return 0
	}
	return len(b) + 1
}

// GenerateRuleObservation returns a rule as reported in status: every field
// GCP returns, in the NormalizeRule form the provider compares with the spec.
// GCP's fill-ins (description "", preview false, empty messages) are left
// out, IP ranges are canonical and sorted, and a default rule without a
// condition shows the "*" match GCP gives it.
func GenerateRuleObservation(r *compute.SecurityPolicyRule) v1beta1.RuleObservation {
	n := NormalizeRule(r)
	if n == nil {
		return v1beta1.RuleObservation{}
	}
	return v1beta1.RuleObservation{
		Priority:               n.Priority,
		Action:                 n.Action,
		Description:            n.Description,
		Preview:                n.Preview,
		Match:                  observeMatcher(n.Match),
		NetworkMatch:           observeNetworkMatcher(n.NetworkMatch),
		RateLimitOptions:       observeRateLimitOptions(n.RateLimitOptions),
		RedirectOptions:        observeRedirectOptions(n.RedirectOptions),
		HeaderAction:           observeHeaderAction(n.HeaderAction),
		PreconfiguredWafConfig: observeWafConfig(n.PreconfiguredWafConfig),
	}
}

// The observe functions copy an already normalised Compute message into its
// status type. They need no zero checks of their own: NormalizeRule has
// turned every empty message into nil.

func observeMatcher(m *compute.SecurityPolicyRuleMatcher) *v1beta1.RuleMatcherObservation {
	if m == nil {
		return nil
	}
	out := &v1beta1.RuleMatcherObservation{VersionedExpr: m.VersionedExpr}
	if m.Config != nil {
		out.Config = &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: clip(m.Config.SrcIpRanges)}
	}
	if e := m.Expr; e != nil {
		out.Expr = &v1beta1.ExprObservation{Expression: e.Expression, Title: e.Title, Description: e.Description, Location: e.Location}
	}
	if m.ExprOptions != nil && m.ExprOptions.RecaptchaOptions != nil {
		rc := m.ExprOptions.RecaptchaOptions
		out.ExprOptions = &v1beta1.RuleMatcherExprOptionsObservation{RecaptchaOptions: &v1beta1.RecaptchaOptionsObservation{
			ActionTokenSiteKeys:  clip(rc.ActionTokenSiteKeys),
			SessionTokenSiteKeys: clip(rc.SessionTokenSiteKeys),
		}}
	}
	return out
}

func observeNetworkMatcher(m *compute.SecurityPolicyRuleNetworkMatcher) *v1beta1.RuleNetworkMatcherObservation {
	if m == nil {
		return nil
	}
	out := &v1beta1.RuleNetworkMatcherObservation{
		SrcIpRanges:    clip(m.SrcIpRanges),
		DestIpRanges:   clip(m.DestIpRanges),
		IpProtocols:    clip(m.IpProtocols),
		SrcPorts:       clip(m.SrcPorts),
		DestPorts:      clip(m.DestPorts),
		SrcRegionCodes: clip(m.SrcRegionCodes),
		SrcAsns:        clip(m.SrcAsns),
	}
	for _, f := range m.UserDefinedFields {
		out.UserDefinedFields = append(out.UserDefinedFields, v1beta1.UserDefinedFieldMatchObservation{Name: f.Name, Values: clip(f.Values)})
	}
	return out
}

func observeRateLimitOptions(o *compute.SecurityPolicyRuleRateLimitOptions) *v1beta1.RateLimitOptionsObservation {
	if o == nil {
		return nil
	}
	out := &v1beta1.RateLimitOptionsObservation{
		RateLimitThreshold:    observeThreshold(o.RateLimitThreshold),
		ConformAction:         o.ConformAction,
		ExceedAction:          o.ExceedAction,
		ExceedRedirectOptions: observeRedirectOptions(o.ExceedRedirectOptions),
		EnforceOnKey:          o.EnforceOnKey,
		EnforceOnKeyName:      o.EnforceOnKeyName,
		BanThreshold:          observeThreshold(o.BanThreshold),
		BanDurationSec:        o.BanDurationSec,
	}
	for _, c := range o.EnforceOnKeyConfigs {
		out.EnforceOnKeyConfigs = append(out.EnforceOnKeyConfigs,
			v1beta1.EnforceOnKeyConfigObservation{EnforceOnKeyType: c.EnforceOnKeyType, EnforceOnKeyName: c.EnforceOnKeyName})
	}
	return out
}

func observeThreshold(t *compute.SecurityPolicyRuleRateLimitOptionsThreshold) *v1beta1.RateLimitThresholdObservation {
	if t == nil {
		return nil
	}
	return &v1beta1.RateLimitThresholdObservation{Count: t.Count, IntervalSec: t.IntervalSec}
}

func observeRedirectOptions(o *compute.SecurityPolicyRuleRedirectOptions) *v1beta1.RedirectOptionsObservation {
	if o == nil {
		return nil
	}
	return &v1beta1.RedirectOptionsObservation{Type: o.Type, Target: o.Target}
}

func observeHeaderAction(a *compute.SecurityPolicyRuleHttpHeaderAction) *v1beta1.HTTPHeaderActionObservation {
	if a == nil {
		return nil
	}
	out := &v1beta1.HTTPHeaderActionObservation{}
	for _, h := range a.RequestHeadersToAdds {
		out.RequestHeadersToAdds = append(out.RequestHeadersToAdds,
			v1beta1.HTTPHeaderOptionObservation{HeaderName: h.HeaderName, HeaderValue: h.HeaderValue})
	}
	return out
}

func observeWafConfig(c *compute.SecurityPolicyRulePreconfiguredWafConfig) *v1beta1.PreconfiguredWafConfigObservation {
	if c == nil {
		return nil
	}
	out := &v1beta1.PreconfiguredWafConfigObservation{}
	for _, e := range c.Exclusions {
		out.Exclusions = append(out.Exclusions, v1beta1.WafExclusionObservation{
			TargetRuleSet:               e.TargetRuleSet,
			TargetRuleIds:               clip(e.TargetRuleIds),
			RequestHeadersToExclude:     observeWafParams(e.RequestHeadersToExclude),
			RequestCookiesToExclude:     observeWafParams(e.RequestCookiesToExclude),
			RequestQueryParamsToExclude: observeWafParams(e.RequestQueryParamsToExclude),
			RequestUrisToExclude:        observeWafParams(e.RequestUrisToExclude),
			RequestBodiesToExclude:      observeWafParams(e.RequestBodiesToExclude),
		})
	}
	return out
}

func observeWafParams(ps []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams) []v1beta1.WafExclusionFieldParamsObservation {
	var out []v1beta1.WafExclusionFieldParamsObservation
	for _, p := range ps {
		out = append(out, v1beta1.WafExclusionFieldParamsObservation{Op: p.Op, Val: p.Val})
	}
	return out
}
