package emulator

import (
	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/routers"
)

// The routers API's methods beyond the verbs permissionOf knows, and the
// response types of all of them, for fields=.
func init() { addMethods(routers.Permissions, routers.ResponseTypes) }

// mountRouters serves the routers API's routes through serve, and its
// debug endpoints (no auth) beside the server's.
func (s *Server) mountRouters() {
	s.routers.Mount(s.mount)
	for _, d := range s.routers.Debug() {
		s.mux.HandleFunc(d.Pattern, d.Handle)
	}
}

// routersHost is what the server gives the routers API: the static
// addresses its NATs name are the addresses API's.
type routersHost struct{ serverHost }

func (h routersHost) Address(path string) (routers.StaticAddress, bool) {
	ip, typ, ok := h.s.addresses.LookupLocked(path)
	return routers.StaticAddress{IP: ip, Type: typ}, ok
}

// SeedRouter creates a router at once, without an operation, checked as
// routers.insert checks it; needs sets a NAT's needed addresses by name
// (default one). See routers.API.Seed.
func (s *Server) SeedRouter(project, region string, r *compute.Router, needs map[string]int) error {
	return s.routers.Seed(project, region, r, needs)
}

// SetNatNeeds sets how many VMs a NAT serves or addresses they need;
// an AUTO_ONLY NAT then holds that many. It returns the NAT's
// getRouterStatus entry. See routers.API.SetNeeds.
func (s *Server) SetNatNeeds(project, region, router, nat string, n routers.Needs) (map[string]any, error) {
	return s.routers.SetNeeds(routerPath(project, region, router), nat, n)
}

// AllocateNatIP makes an AUTO_ONLY NAT take one more address.
func (s *Server) AllocateNatIP(project, region, router, nat string) (map[string]any, error) {
	return s.routers.Allocate(routerPath(project, region, router), nat)
}

// ReleaseNatIP moves an AUTO_ONLY NAT's address ip (its newest when "")
// into draining.
func (s *Server) ReleaseNatIP(project, region, router, nat, ip string) (map[string]any, error) {
	return s.routers.Release(routerPath(project, region, router), nat, ip)
}

// FinishNatDrain ends the drain of a NAT's draining addresses.
func (s *Server) FinishNatDrain(project, region, router, nat string) (map[string]any, error) {
	return s.routers.FinishDrain(routerPath(project, region, router), nat)
}

func routerPath(project, region, router string) string {
	return core.Scope{Project: project, Region: region}.ObjectPath("routers", router)
}
