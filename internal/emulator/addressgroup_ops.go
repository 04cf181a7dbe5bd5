package emulator

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// groupMutation prepares an address group mutation: its operation runs for
// Options.OpLatency and may be failed by fault injection (opErrorRate),
// finishing with INTERNAL and changing nothing.
func (s *Server) groupMutation(c *call, t groupTarget, verb, requestID string) groupMutation {
	m := groupMutation{target: t.path(), opParent: t.parentPath(), verb: verb,
		latency: s.opts.OpLatency, requestID: requestID}
	if f := s.opFailure(c.method); f != nil {
		m.fail = &core.RPCError{Code: f.HTTPStatus, Status: "INTERNAL", Message: f.Message}
	}
	return m
}

// finishGroup answers a mutating address group call: the operation, not yet
// done (the recordings' first answer), or the error.
func (s *Server) finishGroup(w http.ResponseWriter, r *http.Request, c *call, op *groupOp, err error) {
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	s.stats.mutation()
	outcome := ""
	if op.Err != nil {
		outcome = " error=" + op.Err.Status
	}
	s.logf("%s %s operation=%s%s", c.method, op.Target, op.Name, outcome)
	s.saveState()
	core.WriteJSON(w, http.StatusOK, renderGroupOp(op, s.now(), true, intEnums(r)))
}

// getGroupOp answers GET {parent}/locations/{location}/operations/{op}: done
// with the group (or google.protobuf.Empty after a delete) as the response
// once Options.OpLatency has passed.
func (s *Server) getGroupOp(w http.ResponseWriter, r *http.Request, _ *call) {
	name := targetOf(r).parentPath() + "/operations/" + r.PathValue("operation")
	op, err := s.store.groupOperation(name)
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderGroupOp(op, s.now(), false, intEnums(r)))
}

// AddressGroups returns every address group as GET would return it, keyed
// by its name ("projects/p/locations/global/addressGroups/g").
func (s *Server) AddressGroups() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, g := range s.store.allGroups() {
		out[g.path()] = renderGroup(g, false)
	}
	return out
}

// Tiers returns the Cloud Armor tier of every project whose tier was set
// or read.
func (s *Server) Tiers() map[string]string {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	out := make(map[string]string, len(s.store.projects))
	for name := range s.store.projects {
		out[name] = s.store.tierLocked(name)
	}
	return out
}
