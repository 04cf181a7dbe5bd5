package securitypolicies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Limits and enumerations from the compute v1 discovery document (the field
// descriptions in google.golang.org/api/compute/v1) unless noted.
var (
	ruleActions      = core.Set("allow", "deny(403)", "deny(404)", "deny(429)", "deny(502)", "fairshare", "rate_based_ban", "redirect", "throttle")
	rateActions      = core.Set("fairshare", "rate_based_ban", "throttle")
	conformActions   = core.Set("allow")
	exceedActions    = core.Set("deny(403)", "deny(404)", "deny(429)", "deny(502)", "redirect")
	policyTypes      = core.Set("CLOUD_ARMOR", "CLOUD_ARMOR_EDGE", "CLOUD_ARMOR_INTERNAL_SERVICE", "CLOUD_ARMOR_NETWORK")
	enforceOnKey     = core.Set("ALL", "ASN", "HTTP_COOKIE", "HTTP_HEADER", "HTTP_PATH", "IP", "REGION_CODE", "SNI", "TLS_JA3_FINGERPRINT", "TLS_JA4_FINGERPRINT", "USER_IP", "XFF_IP")
	redirectTypes    = core.Set("EXTERNAL_302", "GOOGLE_RECAPTCHA")
	exclusionOps     = core.Set("CONTAINS", "ENDS_WITH", "EQUALS", "EQUALS_ANY", "STARTS_WITH")
	jsonParsings     = core.Set("DISABLED", "STANDARD", "STANDARD_WITH_GRAPHQL")
	logLevels        = core.Set("NORMAL", "VERBOSE")
	inspectionSizes  = core.Set("8KB", "16KB", "32KB", "48KB", "64KB") // "Values are case insensitive."
	ruleVisibilities = core.Set("PREMIUM", "STANDARD")
	granularityTypes = core.Set("HTTP_HEADER_HOST", "HTTP_PATH", "UNSPECIFIED_TYPE")
	ddosProtections  = core.Set("ADVANCED", "ADVANCED_PREVIEW", "STANDARD")
	ddosAdaptive     = core.Set("DDOS_ADAPTIVE_PROTECTION_UNSPECIFIED", "DISABLED", "ENABLED", "PREVIEW", "UNSPECIFIED_ADAPTIVE_PROTECTION")
	fieldBases       = core.Set("IPV4", "IPV6", "TCP", "UDP")
)

const (
	maxSrcIPRanges = 10
	maxKeyConfigs  = 3 // "You can specify up to 3 enforce_on_key_configs."
	// "The description field is limited to 64 characters" (Cloud Armor best
	// practices, about rules).
	maxRuleDescription = 64
	// Chosen, as the provider's CRD: no limit is documented for policies.
	maxPolicyDescription = 2048
	// "The number of request query parameters to exclude for the target …
	// exceeds the limit of 10" (GCP's answer quoted in
	// GoogleCloudPlatform/terraform-google-cloud-armor#134).
	maxExclusionFields = 10

	globalArmorOnly = "This field is only supported in Global Security Policies of type CLOUD_ARMOR."
	networkOnly     = "This field is only supported in security policies of type CLOUD_ARMOR_NETWORK."
)

// clip cuts a value quoted in a message after 100 characters, as compute
// does.
func clip(s string) string {
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "..."
	}
	return s
}

// shown renders an object the way compute quotes one in "Invalid value for
// field" messages: indented JSON with the line breaks removed, clipped; an
// empty object is the empty string. The shape is from a real answer quoted in
// hashicorp/terraform-provider-google#11471; the key order (alphabetical) is
// chosen, GCP uses its own field order.
func shown(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return ""
	}
	s := strings.ReplaceAll(strings.TrimSpace(b.String()), "\n", "")
	if s == "{}" || s == "null" {
		return ""
	}
	return clip(s)
}

func policyType(p *policy) string {
	if p.Type == "" {
		return "CLOUD_ARMOR"
	}
	return p.Type
}

// globalArmor reports whether p is a global CLOUD_ARMOR policy, the only
// kind that supports redirect, headerAction, reCAPTCHA and Adaptive
// Protection ("only supported in Global Security Policies of type
// CLOUD_ARMOR").
func globalArmor(p *policy) bool { return p.Scope.Region == "" && policyType(p) == "CLOUD_ARMOR" }

