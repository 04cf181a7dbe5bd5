// Package backends serves the compute objects a security policy is
// attached to: backend services (global and regional) and backend buckets,
// which take CLOUD_ARMOR and CLOUD_ARMOR_EDGE policies, and network edge
// security services, which take CLOUD_ARMOR_NETWORK ones. The server in
// package emulator mounts it (Mount), runs every call through its
// pipeline (auth, grants, faults) and carries out its writes
// (core.Call.Mutate) as compute operations; it resolves the policies the
// objects name (Host). This package imports neither the server nor the
// other APIs.
package backends

import (
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Host is what the server that mounts the API gives it.
type Host interface {
	// The store holds the State.
	core.Store
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// ResolvePolicyLocked checks that ref names a security policy a user of
	// kind ("backend service", "backend bucket") in sc may use in field
	// (securityPolicy or edgeSecurityPolicy) and returns its selfLink.
	// The lock must be held.
	ResolvePolicyLocked(kind string, sc core.Scope, field, ref string) (string, error)
	// ResolveNetworkPolicyLocked checks the securityPolicy of a network
	// edge security service in sc and returns its selfLink. The lock must
	// be held.
	ResolveNetworkPolicyLocked(sc core.Scope, ref string) (string, error)
}

// State is the objects, by path. The server's store holds it, under the
// host's lock.
type State struct {
	Services map[string]*Service
	Buckets  map[string]*Bucket
	Edges    map[string]*EdgeService
}

// NewState returns an empty State.
func NewState() State {
	return State{Services: map[string]*Service{}, Buckets: map[string]*Bucket{}, Edges: map[string]*EdgeService{}}
}

// UserLocked returns the path of an object that uses the security policy
// whose selfLink is link ("" if none): a policy in use cannot be deleted.
// The host's lock must be held.
func (st *State) UserLocked(link string) string {
	for _, k := range sorted(st.Services) {
		b := st.Services[k]
		if b.SecurityPolicy == link || b.EdgeSecurityPolicy == link {
			return b.path()
		}
	}
	for _, k := range sorted(st.Buckets) {
		if b := st.Buckets[k]; b.EdgeSecurityPolicy == link {
			return b.path()
		}
	}
	for _, k := range sorted(st.Edges) {
		if e := st.Edges[k]; e.SecurityPolicy == link {
			return e.path()
		}
	}
	return ""
}

// A Saved is the State as a state file keeps it.
type Saved struct {
	Services []*Service     `json:"backendServices,omitempty"`
	Buckets  []*Bucket      `json:"backendBuckets,omitempty"`
	Edges    []*EdgeService `json:"networkEdgeSecurityServices,omitempty"`
}

// SaveLocked returns copies of every object, by path. The host's lock must
// be held.
func (st *State) SaveLocked() Saved {
	var out Saved
	for _, k := range sorted(st.Services) {
		out.Services = append(out.Services, st.Services[k].clone())
	}
	for _, k := range sorted(st.Buckets) {
		out.Buckets = append(out.Buckets, st.Buckets[k].clone())
	}
	for _, k := range sorted(st.Edges) {
		e := *st.Edges[k]
		out.Edges = append(out.Edges, &e)
	}
	return out
}

// LoadLocked adds the objects of a state file, skipping any without a
// valid name. The host's lock must be held.
func (st *State) LoadLocked(f Saved) {
	for _, b := range f.Services {
		if b != nil && core.NamePattern.MatchString(b.Name) {
			st.Services[b.path()] = b
		}
	}
	for _, b := range f.Buckets {
		if b != nil && core.NamePattern.MatchString(b.Name) {
			st.Buckets[b.path()] = b
		}
	}
	for _, e := range f.Edges {
		if e != nil && core.NamePattern.MatchString(e.Name) {
			st.Edges[e.path()] = e
		}
	}
}

// An API serves the objects of the State it is given.
type API struct {
	host Host
	st   *State
}

// New returns the API over st.
func New(host Host, st *State) *API { return &API{host: host, st: st} }

// Mount gives add every route of the API: a method on a path pattern
// (relative to the compute root), named as IAM and the emulator's counters
// name it (e.g. backendServices.setSecurityPolicy).
func (a *API) Mount(add func(verb, pattern, name string, h core.Handler)) {
	services, buckets, edges := a.services, a.buckets, a.edges
	for _, b := range []struct{ prefix, path string }{
		{"backendServices.", "/projects/{project}/global/backendServices"},
		{"regionBackendServices.", "/projects/{project}/regions/{region}/backendServices"},
	} {
		add("POST", b.path, b.prefix+"insert", a.insertBackend)
		add("GET", b.path, b.prefix+"list", a.listBackends)
		add("GET", b.path+"/{backendService}", b.prefix+"get", getObject(a, "backendServices", "backendService", services, renderBackend))
		add("DELETE", b.path+"/{backendService}", b.prefix+"delete", deleteObject("backendServices", "backendService",
			services, func(o *Service) uint64 { return o.ID }))
		add("POST", b.path+"/{backendService}/setSecurityPolicy", b.prefix+"setSecurityPolicy", a.setBackendPolicy)
	}
	add("POST", "/projects/{project}/global/backendServices/{backendService}/setEdgeSecurityPolicy",
		"backendServices.setEdgeSecurityPolicy", a.setBackendPolicy)
	add("GET", "/projects/{project}/aggregated/backendServices", "backendServices.aggregatedList", a.aggregatedBackends)

	const bb = "/projects/{project}/global/backendBuckets"
	add("POST", bb, "backendBuckets.insert", a.insertBucket)
	add("GET", bb, "backendBuckets.list", a.listBuckets)
	add("GET", bb+"/{backendBucket}", "backendBuckets.get", getObject(a, "backendBuckets", "backendBucket", buckets, renderBucket))
	add("DELETE", bb+"/{backendBucket}", "backendBuckets.delete", deleteObject("backendBuckets", "backendBucket",
		buckets, func(o *Bucket) uint64 { return o.ID }))
	add("POST", bb+"/{backendBucket}/setEdgeSecurityPolicy", "backendBuckets.setEdgeSecurityPolicy", a.setBucketEdgePolicy)

	const e = "/projects/{project}/regions/{region}/networkEdgeSecurityServices"
	add("POST", e, "networkEdgeSecurityServices.insert", a.insertEdge)
	add("GET", e+"/{edgeService}", "networkEdgeSecurityServices.get", getObject(a, "networkEdgeSecurityServices", "edgeService", edges, renderEdge))
	add("PATCH", e+"/{edgeService}", "networkEdgeSecurityServices.patch", a.patchEdge)
	add("DELETE", e+"/{edgeService}", "networkEdgeSecurityServices.delete", deleteObject("networkEdgeSecurityServices", "edgeService",
		edges, func(o *EdgeService) uint64 { return o.ID }))
	add("GET", "/projects/{project}/aggregated/networkEdgeSecurityServices",
		"networkEdgeSecurityServices.aggregatedList", a.aggregatedEdges)
}

// Permissions are the IAM permissions of the methods whose verb the
// server's table does not know: setting either policy of a backend service
// or bucket needs the collection's setSecurityPolicy, an aggregated list
// its list.
var Permissions = func() map[string]core.Permission {
	m := map[string]core.Permission{}
	for _, method := range []string{"backendServices.setSecurityPolicy", "backendServices.setEdgeSecurityPolicy",
		"regionBackendServices.setSecurityPolicy", "backendBuckets.setEdgeSecurityPolicy"} {
		collection, _, _ := strings.Cut(method, ".")
		m[method] = core.Permission{Name: "compute." + collection + ".setSecurityPolicy", Write: true}
	}
	for _, collection := range []string{"backendServices", "networkEdgeSecurityServices"} {
		m[collection+".aggregatedList"] = core.Permission{Name: "compute." + collection + ".list"}
	}
	return m
}()

// ResponseTypes are the response types of the methods that do not answer
// with an operation, for fields=: a global and a regional backend
// service's are the same.
var ResponseTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{"backendServices.aggregatedList": reflect.TypeOf(compute.BackendServiceAggregatedList{})}
	for _, prefix := range []string{"backendServices.", "regionBackendServices."} {
		m[prefix+"get"] = reflect.TypeOf(compute.BackendService{})
		m[prefix+"list"] = reflect.TypeOf(compute.BackendServiceList{})
	}
	m["backendBuckets.get"] = reflect.TypeOf(compute.BackendBucket{})
	m["backendBuckets.list"] = reflect.TypeOf(compute.BackendBucketList{})
	m["networkEdgeSecurityServices.get"] = reflect.TypeOf(compute.NetworkEdgeSecurityService{})
	m["networkEdgeSecurityServices.aggregatedList"] = reflect.TypeOf(compute.NetworkEdgeSecurityServiceAggregatedList{})
	return m
}()

