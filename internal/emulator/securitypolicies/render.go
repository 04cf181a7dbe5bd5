package securitypolicies

import (
	"strconv"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Responses are built as maps rather than compute structs: the structs use
// omitempty, but GCP always sends "priority": 0, "preview": false and
// "description": "" on rules, and fields the v1 structs lack (ruleNumber,
// selfLinkWithId).

func renderRule(r rule) map[string]any {
	m := core.CloneMap(r.Body)
	if m == nil {
		m = map[string]any{}
	}
	m["kind"] = "compute#securityPolicyRule"
	m["priority"] = r.Priority
	m["ruleNumber"] = strconv.FormatInt(r.Number, 10)
	if _, ok := m["description"]; !ok {
		m["description"] = ""
	}
	if _, ok := m["preview"]; !ok {
		m["preview"] = false
	}
	return m
}

func renderPolicy(p *policy) map[string]any {
	m := core.CloneMap(p.Fields)
	if m == nil {
		m = map[string]any{}
	}
	id := strconv.FormatUint(p.ID, 10)
	m["kind"] = "compute#securityPolicy"
	m["id"] = id
	m["name"] = p.Name
	m["creationTimestamp"] = core.Timestamp(p.Created)
	m["selfLink"] = apiRoot + p.path()
	m["selfLinkWithId"] = apiRoot + p.Scope.PolicyPath(id)
	m["fingerprint"] = p.Fingerprint
	m["labelFingerprint"] = labelFingerprint(p.Labels)
	m["type"] = p.Type
	if len(p.Labels) > 0 {
		m["labels"] = p.Labels
	}
	if p.Scope.Region != "" {
		m["region"] = p.Scope.RegionURL()
	}
	rules := make([]any, len(p.Rules))
	for i, r := range p.Rules {
		rules[i] = renderRule(r)
	}
	m["rules"] = rules
	return m
}
