package securitypolicy

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// indexRulePolicy indexes SecurityPolicyRules by the GCP policy they target,
// "<region>/<policy>" ("/<policy>" for a global one), so a policy finds the
// rules that claim its priorities without listing every rule.
const indexRulePolicy = "spec.forProvider.policyKey"

func rulePolicyKey(region, policy string) string { return region + "/" + policy }

// indexPolicyKey indexes SecurityPolicies by the same "<region>/<policy>"
// key, their external name standing for the policy, so a rule event finds
// its policy without listing every policy of the namespace.
const indexPolicyKey = "spec.forProvider.policyKey"

func indexRulesByPolicy(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &v1beta1.SecurityPolicyRule{}, indexRulePolicy, func(o client.Object) []string {
		r, ok := o.(*v1beta1.SecurityPolicyRule)
		if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
			return nil
		}
		return []string{rulePolicyKey(deref(r.Spec.ForProvider.Region), *r.Spec.ForProvider.SecurityPolicy)}
	})
}

func indexPoliciesByKey(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &v1beta1.SecurityPolicy{}, indexPolicyKey, func(o client.Object) []string {
		p, ok := o.(*v1beta1.SecurityPolicy)
		if !ok || meta.GetExternalName(p) == "" {
			return nil
		}
		return []string{rulePolicyKey(deref(p.Spec.ForProvider.Region), meta.GetExternalName(p))}
	})
}

// claimLister finds the SecurityPolicyRules, in any namespace, that target a
// policy. A rule that sets no project is taken to share the policy's project:
// the alternative, resolving every rule's ProviderConfig, costs a read per
// rule for a case (one GCP policy name in two projects, managed from one
// cluster) that would be a conflict anyway.
type claimLister struct {
	kube    client.Reader
	project string
}

func (l *claimLister) Claims(ctx context.Context, cr *v1beta1.SecurityPolicy) (securitypolicy.Claims, error) {
	rules := &v1beta1.SecurityPolicyRuleList{}
	key := rulePolicyKey(deref(cr.Spec.ForProvider.Region), meta.GetExternalName(cr))
	// Read-only use of the cached objects: copying every rule of a policy on
	// each reconcile was a tenth of the provider's steady-state allocation.
	if err := l.kube.List(ctx, rules, client.MatchingFields{indexRulePolicy: key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	claims := securitypolicy.Claims{}
	for _, r := range rules.Items {
		if p := r.Spec.ForProvider.Project; p != nil && *p != l.project {
			continue
		}
		claims[r.Spec.ForProvider.Priority] = r.GetNamespace() + "/" + r.GetName()
	}
	return claims, nil
}

// RuleEventDelay is how long a rule's event waits before its policy is
// reconciled.
const RuleEventDelay = time.Second

// watchRules re-reconciles the SecurityPolicies in a rule's namespace that
// the rule targets whenever a rule is created, changed or deleted, so a
// priority a rule releases is taken back (or removed) without waiting for
// the next poll.
func watchRules(kube client.Reader) func(*ctrl.Builder) *ctrl.Builder {
	return func(b *ctrl.Builder) *ctrl.Builder {
		// crossplane-runtime's predicate, not ours: a rule's
		// external-create-succeeded write means GCP now holds it, and the
		// policy's status (ruleCount) should say so soon. Soon, not at
		// once: a policy whose rules are being created is recounted once
		// per RuleEventDelay, not once per rule (each recount is a status
		// write: about 650 of them for 1,000 rules applied together).
		return b.Watches(&v1beta1.SecurityPolicyRule{}, setup.Delayed(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return policiesFor(ctx, kube, o)
		}), RuleEventDelay), builder.WithPredicates(resource.DesiredStateChanged()))
	}
}

func policiesFor(ctx context.Context, kube client.Reader, o client.Object) []reconcile.Request {
	r, ok := o.(*v1beta1.SecurityPolicyRule)
	if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
		return nil
	}
	policies := &v1beta1.SecurityPolicyList{}
	key := rulePolicyKey(deref(r.Spec.ForProvider.Region), *r.Spec.ForProvider.SecurityPolicy)
	// The index narrows the list to the policy; the objects are only read.
	if err := kube.List(ctx, policies, client.InNamespace(r.GetNamespace()),
		client.MatchingFields{indexPolicyKey: key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range policies.Items {
		if meta.GetExternalName(&p) == *r.Spec.ForProvider.SecurityPolicy && deref(p.Spec.ForProvider.Region) == deref(r.Spec.ForProvider.Region) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.GetNamespace(), Name: p.GetName()}})
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
