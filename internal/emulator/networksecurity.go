package emulator

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

// otherPermissions are the permissions of the methods beyond security
// policies and their operations (see permissionOf): the project's and the
// mounted APIs' (addMethods).
var otherPermissions = map[string]permission{
	"globalOrganizationOperations.get":    {"compute.globalOrganizationOperations.get", false},
	"globalOrganizationOperations.list":   {"compute.globalOrganizationOperations.list", false},
	"globalOrganizationOperations.delete": {"compute.globalOrganizationOperations.delete", true},
}

// otherResponseTypes are the response types of those methods, for fields=.
var otherResponseTypes = map[string]reflect.Type{
	"globalOrganizationOperations.get":  reflect.TypeOf(compute.Operation{}),
	"globalOrganizationOperations.list": reflect.TypeOf(compute.OperationList{}),
}

// addMethods adds a mounted API's permissions and response types to
// otherPermissions and otherResponseTypes.
func addMethods(perms map[string]core.Permission, types map[string]reflect.Type) {
	for name, p := range perms {
		otherPermissions[name] = permission{name: p.Name, write: p.Write}
	}
	for name, t := range types {
		otherResponseTypes[name] = t
	}
}

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
type networkSecurityHost struct{ s *Server }

func (h networkSecurityHost) Lock()                    { h.s.store.mu.Lock() }
func (h networkSecurityHost) Unlock()                  { h.s.store.mu.Unlock() }
func (h networkSecurityHost) Now() time.Time           { return h.s.now() }
func (h networkSecurityHost) Gen() *core.Gen           { return h.s.store.gen }
func (h networkSecurityHost) OpLatency() time.Duration { return h.s.opts.OpLatency }
func (h networkSecurityHost) MaxBodyBytes() int64      { return h.s.opts.MaxBodyBytes }

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
