package emulator

import (
	"net/http"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// serverHost is what the server gives every API it mounts: the store's
// lock, clock and ids, and the options they share. Each API's host embeds
// it and adds what only that API asks for.
type serverHost struct{ s *Server }

func (h serverHost) Lock()                    { h.s.store.mu.Lock() }
func (h serverHost) Unlock()                  { h.s.store.mu.Unlock() }
func (h serverHost) Now() time.Time           { return h.s.now() }
func (h serverHost) Gen() *core.Gen           { return h.s.store.gen }
func (h serverHost) OpLatency() time.Duration { return h.s.opts.OpLatency }
func (h serverHost) MaxBodyBytes() int64      { return h.s.opts.MaxBodyBytes }
func (h serverHost) User() string             { return h.s.opts.User }

// apiCall is a call of a mounted compute API as the pipeline passes it: its
// writes are operations of the store, answered like every compute write.
type apiCall struct {
	s *Server
	w http.ResponseWriter
	r *http.Request
	c *call
}

func (ac apiCall) Method() string    { return ac.c.method }
func (ac apiCall) Scope() core.Scope { return ac.c.scope }

// write carries out m as a compute operation of the store (see
// mutateObject) and answers the call. what names the target in the log
// line.
func (ac apiCall) write(m mutation, what string, change func() (plan, error)) {
	op, err := ac.s.store.mutateObject(m, change)
	ac.s.answer(ac.w, ac.c, m.validateOnly, what, op, err)
}

// mount serves a route of a compute API (routers, addresses, backends)
// through serve: its calls are computeCalls.
func (s *Server) mount(verb, pattern, name string, h core.Handler) {
	s.route(verb, pattern, name, func(w http.ResponseWriter, r *http.Request, c *call) {
		h(w, r, computeCall{apiCall{s: s, w: w, r: r, c: c}})
	})
}

// computeCall is a call of a compute API (core.Call): its writes are
// operations of the store on one object each.
type computeCall struct{ apiCall }

func (cc computeCall) Mutate(opType, path string, change func() (core.Plan, error)) {
	cc.write(cc.s.mutation(cc.r, cc.c, opType, path), path, func() (plan, error) {
		p, err := change()
		return plan{link: p.Link, id: p.ID, commit: p.Commit}, err
	})
}
