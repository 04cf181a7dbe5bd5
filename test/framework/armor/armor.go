// Package armor builds this provider's managed resources for tests and
// summarises Cloud Armor policies for readable comparisons.
package armor

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// Namespace is where NewPolicy and NewRule put their objects.
const Namespace = "default"

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// AllowRule allows the source ranges at priority.
func AllowRule(priority int64, ranges ...v1beta1.IPRange) v1beta1.PolicyRule {
	return v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: "allow",
		Match: &v1beta1.RuleMatcher{VersionedExpr: Ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: ranges}}}}
}

// NewPolicy is a SecurityPolicy in Namespace whose spec.forProvider mod fills.
func NewPolicy(name string, mod func(*v1beta1.SecurityPolicyParameters)) *v1beta1.SecurityPolicy {
	sp := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
	mod(&sp.Spec.ForProvider)
	return sp
}

// NewRule is a SecurityPolicyRule in Namespace adding r to the policy.
func NewRule(name, policy string, r v1beta1.PolicyRule) *v1beta1.SecurityPolicyRule {
	return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: v1beta1.SecurityPolicyRuleSpec{ForProvider: v1beta1.SecurityPolicyRuleParameters{
			SecurityPolicyRef: &xpv2.NamespacedReference{Name: policy},
			Priority:          r.Priority, RuleParameters: r.RuleParameters}}}
}

// RulesOf summarises a policy's rules as "priority:action:ranges", sorted by
// priority, for readable comparisons.
func RulesOf(sp *compute.SecurityPolicy) []string {
	rs := slices.Clone(sp.Rules)
	slices.SortFunc(rs, func(a, b *compute.SecurityPolicyRule) int { return int(a.Priority - b.Priority) })
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		var ranges []string
		if r.Match != nil && r.Match.Config != nil {
			ranges = r.Match.Config.SrcIpRanges
		}
		out = append(out, fmt.Sprintf("%d:%s:%s", r.Priority, r.Action, strings.Join(ranges, ",")))
	}
	return out
}
