package routers

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// getRouterStatus answers the router's run-time state: its network and,
// for each NAT, the addresses it holds and drains, the VMs it maps and
// how many more addresses a MANUAL_ONLY NAT needs. BGP is not modelled.
func (a *API) getRouterStatus(w http.ResponseWriter, r *http.Request, c core.Call) {
	a.read(w, r, c, func(rt *router) map[string]any {
		result := map[string]any{"network": rt.Network}
		if len(rt.NATs) > 0 {
			nats := make([]any, len(rt.NATs))
			for i, n := range rt.NATs {
				nats[i] = n.status()
			}
			result["natStatus"] = nats
		}
		return map[string]any{"kind": "compute#routerStatusResponse", "result": result}
	})
}

// getNatIpInfo answers the addresses of the router's NATs, or of the one
// natName names, with their mode and usage. A natName the router does not
// have selects nothing (chosen: an empty answer, not an error).
func (a *API) getNatIPInfo(w http.ResponseWriter, r *http.Request, c core.Call) {
	q := r.URL.Query()
	name := q.Get("natName")
	if q.Has("natName") && !core.NamePattern.MatchString(name) {
		core.WriteError(w, core.ErrInvalidField("natName", name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"))
		return
	}
	a.read(w, r, c, func(rt *router) map[string]any {
		var result []any
		for _, n := range rt.NATs {
			if name == "" || n.Spec.Name == name {
				result = append(result, n.ipInfo())
			}
		}
		if len(result) == 0 {
			return map[string]any{} // compute leaves out an empty list
		}
		return map[string]any{"result": result}
	})
}
