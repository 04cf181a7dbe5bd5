// Package wafset names Cloud Armor's preconfigured WAF rule sets: the names
// that evaluatePreconfiguredWaf, evaluatePreconfiguredExpr and a WAF
// exclusion's targetRuleSet accept ("Preconfigured WAF rules overview",
// https://cloud.google.com/armor/docs/waf-rules; "Tune preconfigured WAF
// rules", https://cloud.google.com/armor/docs/rule-tuning). The emulator
// validates names against it and the offline evaluator maps them to OWASP
// CRS rules, so the two never disagree.
package wafset

import "strings"

// CRS versions, as the part of a set's name between the family and
// -stable or -canary.
const (
	VersionCRS422 = "-v422"
	VersionCRS33  = "-v33"
	VersionCRS30  = ""
)

// Families lists the attack families of each CRS version Cloud Armor
// offers: OWASP CRS 4.22 (-v422-), 3.3 (-v33-) and 3.0 (no version).
var Families = map[string][]string{
	VersionCRS422: {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
		"php", "sessionfixation", "java", "generic"},
	VersionCRS33: {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
		"php", "sessionfixation", "java", "nodejs"},
	VersionCRS30: {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
		"php", "sessionfixation"},
}

// Others are sets that are not a CRS family: Google's own CVE signatures
// and the JSON-based SQL injection set.
var Others = []string{"cve-canary", "json-sqli-canary"}

// A Set is a rule set name taken apart.
type Set struct {
	// Family is the attack family: sqli, xss, ...
	Family string
	// Version is one of the Version constants.
	Version string
	// Canary is true for -canary, false for -stable.
	Canary bool
}

// Parse takes a CRS family set's name apart; ok is false for a name that
// is not one (including Others).
func Parse(name string) (s Set, ok bool) {
	rest, found := strings.CutSuffix(name, "-stable")
	if !found {
		rest, found = strings.CutSuffix(name, "-canary")
		s.Canary = true
	}
	if !found {
		return Set{}, false
	}
	for _, version := range []string{VersionCRS422, VersionCRS33} {
		if f, ok := strings.CutSuffix(rest, version); ok && hasFamily(version, f) {
			return Set{Family: f, Version: version, Canary: s.Canary}, true
		}
	}
	if hasFamily(VersionCRS30, rest) {
		return Set{Family: rest, Version: VersionCRS30, Canary: s.Canary}, true
	}
	return Set{}, false
}

func hasFamily(version, family string) bool {
	for _, f := range Families[version] {
		if f == family {
			return true
		}
	}
	return false
}

// Names returns every set name: each family of each version, stable and
// canary, and Others.
func Names() map[string]bool {
	out := map[string]bool{}
	for _, n := range Others {
		out[n] = true
	}
	for version, families := range Families {
		for _, f := range families {
			out[f+version+"-stable"] = true
			out[f+version+"-canary"] = true
		}
	}
	return out
}
