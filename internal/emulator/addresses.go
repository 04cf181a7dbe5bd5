package emulator

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/addresses"
)

// The addresses API's response types, for fields=; its permissions are
// compute.addresses.<verb> by the usual verbs.
func init() { addMethods(nil, addresses.ResponseTypes) }

// mountAddresses serves the addresses API's routes through serve.
func (s *Server) mountAddresses() {
	for _, rt := range s.addresses.Routes() {
		h := rt.Handle
		s.route(rt.Verb, rt.Pattern, rt.Name, func(w http.ResponseWriter, r *http.Request, c *call) {
			h(w, r, addressCall{apiCall{s: s, w: w, r: r, c: c}})
		})
	}
}

// addressCall is a call of the addresses API: its writes are regional
// operations of the store.
type addressCall struct{ apiCall }

func (ac addressCall) Mutate(opType, path string, change func() (addresses.Plan, error)) {
	ac.write(ac.s.mutation(ac.r, ac.c, opType, path), path, func() (plan, error) {
		p, err := change()
		return plan{link: p.Link, id: p.ID, commit: p.Commit}, err
	})
}

// addressesHost is what the server gives the addresses API: the routers
// say which addresses their NATs use.
type addressesHost struct{ serverHost }

func (h addressesHost) Users() map[string][]string { return h.s.routers.AddressUsersLocked() }
