// Package addresses serves regional static addresses (compute's Address
// resource), the addresses a MANUAL_ONLY Cloud NAT names in natIps:
// addresses.insert, get, delete, list and aggregatedList, in compute's
// error format, with the IPs an emulator pool hands out. Which addresses
// are in use is the routers' to say (Host.Users): an address records no
// users of its own, so that it cannot disagree with the NATs. The server in
// package emulator mounts it (Mount), runs every call through its
// pipeline (auth, grants, faults) and carries out its writes
// (core.Call.Mutate) as regional compute operations; this package imports
// neither the server nor the other APIs.
package addresses

import (
	"reflect"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Host is what the server that mounts the API gives it.
type Host interface {
	// The store's lock guards the API's state too: a write's change and
	// commit run under it.
	core.Store
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// Users maps the path of every address something uses to the full
	// URLs of its users, sorted. The host's lock must be held.
	Users() map[string][]string
}

// An API serves the regional addresses of every project. Its state is
// under the host's lock and is not saved, as the routers that use the
// addresses are not.
type API struct {
	host      Host
	addresses map[string]*address // by path (projects/P/regions/R/addresses/N)
	ips       map[string]string   // IP -> the path of the address holding it
}

// New returns an empty API.
func New(host Host) *API {
	a := &API{host: host}
	a.ResetLocked()
	return a
}

// ResetLocked forgets every address, which frees every IP of the pool. The
// host's lock must be held.
func (a *API) ResetLocked() {
	a.addresses = map[string]*address{}
	a.ips = map[string]string{}
}

// LookupLocked returns the IP and addressType of the address at path
// (projects/P/regions/R/addresses/N); ok is false if there is none. The
// host's lock must be held.
func (a *API) LookupLocked(path string) (ip, addressType string, ok bool) {
	ad, ok := a.addresses[path]
	if !ok {
		return "", "", false
	}
	return ad.IP, ad.Type, true
}

// Mount gives add every route of the API: a method on a path pattern
// (relative to the compute root, with {project}, {region} and {address}
// values), named as IAM and the emulator's counters name it (e.g.
// addresses.insert). Their operations are the server's regional
// operations.
func (a *API) Mount(add func(verb, pattern, name string, h core.Handler)) {
	const as = "/projects/{project}/regions/{region}/addresses"
	const one = as + "/{address}"
	add("POST", as, "addresses.insert", a.insert)
	add("GET", as, "addresses.list", a.list)
	add("GET", one, "addresses.get", a.get)
	add("DELETE", one, "addresses.delete", a.delete)
	add("GET", "/projects/{project}/aggregated/addresses", "addresses.aggregatedList", a.aggregatedList)
}

// ResponseTypes are the response types of every method, for fields=.
// Every permission is compute.addresses.<verb> by the usual verbs.
var ResponseTypes = map[string]reflect.Type{
	"addresses.insert":         reflect.TypeOf(compute.Operation{}),
	"addresses.delete":         reflect.TypeOf(compute.Operation{}),
	"addresses.get":            reflect.TypeOf(compute.Address{}),
	"addresses.list":           reflect.TypeOf(compute.AddressList{}),
	"addresses.aggregatedList": reflect.TypeOf(compute.AddressAggregatedList{}),
}
