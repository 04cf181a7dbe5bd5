package securitypolicyallowlist

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// outcome is what a reconcile found, for the status.
type outcome struct {
	// reason and message of a Current condition that is not True.
	reason  xpv2.ConditionReason
	message string
	// held is set when GCP keeps what it holds (sources pending, cannot
	// compose): the counts stay as they were.
	held bool

	ipCount, ruleCount int
	// inGCP counts the ranges of ipCount that GCP is confirmed to hold
	// (confirmed): all of them is what Ready first waits for.
	inGCP     int
	group     string
	unmatched []string
	warnings  []string
}

func (o *outcome) hold(reason xpv2.ConditionReason, msg string) {
	o.held, o.reason, o.message = true, reason, msg
}

// follow records what the allowlist's objects now hold.
func (o *outcome) follow(al *v1alpha1.SecurityPolicyAllowlist, src resolved, c children, p plan) {
	if o.held {
		return
	}
	o.ipCount, o.unmatched, o.warnings = len(src.ranges), src.unmatched, src.warnings
	// The message says where the ranges are, never how many: the IPAllowlist shows it as its
	// Current condition, and Crossplane writes a composite whose condition changed twice per
	// reconcile, which would make every Node change several events on the composite. The
	// counts are status fields of their own.
	policy := al.Spec.SecurityPolicy
	switch {
	case al.Spec.Mode == v1alpha1.AllowlistModeAddressGroup:
		o.group = al.Spec.AddressGroup.Name
		if p.groupRule != nil {
			o.ruleCount = 1
			o.message = fmt.Sprintf("every source's ranges are in address group %s, allowed by the rule at priority %d of policy %s", o.group, p.groupRule.priority, policy)
		} else {
			o.message = fmt.Sprintf("every source's ranges are in address group %s; the rule of policy %s that uses it comes once GCP has the group", o.group, policy)
		}
	default:
		o.ruleCount = len(p.ranges)
		o.message = fmt.Sprintf("every source's ranges are in the allow rules of policy %s, priorities %d-%d", policy, al.Spec.PriorityRange.First, al.Spec.PriorityRange.Last)
	}
	switch {
	case p.switching != "":
		// Until the switch is done the rules in place hold the ranges.
		o.reason, o.message = v1alpha1.ReasonSwitching, p.switching
		o.ruleCount = len(c.ranges) + len(c.groupRules)
	case len(src.held) > 0:
		// The AddressSet holds its last addresses on purpose; GCP follows
		// them, and the allowlist is not Ready until it stops.
		o.reason, o.message = v1alpha1.ReasonSourceHeld, strings.Join(src.held, "; ")
		if src.unreadable {
			o.reason = v1alpha1.ReasonSourceUnreadable
		}
	}
}

// report writes the allowlist's status: at once when its spec or a
// condition's state changed, otherwise at the pacer's rate.
func (r *Reconciler) report(ctx context.Context, al *v1alpha1.SecurityPolicyAllowlist, k kept, o outcome) (reconcile.Result, error) {
	gen := al.GetGeneration()
	want := al.Status.DeepCopy()
	if !o.held {
		want.IPCount, want.RuleCount, want.AddressGroup = o.ipCount, o.ruleCount, o.group
		want.RangesInGCP = o.inGCP
		want.UnmatchedSources, want.Warnings = o.unmatched, o.warnings
	}
	want.ObservedGeneration = gen

	current := xpv2.Condition{Type: v1alpha1.TypeCurrent, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonComposed, Message: o.message}
	if o.reason != "" {
		current.Status, current.Reason = corev1.ConditionFalse, o.reason
	}
	setCondition(want, current.WithObservedGeneration(gen))
	rc, recheck := ready(al, k, current, !o.held && o.inGCP == o.ipCount, r.now())
	setCondition(want, rc.WithObservedGeneration(gen))
	setCondition(want, xpv2.ReconcileSuccess().WithObservedGeneration(gen))

	for _, w := range want.Warnings {
		if !slices.Contains(al.Status.Warnings, w) {
			r.recorder.Event(al, event.Warning("SourceWarning", errors.New(w)))
		}
	}
	if o.reason == v1alpha1.ReasonCannotCompose && al.Status.GetCondition(v1alpha1.TypeCurrent).Reason != v1alpha1.ReasonCannotCompose {
		r.recorder.Event(al, event.Warning("CannotCompose", errors.New(o.message)))
	}

	key := client.ObjectKeyFromObject(al)
	fp := fingerprint(want)
	if al.Status.ObservedGeneration == gen && sameStates(al.Status.Conditions, want.Conditions) {
		due, after := r.pacer.Due(key, fp, equality.Semantic.DeepEqual(&al.Status, want), r.now())
		if !due {
			return reconcile.Result{RequeueAfter: sooner(after, recheck)}, nil
		}
	}
	al.Status = *want
	if err := r.kube.Status().Update(ctx, al); err != nil {
		return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(err), "cannot update the allowlist's status")
	}
	r.pacer.Written(key, fp, r.now())
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// sooner is the earlier of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// refusalGrace is how long a Ready allowlist lets one of its objects report
// Synced=False before it turns not Ready. A rule made in a burst of Nodes is
// often refused once (another write changed the policy's fingerprint first)
// and written on its controller's next try; reporting every such blip would
// flip Ready twice, and the IPAllowlist composing this allowlist with it
// (docs/performance.md).
const refusalGrace = 10 * time.Second

