package emulator

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/instances"
)

// This file holds what the objects beyond a project's security policies
// share: organization security policies (orgpolicies.go), backend services
// (backends.go) and network edge security services (edgeservices.go).

// moreState is their part of the store, under store.mu.
type moreState struct {
	orgPolicies map[string]*orgPolicy      // by id
	backends    map[string]*backendService // by path
	buckets     map[string]*backendBucket  // by path
	edges       map[string]*edgeService    // by path
}

func newMoreState() moreState {
	return moreState{orgPolicies: map[string]*orgPolicy{}, backends: map[string]*backendService{},
		buckets: map[string]*backendBucket{}, edges: map[string]*edgeService{}}
}

// An objMutation is a mutating call on one of these objects: like a
// security policy's, it yields one compute operation, and while that
// operation runs every object in keys is busy (resourceNotReady).
type objMutation struct {
	mutation
	keys   []string // the objects the operation holds; keys[0] is its target
	parent string   // organizations/N or folders/N: a global organization operation
}

// A plan is what a change decided: the operation's target and the commit
// that makes the change, run only if the operation does not fail.
type plan struct {
	link   string // targetLink
	id     uint64 // targetId
	policy string // the policy path stats count the operation's polls under, if any
	commit func()
}

// mutateObject runs change under the store's lock, like mutate: a repeated
// requestId returns the original operation, a busy object refuses the call,
// change validates and plans, and the commit runs unless the operation was
// failed by fault injection. A validateOnly call gets a DONE operation and
// changes nothing.
func (st *store) mutateObject(m objMutation, change func() (plan, error)) (*operation, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op := st.byRequestID(m.requestID); op != nil && !m.validateOnly {
		return op, nil
	}
	now := st.now()
	for _, k := range m.keys {
		if until, ok := st.busy[k]; ok && now.Before(until) {
			return nil, core.ErrNotReady(k)
		}
	}
	p, err := change()
	if err != nil {
		return nil, err
	}
	op := &operation{ID: st.gen.ID(), Name: st.gen.OpName(now), Scope: m.scope, Parent: m.parent,
		Type: m.opType, User: m.user, Inserted: now, Done: now.Add(m.latency), Err: m.fail,
		TargetLink: p.link, TargetID: p.id, Policy: p.policy}
	if m.parent != "" {
		op.Name = orgOpPrefix(m.parent) + op.Name
	}
	if m.validateOnly {
		op.Done = now
		st.remember(op, "")
		c := *op
		return &c, nil
	}
	if op.Err == nil && p.commit != nil {
		p.commit()
	}
	for _, k := range m.keys {
		st.busy[k] = op.Done
	}
	st.remember(op, m.requestID)
	c := *op
	return &c, nil
}

// finishObject answers a mutating call on one of these objects (see
// answer). what names the object in the log line.
func (s *Server) finishObject(w http.ResponseWriter, c *call, m objMutation, what string, op *operation, err error) {
	s.answer(w, c, m.validateOnly, what, op, err)
}

// deleteObject serves the delete of the object of collection that the
// path value param names, in the store's map that objects returns (read
// under the store's lock): 404 when it is not there.
func deleteObject[T any](s *Server, collection, param string, objects func() map[string]T, id func(T) uint64) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		path := c.scope.ObjectPath(collection, r.PathValue(param))
		m := s.objectMutation(r, c, "delete", path)
		op, err := s.store.mutateObject(m, func() (plan, error) {
			o, ok := objects()[path]
			if !ok {
				return plan{}, core.ErrNotFound(path)
			}
			return plan{link: apiRoot + path, id: id(o), commit: func() { delete(objects(), path) }}, nil
		})
		s.finishObject(w, c, m, path, op, err)
	}
}

// getObject serves the get of the object of collection that the path value
// param names, in the store's map that objects returns, rendered under the
// store's lock: 404 when it is not there.
func getObject[T any](s *Server, collection, param string, objects func() map[string]T, render func(T) map[string]any) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		path := c.scope.ObjectPath(collection, r.PathValue(param))
		s.store.mu.Lock()
		o, ok := objects()[path]
		var body map[string]any
		if ok {
			body = render(o)
		}
		s.store.mu.Unlock()
		if !ok {
			core.WriteError(w, core.ErrNotFound(path))
			return
		}
		core.WriteJSON(w, http.StatusOK, body)
	}
}

