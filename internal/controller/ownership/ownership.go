// Package ownership decides which managed resource owns which GCP object.
//
// A GCP policy is identified by (project, region, name) and a rule by its
// policy and priority, whatever namespace or credentials the managed resources
// that name them use. Many objects may name one GCP object; exactly one of
// them may write it:
//
//   - Among the objects that may write (management policies beyond Observe),
//     the oldest owns the GCP object: the one created first
//     (creationTimestamp, which the API server sets), then the first by
//     namespace/name. The others make no write and leave the GCP object in
//     place when deleted. Nothing a tenant can edit ranks: not the
//     annotation crossplane.io/external-create-succeeded, nor a status
//     (Crossplane's roles grant a kind's status subresource with the kind).
//   - A SecurityPolicyRule may claim a priority of a policy that a
//     SecurityPolicy in this cluster owns only if that policy admits the
//     rule's namespace (spec.allowedRules; by default its own namespace).
//
// Observe-only objects never own anything and are never refused here: they
// write nothing, and GCP's own permissions decide what they may read.
//
// Every kind that competes for a GCP object asks this package, so that a
// policy and its rules always agree on who owns what. What an Observe then
// concludes is package verdict's.
package ownership

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Field indexes. Projects are not indexed: a resource that sets none uses its
// ProviderConfig's, which an index function cannot read. The indexes narrow a
// lookup to the objects that name the same policy (or priority) in any
// project; the project is resolved for those few.
const (
	indexPolicy       = "ownership.policy"       // SecurityPolicy: region/name
	indexRulePolicy   = "ownership.rulePolicy"   // SecurityPolicyRule: region/policy
	indexRulePriority = "ownership.rulePriority" // SecurityPolicyRule: region/policy/priority
)

// Error strings.
const (
	errListPolicies = "cannot list SecurityPolicies that name the same GCP policy"
	errListRules    = "cannot list SecurityPolicyRules that name the same GCP policy"
	errGetNamespace = "cannot get namespace"
	errSelector     = "cannot parse spec.allowedRules.namespaces.selector"
)

func policyIndexKey(region, name string) string { return region + "/" + name }

func priorityIndexKey(region, policy string, priority int64) string {
	return region + "/" + policy + "/" + strconv.FormatInt(priority, 10)
}

// SetupIndexes registers the field indexes the Index reads.
func SetupIndexes(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &v1beta1.SecurityPolicy{}, indexPolicy, func(o client.Object) []string {
		p, ok := o.(*v1beta1.SecurityPolicy)
		if !ok || meta.GetExternalName(p) == "" {
			return nil
		}
		return []string{policyIndexKey(ptr.Deref(p.Spec.ForProvider.Region, ""), meta.GetExternalName(p))}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1beta1.SecurityPolicyRule{}, indexRulePolicy, func(o client.Object) []string {
		r, ok := o.(*v1beta1.SecurityPolicyRule)
		if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
			return nil
		}
		return []string{policyIndexKey(ptr.Deref(r.Spec.ForProvider.Region, ""), *r.Spec.ForProvider.SecurityPolicy)}
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1beta1.SecurityPolicyRule{}, indexRulePriority, func(o client.Object) []string {
		r, ok := o.(*v1beta1.SecurityPolicyRule)
		if !ok || r.Spec.ForProvider.SecurityPolicy == nil {
			return nil
		}
		p := r.Spec.ForProvider
		return []string{priorityIndexKey(ptr.Deref(p.Region, ""), *p.SecurityPolicy, p.Priority)}
	})
}

// An Index answers ownership questions from the informer cache. Every
// object it returns is the cache's own: read it, never modify it.
type Index struct {
	kube client.Reader
}

// NewIndex returns an Index reading through kube, the manager's cached
// client, whose cache has the indexes SetupIndexes registered.
func NewIndex(kube client.Reader) *Index {
	return &Index{kube: kube}
}

// PolicyKey is the GCP policy cr manages, given the project cr resolved to.
func PolicyKey(cr *v1beta1.SecurityPolicy, project string) gcp.PolicyKey {
	return gcp.PolicyKey{Project: project, Region: ptr.Deref(cr.Spec.ForProvider.Region, ""), Name: meta.GetExternalName(cr)}
}

