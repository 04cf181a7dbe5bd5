package securitypolicyrule

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// ReasonWaitingForPolicy is the Ready=False reason of a rule object whose
// security policy is not there yet: the SecurityPolicy it references does
// not exist or has no GCP name yet, or the GCP policy does not exist. A
// policy and its rules are often applied together (kubectl apply -f, a
// composition), so this is a wait, not an error: Synced stays True, no
// warning event is recorded and the object does not back off. The policy's
// arrival re-reconciles the rule at once; the poll is the fallback for a
// GCP policy made outside this cluster.
const ReasonWaitingForPolicy xpv2.ConditionReason = "WaitingForSecurityPolicy"

// indexUnresolved indexes the rule objects whose policy reference or
// selector is not resolved yet by the namespace they look in, so that a
// SecurityPolicy's arrival finds them: the ownership indexes only hold rules
// that name their policy.
const indexUnresolved = "securitypolicyrule.unresolved"

// waiting is the Ready condition of a rule object waiting for its policy.
func waiting(msg string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonWaitingForPolicy,
		Message: msg, LastTransitionTime: metav1.Now()}
}

// noPolicy observes cr while its policy is not there: not named yet, or not
// in GCP. Unless cr is being deleted (then nothing in GCP is left to
// remove), it waits: Ready=False with what it waits for, Synced=True, no
// backoff; the policy's arrival requeues it (watchArrivals), else the poll.
func (e *external) noPolicy(cr *v1beta1.SecurityPolicyRule, f verdict.Facts) (managed.ExternalObservation, error) {
	f.Presence = verdict.NoParent
	v := verdict.Decide(f)
	if v == verdict.Waiting {
		cr.SetConditions(waiting(waitMessage(cr, e.key)))
	}
	return v.Observation(verdict.Details{})
}

// waitMessage names what cr waits for. It depends on the spec only, and a
// referenced policy is named the same way before and after the reference
// resolves, so a rule that waits writes its status once.
func waitMessage(cr *v1beta1.SecurityPolicyRule, key gcp.PolicyKey) string {
	p := cr.Spec.ForProvider
	switch {
	case p.SecurityPolicyRef != nil:
		return fmt.Sprintf("waiting for SecurityPolicy %s/%s and its GCP security policy to exist", refNamespace(cr, p.SecurityPolicyRef.Namespace), p.SecurityPolicyRef.Name)
	case p.SecurityPolicy == nil && p.SecurityPolicySelector != nil:
		return fmt.Sprintf("waiting for a SecurityPolicy in namespace %s matching spec.forProvider.securityPolicySelector (%s) and its GCP security policy to exist",
			refNamespace(cr, p.SecurityPolicySelector.Namespace), labels.SelectorFromSet(p.SecurityPolicySelector.MatchLabels))
	}
	return fmt.Sprintf("waiting for GCP security policy %s to exist", key)
}

// refNamespace is the namespace a reference or selector looks in: its own,
// else the rule's.
func refNamespace(cr *v1beta1.SecurityPolicyRule, ns string) string {
	if ns != "" {
		return ns
	}
	return cr.GetNamespace()
}

// unresolved reports the namespace whose SecurityPolicies cr's unresolved
// reference or selector looks in, or "" when cr names its policy (or names
// nothing to resolve).
func unresolved(cr *v1beta1.SecurityPolicyRule) string {
	p := cr.Spec.ForProvider
	switch {
	case p.SecurityPolicy != nil:
		return ""
	case p.SecurityPolicyRef != nil:
		return refNamespace(cr, p.SecurityPolicyRef.Namespace)
	case p.SecurityPolicySelector != nil:
		return refNamespace(cr, p.SecurityPolicySelector.Namespace)
	}
	return ""
}

func indexUnresolvedRule(o client.Object) []string {
	r, ok := o.(*v1beta1.SecurityPolicyRule)
	if !ok {
		return nil
	}
	if ns := unresolved(r); ns != "" {
		return []string{ns}
	}
	return nil
}

// pending reports whether cr's reference or selector failed to resolve only
// because its SecurityPolicy is not there yet: no such object, or none with
// a GCP name (a SecurityPolicy gets it at its first reconcile). Any other
// failure is the resolver's error to report.
func pending(ctx context.Context, kube client.Reader, cr *v1beta1.SecurityPolicyRule) (bool, error) {
	p := cr.Spec.ForProvider
	if ref := p.SecurityPolicyRef; ref != nil {
		sp := &v1beta1.SecurityPolicy{}
		err := kube.Get(ctx, types.NamespacedName{Namespace: refNamespace(cr, ref.Namespace), Name: ref.Name}, sp)
		if kerrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && meta.GetExternalName(sp) == "", err
	}
	sel := p.SecurityPolicySelector
	if sel == nil {
		return false, nil
	}
	l := &v1beta1.SecurityPolicyList{}
	if err := kube.List(ctx, l, client.InNamespace(refNamespace(cr, sel.Namespace)), client.MatchingLabels(sel.MatchLabels)); err != nil {
		return false, err
	}
	for n := range l.Items {
		if meta.GetExternalName(&l.Items[n]) != "" {
			return false, nil
		}
	}
	return true, nil
}