// renderAll returns every object of the store's map that objects returns
// as GET would return it, keyed by its path.
func renderAll[T any](s *Server, objects func() map[string]T, render func(T) map[string]any) map[string]map[string]any {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	out := map[string]map[string]any{}
	for k, o := range objects() {
		out[k] = render(o)
	}
	return out
}

// The maps of the objects served by deleteObject, getObject and renderAll,
// read under the store's lock.
func (s *Server) backendMap() map[string]*backendService { return s.store.more.backends }
func (s *Server) bucketMap() map[string]*backendBucket   { return s.store.more.buckets }
func (s *Server) edgeMap() map[string]*edgeService       { return s.store.more.edges }

// objectMutation prepares an objMutation for a call.
func (s *Server) objectMutation(r *http.Request, c *call, opType string, keys ...string) objMutation {
	m := s.mutation(r, c, "", opType)
	return objMutation{mutation: m, keys: keys}
}

// describe fills in, before grants are checked, what a call on these
// objects is checked against (owner) and what a 403 names (resource); it
// also counts an organization policy's calls under its path in Stats.
func (s *Server) describe(r *http.Request, c *call) {
	switch {
	case strings.HasPrefix(c.method, "instances.") || strings.HasPrefix(c.method, "zoneOperations."):
		c.resource = instances.Resource(r)
	case strings.HasPrefix(c.method, "organizationSecurityPolicies."):
		id := orgPolicyID(r.PathValue("orgPolicy"))
		parent := r.URL.Query().Get("parentId")
		if id != "" {
			c.resource = orgPolicyPath(id)
			if p, ok := s.store.orgPolicyParent(id); ok {
				parent = p
			}
			s.stats.policy(orgPolicyPath(id), c.counted)
		} else if strings.HasSuffix(c.method, ".listAssociations") {
			parent = r.URL.Query().Get("targetResource")
		}
		if parent != "" {
			c.owner = parent
		}
		if c.resource == "" && parent != "" {
			c.resource = parent
		}
	case strings.HasPrefix(c.method, "globalOrganizationOperations."):
		name := r.PathValue("orgOperation")
		c.owner = r.URL.Query().Get("parentId")
		if name != "" {
			c.resource = orgOpPath(name)
			if p := s.store.orgOpParent(name); p != "" {
				c.owner = p
			}
		} else {
			c.resource = c.owner
		}
	case r.PathValue("backendService") != "":
		c.resource = c.scope.ObjectPath("backendServices", r.PathValue("backendService"))
	case r.PathValue("backendBucket") != "":
		c.resource = c.scope.ObjectPath("backendBuckets", r.PathValue("backendBucket"))
	case r.PathValue("edgeService") != "":
		c.resource = c.scope.ObjectPath("networkEdgeSecurityServices", r.PathValue("edgeService"))
	}
}