func validateType(t string) error {
	if !policyTypes[t] {
		return core.ErrInvalidField("resource.type", t, "Must be one of "+core.Keys(policyTypes)+".")
	}
	return nil
}

// validatePolicy checks an insert body after its name and type: where the
// type may live, the policy's own fields, and its rules (in a project of the
// given Cloud Armor tier).
func validatePolicy(sc scope, tier string, in *compute.SecurityPolicy) error {
	switch {
	case in.Type == "CLOUD_ARMOR_EDGE" && sc.Region != "":
		return core.ErrInvalidField("resource.type", in.Type,
			"Security policies of type CLOUD_ARMOR_EDGE are global; they cannot be created in a region.")
	case in.Type == "CLOUD_ARMOR_NETWORK" && sc.Region == "":
		return core.ErrInvalidField("resource.type", in.Type,
			"Security policies of type CLOUD_ARMOR_NETWORK are regional; they cannot be created globally.")
	}
	p := &policy{Scope: sc, Type: in.Type, tier: tier}
	if err := validatePolicyFields(p, in); err != nil {
		return err
	}
	return validateRuleSet(p, in.Rules)
}

// validateStoredFields checks the policy-level fields of p as a PATCH left
// them, so that a merge cannot produce what an insert would refuse.
func validateStoredFields(p *policy) error {
	var in compute.SecurityPolicy
	b, err := json.Marshal(p.Fields)
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		return core.TypeError(err, "security_policy")
	}
	return validatePolicyFields(p, &in)
}

// validatePolicyFields checks the fields of a policy other than its name,
// type, labels and rules, for a policy like p.
func validatePolicyFields(p *policy, in *compute.SecurityPolicy) error {
	if utf8.RuneCountInString(in.Description) > maxPolicyDescription {
		return core.ErrInvalidField("resource.description", clip(in.Description),
			fmt.Sprintf("The description must be at most %d characters long.", maxPolicyDescription))
	}
	if a := in.AdaptiveProtectionConfig; a != nil && a.Layer7DdosDefenseConfig != nil {
		if err := validateLayer7(p, a.Layer7DdosDefenseConfig); err != nil {
			return err
		}
	}
	if o := in.AdvancedOptionsConfig; o != nil {
		const f = "resource.advancedOptionsConfig"
		if err := core.CheckEnum(f+".jsonParsing", o.JsonParsing, jsonParsings); err != nil {
			return err
		}
		if err := core.CheckEnum(f+".logLevel", o.LogLevel, logLevels); err != nil {
			return err
		}
		if s := o.RequestBodyInspectionSize; s != "" && !inspectionSizes[strings.ToUpper(s)] {
			return core.ErrInvalidField(f+".requestBodyInspectionSize", s, "Must be one of "+core.Keys(inspectionSizes)+".")
		}
	}
	if r := in.RecaptchaOptionsConfig; r != nil && r.RedirectSiteKey != "" && !globalArmor(p) {
		return core.ErrInvalidField("resource.recaptchaOptionsConfig.redirectSiteKey", r.RedirectSiteKey, globalArmorOnly)
	}
	if d := in.DdosProtectionConfig; d != nil {
		if err := validateDdosProtection(p, d); err != nil {
			return err
		}
	}
	if len(in.UserDefinedFields) > 0 && policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return core.ErrInvalidField("resource.userDefinedFields", shown(in.UserDefinedFields), networkOnly)
	}
	for i, u := range in.UserDefinedFields {
		if u != nil {
			if err := core.CheckEnum(fmt.Sprintf("resource.userDefinedFields[%d].base", i), u.Base, fieldBases); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateDdosProtection checks network DDoS protection: only
// CLOUD_ARMOR_NETWORK policies have it (gcloud's --network-ddos-protection
// and Terraform's ddos_protection_config exist for regional network policies
// only), and ddosImpactedBaselineThreshold is documented as a fraction of the
// baseline, so 0 to 1 (the bounds are chosen from that). An empty config is
// accepted anywhere, as GCP drops {} messages.
func validateDdosProtection(p *policy, d *compute.SecurityPolicyDdosProtectionConfig) error {
	const f = "resource.ddosProtectionConfig"
	if err := core.CheckEnum(f+".ddosProtection", d.DdosProtection, ddosProtections); err != nil {
		return err
	}
	if err := core.CheckEnum(f+".ddosAdaptiveProtection", d.DdosAdaptiveProtection, ddosAdaptive); err != nil {
		return err
	}
	if t := d.DdosImpactedBaselineThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		return core.ErrInvalidField(f+".ddosImpactedBaselineThreshold", strconv.FormatFloat(t, 'g', -1, 32),
			"Must be a fraction between 0 and 1.")
	}
	empty := d.DdosProtection == "" && d.DdosAdaptiveProtection == "" && d.DdosImpactedBaselineThreshold == 0
	if !empty && policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return core.ErrInvalidField(f, shown(d), networkOnly)
	}
	return nil
}