// RulePolicyKey is the GCP policy a rule object belongs to, given the
// project it resolved to. Name is "" while the policy is unresolved.
func RulePolicyKey(cr *v1beta1.SecurityPolicyRule, project string) gcp.PolicyKey {
	return gcp.PolicyKey{Project: project, Region: ptr.Deref(cr.Spec.ForProvider.Region, ""), Name: ptr.Deref(cr.Spec.ForProvider.SecurityPolicy, "")}
}

// PolicyOwner returns the SecurityPolicy that owns the GCP policy key, or nil
// when no object that may write names it.
func (i *Index) PolicyOwner(ctx context.Context, key gcp.PolicyKey) (*v1beta1.SecurityPolicy, error) {
	l := &v1beta1.SecurityPolicyList{}
	if err := i.kube.List(ctx, l, client.MatchingFields{indexPolicy: policyIndexKey(key.Region, key.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, errListPolicies)
	}
	projects := i.projects()
	var owner *v1beta1.SecurityPolicy
	for n := range l.Items {
		p := &l.Items[n]
		if !verdict.Writes(p) {
			continue
		}
		project, err := projects.Of(ctx, p, p.Spec.ForProvider.Project)
		if err != nil || project != key.Project {
			// An object whose config cannot be read cannot reach GCP
			// either; it owns nothing until it can.
			continue
		}
		if owner == nil || older(p, owner) {
			owner = p
		}
	}
	return owner, nil
}

// A Refusal is a SecurityPolicyRule that may not claim a policy's priority.
type Refusal struct {
	// Rule is the refused object (namespace/name).
	Rule string
	// Priority it wanted.
	Priority int64
	// Message says why, naming the owner.
	Message string
}

// A Standing says what a rule object may do with its GCP rule.
type Standing struct {
	// Refused explains why the object may not write its GCP rule; "" means
	// it may.
	Refused string
	// Inline is true when the policy's owner declares an inline rule at
	// this priority: deleting the rule object hands the priority back to the
	// policy, which must find its rule still in place.
	Inline bool
}

// Claims returns the priorities of key that SecurityPolicyRule objects own,
// for policy, the SecurityPolicy that owns key: priority -> rule object
// (namespace/name). Rules from namespaces policy does not admit are returned
// as refusals, sorted by priority and name.
func (i *Index) Claims(ctx context.Context, policy *v1beta1.SecurityPolicy, key gcp.PolicyKey) (map[int64]string, []Refusal, error) {
	l := &v1beta1.SecurityPolicyRuleList{}
	if err := i.kube.List(ctx, l, client.MatchingFields{indexRulePolicy: policyIndexKey(key.Region, key.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, errors.Wrap(err, errListRules)
	}
	admits, err := i.admitter(ctx, policy)
	if err != nil {
		return nil, nil, err
	}
	projects := i.projects()
	owners := map[int64]*v1beta1.SecurityPolicyRule{}
	var refused []Refusal
	for n := range l.Items {
		r := &l.Items[n]
		if !verdict.Writes(r) {
			continue
		}
		if project, err := projects.Of(ctx, r, r.Spec.ForProvider.Project); err != nil || project != key.Project {
			continue
		}
		ok, err := admits(ctx, r.GetNamespace())
		if err != nil {
			return nil, nil, err
		}
		prio := r.Spec.ForProvider.Priority
		if !ok {
			refused = append(refused, Refusal{Rule: nameOf(r), Priority: prio,
				Message: fmt.Sprintf("SecurityPolicyRule %s may not claim priority %d: namespace %q is not admitted by spec.allowedRules", nameOf(r), prio, r.GetNamespace())})
			continue
		}
		if o := owners[prio]; o == nil || older(r, o) {
			owners[prio] = r
		}
	}
	claims := make(map[int64]string, len(owners))
	for prio, r := range owners {
		claims[prio] = nameOf(r)
	}
	slices.SortFunc(refused, func(a, b Refusal) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Rule, b.Rule))
	})
	claimsRefused.WithLabelValues(v1beta1.SecurityPolicyKind).Add(float64(len(refused)))
	return claims, refused, nil
}

