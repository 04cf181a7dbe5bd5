package securitypolicy

import (
	"fmt"
	"strings"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
)

// TypeRuleConflict is a condition that is True while inline rules (or
// defaultRule) are ignored because SecurityPolicyRule objects claim their
// priorities. The claimant wins; the policy reports instead of fighting.
const TypeRuleConflict xpv2.ConditionType = "RuleConflict"

// Reasons of the RuleConflict condition.
const (
	ReasonPriorityClaimed xpv2.ConditionReason = "PriorityClaimed"
	ReasonNoConflict      xpv2.ConditionReason = "NoConflict"
)

// policyDiff is everything that separates GCP's policy from the spec.
type policyDiff struct {
	patch            string // top-level fields (securityPolicies.patch)
	labels           bool   // setLabels needed
	defaultRule      string // default rule (patchRule)
	defaultClaimedBy string // SecurityPolicyRule that owns the default rule instead of spec.defaultRule
	plan             securitypolicy.RulePlan
}

func diff(p v1beta1.SecurityPolicyParameters, sp *compute.SecurityPolicy, claims securitypolicy.Claims) policyDiff {
	var d policyDiff
	if ok, s := securitypolicy.PatchUpToDate(p, sp); !ok {
		d.patch = s
	}
	d.labels = !securitypolicy.LabelsUpToDate(p.Labels, sp)
	if by, ok := claims[v1beta1.DefaultRulePriority]; ok && p.DefaultRule != nil {
		d.defaultClaimedBy = by
	} else if ok, s := securitypolicy.DefaultRuleUpToDate(p.DefaultRule, sp); !ok {
		d.defaultRule = s
	}
	d.plan = securitypolicy.PlanRules(p.Rules, p.Rules != nil, sp, claims)
	return d
}

func (d policyDiff) upToDate() bool {
	return d.patch == "" && !d.labels && d.defaultRule == "" && d.plan.Empty()
}

// String is the diff the managed reconciler logs when the policy is not up
// to date.
func (d policyDiff) String() string {
	var parts []string
	if d.patch != "" {
		parts = append(parts, d.patch)
	}
	if d.labels {
		parts = append(parts, "labels differ")
	}
	if d.defaultRule != "" {
		parts = append(parts, d.defaultRule)
	}
	if s := d.plan.Describe(); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

// conflictCondition reports the inline rules this policy ignores. Messages
// are sorted by priority (PlanRules sorts conflicts), so the condition only
// changes when the conflicts do.
func conflictCondition(conflicts []securitypolicy.Conflict, defaultClaimedBy string) xpv2.Condition {
	var msgs []string
	if defaultClaimedBy != "" {
		msgs = append(msgs, fmt.Sprintf("defaultRule is ignored: SecurityPolicyRule %s claims priority %d", defaultClaimedBy, v1beta1.DefaultRulePriority))
	}
	for _, c := range conflicts {
		msgs = append(msgs, c.Message)
	}
	if len(msgs) == 0 {
		return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionFalse, Reason: ReasonNoConflict, LastTransitionTime: metav1.Now()}
	}
	return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionTrue, Reason: ReasonPriorityClaimed,
		Message: strings.Join(msgs, "; "), LastTransitionTime: metav1.Now()}
}
