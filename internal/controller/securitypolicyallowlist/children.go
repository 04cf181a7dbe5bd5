package securitypolicyallowlist

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// Labels and annotations of the objects an allowlist keeps.
const (
	// LabelAllowlist names the SecurityPolicyAllowlist an object belongs to.
	LabelAllowlist = "cloudarmor.armorplane.io/allowlist"
	// LabelRole says what the object is to it: RoleRanges, RoleGroupRule,
	// RoleGroup or RoleNodes.
	LabelRole = "cloudarmor.armorplane.io/allowlist-role"
	// AnnotationGroup names, on a group rule, the GCP name of the IPv4 group
	// it uses.
	AnnotationGroup = "cloudarmor.armorplane.io/address-group"
)

// Roles.
const (
	RoleRanges    = "ranges"
	RoleGroupRule = "group-rule"
	RoleGroup     = "group"
	RoleNodes     = "nodes"
	RolePolicy    = "policy"
)

// Crossplane's marks on the objects it composes: an allowlist adopts the ones
// its own composite made before allowlists existed.
const (
	labelComposite             = "crossplane.io/composite"
	annotationCompositionName  = "crossplane.io/composition-resource-name"
	compositionRulePrefix      = "rule-"
	compositionGroupRulePrefix = "group-rule-"
	compositionGroupPrefix     = "group-"
	compositionNodesPrefix     = "nodes-"
	compositionPolicy          = "policy"
)

// kept are the allowlist's objects, by role.
type kept struct {
	children
	sets map[string]*v1alpha1.AddressSet
	// policy is the policy the allowlist created; nil when it creates none.
	policy *v1beta1.SecurityPolicy
}

// list returns the objects the allowlist keeps, adopting on the way those its
// own composite composed before it existed.
func (r *Reconciler) list(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist) (kept, error) {
	k := kept{
		children: children{ranges: map[int64]*v1beta1.SecurityPolicyRule{}, groupRules: map[string]*v1beta1.SecurityPolicyRule{}, groups: map[string]*v1alpha1.AddressGroup{}},
		sets:     map[string]*v1alpha1.AddressSet{},
	}
	rules := &v1beta1.SecurityPolicyRuleList{}
	if err := r.kube.List(ctx, rules, client.InNamespace(al.GetNamespace()), client.MatchingLabels{LabelAllowlist: al.GetName()}); err != nil {
		return kept{}, errors.Wrap(err, "cannot list the allowlist's SecurityPolicyRules")
	}
	groups := &v1alpha1.AddressGroupList{}
	if err := r.kube.List(ctx, groups, client.InNamespace(al.GetNamespace()), client.MatchingLabels{LabelAllowlist: al.GetName()}); err != nil {
		return kept{}, errors.Wrap(err, "cannot list the allowlist's AddressGroups")
	}
	sets := &v1alpha1.AddressSetList{}
	if err := r.kube.List(ctx, sets, client.InNamespace(al.GetNamespace()), client.MatchingLabels{LabelAllowlist: al.GetName()}); err != nil {
		return kept{}, errors.Wrap(err, "cannot list the allowlist's AddressSets")
	}
	policies := &v1beta1.SecurityPolicyList{}
	if err := r.kube.List(ctx, policies, client.InNamespace(al.GetNamespace()), client.MatchingLabels{LabelAllowlist: al.GetName()}); err != nil {
		return kept{}, errors.Wrap(err, "cannot list the allowlist's SecurityPolicy")
	}
	if err := r.adoptComposed(ctx, al, rules, groups, sets, policies); err != nil {
		return kept{}, err
	}
	for i := range policies.Items {
		if o := &policies.Items[i]; metav1.IsControlledBy(o, al) {
			k.policy = o
		}
	}
	for i := range rules.Items {
		o := &rules.Items[i]
		if !metav1.IsControlledBy(o, al) {
			continue
		}
		switch o.GetLabels()[LabelRole] {
		case RoleRanges:
			k.ranges[o.Spec.ForProvider.Priority] = o
		case RoleGroupRule:
			k.groupRules[o.GetAnnotations()[AnnotationGroup]] = o
		}
	}
	for i := range groups.Items {
		if o := &groups.Items[i]; metav1.IsControlledBy(o, al) {
			k.groups[meta.GetExternalName(o)] = o
		}
	}
	for i := range sets.Items {
		if o := &sets.Items[i]; metav1.IsControlledBy(o, al) {
			k.sets[o.GetName()] = o
		}
	}
	return k, nil
}