// RuleStanding says whether cr, whose policy resolved to key, may write its
// GCP rule: the policy's owner (if this cluster has one) must admit cr's
// namespace, and cr must be the oldest admitted object at its priority.
func (i *Index) RuleStanding(ctx context.Context, cr *v1beta1.SecurityPolicyRule, key gcp.PolicyKey) (Standing, error) {
	prio := cr.Spec.ForProvider.Priority
	policy, admits, err := i.RuleAdmitter(ctx, key)
	if err != nil {
		return Standing{}, err
	}
	var s Standing
	if policy != nil {
		s.Inline = policy.Spec.ForProvider.Rules != nil && slices.ContainsFunc(policy.Spec.ForProvider.Rules, func(r v1beta1.PolicyRule) bool { return r.Priority == prio })
		ok, err := admits(ctx, cr.GetNamespace())
		if err != nil {
			return Standing{}, err
		}
		if !ok {
			s.Refused = fmt.Sprintf("GCP policy %s is managed by SecurityPolicy %s, which does not admit SecurityPolicyRules from namespace %q (spec.allowedRules): this object makes no change to GCP", key, nameOf(policy), cr.GetNamespace())
			claimsRefused.WithLabelValues(v1beta1.SecurityPolicyRuleKind).Inc()
			return s, nil
		}
	}
	l := &v1beta1.SecurityPolicyRuleList{}
	if err := i.kube.List(ctx, l, client.MatchingFields{indexRulePriority: priorityIndexKey(key.Region, key.Name, prio)}, client.UnsafeDisableDeepCopy); err != nil {
		return Standing{}, errors.Wrap(err, errListRules)
	}
	projects := i.projects()
	for n := range l.Items {
		r := &l.Items[n]
		if r.GetUID() == cr.GetUID() || !verdict.Writes(r) || !older(r, cr) {
			continue
		}
		if project, err := projects.Of(ctx, r, r.Spec.ForProvider.Project); err != nil || project != key.Project {
			continue
		}
		ok, err := admits(ctx, r.GetNamespace())
		if err != nil {
			return Standing{}, err
		}
		if !ok {
			continue
		}
		s.Refused = fmt.Sprintf("the rule at priority %d of GCP policy %s is managed by SecurityPolicyRule %s, the oldest object for it: this object makes no change to GCP and leaves the rule in place when deleted", prio, key, nameOf(r))
		conflicts.WithLabelValues(v1beta1.SecurityPolicyRuleKind, ConflictOlderOwner).Inc()
		return s, nil
	}
	return s, nil
}

// PolicyRefusal explains why cr may not write the GCP policy key that owner
// owns, and counts the conflict: the controller calls it once per reconcile
// that refuses.
func PolicyRefusal(key gcp.PolicyKey, owner *v1beta1.SecurityPolicy) string {
	conflicts.WithLabelValues(v1beta1.SecurityPolicyKind, ConflictOlderOwner).Inc()
	return fmt.Sprintf("GCP policy %s is managed by SecurityPolicy %s, the oldest object for it: this object makes no change to it and leaves it in place when deleted", key, nameOf(owner))
}

