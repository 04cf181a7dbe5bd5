package ownership

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// Conflict reasons: the reason label of cloudarmor_ownership_conflicts_total.
const (
	// ConflictOlderOwner: an older object that may write names the same GCP
	// policy, or the same priority of it.
	ConflictOlderOwner = "OlderOwner"
	// ConflictOwnerLabel: the GCP policy carries an owner label naming
	// another object, of this cluster or another.
	ConflictOwnerLabel = "OwnerLabel"
	// ConflictPriorityClaimed: an inline rule (or defaultRule) of the
	// policy is ignored because a SecurityPolicyRule claims its priority.
	ConflictPriorityClaimed = "PriorityClaimed"
	// ConflictPolicyRules: an OrganizationSecurityPolicyRule is refused
	// because the OrganizationSecurityPolicy of its GCP policy sets
	// spec.forProvider.rules, and so owns every non-default rule.
	ConflictPolicyRules = "PolicyRules"
)

// The counters are process-wide, like controller-runtime's own, because the
// decisions they count are made by several kinds' controllers. Labels
// are a kind and a reason from fixed sets: names and namespaces would make
// the series grow with the cluster, and the objects' conditions name them.
var (
	conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cloudarmor_ownership_conflicts_total",
		Help: "Reconciles in which an object of kind made no change to what it names, or left inline rules out, because another owns it, by reason " +
			"(OlderOwner, OwnerLabel, PriorityClaimed, PolicyRules). A standing conflict adds about one per poll interval.",
	}, []string{"kind", "reason"})
	claimsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cloudarmor_claims_refused_total",
		Help: "SecurityPolicyRule claims refused because the owning SecurityPolicy's spec.allowedRules does not admit the rule's namespace, " +
			"as decided when reconciling an object of kind: the refused rule (SecurityPolicyRule) or the policy reporting it (SecurityPolicy).",
	}, []string{"kind"})
)

// Collectors returns the ownership counters, for the provider to register
// with its metrics registry where it builds its manager. It first makes a
// series of every pair that can happen, so that rate() and absent() work
// before the first conflict.
func Collectors() []prometheus.Collector {
	for _, kr := range [][2]string{
		{v1beta1.SecurityPolicyKind, ConflictOlderOwner},
		{v1beta1.SecurityPolicyKind, ConflictOwnerLabel},
		{v1beta1.SecurityPolicyKind, ConflictPriorityClaimed},
		{v1beta1.SecurityPolicyRuleKind, ConflictOlderOwner},
		{v1alpha1.OrganizationSecurityPolicyRuleKind, ConflictOlderOwner},
		{v1alpha1.OrganizationSecurityPolicyRuleKind, ConflictPolicyRules},
		{v1alpha1.SecurityPolicyAttachmentKind, ConflictOlderOwner},
	} {
		conflicts.WithLabelValues(kr[0], kr[1])
	}
	claimsRefused.WithLabelValues(v1beta1.SecurityPolicyKind)
	claimsRefused.WithLabelValues(v1beta1.SecurityPolicyRuleKind)
	return []prometheus.Collector{conflicts, claimsRefused}
}

// CountConflicts counts n conflicts of an object of kind, for the decisions
// a controller makes itself (an owner label, inline rules left out).
func CountConflicts(kind, reason string, n int) {
	if n > 0 {
		conflicts.WithLabelValues(kind, reason).Add(float64(n))
	}
}