// adoptComposed takes over the rules, groups and AddressSets that the
// composite which composed al composed itself, as the IPAllowlist composition
// did before allowlists existed: an upgrade then keeps every GCP rule in
// place. Only objects whose controller is al's own controller are taken, so an
// allowlist never takes another composite's objects. Once taken, Crossplane no
// longer counts them as its own and never deletes them.
func (r *Reconciler) adoptComposed(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, rules *v1beta1.SecurityPolicyRuleList, groups *v1alpha1.AddressGroupList,
	sets *v1alpha1.AddressSetList, policies *v1beta1.SecurityPolicyList) error {
	owner := metav1.GetControllerOf(al)
	composite := al.GetLabels()[labelComposite]
	// Only until the allowlist has reported once: what an upgrade leaves is
	// there when the allowlist is created, and every later reconcile would
	// list four kinds for nothing.
	if owner == nil || composite == "" || al.Status.ObservedGeneration > 0 {
		return nil
	}
	composed := client.MatchingLabels{labelComposite: composite}
	ns := client.InNamespace(al.GetNamespace())
	candidates := []struct {
		list client.ObjectList
		add  func(client.Object)
	}{
		{&v1beta1.SecurityPolicyRuleList{}, func(o client.Object) { rules.Items = append(rules.Items, *o.(*v1beta1.SecurityPolicyRule)) }},
		{&v1alpha1.AddressGroupList{}, func(o client.Object) { groups.Items = append(groups.Items, *o.(*v1alpha1.AddressGroup)) }},
		{&v1alpha1.AddressSetList{}, func(o client.Object) { sets.Items = append(sets.Items, *o.(*v1alpha1.AddressSet)) }},
		{&v1beta1.SecurityPolicyList{}, func(o client.Object) { policies.Items = append(policies.Items, *o.(*v1beta1.SecurityPolicy)) }},
	}
	for _, c := range candidates {
		if err := r.kube.List(ctx, c.list, ns, composed); err != nil {
			return errors.Wrap(err, "cannot list the objects the allowlist's composite composed")
		}
		items, err := apimeta.ExtractList(c.list)
		if err != nil {
			return errors.Wrap(err, "cannot read the objects the allowlist's composite composed")
		}
		for _, it := range items {
			o, ok := it.(client.Object)
			if !ok {
				continue
			}
			ctl := metav1.GetControllerOf(o)
			if ctl == nil || ctl.UID != owner.UID || o.GetDeletionTimestamp() != nil {
				continue
			}
			role, group, ok := composedRole(o)
			if !ok {
				continue
			}
			refs := slices.DeleteFunc(o.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.Controller != nil && *ref.Controller })
			o.SetOwnerReferences(append(refs, controllerRef(al)))
			meta.AddLabels(o, map[string]string{LabelAllowlist: al.GetName(), LabelRole: role})
			if group != "" {
				meta.AddAnnotations(o, map[string]string{AnnotationGroup: group})
			}
			if err := r.kube.Update(ctx, o); err != nil {
				return errors.Wrapf(err, "cannot adopt %s", o.GetName())
			}
			r.log.Info("Adopted an object the allowlist's composite composed", "allowlist", al.GetName(), "object", o.GetName(), "role", role)
			c.add(o)
		}
	}
	return nil
}

// composedRole is the role of an object the IPAllowlist composition composed,
// from its composition resource name.
func composedRole(o client.Object) (role, group string, ok bool) {
	n := o.GetAnnotations()[annotationCompositionName]
	switch o.(type) {
	case *v1beta1.SecurityPolicyRule:
		switch {
		case strings.HasPrefix(n, compositionGroupRulePrefix):
			return RoleGroupRule, strings.TrimPrefix(n, compositionGroupRulePrefix), true
		case strings.HasPrefix(n, compositionRulePrefix):
			_, err := strconv.ParseInt(strings.TrimPrefix(n, compositionRulePrefix), 10, 64)
			return RoleRanges, "", err == nil
		}
	case *v1alpha1.AddressGroup:
		return RoleGroup, "", strings.HasPrefix(n, compositionGroupPrefix)
	case *v1alpha1.AddressSet:
		return RoleNodes, "", strings.HasPrefix(n, compositionNodesPrefix)
	case *v1beta1.SecurityPolicy:
		return RolePolicy, "", n == compositionPolicy
	}
	return "", "", false
}

