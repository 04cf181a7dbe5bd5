package gcppolicy

import (
	"slices"

	"google.golang.org/api/compute/v1"
)

// RuleUpdateMask returns the updateMask for patchRule(desired) over observed:
// the snake_case path of every rule field set in either of them. Fields named
// in the mask but absent from the body are cleared, and GCP keeps a field
// the body omits unless the mask names it, so without the mask a rule
// switched from enforceOnKey to enforceOnKeyConfigs, or a description or
// preconfiguredWafConfig removed from the spec, would keep its old value for
// ever (reference/gcp-cloudarmor-api.md b.4). Naming only fields set on one
// side keeps paths GCP might reject for the policy type (networkMatch outside
// CLOUD_ARMOR_NETWORK) out of the mask. rateLimitOptions is named field by
// field, as in the recorded calls, when desired keeps it.
func RuleUpdateMask(desired, observed *compute.SecurityPolicyRule) []string {
	d, o := orEmpty(NormalizeRule(desired)), orEmpty(NormalizeRule(observed))
	var mask []string
	add := func(path string, inDesired, inObserved bool) {
		if inDesired || inObserved {
			mask = append(mask, path)
		}
	}
	add("action", d.Action != "", o.Action != "")
	add("description", d.Description != "", o.Description != "")
	add("preview", d.Preview, o.Preview)
	add("match", d.Match != nil, o.Match != nil)
	add("network_match", d.NetworkMatch != nil, o.NetworkMatch != nil)
	add("redirect_options", d.RedirectOptions != nil, o.RedirectOptions != nil)
	add("header_action", d.HeaderAction != nil, o.HeaderAction != nil)
	add("preconfigured_waf_config", d.PreconfiguredWafConfig != nil, o.PreconfiguredWafConfig != nil)
	mask = append(mask, rateLimitMask(d.RateLimitOptions, o.RateLimitOptions)...)
	slices.Sort(mask)
	return mask
}

func rateLimitMask(d, o *compute.SecurityPolicyRuleRateLimitOptions) []string {
	switch {
	case d == nil && o == nil:
		return nil
	case d == nil:
		return []string{"rate_limit_options"}
	}
	o = orEmpty(o)
	const p = "rate_limit_options."
	var mask []string
	add := func(path string, inDesired, inObserved bool) {
		if inDesired || inObserved {
			mask = append(mask, p+path)
		}
	}
	add("rate_limit_threshold", d.RateLimitThreshold != nil, o.RateLimitThreshold != nil)
	add("conform_action", d.ConformAction != "", o.ConformAction != "")
	add("exceed_action", d.ExceedAction != "", o.ExceedAction != "")
	add("exceed_redirect_options", d.ExceedRedirectOptions != nil, o.ExceedRedirectOptions != nil)
	add("enforce_on_key", d.EnforceOnKey != "", o.EnforceOnKey != "")
	add("enforce_on_key_name", d.EnforceOnKeyName != "", o.EnforceOnKeyName != "")
	add("enforce_on_key_configs", d.EnforceOnKeyConfigs != nil, o.EnforceOnKeyConfigs != nil)
	add("ban_threshold", d.BanThreshold != nil, o.BanThreshold != nil)
	add("ban_duration_sec", d.BanDurationSec != 0, o.BanDurationSec != 0)
	return mask
}

// orEmpty returns p, or a pointer to a zero value for nil.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// RuleClearedFields returns the paths of RuleUpdateMask(desired, observed)
// that only observed sets: the fields patchRule(desired) must clear. A
// patchRule without an updateMask (an organization policy's, which compute
// v1 gives none) keeps them, so when this is empty a patch without a mask
// makes observed desired, and when it is not, no such patch can.
func RuleClearedFields(desired, observed *compute.SecurityPolicyRule) []string {
	kept := RuleUpdateMask(desired, nil)
	var cleared []string
	for _, p := range RuleUpdateMask(desired, observed) {
		if !slices.Contains(kept, p) {
			cleared = append(cleared, p)
		}
	}
	return cleared
}
