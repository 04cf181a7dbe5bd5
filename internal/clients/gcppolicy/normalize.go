package gcppolicy

import (
	"cmp"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// NormalizeRule returns a copy of r with GCP's fill-ins removed, so that a
// rule as generated from the spec and the same rule as GCP returns it are
// equal. The package documentation lists every normalisation. r is not
// modified; the copy shares no memory with it.
func NormalizeRule(r *compute.SecurityPolicyRule) *compute.SecurityPolicyRule {
	if r == nil {
		return nil
	}
	out := &compute.SecurityPolicyRule{
		Priority:               r.Priority,
		Action:                 r.Action,
		Description:            r.Description,
		Preview:                r.Preview,
		Match:                  normalizeMatcher(r.Match),
		NetworkMatch:           normalizeNetworkMatcher(r.NetworkMatch),
		RateLimitOptions:       normalizeRateLimitOptions(r.RateLimitOptions),
		RedirectOptions:        normalizeRedirectOptions(r.RedirectOptions),
		HeaderAction:           normalizeHeaderAction(r.HeaderAction),
		PreconfiguredWafConfig: normalizeWafConfig(r.PreconfiguredWafConfig),
	}
	if out.Priority == v1beta1.DefaultRulePriority && out.Match == nil && out.NetworkMatch == nil {
		out.Match = matchAll()
	}
	return out
}

func normalizeMatcher(m *compute.SecurityPolicyRuleMatcher) *compute.SecurityPolicyRuleMatcher {
	if m == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleMatcher{VersionedExpr: m.VersionedExpr}
	if m.Config != nil {
		out.Config = nilIfZero(&compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: normalizeRanges(m.Config.SrcIpRanges)})
	}
	if m.Expr != nil {
		out.Expr = nilIfZero(&compute.Expr{
			Expression:  m.Expr.Expression,
			Title:       m.Expr.Title,
			Description: m.Expr.Description,
			Location:    m.Expr.Location,
		})
	}
	if m.ExprOptions != nil && m.ExprOptions.RecaptchaOptions != nil {
		o := m.ExprOptions.RecaptchaOptions
		rc := nilIfZero(&compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{
			ActionTokenSiteKeys:  clip(o.ActionTokenSiteKeys),
			SessionTokenSiteKeys: clip(o.SessionTokenSiteKeys),
		})
		if rc != nil {
			out.ExprOptions = &compute.SecurityPolicyRuleMatcherExprOptions{RecaptchaOptions: rc}
		}
	}
	return nilIfZero(out)
}

func normalizeNetworkMatcher(m *compute.SecurityPolicyRuleNetworkMatcher) *compute.SecurityPolicyRuleNetworkMatcher {
	if m == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleNetworkMatcher{
		SrcIpRanges:    normalizeRanges(m.SrcIpRanges),
		DestIpRanges:   normalizeRanges(m.DestIpRanges),
		IpProtocols:    sortedSet(m.IpProtocols),
		SrcPorts:       sortedSet(m.SrcPorts),
		DestPorts:      sortedSet(m.DestPorts),
		SrcRegionCodes: sortedSet(m.SrcRegionCodes),
		SrcAsns:        sortedSet(m.SrcAsns),
	}
	for _, f := range m.UserDefinedFields {
		if f == nil || (f.Name == "" && len(f.Values) == 0) {
			continue
		}
		out.UserDefinedFields = append(out.UserDefinedFields,
			&compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{Name: f.Name, Values: sortedSet(f.Values)})
	}
	// Every field must match, so the order of the user-defined field matches
	// carries no meaning either.
	slices.SortStableFunc(out.UserDefinedFields, func(a, b *compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), slices.Compare(a.Values, b.Values))
	})
	return nilIfZero(out)
}

func normalizeRateLimitOptions(o *compute.SecurityPolicyRuleRateLimitOptions) *compute.SecurityPolicyRuleRateLimitOptions {
	if o == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleRateLimitOptions{
		RateLimitThreshold:    normalizeThreshold(o.RateLimitThreshold),
		ConformAction:         o.ConformAction,
		ExceedAction:          o.ExceedAction,
		ExceedRedirectOptions: normalizeRedirectOptions(o.ExceedRedirectOptions),
		EnforceOnKey:          o.EnforceOnKey,
		EnforceOnKeyName:      o.EnforceOnKeyName,
		BanThreshold:          normalizeThreshold(o.BanThreshold),
		BanDurationSec:        o.BanDurationSec,
	}
	for _, c := range o.EnforceOnKeyConfigs {
		if c == nil || (c.EnforceOnKeyType == "" && c.EnforceOnKeyName == "") {
			continue
		}
		out.EnforceOnKeyConfigs = append(out.EnforceOnKeyConfigs, &compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{
			EnforceOnKeyType: c.EnforceOnKeyType,
			EnforceOnKeyName: c.EnforceOnKeyName,
		})
	}
	return nilIfZero(out)
}

