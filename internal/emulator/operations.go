package emulator

import (
	"net/http"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

// An opKey is the store key of the operation a call names: a project's
// (projectOp) or an organization's (orgOp), whose get and delete are the
// same.
type opKey func(r *http.Request, c *call) string

func projectOp(r *http.Request, c *call) string { return c.scope.OpPath(r.PathValue("operation")) }
func orgOp(r *http.Request, _ *call) string     { return orgOpPath(r.PathValue("orgOperation")) }

func orgOpPath(name string) string { return "locations/global/operations/" + name }

// orgOpPrefix starts the name of an organization operation: gcloud reads
// the organization back from "org-<ORGANIZATION_ID>-operation-…". A
// folder's operations are "folder-<FOLDER_ID>-operation-…" (the emulator
// does not know a folder's organization).
func orgOpPrefix(parent string) string {
	kind, id, _ := strings.Cut(parent, "/")
	if kind == "folders" {
		return "folder-" + id + "-"
	}
	return "org-" + id + "-"
}

// orgOpParent is the parent of the organization operation name, which
// grants are checked against.
func (st *store) orgOpParent(name string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op, ok := st.ops[orgOpPath(name)]; ok {
		return op.Parent
	}
	return ""
}

// getOp answers operations.get; an organization operation's parentId is
// "Not used. Parent is derived from resource_id."
func (s *Server) getOp(key opKey) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		op, err := s.polledOp(r, c, key)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		core.WriteJSON(w, http.StatusOK, renderOp(op, s.now(), false))
	}
}

// polledOp reads the operation a get or wait names and counts the poll
// against the policy it targets.
func (s *Server) polledOp(r *http.Request, c *call, key opKey) (*operation, error) {
	op, err := s.store.op(key(r, c))
	if err != nil {
		return nil, err
	}
	if op.Policy != "" { // a project's operation (setCloudArmorTier) targets no policy
		s.stats.policy(op.Policy, c.method)
	}
	return op, nil
}

// waitOp blocks until the operation is DONE, WaitTimeout passes (GCP: about
// two minutes) or the client goes away, then returns it as it stands.
func (s *Server) waitOp(w http.ResponseWriter, r *http.Request, c *call) {
	op, err := s.polledOp(r, c, projectOp)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if d := op.Done.Sub(s.now()); d > 0 {
		t := time.NewTimer(min(d, s.opts.WaitTimeout))
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	core.WriteJSON(w, http.StatusOK, renderOp(op, s.now(), false))
}

func (s *Server) deleteOp(key opKey) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		if err := s.store.deleteOp(key(r, c)); err != nil {
			core.WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) listOps(w http.ResponseWriter, r *http.Request, c *call) {
	now := s.now()
	var items []map[string]any
	for _, op := range s.store.listOps(c.scope, false) {
		items = append(items, renderOp(op, now, false))
	}
	core.WriteList(w, r, items, "compute#operationList", c.scope.Base()+"/operations", true)
}

func (s *Server) aggregatedOps(w http.ResponseWriter, r *http.Request, c *call) {
	now := s.now()
	byScope := map[string][]any{}
	for _, op := range s.store.listOps(c.scope, true) {
		k := op.Scope.AggregatedKey()
		byScope[k] = append(byScope[k], renderOp(op, now, false))
	}
	items := map[string]any{}
	for k, ops := range byScope {
		items[k] = map[string]any{"operations": ops}
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{
		"kind":     "compute#operationAggregatedList",
		"id":       "projects/" + c.scope.Project + "/aggregated/operations",
		"items":    items,
		"selfLink": apiRoot + "projects/" + c.scope.Project + "/aggregated/operations",
	})
}

// listOrgOps lists the operations of parentId, in creation order.
func (s *Server) listOrgOps(w http.ResponseWriter, r *http.Request, _ *call) {
	parent := r.URL.Query().Get("parentId")
	if err := securitypolicies.CheckParent("parentId", parent); err != nil {
		core.WriteError(w, err)
		return
	}
	now := s.now()
	var items []map[string]any
	s.store.mu.Lock()
	for _, key := range s.store.opOrder {
		if op := s.store.ops[key]; op.Parent == parent {
			items = append(items, renderOp(op, now, false))
		}
	}
	s.store.mu.Unlock()
	core.WriteList(w, r, items, "compute#operationList", "locations/global/operations", true)
}
