package networksecurity

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// An AddressGroup is one networksecurity v1 AddressGroup. Items keep the
// form and the order they were sent in: GCP echoes "1.2.0.0" and
// "208.80.154.224/32" as sent, appends what addItems adds and keeps the
// order of what removeItems leaves (KCC addressgroup-basic recording).
type AddressGroup struct {
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

func (g *AddressGroup) path() string {
	return Path(g.Parent, g.Location, g.Name)
}

func Path(parent, location, name string) string {
	return parent + "/locations/" + location + "/addressGroups/" + name
}

func (g *AddressGroup) clone() *AddressGroup {
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
	Result  *AddressGroup  // the group as the operation left it; nil after a delete
}

// State is the API's part of the server's store, under the host's lock.
type State struct {
	byPath   map[string]*AddressGroup
	ops      map[string]*groupOp
	opOrder  []string
	requests map[string]string // requestId -> operation name
}

// NewState returns an empty State.
func NewState() State {
	return State{byPath: map[string]*AddressGroup{}, ops: map[string]*groupOp{},
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

// mutate applies change to a private copy of the group (nil if absent)
// and records the operation. change runs under the host's lock, so it may
// read other state through the host (ReferencesLocked). Address group
// mutations are not serialised like compute's: the KCC addressgroup-basic
// recording sends removeItems while addItems' operation is still running,
// and GCP accepts it. A repeated requestId returns the original operation.
func (a *API) mutate(m groupMutation, change func(cur *AddressGroup) (*AddressGroup, error)) (*groupOp, error) {
	a.host.Lock()
	defer a.host.Unlock()
	gs := a.state
	if m.requestID != "" {
		if op, ok := gs.ops[gs.requests[m.requestID]]; ok {
			c := *op
			return &c, nil
		}
	}
	now := a.host.Now()
	next, err := change(gs.byPath[m.target].clone())
	if err != nil {
		return nil, err
	}
	op := &groupOp{Name: m.opParent + "/operations/" + a.host.Gen().OpName(now), Verb: m.verb, Target: m.target,
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
func (a *API) group(path string) (*AddressGroup, error) {
	a.host.Lock()
	defer a.host.Unlock()
	g, ok := a.state.byPath[path]
	if !ok {
		return nil, core.ErrRPCNotFound(path)
	}
	return g.clone(), nil
}

// groupsIn returns copies of the groups of {parent}/locations/{location},
// sorted by name.
func (a *API) groupsIn(parent, location string) []*AddressGroup {
	a.host.Lock()
	defer a.host.Unlock()
	var out []*AddressGroup
	for _, g := range a.state.byPath {
		if g.Parent == parent && g.Location == location {
			out = append(out, g.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// groupOperation returns a copy of an operation by its full name.
func (a *API) operation(name string) (*groupOp, error) {
	a.host.Lock()
	defer a.host.Unlock()
	op, ok := a.state.ops[name]
	if !ok {
		return nil, core.ErrRPCNotFound(name)
	}
	c := *op
	return &c, nil
}

// All returns copies of every group, sorted by path (persistence, debug
// state).
func (a *API) All() []*AddressGroup {
	a.host.Lock()
	defer a.host.Unlock()
	return a.AllLocked()
}

// AllLocked is All with the host's lock held: the data plane reads the
// groups in the same hold as the policy that names them.
func (a *API) AllLocked() []*AddressGroup {
	out := make([]*AddressGroup, 0, len(a.state.byPath))
	for _, g := range a.state.byPath {
		out = append(out, g.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
}

// Load adds persisted groups.
func (a *API) Load(groups []*AddressGroup) {
	a.host.Lock()
	defer a.host.Unlock()
	for _, g := range groups {
		if g != nil && g.Name != "" && !strings.Contains(g.Name, "/") {
			a.state.byPath[g.path()] = g
		}
	}
}
