package emulator

import (
	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The backend API's methods beyond the verbs permissionOf knows, and the
// response types of its reads, for fields=.
func init() { addMethods(backends.Permissions, backends.ResponseTypes) }

// mountBackends serves the routes of backend services, backend buckets and
// network edge security services through serve.
func (s *Server) mountBackends() {
	s.backends.Mount(s.mount)
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
