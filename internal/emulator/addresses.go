package emulator

import "github.com/armorplane/provider-cloudarmor/internal/emulator/addresses"

// The addresses API's response types, for fields=; its permissions are
// compute.addresses.<verb> by the usual verbs.
func init() { addMethods(nil, addresses.ResponseTypes) }

// mountAddresses serves the addresses API's routes through serve.
func (s *Server) mountAddresses() {
	s.addresses.Mount(s.mount)
}

// addressesHost is what the server gives the addresses API: the routers
// say which addresses their NATs use.
type addressesHost struct{ serverHost }

func (h addressesHost) Users() map[string][]string { return h.s.routers.AddressUsersLocked() }
