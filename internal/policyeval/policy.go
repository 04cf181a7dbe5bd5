package policyeval

import (
	"fmt"
	"sort"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// DefaultPriority is the priority of a policy's default rule.
const DefaultPriority = v1beta1.DefaultRulePriority

// Where a rule comes from.
const (
	SourceInline        = "inline"
	SourceDefaultRule   = "defaultRule"
	SourceAssumed       = "assumed"
	sourceRuleObjectFmt = "SecurityPolicyRule %s"
)

// A Rule is one rule of a policy.
type Rule struct {
	Priority int64
	// Source says where the rule comes from: "inline" (spec.forProvider.rules),
	// "defaultRule", "SecurityPolicyRule <namespace>/<name>", or "assumed"
	// for the default rule GCP creates when no manifest sets it.
	Source string
	v1beta1.RuleParameters
}

// A RuleObject is a SecurityPolicyRule aimed at the policy.
type RuleObject struct {
	// Name is namespace/name of the object, for reports.
	Name     string
	Priority int64
	v1beta1.RuleParameters
}

// A Policy is what Evaluate reads: its rules in ascending priority, the
// default rule last, and the settings that shape request attributes.
type Policy struct {
	Name  string
	Rules []Rule
	// UserIPHeaders are advancedOptionsConfig.userIpRequestHeaders: the
	// headers origin.user_ip is read from.
	UserIPHeaders []string
	// Ignored lists inline rules and the defaultRule that rule objects
	// override, as the provider reports them in a PriorityClaimed condition.
	Ignored []string
}

// AssumedDefaultRule is the default rule GCP gives a new policy: allow
// everything. It stands in when no manifest sets the default rule.
func AssumedDefaultRule() Rule {
	return Rule{Priority: DefaultPriority, Source: SourceAssumed, RuleParameters: v1beta1.RuleParameters{Action: v1beta1.ActionAllow}}
}

// Merge builds the rules of a policy as the provider writes them to GCP:
// the inline rules (spec.forProvider.rules) and defaultRule, with
// SecurityPolicyRule objects for the same GCP policy winning over an inline
// rule or the defaultRule at the same priority (the SecurityPolicy
// controller leaves claimed priorities to the rule objects, see
// gcppolicy.PlanRules). Without any default rule the one GCP creates (allow)
// is assumed.
func Merge(name string, p v1beta1.SecurityPolicyParameters, objects []RuleObject) Policy {
	out := Policy{Name: name}
	if p.AdvancedOptionsConfig != nil {
		out.UserIPHeaders = p.AdvancedOptionsConfig.UserIpRequestHeaders
	}
	byPriority := map[int64]Rule{}
	claimed := map[int64]string{}
	for _, o := range objects {
		claimed[o.Priority] = o.Name
		byPriority[o.Priority] = Rule{Priority: o.Priority, Source: fmt.Sprintf(sourceRuleObjectFmt, o.Name), RuleParameters: o.RuleParameters}
	}
	for _, r := range p.Rules {
		if by, ok := claimed[r.Priority]; ok {
			out.Ignored = append(out.Ignored, fmt.Sprintf("inline rule %d is ignored: SecurityPolicyRule %s claims priority %d", r.Priority, by, r.Priority))
			continue
		}
		byPriority[r.Priority] = Rule{Priority: r.Priority, Source: SourceInline, RuleParameters: r.RuleParameters}
	}
	if p.DefaultRule != nil {
		if by, ok := claimed[DefaultPriority]; ok {
			out.Ignored = append(out.Ignored, fmt.Sprintf("defaultRule is ignored: SecurityPolicyRule %s claims priority %d", by, DefaultPriority))
		} else {
			byPriority[DefaultPriority] = Rule{Priority: DefaultPriority, Source: SourceDefaultRule, RuleParameters: *p.DefaultRule}
		}
	}
	if _, ok := byPriority[DefaultPriority]; !ok {
		byPriority[DefaultPriority] = AssumedDefaultRule()
	}
	for _, r := range byPriority {
		out.Rules = append(out.Rules, r)
	}
	sort.Slice(out.Rules, func(i, j int) bool { return out.Rules[i].Priority < out.Rules[j].Priority })
	return out
}
