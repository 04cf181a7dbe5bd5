package securitypolicies

import (
	"net/http"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// policyOutputKeys are fields the server owns or that have their own member
// in policy; they are never stored from a request body (GCP accepts them in
// PATCH bodies copied from a GET, R1/R3).
var policyOutputKeys = core.Set("kind", "id", "creationTimestamp", "selfLink", "selfLinkWithId",
	"fingerprint", "labelFingerprint", "name", "region", "rules", "type", "labels")

// settable returns the normalised top-level fields of a policy body that are
// stored as sent.
func settable(raw map[string]any) map[string]any {
	return core.Normalize(settableRaw(raw))
}

// settableRaw is settable before normalisation, for merging: a PATCH that
// sends [] or null clears the field.
func settableRaw(raw map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range raw {
		if !policyOutputKeys[k] {
			out[k] = core.CloneValue(v)
		}
	}
	return out
}

// ruleBodies returns the stored form of the rules in a body, in body order.
func ruleBodies(raw map[string]any) []map[string]any {
	list, _ := raw["rules"].([]any)
	out := make([]map[string]any, len(list))
	for i, e := range list {
		m, _ := e.(map[string]any)
		out[i] = ruleBody(m)
	}
	return out
}

// ruleBody strips what the server owns from a rule as sent.
func ruleBody(m map[string]any) map[string]any {
	b := core.CloneMap(m)
	if b == nil {
		b = map[string]any{}
	}
	delete(b, "priority")
	delete(b, "kind")
	delete(b, "ruleNumber")
	return core.Normalize(b)
}

// defaultRule is what GCP adds when a policy is inserted without rules: an
// allow-all rule at the lowest priority ([DOC]; description from gcloud).
func defaultRule() map[string]any {
	return map[string]any{
		"action":      "allow",
		"description": "Default rule, higher priority overrides it",
		"match": map[string]any{
			"versionedExpr": "SRC_IPS_V1",
			"config":        map[string]any{"srcIpRanges": []any{"*"}},
		},
	}
}

func (a *API) insertPolicy(w http.ResponseWriter, r *http.Request, c Call) {
	var in compute.SecurityPolicy
	raw, err := a.decode(w, r, &in, "security_policy")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	p, err := a.newPolicy(c.Scope(), &in, raw)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	path := c.Scope().PolicyPath(p.Name)
	c.CountPolicy(path)
	a.mutatePolicy(c, "insert", p.Name, func(cur *policy) (*policy, error) {
		if cur != nil {
			return nil, core.ErrAlreadyExists(path)
		}
		return p, nil
	})
}

// newPolicy validates an insert body and builds the policy it describes.
func (a *API) newPolicy(sc scope, in *compute.SecurityPolicy, raw map[string]any) (*policy, error) {
	if err := core.CheckNew(sc, in.Name, in.Region); err != nil {
		return nil, err
	}
	if in.Type == "" {
		in.Type = "CLOUD_ARMOR"
	}
	if err := validateType(in.Type); err != nil {
		return nil, err
	}
	if err := validatePolicy(sc, a.st.tier(sc.Project), in); err != nil {
		return nil, err
	}
	if err := core.ValidateLabels(in.Labels); err != nil {
		return nil, err
	}
	p := &policy{Scope: sc, Name: in.Name, ID: a.st.gen.ID(), Created: a.host.Now(), Type: in.Type,
		Labels: in.Labels, Fields: settable(raw)}
	for i, body := range ruleBodies(raw) {
		p.addRule(in.Rules[i].Priority, body) // numbered in body order, like R4
	}
	if len(p.Rules) == 0 {
		p.addRule(defaultPriority, defaultRule())
	}
	return p, nil
}

func (a *API) getPolicy(w http.ResponseWriter, r *http.Request, c Call) {
	p, err := a.st.get(c.Scope(), c.Policy())
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderPolicy(p))
}

