package emulator

import (
	"net/http"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/instances"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

// Every compute write of every API is one operation of the store: this
// file carries it out (mutateObject) and answers the call (answer, in
// server.go).

// A plan is what a change decided: the operation's target and the commit
// that makes the change, run only if the operation does not fail.
type plan struct {
	link   string        // targetLink
	id     uint64        // targetId
	policy string        // the policy path stats count the operation's polls under, if any
	fail   *core.OpError // the operation fails with this (a quota); nothing is committed
	commit func()
}

// mutateObject runs change under the store's lock: a repeated requestId
// returns the original operation, a busy object (m.keys) refuses the call,
// change validates and plans, and the commit runs unless the operation was
// failed by fault injection or the plan. A validateOnly call gets a DONE
// operation and changes nothing.
func (st *store) mutateObject(m mutation, change func() (plan, error)) (*operation, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op := st.byRequestID(m.requestID); op != nil && !m.validateOnly {
		return op, nil // a retried request gets the original operation
	}
	now := st.now()
	for _, k := range m.keys {
		if until, ok := st.busy[k]; ok && now.Before(until) {
			return nil, core.ErrNotReady(k)
		}
	}
	p, err := change()
	if err != nil {
		return nil, err
	}
	op := &operation{ID: st.gen.ID(), Name: st.gen.OpName(now), Scope: m.scope, Parent: m.parent,
		Type: m.opType, User: m.user, Inserted: now, Done: now.Add(m.latency), Err: m.fail,
		TargetLink: p.link, TargetID: p.id, Policy: p.policy}
	if m.parent != "" {
		op.Name = orgOpPrefix(m.parent) + op.Name
	}
	if m.validateOnly {
		// Done at once and pollable, but it neither holds the object busy
		// nor answers a later requestId.
		op.Done = now
		st.remember(op, "")
		c := *op
		return &c, nil
	}
	if op.Err == nil {
		op.Err = p.fail
	}
	if op.Err == nil && p.commit != nil {
		p.commit()
	}
	for _, k := range m.keys {
		st.busy[k] = op.Done
	}
	st.remember(op, m.requestID)
	c := *op
	return &c, nil
}

// describe fills in, before grants are checked, what a call on these
// objects is checked against (owner) and what a 403 names (resource); it
// also counts an organization policy's calls under its path in Stats.
func (s *Server) describe(r *http.Request, c *call) {
	switch {
	case strings.HasPrefix(c.method, "instances.") || strings.HasPrefix(c.method, "zoneOperations."):
		c.resource = instances.Resource(r)
	case strings.HasPrefix(c.method, "routers."):
		c.resource = core.RegionalResource(r, "routers", "router")
	case strings.HasPrefix(c.method, "addresses."):
		c.resource = core.RegionalResource(r, "addresses", "address")
	case strings.HasPrefix(c.method, "organizationSecurityPolicies."):
		id := securitypolicies.OrgPolicyID(r)
		parent := r.URL.Query().Get("parentId")
		if id != "" {
			c.resource = securitypolicies.OrgPolicyPath(id)
			if p, ok := s.policies.OrgPolicyParent(id); ok {
				parent = p
			}
			s.stats.policy(c.resource, c.counted)
		} else if strings.HasSuffix(c.method, ".listAssociations") {
			parent = r.URL.Query().Get("targetResource")
		}
		if parent != "" {
			c.owner = parent
		}
		if c.resource == "" && parent != "" {
			c.resource = parent
		}
	case strings.HasPrefix(c.method, "globalOrganizationOperations."):
		name := r.PathValue("orgOperation")
		c.owner = r.URL.Query().Get("parentId")
		if name != "" {
			c.resource = orgOpPath(name)
			if p := s.store.orgOpParent(name); p != "" {
				c.owner = p
			}
		} else {
			c.resource = c.owner
		}
	case r.PathValue("backendService") != "":
		c.resource = c.scope.ObjectPath("backendServices", r.PathValue("backendService"))
	case r.PathValue("backendBucket") != "":
		c.resource = c.scope.ObjectPath("backendBuckets", r.PathValue("backendBucket"))
	case r.PathValue("edgeService") != "":
		c.resource = c.scope.ObjectPath("networkEdgeSecurityServices", r.PathValue("edgeService"))
	}
}