// The IAM permissions and response types of the methods served here, for
// grants (permissionOf) and fields= (responseType).
func init() {
	perm := func(name string, write bool) permission { return permission{name: name, write: write} }
	org := "compute.organizationSecurityPolicies."
	orgOps := "compute.globalOrganizationOperations."
	for method, p := range map[string]permission{
		"organizationSecurityPolicies.insert":                          perm(org+"create", true),
		"organizationSecurityPolicies.get":                             perm(org+"get", false),
		"organizationSecurityPolicies.list":                            perm(org+"list", false),
		"organizationSecurityPolicies.patch":                           perm(org+"update", true),
		"organizationSecurityPolicies.delete":                          perm(org+"delete", true),
		"organizationSecurityPolicies.addRule":                         perm(org+"update", true),
		"organizationSecurityPolicies.patchRule":                       perm(org+"update", true),
		"organizationSecurityPolicies.removeRule":                      perm(org+"update", true),
		"organizationSecurityPolicies.getRule":                         perm(org+"get", false),
		"organizationSecurityPolicies.addAssociation":                  perm(org+"addAssociation", true),
		"organizationSecurityPolicies.removeAssociation":               perm(org+"removeAssociation", true),
		"organizationSecurityPolicies.getAssociation":                  perm(org+"get", false),
		"organizationSecurityPolicies.listAssociations":                perm(org+"listAssociations", false),
		"organizationSecurityPolicies.move":                            perm(org+"move", true),
		"organizationSecurityPolicies.listPreconfiguredExpressionSets": perm(org+"list", false),
		"globalOrganizationOperations.get":                             perm(orgOps+"get", false),
		"globalOrganizationOperations.list":                            perm(orgOps+"list", false),
		"globalOrganizationOperations.delete":                          perm(orgOps+"delete", true),
		"backendServices.setSecurityPolicy":                            perm("compute.backendServices.setSecurityPolicy", true),
		"backendServices.setEdgeSecurityPolicy":                        perm("compute.backendServices.setSecurityPolicy", true),
		"regionBackendServices.setSecurityPolicy":                      perm("compute.regionBackendServices.setSecurityPolicy", true),
		"backendBuckets.setEdgeSecurityPolicy":                         perm("compute.backendBuckets.setSecurityPolicy", true),
		"networkEdgeSecurityServices.aggregatedList":                   perm("compute.networkEdgeSecurityServices.list", false),
		"backendServices.aggregatedList":                               perm("compute.backendServices.list", false),
	} {
		otherPermissions[method] = p
	}
	op := reflect.TypeOf(compute.Operation{})
	for method, t := range map[string]reflect.Type{
		"organizationSecurityPolicies.get":                             reflect.TypeOf(compute.SecurityPolicy{}),
		"organizationSecurityPolicies.list":                            reflect.TypeOf(compute.SecurityPolicyList{}),
		"organizationSecurityPolicies.getRule":                         reflect.TypeOf(compute.SecurityPolicyRule{}),
		"organizationSecurityPolicies.getAssociation":                  reflect.TypeOf(compute.SecurityPolicyAssociation{}),
		"organizationSecurityPolicies.listAssociations":                reflect.TypeOf(compute.OrganizationSecurityPoliciesListAssociationsResponse{}),
		"organizationSecurityPolicies.listPreconfiguredExpressionSets": reflect.TypeOf(compute.SecurityPoliciesListPreconfiguredExpressionSetsResponse{}),
		"globalOrganizationOperations.get":                             op,
		"globalOrganizationOperations.list":                            reflect.TypeOf(compute.OperationList{}),
		"backendServices.get":                                          reflect.TypeOf(compute.BackendService{}),
		"regionBackendServices.get":                                    reflect.TypeOf(compute.BackendService{}),
		"backendServices.list":                                         reflect.TypeOf(compute.BackendServiceList{}),
		"regionBackendServices.list":                                   reflect.TypeOf(compute.BackendServiceList{}),
		"backendServices.aggregatedList":                               reflect.TypeOf(compute.BackendServiceAggregatedList{}),
		"backendBuckets.get":                                           reflect.TypeOf(compute.BackendBucket{}),
		"backendBuckets.list":                                          reflect.TypeOf(compute.BackendBucketList{}),
		"networkEdgeSecurityServices.get":                              reflect.TypeOf(compute.NetworkEdgeSecurityService{}),
		"networkEdgeSecurityServices.aggregatedList":                   reflect.TypeOf(compute.NetworkEdgeSecurityServiceAggregatedList{}),
	} {
		otherResponseTypes[method] = t
	}
	for _, method := range []string{"organizationSecurityPolicies.insert", "organizationSecurityPolicies.patch",
		"organizationSecurityPolicies.delete", "organizationSecurityPolicies.addRule", "organizationSecurityPolicies.patchRule",
		"organizationSecurityPolicies.removeRule", "organizationSecurityPolicies.addAssociation",
		"organizationSecurityPolicies.removeAssociation", "organizationSecurityPolicies.move"} {
		otherResponseTypes[method] = op
	}
}

