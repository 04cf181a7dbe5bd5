package emulator

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

func init() { addMethods(networksecurity.Permissions, networksecurity.ResponseTypes) }

// newerAPI reports whether a method belongs to networksecurity, whose errors
// have the newer format.
func newerAPI(p permission) bool { return strings.HasPrefix(p.name, "networksecurity.") }

// mountNetworkSecurity serves the address group API's routes through serve,
// choosing a route's method by the custom method its path carries.
func (s *Server) mountNetworkSecurity() {
	for _, rt := range s.groups.Routes() {
		perms := map[string]permission{}
		for custom, m := range rt.Methods {
			perms[custom] = permissionOf(m.Name)
		}
		s.mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			custom := networksecurity.CustomMethod(r)
			m, ok := rt.Methods[custom]
			if !ok {
				core.WriteRPC(w, &core.RPCError{Code: 404, Status: "NOT_FOUND",
					Message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)})
				return
			}
			s.serve(w, r, m.Name, perms[custom], func(w http.ResponseWriter, r *http.Request, c *call) {
				m.Handle(w, r, c.method)
			})
		})
	}
}

// AddressGroups returns every address group as GET would return it, keyed
// by its name ("projects/p/locations/global/addressGroups/g").
func (s *Server) AddressGroups() map[string]map[string]any { return s.groups.Rendered() }

// networkSecurityHost is what the server gives the address group API.
type networkSecurityHost struct{ serverHost }

func (h networkSecurityHost) OpFailure(method string) (int, string) {
	if f := h.s.opFailure(method); f != nil {
		return f.HTTPStatus, f.Message
	}
	return 0, ""
}

func (h networkSecurityHost) Mutated(format string, args ...any) {
	h.s.stats.mutation()
	h.s.logf(format, args...)
	h.s.saveState()
}

func (h networkSecurityHost) ReferencesLocked(parent, location, name string) []networksecurity.Reference {
	var out []networksecurity.Reference
	for _, r := range h.s.policies.GroupRulesLocked(parent, location, name, networksecurity.Path(parent, location, name)) {
		out = append(out, networksecurity.Reference{Policy: r.Policy, Priority: r.Priority})
	}
	return out
}
