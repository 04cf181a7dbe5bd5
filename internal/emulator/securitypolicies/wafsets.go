package securitypolicies

import "github.com/armorplane/provider-cloudarmor/internal/wafset"

// wafRuleSets are the preconfigured WAF rule sets Cloud Armor documents
// (internal/wafset, shared with the offline evaluator): each attack family
// of OWASP CRS 4.22 (-v422-), 3.3 (-v33-) and 3.0 (no version), in a stable
// and a canary flavour, plus the CVE and JSON-SQLi sets. They are the names
// evaluatePreconfiguredWaf, evaluatePreconfiguredExpr and a WAF exclusion's
// targetRuleSet accept. The sets listPreconfiguredExpressionSets returns are
// included so that the two never disagree.
var wafRuleSets = func() map[string]bool {
	out := wafset.Names()
	for _, s := range expressionSets {
		out[s.id] = true
		for _, a := range s.aliases {
			out[a] = true
		}
	}
	return out
}()
