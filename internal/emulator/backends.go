package emulator

import (
	"net/http"

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
			h(w, r, backendCall{apiCall{s: s, w: w, r: r, c: c}})
		})
	})
}

// backendCall is a call of the backend API.
type backendCall struct{ apiCall }

func (bc backendCall) Mutate(opType, path string, change func() (backends.Plan, error)) {
	bc.write(bc.s.mutation(bc.r, bc.c, opType, path), path, func() (plan, error) {
		p, err := change()
		return plan{link: p.Link, id: p.ID, commit: p.Commit}, err
	})
}

// backendsHost is what the server gives the backend API.
type backendsHost struct{ serverHost }

func (h backendsHost) ResolvePolicyLocked(kind string, sc core.Scope, field, ref string) (string, error) {
	return h.s.policies.ResolvePolicyLocked(kind, sc, field, ref)
}

func (h backendsHost) ResolveNetworkPolicyLocked(sc core.Scope, ref string) (string, error) {
	return h.s.policies.ResolveNetworkPolicyLocked(sc, ref)
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
