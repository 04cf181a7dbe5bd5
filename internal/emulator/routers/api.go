// Package routers serves Cloud Routers and their Cloud NAT gateways:
// routers.insert, get, patch, delete, list, aggregatedList,
// getRouterStatus and getNatIpInfo, in compute's error format, with the
// NAT addresses GCP would hand out (an emulator pool), the static
// addresses a MANUAL_ONLY NAT names looked up through its Host, and the
// knobs a test turns where GCP would act on its own (Debug). The server in package
// emulator mounts it (Mount), runs every call through its pipeline (auth,
// grants, faults) and carries out its writes (core.Call.Mutate) as regional
// compute operations; this package imports neither the server nor the
// other APIs.
package routers

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
	// Address is the static address at path (projects/P/regions/R/
	// addresses/N); ok is false if it does not exist. The host's lock must
	// be held.
	Address(path string) (a StaticAddress, ok bool)
}

// A StaticAddress is what a NAT needs of an address resource.
type StaticAddress struct {
	IP   string
	Type string // addressType: EXTERNAL or INTERNAL
}

// An API serves the routers of every project. Its state is under the
// host's lock and is not saved, nor are the addresses its NATs name.
type API struct {
	host    Host
	routers map[string]*router // by path (projects/P/regions/R/routers/N)
	pool    pool
}

// New returns an empty API.
func New(host Host) *API {
	a := &API{host: host}
	a.ResetLocked()
	return a
}

// ResetLocked forgets every router and restarts the address pool. The
// host's lock must be held.
func (a *API) ResetLocked() {
	a.routers = map[string]*router{}
	a.pool = pool{}
}

// Mount gives add every route of the API: a method on a path pattern
// (relative to the compute root, with {project}, {region} and {router}
// values), named as IAM and the emulator's counters name it (e.g.
// routers.getRouterStatus). Their operations are the server's regional
// operations.
func (a *API) Mount(add func(verb, pattern, name string, h core.Handler)) {
	const rs = "/projects/{project}/regions/{region}/routers"
	const one = rs + "/{router}"
	add("POST", rs, "routers.insert", a.insert)
	add("GET", rs, "routers.list", a.list)
	add("GET", one, "routers.get", a.get)
	add("PATCH", one, "routers.patch", a.patch)
	add("DELETE", one, "routers.delete", a.delete)
	add("GET", one+"/getRouterStatus", "routers.getRouterStatus", a.getRouterStatus)
	add("GET", one+"/getNatIpInfo", "routers.getNatIpInfo", a.getNatIPInfo)
	add("GET", "/projects/{project}/aggregated/routers", "routers.aggregatedList", a.aggregatedList)
}

// Permissions are the IAM permissions of the methods whose verb the
// server's table does not know: reading a router's runtime state needs
// compute.routers.get.
var Permissions = map[string]core.Permission{
	"routers.getRouterStatus": {Name: "compute.routers.get"},
	"routers.getNatIpInfo":    {Name: "compute.routers.get"},
}

// ResponseTypes are the response types of every method, for fields=.
var ResponseTypes = map[string]reflect.Type{
	"routers.insert":          reflect.TypeOf(compute.Operation{}),
	"routers.patch":           reflect.TypeOf(compute.Operation{}),
	"routers.delete":          reflect.TypeOf(compute.Operation{}),
	"routers.get":             reflect.TypeOf(compute.Router{}),
	"routers.list":            reflect.TypeOf(compute.RouterList{}),
	"routers.aggregatedList":  reflect.TypeOf(compute.RouterAggregatedList{}),
	"routers.getRouterStatus": reflect.TypeOf(compute.RouterStatusResponse{}),
	"routers.getNatIpInfo":    reflect.TypeOf(compute.NatIpInfoResponse{}),
}
