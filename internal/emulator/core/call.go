package core

import "net/http"

// A Call is the call a handler of a compute API (routers, addresses,
// backends) serves, as the server's pipeline passes it. Security policies
// have a Call of their own: their writes hold several objects busy and
// their plans can fail an operation.
type Call interface {
	Method() string // e.g. "routers.insert"
	Scope() Scope
	// Mutate carries out a write on the object at path as a compute
	// operation of opType and answers the call: under the host's lock,
	// change validates and plans (its error fails the call), and the
	// plan's commit runs unless the call is a dry run or its operation
	// fails.
	Mutate(opType, path string, change func() (Plan, error))
}

// A Plan is what a write decided: its operation's target and the commit
// that makes the change.
type Plan struct {
	Link   string // targetLink
	ID     uint64 // targetId
	Commit func()
}

// A Handler serves one method of a compute API.
type Handler func(w http.ResponseWriter, r *http.Request, c Call)