// watchArrivals re-reconciles the rule objects that wait for a
// SecurityPolicy when it arrives (see arrived), so that a rule applied with
// its policy is created as soon as the policy exists instead of at its next
// poll. A plain enqueue: the wait left no backoff to forget, and a rule
// backing off for another reason keeps its backoff.
func watchArrivals(kube client.Reader) setup.Watch {
	return setup.Watch{
		Of:         &v1beta1.SecurityPolicy{},
		Handler:    handler.EnqueueRequestsFromMapFunc(setup.Related(kube, waiters)),
		Predicates: []predicate.Predicate{arrivals()},
	}
}

// arrivals passes the updates of a SecurityPolicy that may end its rules'
// wait. Creations and deletions end none: a new SecurityPolicy has no GCP
// name yet.
func arrivals() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok := e.ObjectOld.(*v1beta1.SecurityPolicy)
			n, nok := e.ObjectNew.(*v1beta1.SecurityPolicy)
			return ok && nok && arrived(o, n)
		},
	}
}

// arrived reports whether a SecurityPolicy changed from o to n in a way that
// may end a rule's wait: it got its GCP name (its references resolve), it
// recorded creating its GCP policy, or it became Ready (an existing GCP
// policy it observes or adopted).
func arrived(o, n *v1beta1.SecurityPolicy) bool {
	if meta.GetExternalName(n) == "" {
		return false
	}
	created := func(p *v1beta1.SecurityPolicy) string {
		return p.GetAnnotations()[meta.AnnotationKeyExternalCreateSucceeded]
	}
	return meta.GetExternalName(o) != meta.GetExternalName(n) ||
		(created(n) != "" && created(n) != created(o)) ||
		(ready(n) && !ready(o))
}

func ready(o interface {
	GetCondition(xpv2.ConditionType) xpv2.Condition
}) bool {
	return o.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
}

// waiters returns the rule objects that may be waiting for p: those not
// Ready that name p's GCP policy (same project, region and name), or whose
// reference or selector will resolve to p, and that may claim a priority of
// it: the namespaces the GCP policy's owner admits (spec.allowedRules), or
// any when no SecurityPolicy of this cluster owns it. Rules of other tenants
// are never touched.
func waiters(ctx context.Context, kube client.Reader, p *v1beta1.SecurityPolicy) ([]types.NamespacedName, error) {
	if meta.GetExternalName(p) == "" {
		return nil, nil
	}
	idx := ownership.NewIndex(kube)
	project, err := idx.ProjectOf(ctx, p, p.Spec.ForProvider.Project)
	if err != nil {
		return nil, err
	}
	key := ownership.PolicyKey(p, project)
	_, admits, err := idx.RuleAdmitter(ctx, key)
	if err != nil {
		return nil, err
	}
	rules, err := candidates(ctx, kube, p)
	if err != nil {
		return nil, err
	}
	var out []types.NamespacedName
	for _, r := range rules {
		if ready(r) {
			continue
		}
		if project, err := idx.ProjectOf(ctx, r, r.Spec.ForProvider.Project); err != nil || project != key.Project {
			continue
		}
		if ok, err := admits(ctx, r.GetNamespace()); err != nil || !ok {
			continue
		}
		out = append(out, client.ObjectKeyFromObject(r))
	}
	return out, nil
}

// candidates returns the rule objects that name p's GCP policy by region and
// name, and those whose unresolved reference or selector points at p.
func candidates(ctx context.Context, kube client.Reader, p *v1beta1.SecurityPolicy) ([]*v1beta1.SecurityPolicyRule, error) {
	named, err := ownership.RulesNaming(ctx, kube, p)
	if err != nil {
		return nil, err
	}
	out := make([]*v1beta1.SecurityPolicyRule, 0, len(named))
	for _, n := range named {
		r := &v1beta1.SecurityPolicyRule{}
		if err := kube.Get(ctx, n, r); err != nil {
			continue // deleted since it was listed
		}
		out = append(out, r)
	}
	l := &v1beta1.SecurityPolicyRuleList{}
	if err := kube.List(ctx, l, client.MatchingFields{indexUnresolved: p.GetNamespace()}); err != nil {
		return nil, err
	}
	for n := range l.Items {
		if r := &l.Items[n]; resolvesTo(r, p) {
			out = append(out, r)
		}
	}
	return out, nil
}

// resolvesTo reports whether r's unresolved reference or selector picks p.
func resolvesTo(r *v1beta1.SecurityPolicyRule, p *v1beta1.SecurityPolicy) bool {
	if unresolved(r) != p.GetNamespace() {
		return false
	}
	fp := r.Spec.ForProvider
	if fp.SecurityPolicyRef != nil {
		return fp.SecurityPolicyRef.Name == p.GetName()
	}
	return labels.SelectorFromSet(fp.SecurityPolicySelector.MatchLabels).Matches(labels.Set(p.GetLabels()))
}