func controllerRef(al *v1alpha1.SecurityPolicyAllowlist) metav1.OwnerReference {
	return *metav1.NewControllerRef(al, v1alpha1.SecurityPolicyAllowlistGroupVersionKind)
}

// objectMeta is the metadata of a new object of al in role.
func objectMeta(al *v1alpha1.SecurityPolicyAllowlist, name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       al.GetNamespace(),
		Labels:          map[string]string{LabelAllowlist: al.GetName(), LabelRole: role},
		OwnerReferences: []metav1.OwnerReference{controllerRef(al)},
	}
}

// rangeRule is a new rule holding ranges at priority.
func rangeRule(al *v1alpha1.SecurityPolicyAllowlist, rule iprange.Rule) *v1beta1.SecurityPolicyRule {
	return allowRule(al, fmt.Sprintf("%s-%d", al.GetName(), rule.Priority), RoleRanges, rule.Priority, &v1beta1.RuleMatcher{
		VersionedExpr: ptr.To("SRC_IPS_V1"),
		Config:        &v1beta1.RuleMatcherConfig{SrcIpRanges: ipRanges(rule.Ranges)},
	})
}

// groupRule is a new rule allowing what the groups hold.
func groupRule(al *v1alpha1.SecurityPolicyAllowlist, w *groupRuleWant) *v1beta1.SecurityPolicyRule {
	r := allowRule(al, fmt.Sprintf("%s-group-%d", al.GetName(), w.priority), RoleGroupRule, w.priority, &v1beta1.RuleMatcher{
		Expr: &v1beta1.Expr{Expression: w.expression},
	})
	r.SetAnnotations(map[string]string{AnnotationGroup: w.v4Name})
	return r
}

func allowRule(al *v1alpha1.SecurityPolicyAllowlist, name, role string, priority int64, match *v1beta1.RuleMatcher) *v1beta1.SecurityPolicyRule {
	s := al.Spec
	fp := v1beta1.SecurityPolicyRuleParameters{
		Project:  s.Project,
		Region:   s.Region,
		Priority: priority,
		RuleParameters: v1beta1.RuleParameters{
			Action: "allow",
			Match:  match,
		},
	}
	if s.RuleDescription != "" {
		fp.Description = ptr.To(s.RuleDescription)
	}
	if s.CreatePolicy != nil {
		// The rule waits for the allowlist's policy object rather than fail
		// while GCP does not have the policy yet.
		fp.SecurityPolicyRef = &xpv2.NamespacedReference{Name: s.SecurityPolicy}
	} else {
		fp.SecurityPolicy = ptr.To(s.SecurityPolicy)
	}
	r := &v1beta1.SecurityPolicyRule{ObjectMeta: objectMeta(al, name, role)}
	r.Spec.ForProvider = fp
	r.Spec.ProviderConfigReference = s.ProviderConfigRef
	return r
}

// addressGroup is a new group of family holding items.
func addressGroup(al *v1alpha1.SecurityPolicyAllowlist, gcpName string, w groupWant) *v1alpha1.AddressGroup {
	s := al.Spec
	location := "global"
	if s.Region != nil {
		location = *s.Region
	}
	g := &v1alpha1.AddressGroup{ObjectMeta: objectMeta(al, al.GetName()+"-"+gcpName, RoleGroup)}
	meta.SetExternalName(g, gcpName)
	g.Spec.ForProvider = v1alpha1.AddressGroupParameters{
		Project:  s.Project,
		Location: location,
		Type:     w.family,
		Capacity: int32(s.AddressGroup.GroupCapacity()),
		Purpose:  []string{"CLOUD_ARMOR"},
		Items:    strs(w.items),
	}
	if s.RuleDescription != "" {
		g.Spec.ForProvider.Description = ptr.To(s.RuleDescription)
	}
	g.Spec.ProviderConfigReference = s.ProviderConfigRef
	return g
}