// moreRoutes serves organization security policies and their operations,
// backend services and network edge security services.
func (s *Server) moreRoutes() {
	const o = "/locations/global/securityPolicies"
	const one = o + "/{orgPolicy}"
	const p = "organizationSecurityPolicies."
	op := s.orgPolicies()
	s.route("POST", o, p+"insert", s.insertOrgPolicy)
	s.route("GET", o, p+"list", s.listOrgPolicies)
	s.route("GET", o+"/listAssociations", p+"listAssociations", s.listOrgAssociations)
	s.route("GET", o+"/listPreconfiguredExpressionSets", p+"listPreconfiguredExpressionSets", s.listPreconfigured)
	s.route("GET", one, p+"get", s.getOrgPolicy)
	s.route("PATCH", one, p+"patch", s.patchPolicy(op))
	s.route("DELETE", one, p+"delete", s.deletePolicy(op))
	s.route("POST", one+"/addRule", p+"addRule", s.addRule(op))
	s.route("GET", one+"/getRule", p+"getRule", s.getRule(op))
	s.route("POST", one+"/patchRule", p+"patchRule", s.patchRule(op))
	s.route("POST", one+"/removeRule", p+"removeRule", s.removeRule(op))
	s.route("POST", one+"/addAssociation", p+"addAssociation", s.addOrgAssociation)
	s.route("POST", one+"/removeAssociation", p+"removeAssociation", s.removeOrgAssociation)
	s.route("GET", one+"/getAssociation", p+"getAssociation", s.getOrgAssociation)
	s.route("POST", one+"/move", p+"move", s.moveOrgPolicy)
	s.route("GET", "/locations/global/operations", "globalOrganizationOperations.list", s.listOrgOps)
	s.route("GET", "/locations/global/operations/{orgOperation}", "globalOrganizationOperations.get", s.getOp(orgOp))
	s.route("DELETE", "/locations/global/operations/{orgOperation}", "globalOrganizationOperations.delete", s.deleteOp(orgOp))

	for _, b := range []struct{ prefix, path string }{
		{"backendServices.", "/projects/{project}/global/backendServices"},
		{"regionBackendServices.", "/projects/{project}/regions/{region}/backendServices"},
	} {
		s.route("POST", b.path, b.prefix+"insert", s.insertBackend)
		s.route("GET", b.path, b.prefix+"list", s.listBackends)
		s.route("GET", b.path+"/{backendService}", b.prefix+"get", getObject(s, "backendServices", "backendService", s.backendMap, renderBackend))
		s.route("DELETE", b.path+"/{backendService}", b.prefix+"delete", deleteObject(s, "backendServices", "backendService",
			s.backendMap, func(o *backendService) uint64 { return o.ID }))
		s.route("POST", b.path+"/{backendService}/setSecurityPolicy", b.prefix+"setSecurityPolicy", s.setBackendPolicy)
	}
	s.route("POST", "/projects/{project}/global/backendServices/{backendService}/setEdgeSecurityPolicy",
		"backendServices.setEdgeSecurityPolicy", s.setBackendPolicy)
	s.route("GET", "/projects/{project}/aggregated/backendServices", "backendServices.aggregatedList", s.aggregatedBackends)

	const bb = "/projects/{project}/global/backendBuckets"
	s.route("POST", bb, "backendBuckets.insert", s.insertBucket)
	s.route("GET", bb, "backendBuckets.list", s.listBuckets)
	s.route("GET", bb+"/{backendBucket}", "backendBuckets.get", getObject(s, "backendBuckets", "backendBucket", s.bucketMap, renderBucket))
	s.route("DELETE", bb+"/{backendBucket}", "backendBuckets.delete", deleteObject(s, "backendBuckets", "backendBucket",
		s.bucketMap, func(o *backendBucket) uint64 { return o.ID }))
	s.route("POST", bb+"/{backendBucket}/setEdgeSecurityPolicy", "backendBuckets.setEdgeSecurityPolicy", s.setBucketEdgePolicy)

	const e = "/projects/{project}/regions/{region}/networkEdgeSecurityServices"
	s.route("POST", e, "networkEdgeSecurityServices.insert", s.insertEdge)
	s.route("GET", e+"/{edgeService}", "networkEdgeSecurityServices.get", getObject(s, "networkEdgeSecurityServices", "edgeService", s.edgeMap, renderEdge))
	s.route("PATCH", e+"/{edgeService}", "networkEdgeSecurityServices.patch", s.patchEdge)
	s.route("DELETE", e+"/{edgeService}", "networkEdgeSecurityServices.delete", deleteObject(s, "networkEdgeSecurityServices", "edgeService",
		s.edgeMap, func(o *edgeService) uint64 { return o.ID }))
	s.route("GET", "/projects/{project}/aggregated/networkEdgeSecurityServices",
		"networkEdgeSecurityServices.aggregatedList", s.aggregatedEdges)
}

// aggregated answers an aggregatedList: the global scope (if global is
// true) plus every region holding an object, each an item list under key
// or the NO_RESULTS_ON_PAGE warning, as for security policies.
func aggregated(w http.ResponseWriter, r *http.Request, c *call, kind, collection, key string, global bool,
	byScope map[string][]map[string]any) {
	if global {
		if _, ok := byScope["global"]; !ok {
			byScope["global"] = nil
		}
	}
	items := map[string]any{}
	for k, objs := range byScope {
		objs, err := core.FilterItems(r.URL.Query().Get("filter"), objs)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		if len(objs) == 0 {
			items[k] = core.ScopedList(k, nil)
			continue
		}
		list := make([]any, len(objs))
		for i, o := range objs {
			list[i] = o
		}
		items[k] = map[string]any{key: list}
	}
	path := "projects/" + c.scope.Project + "/aggregated/" + collection
	core.WriteJSON(w, http.StatusOK, map[string]any{"kind": kind, "id": path, "items": items, "selfLink": apiRoot + path})
}

