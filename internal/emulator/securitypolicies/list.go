package securitypolicies

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

func (a *API) listPolicies(w http.ResponseWriter, r *http.Request, c Call) {
	var items []map[string]any
	for _, p := range a.st.list(c.Scope(), false) {
		items = append(items, renderPolicy(p))
	}
	core.WriteList(w, r, items, "compute#securityPolicyList", c.Scope().Base()+"/securityPolicies", false)
}

// aggregatedPolicies lists every scope of the project. Scopes are the global
// one plus every region holding a policy (chosen: GCP lists all regions); an
// empty scope carries the NO_RESULTS_ON_PAGE warning instead of a list.
func (a *API) aggregatedPolicies(w http.ResponseWriter, r *http.Request, c Call) {
	byScope := map[string][]map[string]any{}
	for _, p := range a.st.list(c.Scope(), true) {
		k := p.Scope.AggregatedKey()
		byScope[k] = append(byScope[k], renderPolicy(p))
	}
	core.WriteAggregated(w, r, c.Scope().Project, "compute#securityPolicyAggregatedList", "securityPolicies", "securityPolicies", true, byScope)
}
