package securitypolicies

import (
	"slices"
	"sort"
	"strings"
)

// A RuleRef is a rule of a stored policy.
type RuleRef struct {
	Policy   string // the policy's selfLink
	Priority int64
}

// GroupRulesLocked finds the rules of the stored policies whose expressions
// name the address group name of parent at location, whose full path is
// path. A project group is named by
// evaluateAddressGroup('<name>', …) in the policies of its project whose
// scope is the group's location (global groups: global policies; a regional
// group: the policies of that region). An organization group is named by
// evaluateOrganizationAddressGroup in the policies of every project at its
// location, since the emulator does not know which projects an organization
// holds. A name may also be the group's full path. The host's lock must be
// held.
func (a *API) GroupRulesLocked(parent, location, name, path string) []RuleRef {
	st := a.st
	org := strings.HasPrefix(parent, "organizations/")
	keys := make([]string, 0, len(st.policies))
	for k := range st.policies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []RuleRef
	for _, k := range keys {
		p := st.policies[k]
		if !org && "projects/"+p.Scope.Project != parent || !locatedAt(p.Scope, location) {
			continue
		}
		for _, r := range p.Rules {
			expr := ruleExpression(r.Body)
			if expr == "" {
				continue
			}
			c := checkExpr(expr)
			names := c.groups
			if org {
				names = c.orgGroups
			}
			if slices.Contains(names, name) || slices.Contains(names, path) {
				out = append(out, RuleRef{Policy: apiRoot + p.path(), Priority: r.Priority})
			}
		}
	}
	return out
}

func locatedAt(sc scope, location string) bool {
	if location == "global" {
		return sc.Region == ""
	}
	return sc.Region == location
}

// ruleExpression is a stored rule's match.expr.expression, or "".
func ruleExpression(body map[string]any) string {
	match, _ := body["match"].(map[string]any)
	expr, _ := match["expr"].(map[string]any)
	s, _ := expr["expression"].(string)
	return s
}