// The maps of the objects served by deleteObject, getObject and renderAll,
// read under the host's lock.
func (a *API) services() map[string]*Service  { return a.st.Services }
func (a *API) buckets() map[string]*Bucket    { return a.st.Buckets }
func (a *API) edges() map[string]*EdgeService { return a.st.Edges }

// decode reads and decodes a request body (see core.DecodeBody).
func (a *API) decode(w http.ResponseWriter, r *http.Request, typed any, what string) (map[string]any, error) {
	return core.Decode(w, r, a.host.MaxBodyBytes(), typed, what)
}

// sorted returns a map's keys in order.
func sorted[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// deleteObject serves the delete of the object of collection that the
// path value param names, in the map that objects returns (read under the
// host's lock): 404 when it is not there.
func deleteObject[T any](collection, param string, objects func() map[string]T, id func(T) uint64) core.Handler {
	return func(w http.ResponseWriter, r *http.Request, c core.Call) {
		path := c.Scope().ObjectPath(collection, r.PathValue(param))
		c.Mutate("delete", path, func() (core.Plan, error) {
			o, ok := objects()[path]
			if !ok {
				return core.Plan{}, core.ErrNotFound(path)
			}
			return core.Plan{Link: core.ComputeRoot + path, ID: id(o), Commit: func() { delete(objects(), path) }}, nil
		})
	}
}

// getObject serves the get of the object of collection that the path value
// param names, in the map that objects returns, rendered under the host's
// lock: 404 when it is not there.
func getObject[T any](a *API, collection, param string, objects func() map[string]T, render func(T) map[string]any) core.Handler {
	return func(w http.ResponseWriter, r *http.Request, c core.Call) {
		path := c.Scope().ObjectPath(collection, r.PathValue(param))
		a.host.Lock()
		o, ok := objects()[path]
		var body map[string]any
		if ok {
			body = render(o)
		}
		a.host.Unlock()
		if !ok {
			core.WriteError(w, core.ErrNotFound(path))
			return
		}
		core.WriteJSON(w, http.StatusOK, body)
	}
}

// renderAll returns every object of the map that objects returns as GET
// would return it, keyed by its path, rendered under the host's lock.
func renderAll[T any](a *API, objects func() map[string]T, render func(T) map[string]any) map[string]map[string]any {
	a.host.Lock()
	defer a.host.Unlock()
	out := map[string]map[string]any{}
	for k, o := range objects() {
		out[k] = render(o)
	}
	return out
}

// Services returns every backend service as GET would return it, keyed by
// its path ("projects/p/global/backendServices/n").
func (a *API) Services() map[string]map[string]any { return renderAll(a, a.services, renderBackend) }

// Buckets returns every backend bucket as GET would return it, keyed by
// its path ("projects/p/global/backendBuckets/n").
func (a *API) Buckets() map[string]map[string]any { return renderAll(a, a.buckets, renderBucket) }

// EdgeServices returns every network edge security service as GET would
// return it, keyed by its path
// ("projects/p/regions/r/networkEdgeSecurityServices/n").
func (a *API) EdgeServices() map[string]map[string]any { return renderAll(a, a.edges, renderEdge) }
