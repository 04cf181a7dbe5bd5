package emulator

import (
	"net/http"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The backend API's methods beyond the verbs permissionOf knows, and the
// response types of its reads, for fields=.
func init() { addMethods(backends.Permissions, backends.ResponseTypes) }

// mountBackends serves the routes of backend services, backend buckets and
// network edge security services through serve.
func (s *Server) mountBackends() {
	s.backends.Mount(func(verb, pattern, name string, h backends.Handler) {
		s.route(verb, pattern, name, func(w http.ResponseWriter, r *http.Request, c *call) {
			h(w, r, backendCall{s: s, w: w, r: r, c: c})
		})
	})
}

// backendCall is a call of the backend API: its writes are compute
// operations of the store, answered like every compute write.
type backendCall struct {
	s *Server
	w http.ResponseWriter
	r *http.Request
	c *call
}

func (bc backendCall) Method() string    { return bc.c.method }
func (bc backendCall) Scope() core.Scope { return bc.c.scope }

func (bc backendCall) Mutate(opType, path string, change func() (backends.Plan, error)) {
	m := bc.s.objectMutation(bc.r, bc.c, opType, path)
	op, err := bc.s.store.mutateObject(m, func() (plan, error) {
		p, err := change()
		return plan{link: p.Link, id: p.ID, commit: p.Commit}, err
	})
	bc.s.finishObject(bc.w, bc.c, m, path, op, err)
}

// backendsHost is what the server gives the backend API.
type backendsHost struct{ s *Server }

func (h backendsHost) Lock()               { h.s.store.mu.Lock() }
func (h backendsHost) Unlock()             { h.s.store.mu.Unlock() }
func (h backendsHost) Now() time.Time      { return h.s.now() }
func (h backendsHost) Gen() *core.Gen      { return h.s.store.gen }
func (h backendsHost) MaxBodyBytes() int64 { return h.s.opts.MaxBodyBytes }

func (h backendsHost) ResolvePolicyLocked(kind string, sc core.Scope, field, ref string) (string, error) {
	return h.s.store.resolvePolicyForLocked(kind, sc, field, ref)
}

func (h backendsHost) ResolveNetworkPolicyLocked(sc core.Scope, ref string) (string, error) {
	return h.s.store.resolveNetworkPolicyLocked(sc, ref)
}

// resolvePolicyForLocked checks that ref names a security policy a user of
// the given kind ("backend service", "backend bucket", which GCP's message
// names) in sc may use in the given field: securityPolicy takes a
// CLOUD_ARMOR policy of the user's scope (global for a global backend, the
// same region for a regional one), edgeSecurityPolicy a global
// CLOUD_ARMOR_EDGE policy. It returns the policy's selfLink. st.mu must be
// held.
func (st *store) resolvePolicyForLocked(kind string, sc scope, field, ref string) (string, error) {
	want := "CLOUD_ARMOR"
	if field == "edgeSecurityPolicy" {
		want = "CLOUD_ARMOR_EDGE"
	}
	f := "resource." + field
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope.Region != sc.Region {
		where := "global"
		if sc.Region != "" {
			where = "in region '" + sc.Region + "'"
		}
		return "", core.ErrInvalidField(f, ref, "The security policy must be "+where+", like the "+kind+".")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrNotFound(r.scope.PolicyPath(r.name))
	}
	if policyType(p) != want {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type "+want+"; '"+p.Name+"' is of type "+policyType(p)+".")
	}
	return apiRoot + p.path(), nil
}

// resolveNetworkPolicyLocked checks the securityPolicy of a network edge
// security service in sc: a CLOUD_ARMOR_NETWORK policy of the same project
// and region, in a project on Cloud Armor Enterprise. Every refusal is a
// 400. It returns the policy's selfLink. st.mu must be held.
func (st *store) resolveNetworkPolicyLocked(sc scope, ref string) (string, error) {
	const f = "resource.securityPolicy"
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope != sc {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a regional security policy of project '"+
			sc.Project+"' in region '"+sc.Region+"', like the network edge security service.")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The resource '"+r.scope.PolicyPath(r.name)+"' was not found.")
	}
	if policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type CLOUD_ARMOR_NETWORK; '"+
			p.Name+"' is of type "+policyType(p)+".")
	}
	if tier := st.tierLocked(sc.Project); !enterprise(tier) {
		return "", core.ErrInvalidField(f, ref, "Network edge security policies need Cloud Armor Enterprise; project '"+
			sc.Project+"' is on "+tier+".")
	}
	return apiRoot + p.path(), nil
}

// BackendServices returns every backend service as GET would return it,
// keyed by its path ("projects/p/global/backendServices/n").
func (s *Server) BackendServices() map[string]map[string]any { return s.backends.Services() }

// BackendBuckets returns every backend bucket as GET would return it, keyed
// by its path ("projects/p/global/backendBuckets/n").
func (s *Server) BackendBuckets() map[string]map[string]any { return s.backends.Buckets() }

// NetworkEdgeSecurityServices returns every network edge security service
// as GET would return it, keyed by its path
// ("projects/p/regions/r/networkEdgeSecurityServices/n").
func (s *Server) NetworkEdgeSecurityServices() map[string]map[string]any {
	return s.backends.EdgeServices()
}
