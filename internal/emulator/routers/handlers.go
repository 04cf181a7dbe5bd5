package routers

import (
	"net/http"
	"slices"
	"strconv"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// extraKeys are the router fields kept as sent and echoed, not modelled.
var extraKeys = []string{"bgp", "bgpPeers", "interfaces", "encryptedInterconnectRouter", "md5AuthenticationKeys", "nccGateway"}

const allRanges = "ALL_SUBNETWORKS_ALL_IP_RANGES"

// decode reads a router body (see core.Decode).
func (a *API) decode(w http.ResponseWriter, r *http.Request, in *compute.Router) (map[string]any, error) {
	return core.Decode(w, r, a.host.MaxBodyBytes(), in, "router")
}

// insert creates a router of the request's region and network with its
// NATs; each AUTO_ONLY NAT starts with the addresses its VMs need (one).
func (a *API) insert(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.Router
	raw, err := a.decode(w, r, &in)
	var network string
	var refs []natAddress
	if err == nil {
		err = regionOf(c.Scope())
	}
	if err == nil {
		network, err = validateRouter(c.Scope(), &in)
	}
	if err == nil {
		refs, err = validateNATs(c.Scope(), in.Nats, nil)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	rt := &router{Scope: c.Scope(), Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(),
		Description: in.Description, Network: network, Extra: mergeExtra(nil, raw)}
	c.Mutate("insert", rt.path(), func() (core.Plan, error) {
		if _, ok := a.routers[rt.path()]; ok {
			return core.Plan{}, core.ErrAlreadyExists(rt.path())
		}
		if err := a.allRangesConflict(rt, in.Nats, nil); err != nil {
			return core.Plan{}, err
		}
		if err := a.checkAddresses(rt, refs); err != nil {
			return core.Plan{}, err
		}
		return core.Plan{Link: core.ComputeRoot + rt.path(), ID: rt.ID, Commit: func() {
			rt.NATs = a.natsOf(in.Nats, nil, nil)
			a.routers[rt.path()] = rt
		}}, nil
	})
}

// mergeExtra applies the unmodelled fields of a body to extra, as a JSON
// merge patch does: a field sent replaces, a null removes.
func mergeExtra(extra, raw map[string]any) map[string]any {
	out := core.CloneMap(extra)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range extraKeys {
		v, ok := raw[k]
		switch {
		case !ok:
		case v == nil:
			delete(out, k)
		default:
			out[k] = core.CloneValue(v)
		}
	}
	return core.Normalize(out)
}

// natsOf makes the NATs of specs, keeping what GCP decided at run time
// for a NAT prev already had (its addresses, its VMs): a patch changes a
// NAT's configuration, not its traffic. needs sets a new NAT's needed
// addresses (default one). The static addresses specs name must exist
// (checkAddresses). The host's lock must be held.
func (a *API) natsOf(specs []*compute.RouterNat, prev *router, needs map[string]int) []*nat {
	var out []*nat
	for _, s := range specs {
		n := &nat{Spec: *s, Needed: 1, VMs: 1, IPs: map[string]string{}}
		for _, url := range slices.Concat(s.NatIps, s.DrainNatIps) {
			ad, _ := a.host.Address(addressPath(url))
			n.IPs[url] = ad.IP
		}
		if v, ok := needs[s.Name]; ok {
			n.Needed = v
		}
		if p := prev.nat(s.Name); p != nil {
			n.Needed, n.VMs, n.AutoDrain = p.Needed, p.VMs, slices.Clone(p.AutoDrain)
			// A new network tier gives the NAT a new set of addresses.
			if p.Spec.AutoNetworkTier == s.AutoNetworkTier {
				n.Auto = slices.Clone(p.Auto)
			}
			for _, u := range p.Drained {
				if slices.Contains(s.DrainNatIps, u) {
					n.Drained = append(n.Drained, u)
				}
			}
		}
		a.settle(n)
		out = append(out, n)
	}
	return out
}

// allRangesConflict refuses a new NAT beside a NAT of the same network and
// region that is for ALL_SUBNETWORKS_ALL_IP_RANGES, as GCP does: that
// option claims every range of the network there. The host's lock must be
// held.
func (a *API) allRangesConflict(rt *router, specs []*compute.RouterNat, prev *router) error {
	var others []string // the options of the other NATs
	for _, o := range a.routers {
		if o.path() != rt.path() && o.Scope == rt.Scope && o.Network == rt.Network {
			for _, n := range o.NATs {
				others = append(others, n.Spec.SourceSubnetworkIpRangesToNat)
			}
		}
	}
	for i, s := range specs {
		if prev.nat(s.Name) != nil {
			continue // not new
		}
		rest := slices.Clone(others)
		for j, t := range specs {
			if j != i {
				rest = append(rest, t.SourceSubnetworkIpRangesToNat)
			}
		}
		field := "resource.nats[" + strconv.Itoa(i) + "].sourceSubnetworkIpRangesToNat"
		if slices.Contains(rest, allRanges) {
			return core.ErrInvalidField(field, s.SourceSubnetworkIpRangesToNat,
				"Can not create new Nats since a Nat with option "+allRanges+" exists.")
		}
		if s.SourceSubnetworkIpRangesToNat == allRanges && len(rest) > 0 {
			return core.ErrInvalidField(field, allRanges, "Can not create a Nat with this option since other Nats exist.")
		}
	}
	return nil
}

// find returns the router of the request's path. The host's lock must be
// held.
func (a *API) find(c core.Call, r *http.Request) (*router, error) {
	if err := regionOf(c.Scope()); err != nil {
		return nil, err
	}
	p := routerPath(c.Scope(), r.PathValue("router"))
	rt, ok := a.routers[p]
	if !ok {
		return nil, core.ErrNotFound(p)
	}
	return rt, nil
}

// read answers a read of the request's router with what body renders of
// it, under the host's lock.
func (a *API) read(w http.ResponseWriter, r *http.Request, c core.Call, body func(*router) map[string]any) {
	a.host.Lock()
	rt, err := a.find(c, r)
	var m map[string]any
	if err == nil {
		m = body(rt)
	}
	a.host.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, m)
}

func (a *API) get(w http.ResponseWriter, r *http.Request, c core.Call) {
	a.read(w, r, c, (*router).render)
}

// delete removes the router and with it its NATs' auto addresses; the
// static addresses its NATs named are free again.
func (a *API) delete(w http.ResponseWriter, r *http.Request, c core.Call) {
	if err := regionOf(c.Scope()); err != nil {
		core.WriteError(w, err)
		return
	}
	path := routerPath(c.Scope(), r.PathValue("router"))
	c.Mutate("delete", path, func() (core.Plan, error) {
		rt, ok := a.routers[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		return core.Plan{Link: core.ComputeRoot + path, ID: rt.ID, Commit: func() { delete(a.routers, path) }}, nil
	})
}
