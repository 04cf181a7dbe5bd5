package securitypolicies

import (
	"fmt"
	"testing"
)

// TestWafRuleSets pins the rule set names Cloud Armor documents (its
// "Tune preconfigured WAF rules" page) against the emulator's list, and a
// few names that are not sets.
func TestWafRuleSets(t *testing.T) {
	cases := map[string]bool{
		"sqli-v33-stable":            true,
		"xss-v33-canary":             true,
		"lfi-v422-stable":            true,
		"rce-stable":                 true,
		"protocolattack-v33-stable":  true,
		"sessionfixation-v33-stable": true,
		"cve-canary":                 true,
		"json-sqli-canary":           true,
		"sqli-v99-stable":            false,
		"sqli":                       false,
		"no-such-set-v33-stable":     false,
	}
	for name, known := range cases {
		t.Run(name, func(t *testing.T) {
			c := checkExpr(fmt.Sprintf("evaluatePreconfiguredWaf('%s')", name))
			if got := c.problem == ""; got != known {
				t.Errorf("evaluatePreconfiguredWaf('%s'): accepted %t, want %t (%s)", name, got, known, c.problem)
			}
		})
	}
}
