package securitypolicyallowlist

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestReady(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	composed := xpv2.Condition{Type: v1alpha1.TypeCurrent, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonComposed}
	rule := func(synced corev1.ConditionStatus, since time.Duration) *v1beta1.SecurityPolicyRule {
		r := &v1beta1.SecurityPolicyRule{}
		r.SetName("web-1000")
		r.SetGeneration(1)
		r.SetConditions(xpv2.Available(),
			xpv2.Condition{Type: xpv2.TypeSynced, Status: synced, Reason: "ReconcileError", Message: "412 fingerprint", ObservedGeneration: 1,
				LastTransitionTime: metav1.NewTime(now.Add(-since))})
		return r
	}
	notInGCP := func() *v1beta1.SecurityPolicyRule {
		r := &v1beta1.SecurityPolicyRule{}
		r.SetName("web-1000")
		r.SetGeneration(2)
		r.SetConditions(xpv2.Creating(), xpv2.ReconcileSuccess().WithObservedGeneration(1))
		return r
	}
	allowlist := func(ready *xpv2.Condition) *v1alpha1.SecurityPolicyAllowlist {
		al := &v1alpha1.SecurityPolicyAllowlist{}
		al.SetGeneration(2)
		if ready != nil {
			al.Status.SetConditions(*ready)
		}
		return al
	}
	readyGen := func(gen int64) *xpv2.Condition {
		c := xpv2.Available().WithObservedGeneration(gen)
		return &c
	}
	kept1 := func(r *v1beta1.SecurityPolicyRule) kept {
		return kept{children: children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1000: r}}}
	}
	refused := xpv2.Unavailable().WithMessage("SecurityPolicyRule web-1000: 412 fingerprint")

	cases := map[string]struct {
		reason      string
		al          *v1alpha1.SecurityPolicyAllowlist
		k           kept
		current     xpv2.Condition
		uncovered   bool
		want        xpv2.Condition
		wantRecheck time.Duration
	}{
		"AllInGCP": {
			reason:  "Every object synced and ready: Ready.",
			al:      allowlist(nil),
			k:       kept1(rule(corev1.ConditionTrue, time.Minute)),
			current: composed,
			want:    xpv2.Available(),
		},
		"NotCurrent": {
			reason:  "An allowlist that cannot compose is not Ready, for the same reason.",
			al:      allowlist(readyGen(2)),
			k:       kept1(rule(corev1.ConditionTrue, time.Minute)),
			current: xpv2.Condition{Type: v1alpha1.TypeCurrent, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonCannotCompose, Message: "no"},
			want:    xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonCannotCompose, Message: "no"},
		},
		"RefusedWithinGraceWhileReady": {
			reason:      "A Ready allowlist stays Ready while a refusal is younger than the grace, and looks again when it would count.",
			al:          allowlist(readyGen(2)),
			k:           kept1(rule(corev1.ConditionFalse, 3*time.Second)),
			current:     composed,
			want:        *readyGen(2),
			wantRecheck: refusalGrace - 3*time.Second,
		},
		"RefusedPastGrace": {
			reason:  "A refusal that lasted the grace makes a Ready allowlist not Ready, with GCP's message.",
			al:      allowlist(readyGen(2)),
			k:       kept1(rule(corev1.ConditionFalse, refusalGrace)),
			current: composed,
			want:    refused,
		},
		"RefusedNotYetReady": {
			reason:  "An allowlist that was not Ready shows a refusal at once: there is no state to keep.",
			al:      allowlist(nil),
			k:       kept1(rule(corev1.ConditionFalse, time.Second)),
			current: composed,
			want:    refused,
		},
		"ReadyKeptAcrossGenerations": {
			reason: "A new spec whose Current is True (a read source's new ranges, rules moving make-before-break) keeps Ready " +
				"while its rules reach GCP.",
			al:      allowlist(readyGen(1)),
			k:       kept1(notInGCP()),
			current: composed,
			want:    *readyGen(1),
		},
		"NotReadyYetWaits": {
			reason:  "An allowlist never Ready says how many objects GCP does not hold yet.",
			al:      allowlist(nil),
			k:       kept1(notInGCP()),
			current: composed,
			want:    xpv2.Creating().WithMessage("1 rule(s) or group(s) are not in GCP yet"),
		},
		"NothingListedYet": {
			reason: "The first reconcile creates the rules and lists none: with no object waiting, GCP still holds no allowed range, " +
				"so the allowlist is not Ready (it was, and its policy was attached before any allow rule).",
			al:        allowlist(nil),
			k:         kept{children: children{ranges: map[int64]*v1beta1.SecurityPolicyRule{}}},
			current:   composed,
			uncovered: true,
			want:      xpv2.Creating().WithMessage("GCP does not hold every allowed range yet"),
		},
		"RangeMissingWhileObjectsInGCP": {
			reason:    "Every listed object in GCP is not enough: a range GCP is not confirmed to hold keeps the allowlist from Ready.",
			al:        allowlist(nil),
			k:         kept1(rule(corev1.ConditionTrue, time.Minute)),
			current:   composed,
			uncovered: true,
			want:      xpv2.Creating().WithMessage("GCP does not hold every allowed range yet"),
		},
		"PolicyCreatedNotListed": {
			reason:  "A policy the allowlist just created is not listed yet: not Ready, whatever the rules say.",
			al:      withCreatePolicy(allowlist(nil)),
			k:       kept1(rule(corev1.ConditionTrue, time.Minute)),
			current: composed,
			want:    xpv2.Creating().WithMessage("policy web-allowlist is not in GCP yet"),
		},
		"PolicyInGCP": {
			reason:  "The allowlist's policy in GCP on its spec, and every range: Ready.",
			al:      withCreatePolicy(allowlist(nil)),
			k:       kept{children: kept1(rule(corev1.ConditionTrue, time.Minute)).children, policy: policyInGCP1()},
			current: composed,
			want:    xpv2.Available(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, recheck := ready(tc.al, tc.k, tc.current, !tc.uncovered, now)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s\nready(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantRecheck, recheck); diff != "" {
				t.Errorf("%s\nready(...) recheck: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestFailed(t *testing.T) {
	conflict := kerrors.NewConflict(schema.GroupResource{Group: "cloudarmor.armorplane.io", Resource: "securitypolicyrules"}, "web-1000", errors.New("modified"))
	cases := map[string]struct {
		reason     string
		err        error
		wantSynced corev1.ConditionStatus
	}{
		"ConflictIsNotReported": {
			reason:     "A conflict means the cache was behind: the retry settles it, and a Synced flip would be two events on the composite.",
			err:        errors.Wrap(conflict, "cannot update SecurityPolicyRule web-1000"),
			wantSynced: corev1.ConditionTrue,
		},
		"OtherErrorsAreReported": {
			reason:     "Any other error is the allowlist's Synced=False, with its message.",
			err:        errors.New("cannot create SecurityPolicyRule web-1000: forbidden"),
			wantSynced: corev1.ConditionFalse,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			al := allowlist("rules", nil, 1009, "203.0.113.0/24")
			al.Status.SetConditions(xpv2.ReconcileSuccess())
			g := newGCP(t, false, al)
			got := g.r.failed(context.Background(), al, tc.err)
			if diff := cmp.Diff(tc.err.Error(), got.Error()); diff != "" {
				t.Errorf("%s\nfailed(...) error: -want, +got:\n%s", tc.reason, diff)
			}
			stored := &v1alpha1.SecurityPolicyAllowlist{}
			if err := g.kube.Get(context.Background(), client.ObjectKeyFromObject(al), stored); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSynced, stored.Status.GetCondition(xpv2.TypeSynced).Status); diff != "" {
				t.Errorf("%s\nSynced: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func withCreatePolicy(al *v1alpha1.SecurityPolicyAllowlist) *v1alpha1.SecurityPolicyAllowlist {
	al.Spec.SecurityPolicy = "web-allowlist"
	al.Spec.CreatePolicy = &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"}
	return al
}

// policyInGCP1 is the allowlist's policy at generation 1, in GCP on it.
func policyInGCP1() *v1beta1.SecurityPolicy {
	p := &v1beta1.SecurityPolicy{}
	p.SetName("web-allowlist")
	p.SetGeneration(1)
	p.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(1))
	return p
}
