package networksecurity

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// mutation prepares an address group mutation: its operation runs for
// Host.OpLatency and may be failed by fault injection (Host.OpFailure),
// finishing with INTERNAL and changing nothing.
func (a *API) mutation(method string, t target, verb, requestID string) groupMutation {
	m := groupMutation{target: t.path(), opParent: t.parentPath(), verb: verb,
		latency: a.host.OpLatency(), requestID: requestID}
	if status, msg := a.host.OpFailure(method); status != 0 {
		m.fail = &core.RPCError{Code: status, Status: "INTERNAL", Message: msg}
	}
	return m
}

// finish answers a mutating address group call: the operation, not yet
// done (the recordings' first answer), or the error.
func (a *API) finish(w http.ResponseWriter, r *http.Request, method string, op *groupOp, err error) {
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	outcome := ""
	if op.Err != nil {
		outcome = " error=" + op.Err.Status
	}
	a.host.Mutated("%s %s operation=%s%s", method, op.Target, op.Name, outcome)
	core.WriteJSON(w, http.StatusOK, renderGroupOp(op, a.host.Now(), true, intEnums(r)))
}

// getOp answers GET {parent}/locations/{location}/operations/{op}: done
// with the group (or google.protobuf.Empty after a delete) as the response
// once Host.OpLatency has passed.
func (a *API) getOp(w http.ResponseWriter, r *http.Request, _ string) {
	name := targetOf(r).parentPath() + "/operations/" + r.PathValue("operation")
	op, err := a.operation(name)
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderGroupOp(op, a.host.Now(), false, intEnums(r)))
}

// Rendered returns every address group as GET would return it, keyed by
// its name ("projects/p/locations/global/addressGroups/g").
func (a *API) Rendered() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, g := range a.All() {
		out[g.path()] = renderGroup(g, false)
	}
	return out
}
