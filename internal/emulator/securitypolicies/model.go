package securitypolicies

import (
	"sort"
	"strconv"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// apiRoot is the host GCP puts in every selfLink, whatever host was called.
const apiRoot = core.ComputeRoot

// defaultPriority is the priority of the rule every policy must have.
const defaultPriority = 2147483647

// A scope is where a compute object lives: see core.Scope.
type scope = core.Scope

// A rule is kept exactly as the client sent it (after GCP's empty-value
// normalisation), so that responses echo what was sent, e.g. headerAction {}.
type rule struct {
	Priority int64          `json:"priority"`
	Number   int64          `json:"number"`
	Body     map[string]any `json:"body"` // without priority, kind and ruleNumber
}

// A policy is one security policy. Fields holds the settable top-level fields
// other than those with their own member, as sent.
type policy struct {
	Scope       scope             `json:"scope"`
	Name        string            `json:"name"`
	ID          uint64            `json:"id"`
	Created     time.Time         `json:"created"`
	Fingerprint string            `json:"fingerprint"`
	Labels      map[string]string `json:"labels,omitempty"`
	Type        string            `json:"type"`
	Fields      map[string]any    `json:"fields,omitempty"`
	Rules       []rule            `json:"rules"`
	NextRule    int64             `json:"nextRule"` // ruleNumber of the next new rule

	tier string // the project's Cloud Armor tier, set for validation only
}

func (p *policy) path() string { return p.Scope.PolicyPath(p.Name) }

func (p *policy) clone() *policy {
	if p == nil {
		return nil
	}
	c := *p
	c.Labels = make(map[string]string, len(p.Labels))
	for k, v := range p.Labels {
		c.Labels[k] = v
	}
	c.Fields = core.CloneMap(p.Fields)
	c.Rules = make([]rule, len(p.Rules))
	for i, r := range p.Rules {
		c.Rules[i] = rule{Priority: r.Priority, Number: r.Number, Body: core.CloneMap(r.Body)}
	}
	return &c
}

// ruleIndex returns the index of the rule at priority, or -1.
func (p *policy) ruleIndex(priority int64) int {
	for i, r := range p.Rules {
		if r.Priority == priority {
			return i
		}
	}
	return -1
}

// addRule appends a rule with the next ruleNumber; numbers are never reused.
func (p *policy) addRule(priority int64, body map[string]any) {
	p.NextRule++
	p.Rules = append(p.Rules, rule{Priority: priority, Number: p.NextRule, Body: body})
}

// sortRules orders rules the way real GCP lists them: by priority compared as
// decimal strings (R1, R2, R4 show 0, 111111111, 2147483647, 555).
func (p *policy) sortRules() {
	sort.SliceStable(p.Rules, func(i, j int) bool {
		return strconv.FormatInt(p.Rules[i].Priority, 10) < strconv.FormatInt(p.Rules[j].Priority, 10)
	})
}
