package routers

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// rendered renders the routers of project (in region, if not ""), by
// region then name: GCP's order.
func (a *API) rendered(project, region string) []map[string]any {
	a.host.Lock()
	defer a.host.Unlock()
	in := core.RegionalObjects(a.routers, func(rt *router) (core.Scope, string) { return rt.Scope, rt.Name }, project, region)
	out := make([]map[string]any, len(in))
	for i, rt := range in {
		out[i] = rt.render()
	}
	return out
}

// list answers routers.list for one region.
func (a *API) list(w http.ResponseWriter, r *http.Request, c core.Call) {
	if err := regionOf(c.Scope()); err != nil {
		core.WriteError(w, err)
		return
	}
	items := a.rendered(c.Scope().Project, c.Scope().Region)
	core.WriteList(w, r, items, "compute#routerList", c.Scope().Base()+"/routers", true)
}

// aggregatedList answers routers.aggregatedList: every region of the
// project under "regions/<region>", the page's routers of it or, when it
// has none on this page, the NO_RESULTS_ON_PAGE warning, as GCP answers.
// maxResults counts routers, not regions.
func (a *API) aggregatedList(w http.ResponseWriter, r *http.Request, c core.Call) {
	project := c.Scope().Project
	core.WriteRegionalAggregated(w, r, project, "compute#routerAggregatedList", "routers", "routers", false,
		a.rendered(project, ""))
}
