package securitypolicies

import "github.com/armorplane/provider-cloudarmor/internal/emulator/core"

// wafRuleSets are the preconfigured WAF rule sets Cloud Armor documents
// ("Preconfigured WAF rules overview", "Tune preconfigured WAF rules"): each
// attack family of OWASP CRS 4.22 (-v422-), 3.3 (-v33-) and 3.0 (no version),
// in a stable and a canary flavour, plus the CVE and JSON-SQLi sets. They
// are the names evaluatePreconfiguredWaf, evaluatePreconfiguredExpr and a WAF
// exclusion's targetRuleSet accept. The sets listPreconfiguredExpressionSets
// returns are included so that the two never disagree.
var wafRuleSets = func() map[string]bool {
	families := map[string][]string{
		"-v422": {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
			"php", "sessionfixation", "java", "generic"},
		"-v33": {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
			"php", "sessionfixation", "java", "nodejs"},
		"": {"sqli", "xss", "lfi", "rfi", "rce", "methodenforcement", "scannerdetection", "protocolattack",
			"php", "sessionfixation"},
	}
	out := core.Set("cve-canary", "json-sqli-canary")
	for version, names := range families {
		for _, n := range names {
			out[n+version+"-stable"] = true
			out[n+version+"-canary"] = true
		}
	}
	for _, s := range expressionSets {
		out[s.id] = true
		for _, a := range s.aliases {
			out[a] = true
		}
	}
	return out
}()
