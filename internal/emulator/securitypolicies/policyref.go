package securitypolicies

import (
	"regexp"
	"strconv"
)

// policyID is the numeric-id alternative of the {securityPolicy} path
// parameter: the discovery document's pattern for it is
// "[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19}", on every
// per-policy method (get, patch, delete, addRule, getRule, patchRule,
// removeRule, and setLabels' {resource}). A name always starts with a
// letter, so the two never collide.
var policyID = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)

// PolicyName returns the name of the policy ref names in sc: ref itself when
// it is a name, or the name of the policy whose id it is. An id no policy of
// sc has is returned unchanged, so that the call answers 404 for it.
func (a *API) PolicyName(sc scope, ref string) string {
	if !policyID.MatchString(ref) {
		return ref
	}
	id, err := strconv.ParseUint(ref, 10, 64)
	if err != nil {
		return ref
	}
	if name, ok := a.st.nameByID(sc, id); ok {
		return name
	}
	return ref
}

// nameByID finds a policy of sc by its numeric id.
func (st *store) nameByID(sc scope, id uint64) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range st.policies {
		if p.Scope == sc && p.ID == id {
			return p.Name, true
		}
	}
	return "", false
}
