package securitypolicies

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// expressionSets is a small, static excerpt of the preconfigured WAF rule
// sets Cloud Armor offers; enough for clients that list or validate names.
var expressionSets = []struct {
	id      string
	aliases []string
	exprs   []string
}{
	{"sqli-v33-stable", []string{"sqli-v33-stable"}, []string{"owasp-crs-v030301-id942100-sqli", "owasp-crs-v030301-id942110-sqli"}},
	{"xss-v33-stable", []string{"xss-v33-stable"}, []string{"owasp-crs-v030301-id941100-xss", "owasp-crs-v030301-id941110-xss"}},
	{"lfi-v33-stable", []string{"lfi-v33-stable"}, []string{"owasp-crs-v030301-id930100-lfi"}},
	{"rfi-v33-stable", []string{"rfi-v33-stable"}, []string{"owasp-crs-v030301-id931100-rfi"}},
	{"rce-v33-stable", []string{"rce-v33-stable"}, []string{"owasp-crs-v030301-id932100-rce"}},
	{"methodenforcement-v33-stable", []string{"methodenforcement-v33-stable"}, []string{"owasp-crs-v030301-id911100-methodenforcement"}},
	{"scannerdetection-v33-stable", []string{"scannerdetection-v33-stable"}, []string{"owasp-crs-v030301-id913100-scannerdetection"}},
	{"protocolattack-v33-stable", []string{"protocolattack-v33-stable"}, []string{"owasp-crs-v030301-id921110-protocolattack"}},
	{"sqli-stable", []string{"sqli-canary"}, []string{"owasp-crs-v030001-id942100-sqli"}},
	{"xss-stable", []string{"xss-canary"}, []string{"owasp-crs-v030001-id941100-xss"}},
}

func (a *API) listPreconfigured(w http.ResponseWriter, _ *http.Request, _ Call) {
	sets := make([]any, len(expressionSets))
	for i, e := range expressionSets {
		exprs := make([]any, len(e.exprs))
		for j, id := range e.exprs {
			exprs[j] = map[string]any{"id": id, "sensitivity": 1}
		}
		aliases := make([]any, len(e.aliases))
		for j, a := range e.aliases {
			aliases[j] = a
		}
		sets[i] = map[string]any{"id": e.id, "aliases": aliases, "expressions": exprs}
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"preconfiguredExpressionSets": map[string]any{
		"wafRules": map[string]any{"expressionSets": sets}}})
}