// validateLayer7 checks Adaptive Protection. A disabled config with nothing
// else set is accepted anywhere (chosen), since clients send it as a default.
func validateLayer7(p *policy, l7 *compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig) error {
	const f = "resource.adaptiveProtectionConfig.layer7DdosDefenseConfig"
	if err := core.CheckEnum(f+".ruleVisibility", l7.RuleVisibility, ruleVisibilities); err != nil {
		return err
	}
	for i, tc := range l7.ThresholdConfigs {
		if tc == nil {
			continue
		}
		for j, g := range tc.TrafficGranularityConfigs {
			if g == nil {
				continue
			}
			if err := core.CheckEnum(fmt.Sprintf("%s.thresholdConfigs[%d].trafficGranularityConfigs[%d].type", f, i, j),
				g.Type, granularityTypes); err != nil {
				return err
			}
		}
	}
	if (l7.Enable || l7.RuleVisibility != "" || len(l7.ThresholdConfigs) > 0) && !globalArmor(p) {
		return core.ErrInvalidField(f, shown(l7), globalArmorOnly)
	}
	return nil
}

// validateRuleSet checks the rules of a whole policy p: each rule, unique
// priorities, and the default rule the API requires ("There must always be a
// default rule which is a rule with priority 2147483647").
func validateRuleSet(p *policy, rules []*compute.SecurityPolicyRule) error {
	seen := map[int64]bool{}
	for i, r := range rules {
		if r == nil {
			return core.ErrInvalidField(fmt.Sprintf("resource.rules[%d]", i), "", "A rule must not be null.")
		}
		if err := validateRule(p, r, fmt.Sprintf("resource.rules[%d]", i)); err != nil {
			return err
		}
		if seen[r.Priority] {
			return errDuplicatePriority(r.Priority)
		}
		seen[r.Priority] = true
	}
	if len(rules) > 0 && !seen[defaultPriority] {
		return core.ErrInvalidField("resource.rules", "",
			"Every security policy must have a default rule at priority 2147483647 with match condition *.")
	}
	return nil
}

// validateRule checks one rule as it would be stored in policy p, whose scope
// and type decide what the rule may use. field prefixes the messages:
// "resource" for addRule and patchRule, "resource.rules[i]" inside a policy.
// Insert, PATCH, addRule and patchRule (on the merged rule) all call it.
func validateRule(p *policy, r *compute.SecurityPolicyRule, field string) error {
	if r.Priority < 0 || r.Priority > defaultPriority {
		return core.ErrInvalidField(field+".priority", strconv.FormatInt(r.Priority, 10),
			"Must be between 0 and 2147483647.")
	}
	if !ruleActions[r.Action] {
		return core.ErrInvalidField(field+".action", r.Action, "Must be one of "+core.Keys(ruleActions)+".")
	}
	for _, check := range []func(*policy, *compute.SecurityPolicyRule, string) error{
		validateAction, validateMatch, validateRateLimit, validateRedirect, validateHeaderAction, validateWafConfig,
	} {
		if err := check(p, r, field); err != nil {
			return err
		}
	}
	return nil
}

// validateAction checks the actions some policies do not have, and the
// description.
func validateAction(p *policy, r *compute.SecurityPolicyRule, field string) error {
	switch {
	case r.Action == "redirect" && !globalArmor(p):
		return core.ErrInvalidField(field+".action", r.Action,
			"This action is only supported in Global Security Policies of type CLOUD_ARMOR.")
	case r.Action == "fairshare" && policyType(p) != "CLOUD_ARMOR_INTERNAL_SERVICE":
		return core.ErrInvalidField(field+".action", r.Action,
			"This action is only allowed in security policies of type CLOUD_ARMOR_INTERNAL_SERVICE.")
	case utf8.RuneCountInString(r.Description) > maxRuleDescription:
		return core.ErrInvalidField(field+".description", clip(r.Description),
			fmt.Sprintf("The description must be at most %d characters long.", maxRuleDescription))
	}
	return nil
}

