package emulator

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, c *call) {
	var items []map[string]any
	for _, p := range s.store.list(c.scope, false) {
		items = append(items, renderPolicy(p))
	}
	core.WriteList(w, r, items, "compute#securityPolicyList", c.scope.Base()+"/securityPolicies", false)
}

// aggregatedPolicies lists every scope of the project. Scopes are the global
// one plus every region holding a policy (chosen: GCP lists all regions); an
// empty scope carries the NO_RESULTS_ON_PAGE warning instead of a list.
func (s *Server) aggregatedPolicies(w http.ResponseWriter, r *http.Request, c *call) {
	byScope := map[string][]map[string]any{}
	for _, p := range s.store.list(c.scope, true) {
		k := p.Scope.AggregatedKey()
		byScope[k] = append(byScope[k], renderPolicy(p))
	}
	core.WriteAggregated(w, r, c.scope.Project, "compute#securityPolicyAggregatedList", "securityPolicies", "securityPolicies", true, byScope)
}
