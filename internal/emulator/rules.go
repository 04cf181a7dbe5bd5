package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// priorityParam reads ?priority=; GCP treats a missing one as 0 (the Go
// client only sends it when .Priority(n) was called).
func priorityParam(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("priority")
	if v == "" {
		return 0, nil
	}
	p, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, core.ErrPayload(fmt.Sprintf("Invalid value at 'priority' (TYPE_INT32), %q", v))
	}
	return p, nil
}

// A policyKind is how the methods that project and organization security
// policies share (the rule methods and delete) read and change the policy
// a call names, so that each of those methods is written once.
type policyKind struct {
	// read returns a copy of the policy.
	read func(r *http.Request, c *call) (*policy, error)
	// change runs f on a private copy of the policy under the store's lock
	// and answers the call: f returns the policy to store (changed in
	// place) or nil to delete it, or an error that fails the call.
	change func(w http.ResponseWriter, r *http.Request, c *call, opType string, f changeFn)
	// inUse, under the store's lock, is why the policy cannot be deleted.
	inUse func(cur *policy) error
	// patchable, if set, refuses a PATCH body before it is applied and
	// drops from raw what the kind does not store; under the store's lock.
	patchable func(cur *policy, in *compute.SecurityPolicy, raw map[string]any) error
}

// projectPolicies reach the policy of the {policy} path value in the
// call's scope (securityPolicies, regionSecurityPolicies).
func (s *Server) projectPolicies() policyKind {
	return policyKind{
		read:   func(_ *http.Request, c *call) (*policy, error) { return s.store.get(c.scope, c.policy) },
		change: s.changePolicy,
		inUse:  s.store.policyInUseLocked,
	}
}

// changePolicy runs a mutation of an existing project policy.
func (s *Server) changePolicy(w http.ResponseWriter, r *http.Request, c *call, opType string, f changeFn) {
	m := s.mutation(r, c, c.policy, opType)
	op, err := s.store.mutate(m, func(cur *policy) (*policy, error) {
		if cur == nil {
			return nil, core.ErrNotFound(c.scope.PolicyPath(c.policy))
		}
		return f(cur)
	})
	s.finish(w, c, m, op, err)
}

// decodeRule reads the rule addRule and patchRule take, and compiles its
// expression outside the store's lock.
func (s *Server) decodeRule(w http.ResponseWriter, r *http.Request) (*compute.SecurityPolicyRule, map[string]any, error) {
	var in compute.SecurityPolicyRule
	raw, err := s.decode(w, r, &in, "security_policy_rule")
	if err != nil {
		return nil, nil, err
	}
	precheckExprs(&in)
	return &in, raw, nil
}

func (s *Server) addRule(k policyKind) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		in, raw, err := s.decodeRule(w, r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		k.change(w, r, c, "AddRule", func(cur *policy) (*policy, error) {
			if err := validateRule(cur, in, "resource"); err != nil { // the policy's scope and type matter
				return nil, err
			}
			if cur.ruleIndex(in.Priority) >= 0 {
				return nil, errDuplicatePriority(in.Priority)
			}
			cur.addRule(in.Priority, ruleBody(raw)) // a missing priority is 0 (R2)
			return cur, nil
		})
	}
}

func (s *Server) getRule(k policyKind) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		prio, err := priorityParam(r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		p, err := k.read(r, c)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		i := p.ruleIndex(prio)
		if i < 0 {
			core.WriteError(w, errNoRule(prio))
			return
		}
		core.WriteJSON(w, http.StatusOK, renderRule(p.Rules[i]))
	}
}

func (s *Server) patchRule(k policyKind) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		prio, err := priorityParam(r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		_, raw, err := s.decodeRule(w, r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		mask := core.SplitMask(r.URL.Query().Get("updateMask"))
		k.change(w, r, c, "PatchRule", func(cur *policy) (*policy, error) {
			return cur, patchOneRule(cur, prio, raw, mask)
		})
	}
}

// patchOneRule applies patchRule (see applyPatch): the body is merged into
// the rule and the updateMask paths the body leaves out are cleared. Without
// a mask a field the body omits is kept, as GCP does for gcloud's
// "rules update --description x", which sends only priority and
// description. A full body replaces every field it carries (R2: srcIpRanges
// ["*"] stays ["*"], lists are replaced, not appended to); a mask clears what
// the body leaves empty (R6).
func patchOneRule(cur *policy, prio int64, raw map[string]any, mask [][]string) error {
	i := cur.ruleIndex(prio)
	if i < 0 {
		return errNoRule(prio)
	}
	body := ruleBody(applyPatch(core.CloneMap(cur.Rules[i].Body), raw, mask))
	newPrio := prio
	if n, ok := raw["priority"].(json.Number); ok {
		newPrio, _ = n.Int64()
	}
	if err := validateStoredRule(cur, newPrio, body); err != nil {
		return err
	}
	if prio == defaultPriority && newPrio != prio {
		return core.ErrInvalidField("priority", strconv.FormatInt(newPrio, 10), "The priority of the default rule cannot be changed.")
	}
	if newPrio != prio && cur.ruleIndex(newPrio) >= 0 {
		return errDuplicatePriority(newPrio)
	}
	cur.Rules[i].Priority, cur.Rules[i].Body = newPrio, body
	return nil
}

// validateStoredRule validates the rule that would result from a patch of
// a rule in cur.
func validateStoredRule(cur *policy, prio int64, body map[string]any) error {
	withPrio := core.CloneMap(body)
	withPrio["priority"] = prio
	b, err := json.Marshal(withPrio)
	if err != nil {
		return core.ErrPayload("Invalid JSON payload received.")
	}
	var typed compute.SecurityPolicyRule
	if err := json.Unmarshal(b, &typed); err != nil {
		return core.TypeError(err, "security_policy_rule")
	}
	return validateRule(cur, &typed, "resource")
}

func (s *Server) removeRule(k policyKind) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		prio, err := priorityParam(r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		k.change(w, r, c, "RemoveRule", func(cur *policy) (*policy, error) {
			if prio == defaultPriority {
				return nil, core.ErrInvalidField("priority", strconv.Itoa(defaultPriority), "The default rule cannot be removed.")
			}
			i := cur.ruleIndex(prio)
			if i < 0 {
				return nil, errNoRule(prio)
			}
			cur.Rules = append(cur.Rules[:i], cur.Rules[i+1:]...)
			return cur, nil
		})
	}
}

// deletePolicy refuses a policy that is in use (inUse).
func (s *Server) deletePolicy(k policyKind) handler {
	return func(w http.ResponseWriter, r *http.Request, c *call) {
		k.change(w, r, c, "delete", func(cur *policy) (*policy, error) {
			return nil, k.inUse(cur)
		})
	}
}