func validateMatch(p *policy, r *compute.SecurityPolicyRule, field string) error {
	if r.NetworkMatch != nil && policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return core.ErrInvalidField(field+".networkMatch", shown(r.NetworkMatch), networkOnly)
	}
	m := r.Match
	if m == nil {
		if r.NetworkMatch != nil {
			return validateDefaultMatch(r, field)
		}
		return core.ErrInvalidField(field+".match", "", "A match condition must be specified.")
	}
	hasConfig := m.Config != nil && len(m.Config.SrcIpRanges) > 0
	switch {
	case m.VersionedExpr != "" && m.Expr != nil:
		// "Exactly one field must be specified."
		return core.ErrInvalidField(field+".match", shown(m), "Exactly one of versionedExpr and expr must be specified.")
	case m.VersionedExpr != "" && m.VersionedExpr != "SRC_IPS_V1":
		return core.ErrInvalidField(field+".match.versionedExpr", m.VersionedExpr, "Must be one of [SRC_IPS_V1].")
	case m.VersionedExpr != "" && !hasConfig:
		return core.ErrInvalidField(field+".match.config", "", "config must be specified when versionedExpr is set.")
	case m.VersionedExpr == "" && hasConfig:
		return core.ErrInvalidField(field+".match.versionedExpr", "", "versionedExpr must be specified when config is set.")
	case m.VersionedExpr == "" && m.Expr == nil:
		return core.ErrInvalidField(field+".match", "", "A match condition must be specified.")
	}
	if hasConfig {
		if err := validateRanges(field+".match.config.srcIpRanges", m.Config.SrcIpRanges); err != nil {
			return err
		}
	}
	if m.Expr != nil {
		if err := validateExpr(p, m.Expr.Expression, field+".match.expr.expression"); err != nil {
			return err
		}
	}
	return validateDefaultMatch(r, field)
}

// validateExpr checks a match expression (see checkExpr) and the functions
// only some policies have: "Expressions containing evaluateThreatIntelligence
// … are not supported in Edge Policies nor in Regional Policies. Expressions
// containing evaluatePreconfiguredExpr('sourceiplist-*') … are only supported
// in Global Security Policies." Address groups need Cloud Armor Enterprise
// ("You need an active Google Cloud Armor Enterprise subscription to use
// address groups"), and so do named IP address lists ("projects that are
// enrolled in Cloud Armor Enterprise" may use them).
func validateExpr(p *policy, text, field string) error {
	c := checkExpr(text)
	detail := c.problem
	switch {
	case detail != "":
	case c.threatIntel && (p.Scope.Region != "" || policyType(p) == "CLOUD_ARMOR_EDGE"):
		detail = "Expressions containing evaluateThreatIntelligence are not supported in Edge Policies nor in Regional Policies."
	case c.sourceIPList && p.Scope.Region != "":
		detail = "Expressions containing evaluatePreconfiguredExpr('sourceiplist-*') are only supported in Global Security Policies."
	case c.addressGroups && !enterprise(p.tier):
		detail = errTierDetail(featureAddressGroups, p.Scope.Project, p.tier)
	case c.sourceIPList && !enterprise(p.tier):
		detail = errTierDetail(featureNamedIPLists, p.Scope.Project, p.tier)
	default:
		return nil
	}
	return core.ErrInvalidField(field, clip(text), detail)
}

// validateDefaultMatch: the rule at 2147483647 must "match all" ("match "*"
// for srcIpRanges and for the networkMatch condition every field must be
// either match "*" or not set"); the expression "true" also matches all.
func validateDefaultMatch(r *compute.SecurityPolicyRule, field string) error {
	if r.Priority != defaultPriority {
		return nil
	}
	if m := r.Match; m != nil {
		all := m.Expr != nil && strings.TrimSpace(m.Expr.Expression) == "true" ||
			m.Config != nil && slices.Equal(m.Config.SrcIpRanges, []string{"*"})
		if !all {
			return core.ErrInvalidField(field+".match", shown(m),
				"The default rule (priority 2147483647) must match all requests: srcIpRanges ['*'] or the expression 'true'.")
		}
	}
	if n := r.NetworkMatch; n != nil && !networkMatchesAll(n) {
		return core.ErrInvalidField(field+".networkMatch", shown(n),
			"The default rule (priority 2147483647) must match all packets: every field '*' or not set.")
	}
	return nil
}

