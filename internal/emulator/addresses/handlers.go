package addresses

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

var (
	addressTypes = core.Set(external, internal)
	networkTiers = core.Set(premium, "STANDARD", "FIXED_STANDARD", "STANDARD_OVERRIDES_FIXED_STANDARD")
)

// extraKeys are the address fields kept as sent and echoed, not modelled:
// the emulator has no subnetworks, IPv6 or purposes to check them against.
var extraKeys = []string{"purpose", "subnetwork", "network", "ipVersion", "ipv6EndpointType", "prefixLength"}

func errRequired(field string) *core.Error {
	return &core.Error{Code: 400, Reason: "required", Message: fmt.Sprintf("Required field '%s' not specified", field)}
}

// insert reserves an address of the request's region: the IP sent, or
// one from the pool.
func (a *API) insert(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.Address
	raw, err := core.Decode(w, r, a.host.MaxBodyBytes(), &in, "address")
	if err == nil {
		err = core.CheckKnownRegion(c.Scope())
	}
	if err == nil {
		err = validate(c.Scope(), &in)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	ad := &address{Scope: c.Scope(), Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(),
		Description: in.Description, IP: in.Address, Type: in.AddressType, Tier: in.NetworkTier,
		Labels: maps.Clone(in.Labels), LabelFingerprint: a.host.Gen().Fingerprint(), Extra: extra(raw)}
	if ad.Type == "" {
		ad.Type = external
	}
	if ad.Tier == "" && ad.Type == external {
		ad.Tier = premium
	}
	c.Mutate("insert", ad.path(), func() (core.Plan, error) {
		if _, ok := a.addresses[ad.path()]; ok {
			return core.Plan{}, core.ErrAlreadyExists(ad.path())
		}
		ip := ad.IP
		if ip == "" {
			var err error
			if ip, err = a.allocate(ad.path()); err != nil {
				return core.Plan{}, err
			}
		} else if _, taken := a.ips[ip]; taken {
			return core.Plan{}, &core.Error{Code: 409, Reason: "conflict",
				Message: fmt.Sprintf("IP_IN_USE_BY_ANOTHER_RESOURCE - IP '%s' is already being used by another resource.", ip)}
		}
		return core.Plan{Link: core.ComputeRoot + ad.path(), ID: ad.ID, Commit: func() {
			ad.IP = ip
			a.addresses[ad.path()] = ad
			a.ips[ip] = ad.path()
		}}, nil
	})
}

// validate checks an insert's body for an address at sc. The emulator has
// no subnetworks to allocate an INTERNAL address from, so one must be
// given its IP.
func validate(sc core.Scope, in *compute.Address) error {
	if in.Name == "" {
		return errRequired("resource.name")
	}
	if err := core.CheckNew(sc, in.Name, in.Region); err != nil {
		return err
	}
	if err := core.CheckEnum("resource.addressType", in.AddressType, addressTypes); err != nil {
		return err
	}
	if err := core.CheckEnum("resource.networkTier", in.NetworkTier, networkTiers); err != nil {
		return err
	}
	if in.Address != "" {
		ip, err := netip.ParseAddr(in.Address)
		if err != nil || !ip.Is4() || ip.String() != in.Address {
			return core.ErrInvalidField("resource.address", in.Address, "Must be an IPv4 address.")
		}
	} else if in.AddressType == internal {
		return errRequired("resource.address")
	}
	return core.ValidateLabels(in.Labels)
}

// extra is what the body sent of extraKeys.
func extra(raw map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range extraKeys {
		if v, ok := raw[k]; ok {
			out[k] = core.CloneValue(v)
		}
	}
	return core.Normalize(out)
}

// find returns the address of the request's path. The host's lock must be
// held.
func (a *API) find(c core.Call, r *http.Request) (*address, error) {
	if err := core.CheckKnownRegion(c.Scope()); err != nil {
		return nil, err
	}
	p := addressPath(c.Scope(), r.PathValue("address"))
	ad, ok := a.addresses[p]
	if !ok {
		return nil, core.ErrNotFound(p)
	}
	return ad, nil
}

func (a *API) get(w http.ResponseWriter, r *http.Request, c core.Call) {
	a.host.Lock()
	ad, err := a.find(c, r)
	var m map[string]any
	if err == nil {
		m = ad.render(a.host.Users()[ad.path()])
	}
	a.host.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, m)
}

// delete releases the address and its IP, unless something uses it: GCP
// will not take an address away from the NAT that holds it.
func (a *API) delete(w http.ResponseWriter, r *http.Request, c core.Call) {
	if err := core.CheckKnownRegion(c.Scope()); err != nil {
		core.WriteError(w, err)
		return
	}
	path := addressPath(c.Scope(), r.PathValue("address"))
	c.Mutate("delete", path, func() (core.Plan, error) {
		ad, ok := a.addresses[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		if users := a.host.Users()[path]; len(users) > 0 {
			return core.Plan{}, core.ErrInUse("address", path, userPath(users[0]))
		}
		return core.Plan{Link: core.ComputeRoot + path, ID: ad.ID, Commit: func() {
			delete(a.addresses, path)
			delete(a.ips, ad.IP)
		}}, nil
	})
}
