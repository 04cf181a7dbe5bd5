package emulator

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/instances"
)

// The instances API's methods beyond the verbs permissionOf knows, and
// the response types of all of them, for fields=.
func init() { addMethods(instances.Permissions, instances.ResponseTypes) }

// mountInstances serves the instances API's routes through serve, at the
// root and under /compute/v1 like every compute route.
func (s *Server) mountInstances() {
	for _, rt := range s.instances.Routes() {
		h := rt.Handle
		s.route(rt.Verb, rt.Pattern, rt.Name, func(w http.ResponseWriter, r *http.Request, _ *call) { h(w, r) })
	}
}

// instancesHost is what the server gives the instances API.
type instancesHost struct{ serverHost }

func (h instancesHost) Mutated(format string, args ...any) {
	h.s.stats.mutation()
	h.s.logf(format, args...)
}

// SetUnreachableZones makes zones unreachable to instances.aggregatedList
// (none: every zone answers again); see instances.API.SetUnreachable.
func (s *Server) SetUnreachableZones(zones ...string) { s.instances.SetUnreachable(zones...) }
