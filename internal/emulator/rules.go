package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	compute "google.golang.org/api/compute/v1"
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
		return 0, errPayload(fmt.Sprintf("Invalid value at 'priority' (TYPE_INT32), %q", v))
	}
	return p, nil
}

func (s *Server) addRule(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.SecurityPolicyRule
	raw, err := s.decode(w, r, &in, "security_policy_rule")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := validateRule("resource", &in); err != nil {
		writeError(w, err)
		return
	}
	m := s.mutation(r, c, c.policy, "AddRule")
	op, err := s.store.mutate(m, func(cur *policy) (*policy, error) {
		if cur == nil {
			return nil, errNotFound(c.scope.policyPath(c.policy))
		}
		if cur.ruleIndex(in.Priority) >= 0 {
			return nil, errDuplicatePriority(in.Priority)
		}
		cur.addRule(in.Priority, ruleBody(raw)) // a missing priority is 0 (R2)
		return cur, nil
	})
	s.finish(w, c, m, op, err)
}

func (s *Server) getRule(w http.ResponseWriter, r *http.Request, c *call) {
	prio, err := priorityParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := s.store.get(c.scope, c.policy)
	if err != nil {
		writeError(w, err)
		return
	}
	i := p.ruleIndex(prio)
	if i < 0 {
		writeError(w, errNoRule(prio))
		return
	}
	writeJSON(w, http.StatusOK, renderRule(p.Rules[i]))
}

func (s *Server) patchRule(w http.ResponseWriter, r *http.Request, c *call) {
	prio, err := priorityParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var in compute.SecurityPolicyRule
	raw, err := s.decode(w, r, &in, "security_policy_rule")
	if err != nil {
		writeError(w, err)
		return
	}
	mask := splitMask(r.URL.Query().Get("updateMask"))
	m := s.mutation(r, c, c.policy, "PatchRule")
	op, err := s.store.mutate(m, func(cur *policy) (*policy, error) {
		if cur == nil {
			return nil, errNotFound(c.scope.policyPath(c.policy))
		}
		return cur, patchOneRule(cur, prio, raw, mask)
	})
	s.finish(w, c, m, op, err)
}

// patchOneRule applies patchRule. With an empty updateMask the body replaces
// the rule (R2: srcIpRanges ["*"] stays ["*"]). With a mask, the body is
// merged in and every masked path the body leaves empty is cleared (R6).
func patchOneRule(cur *policy, prio int64, raw map[string]any, mask [][]string) error {
	i := cur.ruleIndex(prio)
	if i < 0 {
		return errNoRule(prio)
	}
	body := ruleBody(raw)
	if len(mask) > 0 {
		merged := merge(cloneMap(cur.Rules[i].Body), body)
		for _, path := range mask {
			if !hasPath(body, path) {
				deletePath(merged, path)
			}
		}
		body = normalize(merged)
	}
	newPrio := prio
	if n, ok := raw["priority"].(json.Number); ok {
		newPrio, _ = n.Int64()
	}
	if err := validateStoredRule(newPrio, body); err != nil {
		return err
	}
	if prio == defaultPriority && newPrio != prio {
		return errInvalidField("priority", strconv.FormatInt(newPrio, 10), "The priority of the default rule cannot be changed.")
	}
	if newPrio != prio && cur.ruleIndex(newPrio) >= 0 {
		return errDuplicatePriority(newPrio)
	}
	cur.Rules[i].Priority, cur.Rules[i].Body = newPrio, body
	return nil
}

// validateStoredRule validates the rule that would result from a patch.
func validateStoredRule(prio int64, body map[string]any) error {
	withPrio := cloneMap(body)
	withPrio["priority"] = prio
	b, err := json.Marshal(withPrio)
	if err != nil {
		return errPayload("Invalid JSON payload received.")
	}
	var typed compute.SecurityPolicyRule
	if err := json.Unmarshal(b, &typed); err != nil {
		return typeError(err, "security_policy_rule")
	}
	return validateRule("resource", &typed)
}

func (s *Server) removeRule(w http.ResponseWriter, r *http.Request, c *call) {
	prio, err := priorityParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	m := s.mutation(r, c, c.policy, "RemoveRule")
	op, err := s.store.mutate(m, func(cur *policy) (*policy, error) {
		if cur == nil {
			return nil, errNotFound(c.scope.policyPath(c.policy))
		}
		if prio == defaultPriority {
			return nil, errInvalidField("priority", strconv.Itoa(defaultPriority), "The default rule cannot be removed.")
		}
		i := cur.ruleIndex(prio)
		if i < 0 {
			return nil, errNoRule(prio)
		}
		cur.Rules = append(cur.Rules[:i], cur.Rules[i+1:]...)
		return cur, nil
	})
	s.finish(w, c, m, op, err)
}
