package emulator

import (
	"strconv"
	"time"

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

// renderOp shows the operation as of now; running forces RUNNING, which is
// what the mutating call itself always answers.
func renderOp(op *operation, now time.Time, running bool) map[string]any {
	m := map[string]any{
		"kind":          "compute#operation",
		"id":            strconv.FormatUint(op.ID, 10),
		"name":          op.Name,
		"operationType": op.Type,
		"selfLink":      apiRoot + op.path(),
		"targetLink":    op.TargetLink,
		"targetId":      strconv.FormatUint(op.TargetID, 10),
		"user":          op.User,
		"insertTime":    core.Timestamp(op.Inserted),
		"startTime":     core.Timestamp(op.Inserted),
		"status":        "RUNNING",
		"progress":      0,
	}
	if op.Scope.Region != "" {
		m["region"] = op.Scope.RegionURL()
	}
	if running || !op.done(now) {
		return m
	}
	m["status"], m["progress"], m["endTime"] = "DONE", 100, core.Timestamp(op.Done)
	if e := op.Err; e != nil {
		m["error"] = map[string]any{"errors": []any{map[string]any{"code": e.Code, "message": e.Message}}}
		m["httpErrorStatusCode"] = e.HTTPStatus
		m["httpErrorMessage"] = e.HTTPMessage
	}
	return m
}