// policy is the SecurityPolicy an allowlist creates, named as the GCP policy.
// Its rules field stays unset, so it leaves the allowlist's rules alone.
func policy(al *v1alpha1.SecurityPolicyAllowlist) *v1beta1.SecurityPolicy {
	s := al.Spec
	p := &v1beta1.SecurityPolicy{ObjectMeta: objectMeta(al, s.SecurityPolicy, RolePolicy)}
	p.Spec.ForProvider = policyParameters(al, p.Spec.ForProvider)
	p.Spec.ProviderConfigReference = s.ProviderConfigRef
	return p
}

// policyParameters are fp with what the allowlist sets of its policy.
func policyParameters(al *v1alpha1.SecurityPolicyAllowlist, fp v1beta1.SecurityPolicyParameters) v1beta1.SecurityPolicyParameters {
	c := al.Spec.CreatePolicy
	action := c.DefaultAction
	if action == "" {
		action = "deny(403)"
	}
	fp.Project, fp.Region = al.Spec.Project, al.Spec.Region
	fp.DefaultRule = &v1beta1.RuleParameters{Action: action}
	fp.Description = nil
	if c.Description != "" {
		fp.Description = ptr.To(c.Description)
	}
	return fp
}

// addressSet is a new AddressSet of a source read by a set.
func addressSet(al *v1alpha1.SecurityPolicyAllowlist, src v1alpha1.AllowlistSource) *v1alpha1.AddressSet {
	as := &v1alpha1.AddressSet{ObjectMeta: objectMeta(al, SetName(al.GetName(), src.Name), RoleNodes)}
	as.Spec = setSpec(src, al.Spec.ProviderConfigRef)
	return as
}

// setSpec is the AddressSet spec of a source read by a set, with
// the defaults the CRD would add written out, so that the spec read back
// equals the spec wanted. Only a source that reads GCP (instances, nat, or a
// cluster with identity ProviderConfig) gets the allowlist's ProviderConfig:
// a plain node source's AddressSet is as it was before remote sources
// existed.
func setSpec(src v1alpha1.AllowlistSource, pc *xpv2.ProviderConfigReference) v1alpha1.AddressSetSpec {
	if pc == nil {
		pc = &xpv2.ProviderConfigReference{Kind: pcv1beta1.ClusterProviderConfigKind, Name: "default"}
	}
	if src.Instances != nil {
		in := src.Instances.InstanceSelector
		in.PollSeconds = ptr.To(int32(in.Poll().Seconds()))
		return v1alpha1.AddressSetSpec{Instances: &in, ShrinkHoldSeconds: src.Instances.ShrinkHoldSeconds, ProviderConfigRef: pc}
	}
	if src.NAT != nil {
		nat := *src.NAT.NATSelector.DeepCopy()
		nat.PollSeconds = ptr.To(int32(nat.Poll().Seconds()))
		return v1alpha1.AddressSetSpec{NAT: &nat, ShrinkHoldSeconds: src.NAT.ShrinkHoldSeconds, ProviderConfigRef: pc}
	}
	if src.ReadsNamespace() {
		// Objects a team edits on purpose (a ConfigMap's list, a Service): a
		// shrink is what they meant, and goes at once, as when the function
		// read them itself.
		return v1alpha1.AddressSetSpec{Services: src.Services.DeepCopy(), Object: src.Object.DeepCopy(), ConfigMap: src.ConfigMap.DeepCopy(), ShrinkHoldSeconds: ptr.To(int32(0))}
	}
	nodes := src.Nodes.NodeSelector
	spec := v1alpha1.AddressSetSpec{Nodes: &nodes, ShrinkHoldSeconds: src.Nodes.ShrinkHoldSeconds}
	if c := nodes.Cluster; c != nil {
		c = c.DeepCopy()
		c.Identity = c.IdentityOrDefault()
		c.KubeconfigSecretRef.Key = c.KubeconfigSecretRef.KeyOrDefault()
		nodes.Cluster = c
		if c.Identity == v1alpha1.IdentityProviderConfig {
			spec.ProviderConfigRef = pc
		}
	}
	return spec
}

func ipRanges(ps []netip.Prefix) []v1beta1.IPRange {
	out := make([]v1beta1.IPRange, 0, len(ps))
	for _, p := range ps {
		out = append(out, v1beta1.IPRange(p.String()))
	}
	return out
}

func strs(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// ignoreGone ignores an object already gone or already being deleted.
func ignoreGone(err error) error {
	if kerrors.IsNotFound(err) {
		return nil
	}
	return err
}