// RuleAdmitter returns the SecurityPolicy of this cluster that owns the GCP
// policy key (nil when none does) and a function reporting whether
// SecurityPolicyRules of a namespace may claim a priority of key: those the
// owner admits (spec.allowedRules), or all when there is no owner.
// RuleStanding and the rules' wake-up on a policy's arrival both decide
// admission here. Namespaces are read from the cache once per returned
// function.
func (i *Index) RuleAdmitter(ctx context.Context, key gcp.PolicyKey) (*v1beta1.SecurityPolicy, func(context.Context, string) (bool, error), error) {
	owner, err := i.PolicyOwner(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	if owner == nil {
		return nil, func(context.Context, string) (bool, error) { return true, nil }, nil
	}
	admits, err := i.admitter(ctx, owner)
	if err != nil {
		return nil, nil, err
	}
	return owner, admits, nil
}

// admitter returns a function reporting whether policy admits rules from a
// namespace. Namespaces are read from the cache once per call.
func (i *Index) admitter(ctx context.Context, policy *v1beta1.SecurityPolicy) (func(context.Context, string) (bool, error), error) {
	from, sel := v1beta1.NamespacesFromSame, labels.Nothing()
	if a := policy.Spec.AllowedRules; a != nil && a.Namespaces != nil {
		from = a.Namespaces.From
		if from == v1beta1.NamespacesFromSelector {
			s, err := metav1.LabelSelectorAsSelector(a.Namespaces.Selector)
			if err != nil {
				return nil, errors.Wrap(err, errSelector)
			}
			sel = s
		}
	}
	seen := map[string]bool{}
	return func(ctx context.Context, ns string) (bool, error) {
		switch {
		case ns == policy.GetNamespace() || from == v1beta1.NamespacesFromAll:
			return true, nil
		case from != v1beta1.NamespacesFromSelector:
			return false, nil
		}
		if ok, done := seen[ns]; done {
			return ok, nil
		}
		n := &corev1.Namespace{}
		if err := i.kube.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
			return false, errors.Wrap(err, errGetNamespace)
		}
		seen[ns] = sel.Matches(labels.Set(n.GetLabels()))
		return seen[ns], nil
	}, nil
}

// projects resolves the projects of the objects one decision compares.
func (i *Index) projects() *connector.Projects {
	return connector.NewProjects(i.kube)
}

// ProjectOf returns the GCP project mg's resources live in.
func (i *Index) ProjectOf(ctx context.Context, mg ManagedResource, project *string) (string, error) {
	return i.projects().Of(ctx, mg, project)
}

// A ManagedResource is what project resolution needs of a managed resource.
type ManagedResource = connector.ConfigUser

// older reports whether a owns before b: the one created first, then by
// namespace/name. Only what the API server sets ranks. The annotation
// crossplane.io/external-create-succeeded, which ranked first before, is
// metadata any editor of an object can set: with it a tenant took over
// another team's policy or rule by annotating a younger object of its own.
// What it protected, a policy's creator keeping the policy, the GCP owner
// label holds: the policy controller refuses to write a policy whose label
// names another object. An attachment's recorded write ranks too
// (attachmentOlder), from the provider's own AttachmentRecord.
func older(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return nameOf(a) < nameOf(b)
}

