package emulator

import (
	"sync"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

// store holds all state under one mutex. It knows nothing about HTTP: its
// errors are *core.Error values ready to be written by core.WriteError.
type store struct {
	mu       sync.Mutex
	gen      *core.Gen
	now      func() time.Time
	ops      map[string]*operation // by operation path
	opOrder  []string
	busy     map[string]time.Time // object path -> end of its running operation
	requests map[string]string    // requestId -> operation path

	// The APIs' state that is under mu: the security policies' is kept by
	// Server.policies.
	groups   networksecurity.State // address groups and their operations, served by Server.groups
	backends backends.State        // backend and edge security services, served by Server.backends
}

func newStore(g *core.Gen, now func() time.Time) *store {
	st := &store{gen: g, now: now}
	st.reset()
	return st
}

func (st *store) reset() {
	st.ops = map[string]*operation{}
	st.opOrder = nil
	st.busy = map[string]time.Time{}
	st.requests = map[string]string{}
	st.groups = networksecurity.NewState()
	st.backends = backends.NewState()
}

// A mutation describes how one mutating call is carried out: it yields one
// compute operation, and while that operation runs every object in keys is
// busy (resourceNotReady).
type mutation struct {
	scope        scope
	opType       string   // operationType, e.g. "AddRule"
	keys         []string // the objects the operation holds; keys[0] is its target
	parent       string   // organizations/N or folders/N: a global organization operation
	latency      time.Duration
	fail         *opError // injected: the operation finishes with this error
	user         string
	requestID    string
	validateOnly bool
}

func (st *store) remember(op *operation, requestID string) {
	key := op.path()
	st.ops[key] = op
	st.opOrder = append(st.opOrder, key)
	if requestID != "" {
		st.requests[requestID] = key
	}
	if len(st.opOrder) > core.MaxOps {
		delete(st.ops, st.opOrder[0])
		st.opOrder = st.opOrder[1:]
	}
}

func (st *store) byRequestID(id string) *operation {
	if id == "" {
		return nil
	}
	if op, ok := st.ops[st.requests[id]]; ok {
		c := *op
		return &c
	}
	return nil
}

// op returns a copy of the operation at key (operation.path).
func (st *store) op(key string) (*operation, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	op, ok := st.ops[key]
	if !ok {
		return nil, core.ErrNotFound(key)
	}
	c := *op
	return &c, nil
}

// listOps returns copies of a project's operations in creation order; with
// allScopes every scope, else only sc.
func (st *store) listOps(sc scope, allScopes bool) []*operation {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*operation
	for _, key := range st.opOrder {
		op := st.ops[key]
		if op.Scope.Project == sc.Project && (allScopes || op.Scope == sc) {
			c := *op
			out = append(out, &c)
		}
	}
	return out
}

func (st *store) deleteOp(key string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.ops[key]; !ok {
		return core.ErrNotFound(key)
	}
	delete(st.ops, key)
	for i, k := range st.opOrder {
		if k == key {
			st.opOrder = append(st.opOrder[:i:i], st.opOrder[i+1:]...)
			break
		}
	}
	return nil
}
