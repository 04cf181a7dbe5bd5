package addresses

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// rendered renders the addresses of project (in region, if not ""), by
// region then name: GCP's order.
func (a *API) rendered(project, region string) []map[string]any {
	a.host.Lock()
	defer a.host.Unlock()
	in := core.RegionalObjects(a.addresses, func(ad *address) (core.Scope, string) { return ad.Scope, ad.Name }, project, region)
	users := a.host.Users()
	out := make([]map[string]any, len(in))
	for i, ad := range in {
		out[i] = ad.render(users[ad.path()])
	}
	return out
}

// list answers addresses.list for one region.
func (a *API) list(w http.ResponseWriter, r *http.Request, c core.Call) {
	if err := core.CheckKnownRegion(c.Scope()); err != nil {
		core.WriteError(w, err)
		return
	}
	items := a.rendered(c.Scope().Project, c.Scope().Region)
	core.WriteList(w, r, items, "compute#addressList", c.Scope().Base()+"/addresses", true)
}

// aggregatedList answers addresses.aggregatedList: every region, and the
// global scope where GCP keeps global addresses (the emulator has none),
// each its addresses of the page or the NO_RESULTS_ON_PAGE warning.
func (a *API) aggregatedList(w http.ResponseWriter, r *http.Request, c core.Call) {
	project := c.Scope().Project
	core.WriteRegionalAggregated(w, r, project, "compute#addressAggregatedList", "addresses", "addresses", true,
		a.rendered(project, ""))
}
