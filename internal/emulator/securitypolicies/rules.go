package securitypolicies

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
	read func(r *http.Request, c Call) (*policy, error)
	// change runs f on a private copy of the policy under the store's lock
	// and answers the call: f returns the policy to store (changed in
	// place) or nil to delete it, or an error that fails the call.
	change func(r *http.Request, c Call, opType string, f changeFn)
	// inUse, under the store's lock, is why the policy cannot be deleted.
	inUse func(cur *policy) error
	// patchable, if set, refuses a PATCH body before it is applied and
	// drops from raw what the kind does not store; under the store's lock.
	patchable func(cur *policy, in *compute.SecurityPolicy, raw map[string]any) error
}

// projectPolicies reach the policy of the {policy} path value in the
// call's scope (securityPolicies, regionSecurityPolicies).
func (a *API) projectPolicies() policyKind {
	return policyKind{
		read:   func(_ *http.Request, c Call) (*policy, error) { return a.st.get(c.Scope(), c.Policy()) },
		change: func(_ *http.Request, c Call, opType string, f changeFn) { a.changePolicy(c, opType, f) },
		inUse:  a.policyInUseLocked,
	}
}

// changePolicy runs a mutation of the existing project policy the call
// names.
func (a *API) changePolicy(c Call, opType string, f changeFn) {
	a.mutatePolicy(c, opType, c.Policy(), func(cur *policy) (*policy, error) {
		if cur == nil {
			return nil, core.ErrNotFound(c.Scope().PolicyPath(c.Policy()))
		}
		return f(cur)
	})
}

// changeFn gets a private copy of the current policy (nil if absent) and
// returns the new one (nil to delete) or an error that fails the call.
type changeFn func(cur *policy) (*policy, error)

// mutatePolicy runs f on a private copy of the project policy name of the
// call's scope, as one compute operation that holds the policy busy like
// GCP: while it runs, other writes to the policy get resourceNotReady.
// Validation errors fail the call; a quota the change exceeds fails the
// operation instead.
func (a *API) mutatePolicy(c Call, opType, name string, f changeFn) {
	sc := c.Scope()
	key := sc.PolicyPath(name)
	maxPolicies, maxRules := c.Quota() // read before the store's lock is taken
	c.Mutate(Write{OpType: opType, Keys: []string{key}, What: key}, func() (Plan, error) {
		st := a.st
		cur := st.policies[key]
		arg := cur.clone()
		if arg != nil {
			arg.tier = st.tierLocked(sc.Project) // rules using address groups need Enterprise
		}
		next, err := f(arg)
		if err != nil {
			return Plan{}, err
		}
		p := Plan{Link: apiRoot + key, Policy: key, Commit: func() { st.commit(key, next) }}
		if t := pick(next, cur); t != nil {
			p.ID = t.ID
		}
		p.Fail = st.quotaError(sc, key, maxPolicies, maxRules, cur, next)
		return p, nil
	})
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

// quotaError checks the per-project quotas (0: unlimited) after the change.
func (st *store) quotaError(sc core.Scope, key string, maxPolicies, maxRules int, cur, next *policy) *core.OpError {
	if next == nil {
		return nil
	}
	policies, rules := 0, 0
	for _, p := range st.policies {
		if p.Scope.Project == sc.Project && p != st.policies[key] {
			policies++
			rules += len(p.Rules)
		}
	}
	if q := maxPolicies; q > 0 && cur == nil && policies+1 > q {
		return quotaExceeded("SECURITY_POLICIES", q)
	}
	if q := maxRules; q > 0 && rules+len(next.Rules) > q {
		return quotaExceeded("SECURITY_POLICY_RULES", q)
	}
	return nil
}

// quotaExceeded mirrors GCP's text, including its two spaces.
func quotaExceeded(metric string, limit int) *core.OpError {
	return &core.OpError{Code: "QUOTA_EXCEEDED", HTTPStatus: 403, HTTPMessage: "FORBIDDEN",
		Message: fmt.Sprintf("Quota '%s' exceeded.  Limit: %d.0 globally.", metric, limit)}
}

// decodeRule reads the rule addRule and patchRule take, and compiles its
// expression outside the store's lock.
func (a *API) decodeRule(w http.ResponseWriter, r *http.Request) (*compute.SecurityPolicyRule, map[string]any, error) {
	var in compute.SecurityPolicyRule
	raw, err := a.decode(w, r, &in, "security_policy_rule")
	if err != nil {
		return nil, nil, err
	}
	precheckExprs(&in)
	return &in, raw, nil
}

func (a *API) addRule(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		in, raw, err := a.decodeRule(w, r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		k.change(r, c, "AddRule", func(cur *policy) (*policy, error) {
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

func (a *API) getRule(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
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

func (a *API) patchRule(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		prio, err := priorityParam(r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		_, raw, err := a.decodeRule(w, r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		mask := core.SplitMask(r.URL.Query().Get("updateMask"))
		k.change(r, c, "PatchRule", func(cur *policy) (*policy, error) {
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

func (a *API) removeRule(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		prio, err := priorityParam(r)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		k.change(r, c, "RemoveRule", func(cur *policy) (*policy, error) {
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
func (a *API) deletePolicy(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		k.change(r, c, "delete", func(cur *policy) (*policy, error) {
			return nil, k.inUse(cur)
		})
	}
}
