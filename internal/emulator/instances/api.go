// Package instances serves the Compute Engine instances an AddressSet
// selects by label: instances.insert, get, delete, setLabels, stop, start,
// list and aggregatedList, and the zonal operations their writes return, in
// compute's error format. The server in package emulator mounts it (Routes)
// and runs every call through its pipeline (auth, grants, faults); this
// package imports neither the server nor the other APIs.
package instances

import (
	"net/http"
	"reflect"
	"sync"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Host is what the server that mounts the API gives it.
type Host interface {
	Now() time.Time
	Gen() *core.Gen
	// OpLatency is how long an operation runs.
	OpLatency() time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// User is the operations' user.
	User() string
	// Mutated counts and logs (format and args, as the server's Logf
	// takes them) an accepted mutation.
	Mutated(format string, args ...any)
}

// An API serves the instances of every project. Its state is its own:
// instances refer to nothing else the emulator holds.
type API struct {
	host Host
	mu   sync.Mutex
	// instances by path (projects/P/zones/Z/instances/N).
	instances map[string]*instance
	ops       map[string]*operation // by path
	// next numbers the addresses handed out, per project.
	next map[string]uint32
	// unreachable are the zones an aggregated list cannot read now.
	unreachable map[string]bool
}

// New returns an empty API.
func New(host Host) *API {
	a := &API{host: host}
	a.Reset()
	return a
}

// Reset forgets every instance and operation.
func (a *API) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.instances = map[string]*instance{}
	a.ops = map[string]*operation{}
	a.next = map[string]uint32{}
	a.unreachable = map[string]bool{}
}

// SetUnreachable makes zones unreachable to aggregated lists (none: all
// reachable again), as a zone GCP cannot read for a while is: with
// returnPartialSuccess the list names them in unreachables and leaves
// their instances out, without it the list fails.
func (a *API) SetUnreachable(zones ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unreachable = map[string]bool{}
	for _, z := range zones {
		a.unreachable[z] = true
	}
}

// A Handler serves one method.
type Handler func(w http.ResponseWriter, r *http.Request)

// A Route is one method on one path pattern (with {project}, {zone},
// {instance} and {operation} values), named as IAM and the emulator's
// counters name it.
type Route struct {
	Verb    string // HTTP method
	Pattern string
	Name    string // e.g. instances.aggregatedList
	Handle  Handler
}

// Routes are the API's routes, relative to the compute root.
func (a *API) Routes() []Route {
	const z = "/projects/{project}/zones/{zone}"
	const one = z + "/instances/{instance}"
	return []Route{
		{"POST", z + "/instances", "instances.insert", a.insert},
		{"GET", z + "/instances", "instances.list", a.list},
		{"GET", one, "instances.get", a.get},
		{"DELETE", one, "instances.delete", a.delete},
		{"POST", one + "/setLabels", "instances.setLabels", a.setLabels},
		{"POST", one + "/stop", "instances.stop", a.stop},
		{"POST", one + "/start", "instances.start", a.start},
		{"GET", "/projects/{project}/aggregated/instances", "instances.aggregatedList", a.aggregatedList},
		{"GET", z + "/operations/{operation}", "zoneOperations.get", a.getOp},
		{"POST", z + "/operations/{operation}/wait", "zoneOperations.wait", a.waitOp},
	}
}

// Permissions are the IAM permissions of the methods whose verb the
// server's table does not know.
var Permissions = map[string]core.Permission{
	"instances.stop":  {Name: "compute.instances.stop", Write: true},
	"instances.start": {Name: "compute.instances.start", Write: true},
}

// ResponseTypes are the response types of every method, for fields=.
var ResponseTypes = map[string]reflect.Type{
	"instances.insert":         reflect.TypeOf(compute.Operation{}),
	"instances.list":           reflect.TypeOf(compute.InstanceList{}),
	"instances.get":            reflect.TypeOf(compute.Instance{}),
	"instances.delete":         reflect.TypeOf(compute.Operation{}),
	"instances.setLabels":      reflect.TypeOf(compute.Operation{}),
	"instances.stop":           reflect.TypeOf(compute.Operation{}),
	"instances.start":          reflect.TypeOf(compute.Operation{}),
	"instances.aggregatedList": reflect.TypeOf(compute.InstanceAggregatedList{}),
	"zoneOperations.get":       reflect.TypeOf(compute.Operation{}),
	"zoneOperations.wait":      reflect.TypeOf(compute.Operation{}),
}

// Resource is what a 403 of the request names: the instance or the
// operation, else the zone.
func Resource(r *http.Request) string {
	z := "projects/" + r.PathValue("project") + "/zones/" + r.PathValue("zone")
	switch {
	case r.PathValue("instance") != "":
		return z + "/instances/" + r.PathValue("instance")
	case r.PathValue("operation") != "":
		return z + "/operations/" + r.PathValue("operation")
	case r.PathValue("zone") != "":
		return z
	}
	return "projects/" + r.PathValue("project")
}
