package routers

import (
	"fmt"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

var (
	allocateOptions = core.Set(autoOnly, manualOnly)
	rangesToNat     = core.Set("ALL_SUBNETWORKS_ALL_IP_RANGES", "ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES", "LIST_OF_SUBNETWORKS")
	natTypes        = core.Set("PUBLIC", "PRIVATE")
)

func errRequired(field string) *core.Error {
	return &core.Error{Code: 400, Reason: "required", Message: fmt.Sprintf("Required field '%s' not specified", field)}
}

// errMalformed is compute's refusal of a reference that is not a URL of
// the kind the field takes.
func errMalformed(field, ref string) *core.Error {
	return core.ErrInvalidField(field, ref, "The URL is malformed.")
}

// regionOf refuses a region the project does not have, as compute does.
func regionOf(sc core.Scope) error { return core.CheckKnownRegion(sc) }

// resolve reads a reference to an object of collection in scope kind
// ("global" or "regions/R") as clients send it: a full URL, a path from
// projects/, or one from global/ or regions/ (the project's own). It
// returns the object's full URL.
func resolve(ref, collection, project string) (url, scope string, ok bool) {
	s := ref
	if i := strings.Index(s, "/compute/v1/"); i >= 0 {
		s = s[i+len("/compute/v1/"):]
	}
	segs := strings.Split(s, "/")
	if len(segs) >= 2 && segs[0] == "projects" {
		project, segs = segs[1], segs[2:]
	}
	switch {
	case len(segs) == 3 && segs[0] == "global" && segs[1] == collection:
		scope = "global"
	case len(segs) == 4 && segs[0] == "regions" && segs[2] == collection:
		scope = "regions/" + segs[1]
	default:
		return "", "", false
	}
	if project == "" || !core.NamePattern.MatchString(segs[len(segs)-1]) {
		return "", "", false
	}
	return core.ComputeRoot + "projects/" + project + "/" + strings.Join(segs, "/"), scope, true
}

// validateRouter checks an insert's body, or a patch's merged result,
// for the router at sc, and returns the network's full URL. A router
// belongs to a network: without one there is nothing for a NAT to serve.
func validateRouter(sc core.Scope, in *compute.Router) (string, error) {
	switch {
	case in.Name == "":
		return "", errRequired("resource.name")
	case in.Network == "":
		return "", errRequired("resource.network")
	}
	if err := core.CheckNew(sc, in.Name, in.Region); err != nil {
		return "", err
	}
	network, scope, ok := resolve(in.Network, "networks", sc.Project)
	if !ok || scope != "global" {
		return "", errMalformed("resource.network", in.Network)
	}
	return network, nil
}

// A natAddress is one address reference of a NAT: the field that holds
// it, the reference as sent (what a refusal echoes) and its full URL.
type natAddress struct{ field, sent, url string }

// validateNATs checks the NATs of a router at sc and makes their address
// references full URLs, which it returns for checkAddresses. prev is the
// router's NATs before a patch (nil on insert): only an address a NAT held
// may be drained, as GCP documents that drainNatIps are for an update of a
// NAT.
func validateNATs(sc core.Scope, nats []*compute.RouterNat, prev *router) ([]natAddress, error) {
	names := map[string]bool{}
	used := map[string]string{} // address URL -> the field that named it
	var refs []natAddress
	for i, n := range nats {
		f := fmt.Sprintf("resource.nats[%d]", i)
		if n == nil {
			return nil, errRequired(f)
		}
		if err := validateNAT(f, n); err != nil {
			return nil, err
		}
		if names[n.Name] {
			return nil, core.ErrInvalidField(f+".name", n.Name, "Duplicate NAT name.")
		}
		names[n.Name] = true
		var held []string
		if p := prev.nat(n.Name); p != nil {
			held = slices.Concat(p.Spec.NatIps, p.Spec.DrainNatIps)
		}
		r, err := validateAddresses(sc, f, n, held, used)
		if err != nil {
			return nil, err
		}
		refs = append(refs, r...)
	}
	return refs, nil
}

// validateNAT checks one NAT's own fields.
func validateNAT(f string, n *compute.RouterNat) error {
	switch {
	case n.Name == "":
		return errRequired(f + ".name")
	case !core.NamePattern.MatchString(n.Name):
		return core.ErrInvalidField(f+".name", n.Name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	case n.NatIpAllocateOption == "":
		return errRequired(f + ".natIpAllocateOption")
	}
	for _, e := range []struct {
		field, v string
		set      map[string]bool
	}{
		{".natIpAllocateOption", n.NatIpAllocateOption, allocateOptions},
		{".sourceSubnetworkIpRangesToNat", n.SourceSubnetworkIpRangesToNat, rangesToNat},
		{".type", n.Type, natTypes},
	} {
		if err := core.CheckEnum(f+e.field, e.v, e.set); err != nil {
			return err
		}
	}
	return validatePorts(f, n)
}

// validatePorts checks the port allocation the way the API documents it
// for dynamic port allocation: powers of two, at least 32 ports, a
// maximum above the minimum, and no endpoint-independent mapping.
func validatePorts(f string, n *compute.RouterNat) error {
	if n.MinPortsPerVm < 0 || n.MinPortsPerVm > 65536 {
		return core.ErrInvalidField(f+".minPortsPerVm", fmt.Sprint(n.MinPortsPerVm), "Must be between 0 and 65536.")
	}
	if !n.EnableDynamicPortAllocation {
		return nil
	}
	if n.EnableEndpointIndependentMapping {
		return core.ErrInvalidField(f+".enableEndpointIndependentMapping", "true",
			"Endpoint independent mapping cannot be enabled with dynamic port allocation.")
	}
	if m := n.MinPortsPerVm; m != 0 && (m < 32 || m&(m-1) != 0) {
		return core.ErrInvalidField(f+".minPortsPerVm", fmt.Sprint(m),
			"With dynamic port allocation it must be a power of two greater than or equal to 32.")
	}
	floor := max(n.MinPortsPerVm+1, 64)
	if m := n.MaxPortsPerVm; m != 0 && (m < floor || m&(m-1) != 0 || m > 65536) {
		return core.ErrInvalidField(f+".maxPortsPerVm", fmt.Sprint(m),
			"With dynamic port allocation it must be a power of two greater than minPortsPerVm, and at least 64.")
	}
	return nil
}

// validateAddresses checks a NAT's natIps and drainNatIps: static
// addresses of the router's region, each named once in the router;
// natIps only for MANUAL_ONLY, and at least one there; drainNatIps only
// addresses the NAT held. It rewrites them as full URLs and returns them.
func validateAddresses(sc core.Scope, f string, n *compute.RouterNat, held []string, used map[string]string) ([]natAddress, error) {
	if n.NatIpAllocateOption == manualOnly && len(n.NatIps) == 0 {
		return nil, core.ErrInvalidField(f+".natIps", "", "A NAT whose natIpAllocateOption is MANUAL_ONLY needs at least one NAT IP.")
	}
	if n.NatIpAllocateOption == autoOnly && len(n.NatIps) > 0 {
		return nil, core.ErrInvalidField(f+".natIps[0]", n.NatIps[0], "NAT IPs cannot be specified when natIpAllocateOption is AUTO_ONLY.")
	}
	var refs []natAddress
	for _, list := range []struct {
		name string
		refs []string
	}{{"natIps", n.NatIps}, {"drainNatIps", n.DrainNatIps}} {
		for i, ref := range list.refs {
			field := fmt.Sprintf("%s.%s[%d]", f, list.name, i)
			url, err := address(sc, field, ref)
			if err != nil {
				return nil, err
			}
			if other, ok := used[url]; ok {
				return nil, core.ErrInvalidField(field, ref, "The address is already named by "+other+".")
			}
			if list.name == "drainNatIps" && !slices.Contains(held, url) {
				return nil, core.ErrInvalidField(field, ref, "Only an address the NAT holds in natIps can be drained.")
			}
			used[url], list.refs[i] = field, url
			refs = append(refs, natAddress{field: field, sent: ref, url: url})
		}
	}
	return refs, nil
}

// checkAddresses refuses, for the router rt, an address reference to an
// address that does not exist, is not EXTERNAL (a NAT's addresses are
// public), or that another router's NAT already uses. The host's lock must
// be held.
func (a *API) checkAddresses(rt *router, refs []natAddress) error {
	if len(refs) == 0 {
		return nil
	}
	users := a.AddressUsersLocked()
	self := core.ComputeRoot + rt.path()
	for _, ref := range refs {
		p := addressPath(ref.url)
		ad, ok := a.host.Address(p)
		if !ok {
			// GCP answers a NAT naming a missing address as a read of it
			// would, 404 with no field, as Terraform users' reports of
			// google_compute_router_nat show.
			return core.ErrNotFound(p)
		}
		if ad.Type != "EXTERNAL" {
			return core.ErrInvalidField(ref.field, ref.sent, "A NAT IP must be an EXTERNAL address.")
		}
		for _, u := range users[p] {
			if u != self {
				return core.ErrInUse("address", p, addressPath(u))
			}
		}
	}
	return nil
}

// AddressUsersLocked maps the path of every static address a NAT names
// (in natIps or drainNatIps) to the full URLs of the routers whose NATs
// name it, sorted. The host's lock must be held.
func (a *API) AddressUsersLocked() map[string][]string {
	out := map[string][]string{}
	for _, rt := range a.routers {
		self := core.ComputeRoot + rt.path()
		for _, n := range rt.NATs {
			for _, url := range slices.Concat(n.Spec.NatIps, n.Spec.DrainNatIps) {
				p := addressPath(url)
				if !slices.Contains(out[p], self) {
					out[p] = append(out[p], self)
				}
			}
		}
	}
	for _, users := range out {
		slices.Sort(users)
	}
	return out
}

// address resolves a static address reference of a NAT: it must be an
// address of the router's region.
func address(sc core.Scope, field, ref string) (string, error) {
	url, scope, ok := resolve(ref, "addresses", sc.Project)
	if !ok || !strings.HasPrefix(scope, "regions/") {
		return "", errMalformed(field, ref)
	}
	if scope != "regions/"+sc.Region {
		return "", core.ErrInvalidField(field, ref, "The address must be in the router's region '"+sc.Region+"'.")
	}
	return url, nil
}
