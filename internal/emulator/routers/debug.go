package routers

import (
	"bytes"
	"encoding/json"
	"net/http"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// What GCP decides on its own about a NAT (how many VMs it serves, when an
// address is added, released or done draining) a test decides here, in Go
// or through the debug endpoints (Debug). Changes take effect at once and
// make no operation.

// Needs sets what a NAT's VMs need: VMs is how many VM endpoints it serves
// (numVmEndpointsWithNatMappings); Addresses how many addresses they need,
// else as many as VMs need at the NAT's ports per VM (64,512 ports an
// address).
type Needs struct {
	Addresses *int `json:"addresses,omitempty"`
	VMs       *int `json:"vms,omitempty"`
}

// Seed creates a router at once, without an operation, checked as an
// insert is; needs sets a NAT's needed addresses (default one).
func (a *API) Seed(project, region string, in *compute.Router, needs map[string]int) error {
	sc := core.Scope{Project: project, Region: region}
	if err := regionOf(sc); err != nil {
		return err
	}
	network, err := validateRouter(sc, in)
	var refs []natAddress
	if err == nil {
		refs, err = validateNATs(sc, in.Nats, nil)
	}
	if err != nil {
		return err
	}
	var raw map[string]any
	b, _ := json.Marshal(in)
	_ = json.Unmarshal(b, &raw)
	a.host.Lock()
	defer a.host.Unlock()
	rt := &router{Scope: sc, Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(),
		Description: in.Description, Network: network, Extra: mergeExtra(nil, raw)}
	if _, ok := a.routers[rt.path()]; ok {
		return core.ErrAlreadyExists(rt.path())
	}
	if err := a.allRangesConflict(rt, in.Nats, nil); err != nil {
		return err
	}
	if err := a.checkAddresses(rt, refs); err != nil {
		return err
	}
	rt.NATs = a.natsOf(in.Nats, nil, needs)
	a.routers[rt.path()] = rt
	return nil
}

// withNAT runs fn on the NAT name of the router at path under the host's
// lock and returns the NAT's getRouterStatus entry.
func (a *API) withNAT(path, name string, fn func(*nat) error) (map[string]any, error) {
	a.host.Lock()
	defer a.host.Unlock()
	rt, ok := a.routers[path]
	if !ok {
		return nil, core.ErrNotFound(path)
	}
	n := rt.nat(name)
	if n == nil {
		return nil, core.ErrNotFound(path + "/nats/" + name)
	}
	if err := fn(n); err != nil {
		return nil, err
	}
	return n.status(), nil
}

func errNotAuto(name string) error {
	return core.ErrInvalidField("nat", name, "Only an AUTO_ONLY NAT allocates and releases addresses itself.")
}

// SetNeeds changes what the NAT's VMs need; an AUTO_ONLY NAT then holds
// as many addresses as they need, releasing the rest into draining.
func (a *API) SetNeeds(path, name string, needs Needs) (map[string]any, error) {
	return a.withNAT(path, name, func(n *nat) error {
		if needs.VMs != nil {
			n.VMs = max(*needs.VMs, 0)
			n.Needed = n.neededFor(n.VMs)
		}
		if needs.Addresses != nil {
			n.Needed = max(*needs.Addresses, 0)
		}
		a.settle(n)
		return nil
	})
}

// Allocate makes an AUTO_ONLY NAT need, and take, one more address.
func (a *API) Allocate(path, name string) (map[string]any, error) {
	return a.withNAT(path, name, func(n *nat) error {
		if n.Spec.NatIpAllocateOption != autoOnly {
			return errNotAuto(name)
		}
		n.Needed = len(n.Auto) + 1
		a.settle(n)
		return nil
	})
}

// Release moves an AUTO_ONLY NAT's address ip (its newest when "") into
// draining, as Cloud NAT does with an address no VM needs ports on.
func (a *API) Release(path, name, ip string) (map[string]any, error) {
	return a.withNAT(path, name, func(n *nat) error {
		if n.Spec.NatIpAllocateOption != autoOnly {
			return errNotAuto(name)
		}
		if !a.release(n, ip) {
			return core.ErrInvalidField("natIp", ip, "The NAT holds no such active address.")
		}
		return nil
	})
}

// FinishDrain closes the last connections of the NAT's draining
// addresses: auto ones are gone, drainNatIps stay configured but unused.
func (a *API) FinishDrain(path, name string) (map[string]any, error) {
	return a.withNAT(path, name, func(n *nat) error {
		n.AutoDrain = nil
		n.Drained = append([]string(nil), n.Spec.DrainNatIps...)
		return nil
	})
}

// A DebugRoute is one debug endpoint, served without auth.
type DebugRoute struct {
	Pattern string // e.g. "POST /_emulator/routers"
	Handle  http.HandlerFunc
}

// Debug are the debug endpoints: seeding a router and the NAT knobs.
func (a *API) Debug() []DebugRoute {
	const one = "POST /_emulator/routers/{project}/{region}/{router}/nats/{nat}/"
	return []DebugRoute{
		{"POST /_emulator/routers", a.debugSeed},
		{one + "needs", a.debugNAT(func(path, name string, b []byte) (map[string]any, error) {
			var n Needs
			if err := strictJSON(b, &n); err != nil {
				return nil, err
			}
			return a.SetNeeds(path, name, n)
		})},
		{one + "allocate", a.debugNAT(func(path, name string, _ []byte) (map[string]any, error) { return a.Allocate(path, name) })},
		{one + "release", a.debugNAT(func(path, name string, b []byte) (map[string]any, error) {
			var in struct {
				NatIP string `json:"natIp"`
			}
			if err := strictJSON(b, &in); err != nil {
				return nil, err
			}
			return a.Release(path, name, in.NatIP)
		})},
		{one + "finishDrain", a.debugNAT(func(path, name string, _ []byte) (map[string]any, error) { return a.FinishDrain(path, name) })},
	}
}

// seedBody is the body of POST /_emulator/routers.
type seedBody struct {
	Project string          `json:"project"`
	Region  string          `json:"region"`
	Router  *compute.Router `json:"router"`
	// Needs are the needed addresses of NATs by name (default one).
	Needs map[string]int `json:"needs,omitempty"`
}

func (a *API) debugSeed(w http.ResponseWriter, r *http.Request) {
	b, err := core.ReadBody(w, r, a.host.MaxBodyBytes())
	var in seedBody
	if err == nil {
		err = strictJSON(b, &in)
	}
	if err == nil && (in.Router == nil || in.Project == "") {
		err = core.ErrPayload("project and router are required")
	}
	if err == nil {
		err = a.Seed(in.Project, in.Region, in.Router, in.Needs)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	a.host.Lock()
	body := a.routers[routerPath(core.Scope{Project: in.Project, Region: in.Region}, in.Router.Name)].render()
	a.host.Unlock()
	core.WriteJSON(w, http.StatusOK, body)
}

// debugNAT serves a NAT knob: fn gets the router's path, the NAT's name
// and the body, and returns the NAT's status entry.
func (a *API) debugNAT(fn func(path, name string, body []byte) (map[string]any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc := core.Scope{Project: r.PathValue("project"), Region: r.PathValue("region")}
		b, err := core.ReadBody(w, r, a.host.MaxBodyBytes())
		var out map[string]any
		if err == nil {
			out, err = fn(routerPath(sc, r.PathValue("router")), r.PathValue("nat"), b)
		}
		if err != nil {
			core.WriteError(w, err)
			return
		}
		core.WriteJSON(w, http.StatusOK, out)
	}
}

// strictJSON decodes an optional JSON body, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return core.ErrPayload("Invalid debug request: " + err.Error())
	}
	return nil
}
