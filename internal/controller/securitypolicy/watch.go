package securitypolicy

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// RuleEventDelay is how long a rule's event waits before its policy is
// reconciled.
const RuleEventDelay = time.Second

// watchRules re-reconciles the SecurityPolicies, in every namespace, that
// name the GCP policy a rule targets whenever a rule is created, changed or
// deleted, so a priority a rule releases is taken back (or removed) without
// waiting for the next poll, and a refused claim is reported at once.
func watchRules(kube client.Reader) setup.Watch {
	return setup.Watch{
		Of: &v1beta1.SecurityPolicyRule{},
		Handler: setup.Delayed(handler.EnqueueRequestsFromMapFunc(
			setup.Related(kube, ownership.PoliciesNamedBy)), RuleEventDelay),
		// crossplane-runtime's predicate, not ours: a rule's
		// external-create-succeeded write means GCP now holds it, and the
		// policy's status (ruleCount) should say so soon. Soon, not at
		// once: a policy whose rules are being created is recounted once
		// per RuleEventDelay, not once per rule: each recount is a status
		// write (docs/performance.md).
		Predicates: []predicate.Predicate{resource.DesiredStateChanged()},
	}
}
