package emulator

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// An addressGroup is one networksecurity v1 AddressGroup. Items keep the
// form and the order they were sent in: GCP echoes "1.2.0.0" and
// "208.80.154.224/32" as sent, appends what addItems adds and keeps the
// order of what removeItems leaves (KCC addressgroup-basic recording).
type addressGroup struct {
	Parent      string            `json:"parent"` // projects/P or organizations/O
	Location    string            `json:"location"`
	Name        string            `json:"name"` // the addressGroupId
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Type        string            `json:"type"`
	Capacity    int64             `json:"capacity"`
	Items       []string          `json:"items,omitempty"`
	Purpose     []string          `json:"purpose,omitempty"`
	Created     time.Time         `json:"created"`
	Updated     time.Time         `json:"updated"`
}

func (g *addressGroup) path() string {
	return groupPath(g.Parent, g.Location, g.Name)
}

func groupPath(parent, location, name string) string {
	return parent + "/locations/" + location + "/addressGroups/" + name
}

func (g *addressGroup) clone() *addressGroup {
	if g == nil {
		return nil
	}
	c := *g
	c.Labels = make(map[string]string, len(g.Labels))
	for k, v := range g.Labels {
		c.Labels[k] = v
	}
	c.Items = slices.Clone(g.Items)
	c.Purpose = slices.Clone(g.Purpose)
	return &c
}

// A groupOp is a google.longrunning Operation of networksecurity.
type groupOp struct {
	Name    string         // {parent}/locations/{location}/operations/operation-…
	Verb    string         // create, update, delete
	Target  string         // the address group's path
	Created time.Time      // createTime
	Done    time.Time      // when it reports done
	Err     *core.RPCError // the error it finishes with, if any
	Result  *addressGroup  // the group as the operation left it; nil after a delete
}

// groupState is the address group part of the store, under store.mu.
type groupState struct {
	byPath   map[string]*addressGroup
	ops      map[string]*groupOp
	opOrder  []string
	requests map[string]string // requestId -> operation name
}

func newGroupState() groupState {
	return groupState{byPath: map[string]*addressGroup{}, ops: map[string]*groupOp{},
		requests: map[string]string{}}
}

// A groupMutation describes one mutating address group call.
type groupMutation struct {
	target    string // the group's path
	opParent  string // {parent}/locations/{location}
	verb      string
	latency   time.Duration
	fail      *core.RPCError // injected: the operation finishes with this error
	requestID string
}

// mutateGroup applies change to a private copy of the group (nil if absent)
// and records the operation. change runs under store.mu, so it may read
// other state with the *Locked helpers. Address group mutations are not
// serialised like compute's: the KCC addressgroup-basic recording sends
// removeItems while addItems' operation is still running, and GCP accepts
// it. A repeated requestId returns the original operation.
func (st *store) mutateGroup(m groupMutation, change func(cur *addressGroup) (*addressGroup, error)) (*groupOp, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	gs := &st.groups
	if m.requestID != "" {
		if op, ok := gs.ops[gs.requests[m.requestID]]; ok {
			c := *op
			return &c, nil
		}
	}
	now := st.now()
	next, err := change(gs.byPath[m.target].clone())
	if err != nil {
		return nil, err
	}
	op := &groupOp{Name: m.opParent + "/operations/" + st.gen.OpName(now), Verb: m.verb, Target: m.target,
		Created: now, Done: now.Add(m.latency), Err: m.fail}
	if op.Err == nil {
		if next == nil {
			delete(gs.byPath, m.target)
		} else {
			if next.Created.IsZero() { // a create
				next.Created = now
			}
			next.Updated = now
			gs.byPath[m.target] = next
			op.Result = next.clone()
		}
	}
	gs.ops[op.Name] = op
	gs.opOrder = append(gs.opOrder, op.Name)
	if m.requestID != "" {
		gs.requests[m.requestID] = op.Name
	}
	if len(gs.opOrder) > core.MaxOps {
		delete(gs.ops, gs.opOrder[0])
		gs.opOrder = gs.opOrder[1:]
	}
	c := *op
	return &c, nil
}

// group returns a copy of the group at path.
func (st *store) group(path string) (*addressGroup, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	g, ok := st.groups.byPath[path]
	if !ok {
		return nil, core.ErrRPCNotFound(path)
	}
	return g.clone(), nil
}

// groupsIn returns copies of the groups of {parent}/locations/{location},
// sorted by name.
func (st *store) groupsIn(parent, location string) []*addressGroup {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*addressGroup
	for _, g := range st.groups.byPath {
		if g.Parent == parent && g.Location == location {
			out = append(out, g.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// groupOperation returns a copy of an operation by its full name.
func (st *store) groupOperation(name string) (*groupOp, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	op, ok := st.groups.ops[name]
	if !ok {
		return nil, core.ErrRPCNotFound(name)
	}
	c := *op
	return &c, nil
}

// allGroups returns copies of every group, sorted by path (persistence,
// debug state).
func (st *store) allGroups() []*addressGroup {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*addressGroup, 0, len(st.groups.byPath))
	for _, g := range st.groups.byPath {
		out = append(out, g.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
}

// allProjects returns copies of the known projects (persistence).
func (st *store) allProjects() map[string]*projectInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make(map[string]*projectInfo, len(st.projects))
	for k, p := range st.projects {
		c := *p
		out[k] = &c
	}
	return out
}

// loadGroups adds persisted groups and projects after load.
func (st *store) loadGroups(groups []*addressGroup, projects map[string]*projectInfo) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, g := range groups {
		if g != nil && g.Name != "" && !strings.Contains(g.Name, "/") {
			st.groups.byPath[g.path()] = g
		}
	}
	for k, p := range projects {
		if p != nil {
			st.projects[k] = p
		}
	}
}