// A reference is a compute resource URL as clients send it: a full URL, a
// path from projects/, a path from global/ or regions/, or a bare name.
type reference struct {
	scope scope
	name  string
}

// parseRef reads a reference to an object of collection, relative to
// within (the project, and the region for regional references). ok is
// false when ref does not have a reference's shape.
func parseRef(ref, collection string, within scope) (reference, bool) {
	s := strings.TrimPrefix(ref, apiRoot)
	if i := strings.Index(s, "/compute/v1/"); i >= 0 {
		s = s[i+len("/compute/v1/"):]
	}
	segs := strings.Split(s, "/")
	out := reference{scope: scope{Project: within.Project, Region: within.Region}}
	switch {
	case len(segs) == 1:
		out.name = segs[0]
	case len(segs) >= 2 && segs[len(segs)-2] == collection:
		out.name = segs[len(segs)-1]
		head := segs[:len(segs)-2]
		if len(head) >= 2 && head[0] == "projects" {
			out.scope.Project = head[1]
			head = head[2:]
		}
		switch {
		case len(head) == 1 && head[0] == "global":
			out.scope.Region = ""
		case len(head) == 2 && head[0] == "regions":
			out.scope.Region = head[1]
		default:
			return reference{}, false
		}
	default:
		return reference{}, false
	}
	return out, core.NamePattern.MatchString(out.name)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// errInUse is compute's refusal to delete a resource another one uses.
func errInUse(kind, resource, user string) *core.Error {
	return &core.Error{Code: 400, Reason: "resourceInUseByAnotherResource",
		Message: fmt.Sprintf("The %s resource '%s' is already being used by '%s'", kind, resource, user)}
}

// policyInUseLocked refuses the delete of a project's security policy that
// a backend service, a backend bucket or a network edge security service
// uses. st.mu must be
// held.
func (st *store) policyInUseLocked(p *policy) error {
	link := apiRoot + p.path()
	for _, k := range sortedKeys(st.more.backends) {
		b := st.more.backends[k]
		if b.SecurityPolicy == link || b.EdgeSecurityPolicy == link {
			return errInUse("security_policy", p.path(), b.path())
		}
	}
	for _, k := range sortedKeys(st.more.buckets) {
		if b := st.more.buckets[k]; b.EdgeSecurityPolicy == link {
			return errInUse("security_policy", p.path(), b.path())
		}
	}
	for _, k := range sortedKeys(st.more.edges) {
		if e := st.more.edges[k]; e.SecurityPolicy == link {
			return errInUse("security_policy", p.path(), e.path())
		}
	}
	return nil
}

// saveMore adds these objects to a state file.
func (st *store) saveMore(f *stateFile) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, k := range sortedKeys(st.more.orgPolicies) {
		f.OrgPolicies = append(f.OrgPolicies, st.more.orgPolicies[k].clone())
	}
	for _, k := range sortedKeys(st.more.backends) {
		f.BackendServices = append(f.BackendServices, st.more.backends[k].clone())
	}
	for _, k := range sortedKeys(st.more.buckets) {
		f.BackendBuckets = append(f.BackendBuckets, st.more.buckets[k].clone())
	}
	for _, k := range sortedKeys(st.more.edges) {
		e := *st.more.edges[k]
		f.EdgeServices = append(f.EdgeServices, &e)
	}
}

// loadMore adds the objects of a state file after load.
func (st *store) loadMore(f stateFile) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, o := range f.OrgPolicies {
		if o != nil && o.Name != "" && !strings.Contains(o.Name, "/") {
			st.more.orgPolicies[o.Name] = o
		}
	}
	for _, b := range f.BackendServices {
		if b != nil && core.NamePattern.MatchString(b.Name) {
			st.more.backends[b.path()] = b
		}
	}
	for _, b := range f.BackendBuckets {
		if b != nil && core.NamePattern.MatchString(b.Name) {
			st.more.buckets[b.path()] = b
		}
	}
	for _, e := range f.EdgeServices {
		if e != nil && core.NamePattern.MatchString(e.Name) {
			st.more.edges[e.path()] = e
		}
	}
}
