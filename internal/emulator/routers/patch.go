package routers

import (
	"net/http"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// patch changes a router the way the API documents PATCH: a JSON merge
// patch, so a field sent replaces the router's (nats as a whole list), a
// null clears it and a field left out is kept. The network cannot change:
// a router belongs to its network for good.
func (a *API) patch(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.Router
	raw, err := a.decode(w, r, &in)
	if err == nil {
		err = regionOf(c.Scope())
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	path := routerPath(c.Scope(), r.PathValue("router"))
	c.Mutate("patch", path, func() (core.Plan, error) {
		cur, ok := a.routers[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		next, err := merged(cur, raw, &in)
		if err != nil {
			return core.Plan{}, err
		}
		_, natsSent := raw["nats"]
		if natsSent {
			refs, err := validateNATs(cur.Scope, in.Nats, cur)
			if err != nil {
				return core.Plan{}, err
			}
			if err := a.allRangesConflict(next, in.Nats, cur); err != nil {
				return core.Plan{}, err
			}
			if err := a.checkAddresses(next, refs); err != nil {
				return core.Plan{}, err
			}
		}
		return core.Plan{Link: core.ComputeRoot + path, ID: cur.ID, Commit: func() {
			if natsSent {
				next.NATs = a.natsOf(in.Nats, cur, nil)
			}
			a.routers[path] = next
		}}, nil
	})
}

// merged is cur with the patch's router fields applied (not its NATs).
func merged(cur *router, raw map[string]any, in *compute.Router) (*router, error) {
	if in.Name != "" && in.Name != cur.Name {
		return nil, core.ErrInvalidField("resource.name", in.Name, "The name of a router cannot be changed.")
	}
	if err := core.CheckRegion(cur.Scope, in.Region); err != nil {
		return nil, err
	}
	if v, ok := raw["network"]; ok {
		url, _, valid := resolve(in.Network, "networks", cur.Scope.Project)
		if v == nil || !valid || url != cur.Network {
			return nil, core.ErrInvalidField("resource.network", in.Network, "The network of a router cannot be changed.")
		}
	}
	next := *cur
	if _, ok := raw["description"]; ok {
		next.Description = in.Description
	}
	next.Extra = mergeExtra(cur.Extra, raw)
	return &next, nil
}