func normalizeThreshold(t *compute.SecurityPolicyRuleRateLimitOptionsThreshold) *compute.SecurityPolicyRuleRateLimitOptionsThreshold {
	if t == nil {
		return nil
	}
	return nilIfZero(&compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: t.Count, IntervalSec: t.IntervalSec})
}

func normalizeRedirectOptions(o *compute.SecurityPolicyRuleRedirectOptions) *compute.SecurityPolicyRuleRedirectOptions {
	if o == nil {
		return nil
	}
	return nilIfZero(&compute.SecurityPolicyRuleRedirectOptions{Type: o.Type, Target: o.Target})
}

func normalizeHeaderAction(a *compute.SecurityPolicyRuleHttpHeaderAction) *compute.SecurityPolicyRuleHttpHeaderAction {
	if a == nil {
		return nil
	}
	out := &compute.SecurityPolicyRuleHttpHeaderAction{}
	for _, h := range a.RequestHeadersToAdds {
		if h == nil || (h.HeaderName == "" && h.HeaderValue == "") {
			continue
		}
		out.RequestHeadersToAdds = append(out.RequestHeadersToAdds,
			&compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{HeaderName: h.HeaderName, HeaderValue: h.HeaderValue})
	}
	return nilIfZero(out)
}

func normalizeWafConfig(c *compute.SecurityPolicyRulePreconfiguredWafConfig) *compute.SecurityPolicyRulePreconfiguredWafConfig {
	if c == nil {
		return nil
	}
	out := &compute.SecurityPolicyRulePreconfiguredWafConfig{}
	for _, e := range c.Exclusions {
		if e == nil {
			continue
		}
		ne := nilIfZero(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{
			TargetRuleSet:               e.TargetRuleSet,
			TargetRuleIds:               clip(e.TargetRuleIds),
			RequestHeadersToExclude:     normalizeWafParams(e.RequestHeadersToExclude),
			RequestCookiesToExclude:     normalizeWafParams(e.RequestCookiesToExclude),
			RequestQueryParamsToExclude: normalizeWafParams(e.RequestQueryParamsToExclude),
			RequestUrisToExclude:        normalizeWafParams(e.RequestUrisToExclude),
			RequestBodiesToExclude:      normalizeWafParams(e.RequestBodiesToExclude),
		})
		if ne != nil {
			out.Exclusions = append(out.Exclusions, ne)
		}
	}
	return nilIfZero(out)
}

func normalizeWafParams(ps []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams) []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams {
	var out []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams
	for _, p := range ps {
		if p == nil || (p.Op == "" && p.Val == "") {
			continue
		}
		out = append(out, &compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{Op: p.Op, Val: p.Val})
	}
	return out
}

// normalizeRanges returns the canonical, sorted, de-duplicated form of a list
// of IP ranges, nil when empty. A rule matches a source in any of its ranges,
// so the list is a set.
func normalizeRanges(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = CanonicalRange(r)
	}
	return sortedSet(out)
}

// CanonicalRange returns the canonical form of one IP range: "*" stays "*", a
// bare address becomes its /32 (IPv4) or /128 (IPv6) prefix and a CIDR is
// reduced to its network address (10.0.0.1/8 becomes 10.0.0.0/8), in Go's
// canonical text form (lower-case, compressed IPv6). Anything that does not
// parse, such as an address with a zone, is returned trimmed but otherwise
// unchanged so that it is still compared verbatim.
func CanonicalRange(s string) string {
	s = strings.TrimSpace(s)
	if s == "*" {
		return s
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}

// sortedSet returns a sorted copy of in without duplicates, nil when empty.
func sortedSet[T cmp.Ordered](in []T) []T {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// nilIfZero returns nil for a pointer to a zero value: GCP treats an empty
// message like an absent one (and echoes {} when it was sent {}).
func nilIfZero[T any](p *T) *T {
	if p == nil || reflect.ValueOf(p).Elem().IsZero() {
		return nil
	}
	return p
}
