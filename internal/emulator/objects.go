package emulator

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/instances"
)

// This file holds what the objects beyond a project's security policies
// share: organization security policies (orgpolicies.go), and backend
// services, backend buckets and network edge security services (package
// backends, mounted by backends.go).

// moreState is their part of the store, under store.mu.
type moreState struct {
	orgPolicies map[string]*orgPolicy // by id
	backends    backends.State        // served by Server.backends
}

func newMoreState() moreState {
	return moreState{orgPolicies: map[string]*orgPolicy{}, backends: backends.NewState()}
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

// moreRoutes serves organization security policies and their operations.
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
	if user := st.more.backends.UserLocked(apiRoot + p.path()); user != "" {
		return errInUse("security_policy", p.path(), user)
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
	f.Saved = st.more.backends.SaveLocked()
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
	st.more.backends.LoadLocked(f.Saved)
}
