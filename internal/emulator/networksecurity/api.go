// Package networksecurity serves the address groups of networksecurity v1
// (projects' and organizations'), in that API's own error and operation
// format. The server in package emulator mounts it (Routes) and gives it
// what every API shares (Host); it imports neither the server nor compute.
package networksecurity

import (
	"net/http"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Host is what the server that mounts the API gives it.
type Host interface {
	// The store holds State: a group's delete must see the security
	// policy rules that use it.
	core.Store
	// OpLatency is how long an operation runs.
	OpLatency() time.Duration
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// OpFailure is the HTTP status and message fault injection fails an
	// operation of method with; status 0 if it does not.
	OpFailure(method string) (status int, message string)
	// Mutated counts, logs (format and args, as the server's Logf takes them)
	// and persists an accepted mutation.
	Mutated(format string, args ...any)
	// ReferencesLocked lists the security policy rules that use the group
	// {parent}/locations/{location}/addressGroups/{name}; the lock is held.
	ReferencesLocked(parent, location, name string) []Reference
}

// A Reference is a security policy rule that uses an address group, as
// listReferences reports it.
type Reference struct {
	Policy   string // the policy's selfLink
	Priority int64
}

// An API serves the address groups in state.
type API struct {
	host  Host
	state *State
}

// New returns the API over state, which the host's lock guards.
func New(host Host, state *State) *API {
	return &API{host: host, state: state}
}

// A Handler serves one method; method is its name (e.g.
// "addressGroups.create"), as Stats count it.
type Handler func(w http.ResponseWriter, r *http.Request, method string)
