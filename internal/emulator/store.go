package emulator

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

// store holds all state under one mutex. It knows nothing about HTTP: its
// errors are *core.Error values ready to be written by core.WriteError.
type store struct {
	mu       sync.Mutex
	gen      *core.Gen
	now      func() time.Time
	policies map[string]*policy    // by policy path
	ops      map[string]*operation // by operation path
	opOrder  []string
	busy     map[string]time.Time // policy path -> end of its running operation
	requests map[string]string    // requestId -> operation path

	projects    map[string]*projectInfo // by project name: id and Cloud Armor tier
	defaultTier string                  // the tier of a project never set (Options.DefaultTier)
	groups      networksecurity.State   // address groups and their operations, served by Server.groups
	more        moreState               // organization policies, backend and edge security services
}

func newStore(g *core.Gen, now func() time.Time) *store {
	st := &store{gen: g, now: now}
	st.reset()
	return st
}

func (st *store) reset() {
	st.policies = map[string]*policy{}
	st.ops = map[string]*operation{}
	st.opOrder = nil
	st.busy = map[string]time.Time{}
	st.requests = map[string]string{}
	st.projects = map[string]*projectInfo{}
	st.groups = networksecurity.NewState()
	st.more = newMoreState()
}

// mutation describes how one mutating call should be carried out.
type mutation struct {
	scope        scope
	name         string // policy name
	opType       string // operationType, e.g. "AddRule"
	latency      time.Duration
	fail         *opError // injected: the operation finishes with this error
	quota        Quota
	user         string
	requestID    string
	validateOnly bool
}

// changeFn gets a private copy of the current policy (nil if absent) and
// returns the new one (nil to delete) or an error that fails the call.
type changeFn func(cur *policy) (*policy, error)

// mutate serialises mutations per policy like GCP: while an operation on the
// policy runs, other mutations get resourceNotReady. Validation errors fail
// the call; quota and injected errors fail the operation instead.
func (st *store) mutate(m mutation, change changeFn) (*operation, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op := st.byRequestID(m.requestID); op != nil && !m.validateOnly {
		return op, nil // a retried request gets the original operation
	}
	key, now := m.scope.PolicyPath(m.name), st.now()
	if until, ok := st.busy[key]; ok && now.Before(until) {
		return nil, core.ErrNotReady(key)
	}
	cur := st.policies[key]
	arg := cur.clone()
	if arg != nil {
		arg.tier = st.tierLocked(m.scope.Project) // rules using address groups need Enterprise
	}
	next, err := change(arg)
	if err != nil {
		return nil, err
	}
	op := st.newOp(m, pick(next, cur), now)
	if m.validateOnly {
		// Done at once and pollable, but it neither holds the policy busy
		// nor answers a later requestId.
		op.Done = now
		st.remember(op, "")
		c := *op
		return &c, nil
	}
	if op.Err == nil {
		op.Err = st.quotaError(m, cur, next)
	}
	if op.Err == nil {
		st.commit(key, next)
	}
	st.busy[key] = op.Done
	st.remember(op, m.requestID)
	c := *op
	return &c, nil
}

func pick(a, b *policy) *policy {
	if a != nil {
		return a
	}
	return b
}

// commit stores next (or deletes) and gives it a new fingerprint, because
// GCP changes the fingerprint on every mutation.
func (st *store) commit(key string, next *policy) {
	if next == nil {
		delete(st.policies, key)
		return
	}
	next.Fingerprint = st.gen.Fingerprint()
	next.sortRules()
	st.policies[key] = next
}

func (st *store) newOp(m mutation, target *policy, now time.Time) *operation {
	op := &operation{ID: st.gen.ID(), Name: st.gen.OpName(now), Scope: m.scope, Type: m.opType,
		User: m.user, Inserted: now, Done: now.Add(m.latency), Err: m.fail,
		Policy: m.scope.PolicyPath(m.name)}
	op.TargetLink = apiRoot + op.Policy
	if target != nil {
		op.TargetID = target.ID
	}
	return op
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

// quotaError checks the per-project quotas after the change.
func (st *store) quotaError(m mutation, cur, next *policy) *opError {
	if next == nil {
		return nil
	}
	policies, rules := 0, 0
	for _, p := range st.policies {
		if p.Scope.Project == m.scope.Project && p != st.policies[m.scope.PolicyPath(m.name)] {
			policies++
			rules += len(p.Rules)
		}
	}
	if q := m.quota.Policies; q > 0 && cur == nil && policies+1 > q {
		return quotaExceeded("SECURITY_POLICIES", q)
	}
	if q := m.quota.Rules; q > 0 && rules+len(next.Rules) > q {
		return quotaExceeded("SECURITY_POLICY_RULES", q)
	}
	return nil
}

// quotaExceeded mirrors GCP's text, including its two spaces.
func quotaExceeded(metric string, limit int) *opError {
	return &opError{Code: "QUOTA_EXCEEDED", HTTPStatus: 403, HTTPMessage: "FORBIDDEN",
		Message: fmt.Sprintf("Quota '%s' exceeded.  Limit: %d.0 globally.", metric, limit)}
}

// get returns a copy of a policy.
func (st *store) get(sc scope, name string) (*policy, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p, ok := st.policies[sc.PolicyPath(name)]
	if !ok {
		return nil, core.ErrNotFound(sc.PolicyPath(name))
	}
	return p.clone(), nil
}

// list returns copies of the policies of a project, sorted by name. With
// allScopes it returns every scope of the project, else only sc.
func (st *store) list(sc scope, allScopes bool) []*policy {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*policy
	for _, p := range st.policies {
		if p.Scope.Project == sc.Project && (allScopes || p.Scope == sc) {
			out = append(out, p.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
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

// all returns copies of every policy, sorted by path.
func (st *store) all() []*policy {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*policy, 0, len(st.policies))
	for _, p := range st.policies {
		out = append(out, p.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
}

// load replaces all policies (used by persistence).
func (st *store) load(ps []*policy) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reset()
	for _, p := range ps {
		if p != nil && !strings.Contains(p.Name, "/") {
			st.policies[p.path()] = p
		}
	}
}