// patchPolicy serves PATCH of a project or an organization policy; the
// kind's patchable refuses what only it forbids first.
func (a *API) patchPolicy(k policyKind) Handler {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		var in compute.SecurityPolicy
		raw, err := a.decode(w, r, &in, "security_policy")
		if err != nil {
			core.WriteError(w, err)
			return
		}
		precheckExprs(in.Rules...)
		_, replaceRules := raw["rules"]
		mask := core.SplitMask(r.URL.Query().Get("updateMask"))
		k.change(r, c, "patch", func(cur *policy) (*policy, error) {
			if k.patchable != nil {
				if err := k.patchable(cur, &in, raw); err != nil {
					return nil, err
				}
			}
			if err := patchFields(cur, &in, raw, mask); err != nil {
				return nil, err
			}
			if err := validateStoredFields(cur); err != nil { // the fields as merged
				return nil, err
			}
			if replaceRules {
				return cur, replaceRuleSet(cur, in.Rules, raw)
			}
			return cur, nil
		})
	}
}

// patchFields applies the non-rule part of a PATCH like patchRule (see
// applyPatch): updateMask paths are cleared, then the body is merged in, so
// nested objects such as adaptiveProtectionConfig keep the sub-fields the
// body leaves out. Labels are left to setLabels ([DOC]).
func patchFields(cur *policy, in *compute.SecurityPolicy, raw map[string]any, mask [][]string) error {
	if in.Fingerprint != "" && in.Fingerprint != cur.Fingerprint {
		return core.ErrFingerprint()
	}
	if in.Name != "" && in.Name != cur.Name {
		return core.ErrInvalidField("resource.name", in.Name, "The name of a security policy cannot be changed.")
	}
	if in.Type != "" && in.Type != cur.Type {
		return core.ErrInvalidField("resource.type", in.Type, "The type of a security policy can only be set at creation time.")
	}
	if err := core.CheckRegion(cur.Scope, in.Region); err != nil {
		return err
	}
	var clear [][]string
	for _, path := range mask {
		if !policyOutputKeys[path[0]] {
			clear = append(clear, path)
		}
	}
	cur.Fields = applyPatch(cur.Fields, settableRaw(raw), clear)
	return nil
}

// replaceRuleSet makes the policy's rules exactly those of a PATCH body, as
// real GCP does (R1, R3). Rules at a priority that already existed keep their
// ruleNumber; new ones get the next numbers (chosen: not recorded).
func replaceRuleSet(cur *policy, rules []*compute.SecurityPolicyRule, raw map[string]any) error {
	if len(rules) == 0 {
		return core.ErrInvalidField("resource.rules", "",
			"Every security policy must have a default rule at priority 2147483647 with match condition *.")
	}
	if err := validateRuleSet(cur, rules); err != nil {
		return err
	}
	old := cur.Rules
	cur.Rules = nil
	for i, body := range ruleBodies(raw) {
		number := int64(0)
		for _, o := range old {
			if o.Priority == rules[i].Priority {
				number = o.Number
			}
		}
		if number == 0 {
			cur.addRule(rules[i].Priority, body)
			continue
		}
		cur.Rules = append(cur.Rules, rule{Priority: rules[i].Priority, Number: number, Body: body})
	}
	return nil
}

func (a *API) setLabels(w http.ResponseWriter, r *http.Request, c Call) {
	var in compute.GlobalSetLabelsRequest
	what := "global_set_labels_request"
	if c.Scope().Region != "" {
		what = "region_set_labels_request"
	}
	if _, err := a.decode(w, r, &in, what); err != nil {
		core.WriteError(w, err)
		return
	}
	a.changePolicy(c, "setLabels", func(cur *policy) (*policy, error) {
		if in.LabelFingerprint != labelFingerprint(cur.Labels) {
			return nil, errLabelFingerprint()
		}
		if err := core.ValidateLabels(in.Labels); err != nil {
			return nil, err
		}
		cur.Labels = in.Labels
		return cur, nil
	})
}