func nameOf(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// LabelKey is the GCP label that says which object owns a policy. Its value
// is a Labeler's Value for the owning SecurityPolicy.
const LabelKey = "armorplane-owner"

// A Labeler names SecurityPolicies in GCP labels, so that a policy this
// provider created can be told apart from one another cluster, or another
// object of this one, created.
type Labeler struct {
	cluster string
}

// NewLabeler returns a Labeler for the cluster whose owner identity is
// cluster: the platform's --owner-identity, else the UID of its kube-system
// namespace, which lives as long as the cluster.
func NewLabeler(cluster string) Labeler { return Labeler{cluster: cluster} }

// Value returns o's owner label value: 32 hex characters of a hash of the
// cluster, namespace and name (GCP label values are at most 63 lowercase
// characters). The name, not the UID, so that an object deleted while its
// management policies keep the GCP resource and applied again, or restored
// from a backup into a cluster of the same identity, is its policy's owner
// again.
func (l Labeler) Value(o client.Object) string {
	return gcp.IdentityKey(l.cluster, o.GetNamespace(), o.GetName())[:32]
}

// Labels returns the owner label o's GCP object must carry.
func (l Labeler) Labels(o client.Object) map[string]string {
	return map[string]string{LabelKey: l.Value(o)}
}

// ExternalLabels returns every label the provider puts on mg's GCP object:
// the provenance labels Crossplane providers put on external resources
// (crossplane-runtime's resource.GetExternalTags: crossplane-kind,
// crossplane-name, crossplane-namespace, crossplane-providerconfig and
// crossplane-providerconfig-kind) made GCP labels, and the owner label. gk
// is mg's kind, for an object read without its type metadata.
//
// They are merged over the user's labels: provenance says which object
// wrote the GCP object, so a tenant cannot make it name another (admission
// refuses spec.forProvider.labels that set these keys), and the owner label
// decides ownership.
func (l Labeler) ExternalLabels(mg resource.Managed, gk schema.GroupKind) map[string]string {
	tags := resource.GetExternalTags(mg)
	if mg.GetObjectKind().GroupVersionKind().Kind == "" {
		tags[resource.ExternalResourceTagKeyKind] = strings.ToLower(gk.String())
	}
	out := gcp.Labels(tags)
	out[LabelKey] = l.Value(mg)
	return out
}

// ByOwnerLabel is the role, toward a GCP resource carrying labels, of an
// object that may write it and whose owner label value is ours: Outranked
// when the owner label names another (returned as other), Adopter when there
// is none, else Owner.
func ByOwnerLabel(labels map[string]string, ours string) (role verdict.Role, other string) {
	v, ok := labels[LabelKey]
	switch {
	case !ok:
		return verdict.Adopter, ""
	case v != ours:
		return verdict.Outranked, v
	}
	return verdict.Owner, ""
}

// ProvidedLabelKeys are the label keys ExternalLabels may set. Users may
// not set them in spec.forProvider.labels.
var ProvidedLabelKeys = []string{
	LabelKey,
	resource.ExternalResourceTagKeyKind,
	resource.ExternalResourceTagKeyName,
	resource.ExternalResourceTagKeyNamespace,
	resource.ExternalResourceTagKeyProvider,
	resource.ExternalResourceTagKeyProviderConfigKind,
}

// PoliciesNamedBy returns the SecurityPolicies, in every namespace, that name
// the GCP policy rule r belongs to, by region and name. Projects are not
// compared: a policy of another project reconciled once more costs little.
func PoliciesNamedBy(ctx context.Context, kube client.Reader, r *v1beta1.SecurityPolicyRule) ([]types.NamespacedName, error) {
	if r.Spec.ForProvider.SecurityPolicy == nil {
		return nil, nil
	}
	return PoliciesNamed(ctx, kube, ptr.Deref(r.Spec.ForProvider.Region, ""), *r.Spec.ForProvider.SecurityPolicy)
}

// PoliciesNamed returns the SecurityPolicies, in every namespace, whose GCP
// policy is name in region ("" for global), of any project.
func PoliciesNamed(ctx context.Context, kube client.Reader, region, name string) ([]types.NamespacedName, error) {
	l := &v1beta1.SecurityPolicyList{}
	if err := kube.List(ctx, l, client.MatchingFields{indexPolicy: policyIndexKey(region, name)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, errListPolicies)
	}
	out := make([]types.NamespacedName, 0, len(l.Items))
	for _, p := range l.Items {
		out = append(out, types.NamespacedName{Namespace: p.GetNamespace(), Name: p.GetName()})
	}
	return out, nil
}

// RulesNaming returns the SecurityPolicyRules, in every namespace, that name
// p's GCP policy by region and name.
func RulesNaming(ctx context.Context, kube client.Reader, p *v1beta1.SecurityPolicy) ([]types.NamespacedName, error) {
	name := meta.GetExternalName(p)
	if name == "" {
		return nil, nil
	}
	l := &v1beta1.SecurityPolicyRuleList{}
	if err := kube.List(ctx, l, client.MatchingFields{indexRulePolicy: policyIndexKey(ptr.Deref(p.Spec.ForProvider.Region, ""), name)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, errListRules)
	}
	out := make([]types.NamespacedName, 0, len(l.Items))
	for _, r := range l.Items {
		out = append(out, types.NamespacedName{Namespace: r.GetNamespace(), Name: r.GetName()})
	}
	return out, nil
}

// Indexes registers the field indexes once, whichever controller that reads
// them starts first.
type Indexes struct {
	once sync.Once
	err  error
}

// Setup registers the indexes with idx on its first call and returns that
// call's error on every call.
func (i *Indexes) Setup(ctx context.Context, idx client.FieldIndexer) error {
	i.once.Do(func() { i.err = SetupIndexes(ctx, idx) })
	return i.err
}