func networkMatchesAll(n *compute.SecurityPolicyRuleNetworkMatcher) bool {
	star := func(l []string) bool { return len(l) == 0 || slices.Equal(l, []string{"*"}) }
	for _, u := range n.UserDefinedFields {
		if u != nil && !star(u.Values) {
			return false
		}
	}
	return star(n.SrcIpRanges) && star(n.DestIpRanges) && star(n.IpProtocols) && star(n.SrcPorts) &&
		star(n.DestPorts) && star(n.SrcRegionCodes) && len(n.SrcAsns) == 0
}

// validateRanges enforces "Maximum number of src_ip_ranges allowed is 10"
// and that every entry is an IP, a CIDR or "*".
func validateRanges(field string, ranges []string) error {
	if len(ranges) > maxSrcIPRanges {
		return core.ErrInvalidField(field, strconv.Itoa(len(ranges)),
			fmt.Sprintf("Maximum number of src_ip_ranges allowed is %d.", maxSrcIPRanges))
	}
	for i, s := range ranges {
		if s == "*" {
			continue
		}
		if _, err := netip.ParsePrefix(s); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(s); err == nil {
			continue
		}
		return core.ErrInvalidField(fmt.Sprintf("%s[%d]", field, i), s, "Must be a valid IPv4 or IPv6 address or CIDR range.")
	}
	return nil
}

func validateRateLimit(p *policy, r *compute.SecurityPolicyRule, field string) error {
	o := r.RateLimitOptions
	if (o != nil) != rateActions[r.Action] {
		return core.ErrInvalidField(field+".rateLimitOptions", "",
			"Rate limit options must be specified if the action is 'fairshare', 'rate_based_ban' or 'throttle'. "+
				"It cannot be specified for any other actions")
	}
	if o == nil {
		return nil
	}
	f := field + ".rateLimitOptions"
	if o.EnforceOnKey != "" && len(o.EnforceOnKeyConfigs) > 0 {
		return core.ErrInvalidField(f+".enforceOnKeyConfigs", "",
			"enforceOnKey and enforceOnKeyConfigs cannot be specified together.")
	}
	if err := core.CheckEnum(f+".enforceOnKey", o.EnforceOnKey, enforceOnKey); err != nil {
		return err
	}
	if n := len(o.EnforceOnKeyConfigs); n > maxKeyConfigs {
		return core.ErrInvalidField(f+".enforceOnKeyConfigs", strconv.Itoa(n),
			fmt.Sprintf("Maximum number of enforce_on_key_configs allowed is %d.", maxKeyConfigs))
	}
	for i, c := range o.EnforceOnKeyConfigs {
		if c != nil {
			if err := core.CheckEnum(fmt.Sprintf("%s.enforceOnKeyConfigs[%d].enforceOnKeyType", f, i), c.EnforceOnKeyType, enforceOnKey); err != nil {
				return err
			}
		}
	}
	if err := core.CheckEnum(f+".conformAction", o.ConformAction, conformActions); err != nil {
		return err
	}
	if err := core.CheckEnum(f+".exceedAction", o.ExceedAction, exceedActions); err != nil {
		return err
	}
	switch {
	case (o.ExceedAction == "redirect") != (o.ExceedRedirectOptions != nil):
		return core.ErrInvalidField(f, shown(o), "Exceed redirect options must be specified if the exceed action is 'redirect'. "+
			"It cannot be specified for any other exceed actions.")
	case o.ExceedAction == "redirect" && !globalArmor(p):
		return core.ErrInvalidField(f+".exceedAction", o.ExceedAction,
			"The redirect action is only supported in Global Security Policies of type CLOUD_ARMOR.")
	case o.RateLimitThreshold == nil:
		return core.ErrInvalidField(f+".rateLimitThreshold", "", "Rate limit threshold must be specified.")
	case r.Action != "rate_based_ban" && (o.BanThreshold != nil || o.BanDurationSec != 0):
		return core.ErrInvalidField(f, shown(o),
			"Ban threshold and ban duration can only be specified if the action is 'rate_based_ban'.")
	case r.Action == "fairshare" && o.EnforceOnKey != "" && o.EnforceOnKey != "ALL":
		return core.ErrInvalidField(f+".enforceOnKey", o.EnforceOnKey, "For the 'fairshare' action, enforceOnKey is limited to ALL.")
	}
	if o.ExceedRedirectOptions != nil {
		return validateRedirectOptions(f+".exceedRedirectOptions", o.ExceedRedirectOptions)
	}
	return nil
}

