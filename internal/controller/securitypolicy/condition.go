package securitypolicy

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

// TypeRuleConflict is a condition that is True while inline rules (or
// defaultRule) are ignored because SecurityPolicyRule objects claim their
// priorities, or while rule objects from namespaces the policy does not admit
// (spec.allowedRules) try to claim one. A claimant the policy admits wins;
// the policy reports instead of fighting.
const TypeRuleConflict xpv2.ConditionType = "RuleConflict"

// Reasons of the RuleConflict condition.
const (
	ReasonPriorityClaimed xpv2.ConditionReason = "PriorityClaimed"
	ReasonClaimRefused    xpv2.ConditionReason = "ClaimRefused"
	ReasonNoConflict      xpv2.ConditionReason = "NoConflict"
)

// conflictCondition reports the inline rules this policy ignores and the
// rule objects it refuses. Messages are sorted by priority (PlanRules and
// Claims sort them), so the condition only changes when they do.
func conflictCondition(conflicts []gcppolicy.Conflict, defaultClaimedBy string, refused []ownership.Refusal) xpv2.Condition {
	var msgs []string
	if defaultClaimedBy != "" {
		msgs = append(msgs, fmt.Sprintf("defaultRule is ignored: SecurityPolicyRule %s claims priority %d", defaultClaimedBy, v1beta1.DefaultRulePriority))
	}
	for _, c := range conflicts {
		msgs = append(msgs, c.Message)
	}
	reason := ReasonPriorityClaimed
	if len(msgs) == 0 && len(refused) > 0 {
		reason = ReasonClaimRefused
	}
	for _, r := range refused {
		msgs = append(msgs, r.Message)
	}
	if len(msgs) == 0 {
		return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionFalse, Reason: ReasonNoConflict, LastTransitionTime: metav1.Now()}
	}
	return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionTrue, Reason: reason,
		Message: strings.Join(msgs, "; "), LastTransitionTime: metav1.Now()}
}

// claimedInline is the number of inline rules, defaultRule included, that d
// leaves out because a SecurityPolicyRule claims their priority.
func claimedInline(d gcppolicy.PolicyPlan) int {
	n := 0
	for _, c := range d.Rules.Conflicts {
		if c.Claimant != "" {
			n++
		}
	}
	if d.DefaultClaimedBy != "" {
		n++
	}
	return n
}