// ready is the allowlist's Ready condition: True once GCP holds every range
// the spec allows (covered: read back from what the provider confirmed, never
// inferred from which objects exist, since those created in this reconcile
// are not listed yet) and every object it keeps is in GCP; it stays True
// while rules are added and filled as sources change (a burst of Nodes makes
// new rules that are not in GCP yet for a moment), and turns False when
// something is wrong, GCP keeps what it held, or an object has been refused
// for refusalGrace. recheck, when not zero, is when a refusal still within its
// grace counts.
func ready(al *v1alpha1.SecurityPolicyAllowlist, k kept, current xpv2.Condition, covered bool, now time.Time) (c xpv2.Condition, recheck time.Duration) {
	if current.Status != corev1.ConditionTrue {
		return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: current.Reason, Message: current.Message}, 0
	}
	// Ready is kept across a new generation too: the spec of an allowlist with
	// sources the function reads (Services, ConfigMaps, objects) changes with
	// their data, and every change of structure that could leave an address
	// out (a mode switch, a source not computed yet) is a Current that is not
	// True; rules moved to a new priority range are made before the old go.
	was := al.Status.GetCondition(xpv2.TypeReady)
	wasReady := was.Status == corev1.ConditionTrue
	waiting := 0
	for _, o := range k.objects() {
		if s := o.GetCondition(xpv2.TypeSynced); s.Status == corev1.ConditionFalse {
			left := refusalGrace - now.Sub(s.LastTransitionTime.Time)
			if !wasReady || left <= 0 {
				return xpv2.Unavailable().WithMessage(fmt.Sprintf("%s %s: %s", kindOf(o), o.GetName(), s.Message)), 0
			}
			if recheck == 0 || left < recheck {
				recheck = left
			}
		}
		if !inGCP(o) {
			waiting++
		}
	}
	switch {
	case waiting == 0 && recheck == 0 && covered && policyInGCP(al, k):
		return xpv2.Available(), 0
	case wasReady:
		return was, recheck
	case waiting > 0:
		return xpv2.Creating().WithMessage(fmt.Sprintf("%d rule(s) or group(s) are not in GCP yet", waiting)), 0
	case !policyInGCP(al, k):
		return xpv2.Creating().WithMessage(fmt.Sprintf("policy %s is not in GCP yet", al.Spec.SecurityPolicy)), 0
	}
	return xpv2.Creating().WithMessage("GCP does not hold every allowed range yet"), 0
}

// policyInGCP reports whether the policy the allowlist creates, if any, is in
// GCP as its spec says: one not listed yet (created in this reconcile) is not.
func policyInGCP(al *v1alpha1.SecurityPolicyAllowlist, k kept) bool {
	return al.Spec.CreatePolicy == nil || (k.policy != nil && inGCP(k.policy))
}

// kindOf names an object's kind from its Go type: objects read from the cache
// carry no TypeMeta.
func kindOf(o resource.Managed) string {
	return reflect.TypeOf(o).Elem().Name()
}

// objects are the policy, rules and groups the allowlist keeps.
func (k kept) objects() []resource.Managed {
	out := make([]resource.Managed, 0, len(k.ranges)+len(k.groupRules)+len(k.groups)+1)
	if k.policy != nil {
		out = append(out, k.policy)
	}
	for _, o := range k.ranges {
		out = append(out, o)
	}
	for _, o := range k.groupRules {
		out = append(out, o)
	}
	for _, o := range k.groups {
		out = append(out, o)
	}
	return out
}

// setCondition sets c, keeping the transition time of a condition whose
// state did not change (a message that changes with the counts is not a
// transition).
func setCondition(s *v1alpha1.SecurityPolicyAllowlistStatus, c xpv2.Condition) {
	if was := s.GetCondition(c.Type); was.Status == c.Status && was.Reason == c.Reason {
		c.LastTransitionTime = was.LastTransitionTime
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.Now()
	}
	s.SetConditions(c)
}

// sameStates reports whether two condition lists have the same types in the
// same states, messages aside.
func sameStates(a, b []xpv2.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		i := slices.IndexFunc(b, func(d xpv2.Condition) bool { return d.Type == c.Type })
		if i < 0 || b[i].Status != c.Status || b[i].Reason != c.Reason || b[i].ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

// fingerprint identifies the status fields that change with the sources.
func fingerprint(s *v1alpha1.SecurityPolicyAllowlistStatus) string {
	msgs := make([]string, 0, len(s.Conditions))
	for _, c := range s.Conditions {
		msgs = append(msgs, string(c.Type)+"="+c.Message)
	}
	return fmt.Sprintf("%d|%d|%d|%s|%v|%v|%v", s.IPCount, s.RangesInGCP, s.RuleCount, s.AddressGroup, s.UnmatchedSources, s.Warnings, msgs)
}