// validateRedirect: redirectOptions go with the redirect action, and only
// with it ("Parameters defining the redirect action. Cannot be specified for
// any other actions."). The wording follows GCP's for rateLimitOptions.
func validateRedirect(_ *policy, r *compute.SecurityPolicyRule, field string) error {
	o := r.RedirectOptions
	if (o != nil) != (r.Action == "redirect") {
		return core.ErrInvalidField(field+".redirectOptions", shown(o),
			"Redirect options must be specified if the action is 'redirect'. It cannot be specified for any other actions.")
	}
	if o == nil {
		return nil
	}
	return validateRedirectOptions(field+".redirectOptions", o)
}

// validateRedirectOptions: "Target for the redirect action. This is required
// if the type is EXTERNAL_302 and cannot be specified for GOOGLE_RECAPTCHA."
func validateRedirectOptions(field string, o *compute.SecurityPolicyRuleRedirectOptions) error {
	if !redirectTypes[o.Type] {
		return core.ErrInvalidField(field+".type", o.Type, "Must be one of "+core.Keys(redirectTypes)+".")
	}
	if (o.Type == "EXTERNAL_302") != (o.Target != "") {
		return core.ErrInvalidField(field, shown(o), "Redirect target must be specified if the redirect type is 'EXTERNAL_302'. "+
			"It cannot be specified for 'GOOGLE_RECAPTCHA'.")
	}
	return nil
}

// validateHeaderAction: headers can only be added in global CLOUD_ARMOR
// policies. An empty headerAction {}, which Terraform and Config Connector
// send with every rule (R2, R4), is accepted anywhere (chosen).
func validateHeaderAction(p *policy, r *compute.SecurityPolicyRule, field string) error {
	if h := r.HeaderAction; h != nil && len(h.RequestHeadersToAdds) > 0 && !globalArmor(p) {
		return core.ErrInvalidField(field+".headerAction", shown(h), globalArmorOnly)
	}
	return nil
}

// validateWafConfig checks WAF exclusions: a known target rule set, known
// operators, and at most 10 fields of each kind per target.
func validateWafConfig(_ *policy, r *compute.SecurityPolicyRule, field string) error {
	w := r.PreconfiguredWafConfig
	if w == nil {
		return nil
	}
	for i, ex := range w.Exclusions {
		if ex == nil {
			continue
		}
		f := fmt.Sprintf("%s.preconfiguredWafConfig.exclusions[%d]", field, i)
		if !wafRuleSets[ex.TargetRuleSet] {
			return core.ErrInvalidField(f+".targetRuleSet", ex.TargetRuleSet, "Must be the name of a preconfigured WAF rule set.")
		}
		target := ex.TargetRuleSet
		if len(ex.TargetRuleIds) > 0 {
			target += ":" + ex.TargetRuleIds[0]
		}
		for _, l := range []struct {
			key, what string
			params    []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams
		}{
			{"requestHeadersToExclude", "request headers", ex.RequestHeadersToExclude},
			{"requestCookiesToExclude", "request cookies", ex.RequestCookiesToExclude},
			{"requestQueryParamsToExclude", "request query parameters", ex.RequestQueryParamsToExclude},
			{"requestUrisToExclude", "request URIs", ex.RequestUrisToExclude},
			{"requestBodiesToExclude", "request bodies", ex.RequestBodiesToExclude},
		} {
			for j, fp := range l.params {
				op := ""
				if fp != nil {
					op = fp.Op
				}
				if !exclusionOps[op] {
					return core.ErrInvalidField(fmt.Sprintf("%s.%s[%d].op", f, l.key, j), op, "Must be one of "+core.Keys(exclusionOps)+".")
				}
			}
			if len(l.params) > maxExclusionFields {
				return core.ErrInvalidField(field+".preconfiguredWafConfig", shown(w), fmt.Sprintf(
					"The number of %s to exclude for the target %s exceeds the limit of %d.", l.what, target, maxExclusionFields))
			}
		}
	}
	return nil
}
