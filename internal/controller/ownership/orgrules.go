package ownership

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Organization policies and their rules have no project and no region: GCP
// names an organization policy by its numeric id alone, anywhere in the
// organization. Their indexes are keyed by that id, apart from the project
// indexes above, so that an organization policy's id can never be taken for
// a project policy's name.
const (
	indexOrgPolicy       = "ownership.orgPolicy"       // OrganizationSecurityPolicy: id
	indexOrgRulePolicy   = "ownership.orgRulePolicy"   // OrganizationSecurityPolicyRule: id
	indexOrgRulePriority = "ownership.orgRulePriority" // OrganizationSecurityPolicyRule: id/priority
)

// Error strings.
const (
	errListOrgPolicies = "cannot list OrganizationSecurityPolicies that name the same GCP policy"
	errListOrgRules    = "cannot list OrganizationSecurityPolicyRules that name the same GCP policy"
)

func orgPriorityIndexKey(id string, priority int64) string {
	return id + "/" + strconv.FormatInt(priority, 10)
}

// SetupOrgIndexes registers the field indexes the organization rule
// questions read (OrgRuleStanding, OrgRulesNaming). Only the
// OrganizationSecurityPolicyRule controller reads them, so it registers them
// itself: the project kinds' controllers never start informers for the
// organization kinds, whose CRDs may not be installed.
func SetupOrgIndexes(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &v1alpha1.OrganizationSecurityPolicy{}, indexOrgPolicy, func(o client.Object) []string {
		if id := meta.GetExternalName(o); id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.OrganizationSecurityPolicyRule{}, indexOrgRulePolicy, func(o client.Object) []string {
		r, ok := o.(*v1alpha1.OrganizationSecurityPolicyRule)
		if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
			return nil
		}
		return []string{*r.Spec.ForProvider.SecurityPolicy}
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1alpha1.OrganizationSecurityPolicyRule{}, indexOrgRulePriority, func(o client.Object) []string {
		r, ok := o.(*v1alpha1.OrganizationSecurityPolicyRule)
		if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
			return nil
		}
		return []string{orgPriorityIndexKey(*r.Spec.ForProvider.SecurityPolicy, r.Spec.ForProvider.Priority)}
	})
}

// OrgRuleStanding says whether cr may write the rule at its priority of the
// organization policy id. GCP gives organization rules no labels, so only
// the cluster's objects decide, in every namespace (an organization policy
// is the organization's, whichever namespace its objects live in):
//
//   - an OrganizationSecurityPolicy whose external name is id, that writes
//     and whose spec.forProvider.rules is set, owns every non-default
//     priority of id: cr is refused, naming it (the oldest, if several);
//   - else the oldest OrganizationSecurityPolicyRule that writes, naming id
//     and cr's priority, owns the rule: any other is refused, naming it.
//
// A refused object makes no change to GCP and leaves the rule in place when
// deleted. Standing.Inline is never set: a policy that declares its rules
// owns all of them, so no rule object ever borrows one of its priorities.
func (i *Index) OrgRuleStanding(ctx context.Context, cr *v1alpha1.OrganizationSecurityPolicyRule, id string) (Standing, error) {
	prio := cr.Spec.ForProvider.Priority
	pl := &v1alpha1.OrganizationSecurityPolicyList{}
	if err := i.kube.List(ctx, pl, client.MatchingFields{indexOrgPolicy: id}, client.UnsafeDisableDeepCopy); err != nil {
		return Standing{}, errors.Wrap(err, errListOrgPolicies)
	}
	var policy *v1alpha1.OrganizationSecurityPolicy
	for n := range pl.Items {
		p := &pl.Items[n]
		if !verdict.Writes(p) || p.Spec.ForProvider.Rules == nil {
			continue
		}
		if policy == nil || older(p, policy) {
			policy = p
		}
	}
	if policy != nil {
		conflicts.WithLabelValues(v1alpha1.OrganizationSecurityPolicyRuleKind, ConflictPolicyRules).Inc()
		return Standing{Refused: fmt.Sprintf("the rules of organization security policy %s are managed by OrganizationSecurityPolicy %s, whose spec.forProvider.rules is set "+
			"and so owns every priority but the default rule's: this object makes no change to GCP and leaves the rule at priority %d in place when deleted. "+
			"Declare the rule in %s's spec.forProvider.rules, or unset them there to manage rules with OrganizationSecurityPolicyRule objects", id, nameOf(policy), prio, nameOf(policy))}, nil
	}
	rl := &v1alpha1.OrganizationSecurityPolicyRuleList{}
	if err := i.kube.List(ctx, rl, client.MatchingFields{indexOrgRulePriority: orgPriorityIndexKey(id, prio)}, client.UnsafeDisableDeepCopy); err != nil {
		return Standing{}, errors.Wrap(err, errListOrgRules)
	}
	var owner *v1alpha1.OrganizationSecurityPolicyRule
	for n := range rl.Items {
		r := &rl.Items[n]
		if r.GetUID() == cr.GetUID() || !verdict.Writes(r) || !older(r, cr) {
			continue
		}
		if owner == nil || older(r, owner) {
			owner = r
		}
	}
	if owner != nil {
		conflicts.WithLabelValues(v1alpha1.OrganizationSecurityPolicyRuleKind, ConflictOlderOwner).Inc()
		return Standing{Refused: fmt.Sprintf("the rule at priority %d of organization security policy %s is managed by OrganizationSecurityPolicyRule %s, the oldest object for it: "+
			"this object makes no change to GCP and leaves the rule in place when deleted", prio, id, nameOf(owner))}, nil
	}
	return Standing{}, nil
}

// OrgRulesNaming returns the OrganizationSecurityPolicyRules, in every
// namespace, that name p's GCP policy by id.
func OrgRulesNaming(ctx context.Context, kube client.Reader, p *v1alpha1.OrganizationSecurityPolicy) ([]types.NamespacedName, error) {
	id := meta.GetExternalName(p)
	if id == "" {
		return nil, nil
	}
	l := &v1alpha1.OrganizationSecurityPolicyRuleList{}
	if err := kube.List(ctx, l, client.MatchingFields{indexOrgRulePolicy: id}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, errListOrgRules)
	}
	out := make([]types.NamespacedName, 0, len(l.Items))
	for _, r := range l.Items {
		out = append(out, types.NamespacedName{Namespace: r.GetNamespace(), Name: r.GetName()})
	}
	return out, nil
}
