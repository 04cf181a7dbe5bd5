package emulator

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// Limits and enumerations from the compute v1 discovery document.
var (
	namePattern  = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)
	labelKey     = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValue   = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
	ruleActions  = set("allow", "deny(403)", "deny(404)", "deny(429)", "deny(502)", "fairshare", "rate_based_ban", "redirect", "throttle")
	rateActions  = set("fairshare", "rate_based_ban", "throttle")
	policyTypes  = set("CLOUD_ARMOR", "CLOUD_ARMOR_EDGE", "CLOUD_ARMOR_INTERNAL_SERVICE", "CLOUD_ARMOR_NETWORK")
	enforceOnKey = set("ALL", "ASN", "HTTP_COOKIE", "HTTP_HEADER", "HTTP_PATH", "IP", "REGION_CODE", "SNI",
		"TLS_JA3_FINGERPRINT", "TLS_JA4_FINGERPRINT", "USER_IP", "XFF_IP")
)

const maxSrcIPRanges = 10

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func keys(m map[string]bool) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return "[" + strings.Join(out, ", ") + "]"
}

// validateName checks a policy name against the API's pattern.
func validateName(name string) error {
	if !namePattern.MatchString(name) {
		return errInvalidField("resource.name", name,
			"Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	return nil
}

func validateType(t string) error {
	if !policyTypes[t] {
		return errInvalidField("resource.type", t, "Must be one of "+keys(policyTypes)+".")
	}
	return nil
}

// validateRule checks one rule; field is the prefix used in messages
// ("resource" for addRule/patchRule, "resource.rules[i]" inside a policy).
func validateRule(field string, r *compute.SecurityPolicyRule) error {
	if r.Priority < 0 || r.Priority > defaultPriority {
		return errInvalidField(field+".priority", strconv.FormatInt(r.Priority, 10),
			"Must be between 0 and 2147483647.")
	}
	if !ruleActions[r.Action] {
		return errInvalidField(field+".action", r.Action, "Must be one of "+keys(ruleActions)+".")
	}
	if err := validateMatch(field, r); err != nil {
		return err
	}
	return validateRateLimit(field, r)
}

func validateMatch(field string, r *compute.SecurityPolicyRule) error {
	m := r.Match
	if m == nil {
		if r.NetworkMatch != nil {
			return nil
		}
		return errInvalidField(field+".match", "", "A match condition must be specified.")
	}
	hasConfig := m.Config != nil && len(m.Config.SrcIpRanges) > 0
	switch {
	case m.VersionedExpr != "" && m.VersionedExpr != "SRC_IPS_V1":
		return errInvalidField(field+".match.versionedExpr", m.VersionedExpr, "Must be one of [SRC_IPS_V1].")
	case m.VersionedExpr != "" && !hasConfig:
		return errInvalidField(field+".match.config", "", "config must be specified when versionedExpr is set.")
	case m.VersionedExpr == "" && hasConfig:
		return errInvalidField(field+".match.versionedExpr", "", "versionedExpr must be specified when config is set.")
	case m.VersionedExpr == "" && m.Expr == nil:
		return errInvalidField(field+".match", "", "A match condition must be specified.")
	}
	if hasConfig {
		return validateRanges(field+".match.config.srcIpRanges", m.Config.SrcIpRanges)
	}
	return nil
}

// validateRanges enforces "Maximum number of src_ip_ranges allowed is 10"
// and that every entry is an IP, a CIDR or "*".
func validateRanges(field string, ranges []string) error {
	if len(ranges) > maxSrcIPRanges {
		return errInvalidField(field, strconv.Itoa(len(ranges)),
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
		return errInvalidField(fmt.Sprintf("%s[%d]", field, i), s, "Must be a valid IPv4 or IPv6 address or CIDR range.")
	}
	return nil
}

func validateRateLimit(field string, r *compute.SecurityPolicyRule) error {
	o := r.RateLimitOptions
	if (o != nil) != rateActions[r.Action] {
		return errInvalidField(field+".rateLimitOptions", "",
			"Rate limit options must be specified if the action is 'fairshare', 'rate_based_ban' or 'throttle'. "+
				"It cannot be specified for any other actions")
	}
	if o == nil {
		return nil
	}
	if o.EnforceOnKey != "" && len(o.EnforceOnKeyConfigs) > 0 {
		return errInvalidField(field+".rateLimitOptions.enforceOnKeyConfigs", "",
			"enforceOnKey and enforceOnKeyConfigs cannot be specified together.")
	}
	if o.EnforceOnKey != "" && !enforceOnKey[o.EnforceOnKey] {
		return errInvalidField(field+".rateLimitOptions.enforceOnKey", o.EnforceOnKey, "Must be one of "+keys(enforceOnKey)+".")
	}
	for i, c := range o.EnforceOnKeyConfigs {
		if c != nil && c.EnforceOnKeyType != "" && !enforceOnKey[c.EnforceOnKeyType] {
			return errInvalidField(fmt.Sprintf("%s.rateLimitOptions.enforceOnKeyConfigs[%d].enforceOnKeyType", field, i),
				c.EnforceOnKeyType, "Must be one of "+keys(enforceOnKey)+".")
		}
	}
	return nil
}

// validateRuleSet checks the rules of a whole policy: each rule, unique
// priorities, and the default rule the API requires ("There must always be a
// default rule which is a rule with priority 2147483647").
func validateRuleSet(rules []*compute.SecurityPolicyRule) error {
	seen := map[int64]bool{}
	for i, r := range rules {
		if r == nil {
			return errInvalidField(fmt.Sprintf("resource.rules[%d]", i), "", "A rule must not be null.")
		}
		if err := validateRule(fmt.Sprintf("resource.rules[%d]", i), r); err != nil {
			return err
		}
		if seen[r.Priority] {
			return errDuplicatePriority(r.Priority)
		}
		seen[r.Priority] = true
	}
	if len(rules) > 0 && !seen[defaultPriority] {
		return errInvalidField("resource.rules", "",
			"Every security policy must have a default rule at priority 2147483647 with match condition *.")
	}
	return nil
}

// validateLabels applies compute's label rules (at most 64, lowercase keys).
func validateLabels(labels map[string]string) error {
	if len(labels) > 64 {
		return errInvalidField("labels", strconv.Itoa(len(labels)), "At most 64 labels are allowed.")
	}
	for k, v := range labels {
		if !labelKey.MatchString(k) {
			return errInvalidField("labels."+k, k, "Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'.")
		}
		if !labelValue.MatchString(v) {
			return errInvalidField("labels."+k, v, "Label values must contain only lowercase letters, digits, '_' and '-'.")
		}
	}
	return nil
}
