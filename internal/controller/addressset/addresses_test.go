package addressset

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

func node(name string, addrs ...corev1.NodeAddress) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func ext(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: a}
}
func in(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a}
}
func host(a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeHostName, Address: a}
}

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

func TestCollect(t *testing.T) {
	cases := map[string]struct {
		nodes    []corev1.Node
		internal bool
		want     Collected
	}{
		"NoNodes": {
			want: Collected{},
		},
		"ExternalOnlyByDefault": {
			nodes: []corev1.Node{node("a", ext("203.0.113.7"), in("10.0.0.7"), host("a.example"))},
			want:  Collected{Addresses: prefixes("203.0.113.7/32"), Nodes: 1},
		},
		"InternalWhenAsked": {
			nodes:    []corev1.Node{node("a", ext("203.0.113.7"), in("10.0.0.7"))},
			internal: true,
			want:     Collected{Addresses: prefixes("10.0.0.7/32", "203.0.113.7/32"), Nodes: 1},
		},
		"DuplicatesOnceSortedIPv4First": {
			nodes: []corev1.Node{
				node("b", ext("2001:db8::1"), ext("198.51.100.2")),
				node("a", ext("198.51.100.2"), ext("192.0.2.1")),
			},
			want: Collected{Addresses: prefixes("192.0.2.1/32", "198.51.100.2/32", "2001:db8::1/128"), Nodes: 2},
		},
		"MappedAndZonedNormalised": {
			nodes: []corev1.Node{node("a", ext("::ffff:192.0.2.9"), ext("fe80::1%eth0"), ext(" 2001:DB8::A "))},
			want:  Collected{Addresses: prefixes("192.0.2.9/32", "2001:db8::a/128", "fe80::1/128"), Nodes: 1},
		},
		"MalformedNodeSkippedOthersKept": {
			nodes: []corev1.Node{
				node("good", ext("192.0.2.1")),
				node("bad", ext("192.0.2.300"), ext("192.0.2.2")),
			},
			want: Collected{
				Addresses: prefixes("192.0.2.1/32"),
				Nodes:     2,
				Skipped:   []v1alpha1.SkippedNode{{Name: "bad", Reason: `invalid address: ExternalIP "192.0.2.300"`}},
			},
		},
		"NodeWithoutAddressSkipped": {
			nodes: []corev1.Node{node("z", in("10.0.0.1")), node("y"), node("x", ext("192.0.2.1"))},
			want: Collected{
				Addresses: prefixes("192.0.2.1/32"),
				Nodes:     3,
				Skipped: []v1alpha1.SkippedNode{
					{Name: "y", Reason: "no ExternalIP address"},
					{Name: "z", Reason: "no ExternalIP address"},
				},
			},
		},
		"NodeWithoutAnyAddressSkippedWithInternal": {
			nodes:    []corev1.Node{node("y", host("y"))},
			internal: true,
			want: Collected{
				Nodes:   1,
				Skipped: []v1alpha1.SkippedNode{{Name: "y", Reason: "no ExternalIP or InternalIP address"}},
			},
		},
		"InvalidInternalIgnoredWhenNotAsked": {
			nodes: []corev1.Node{node("a", ext("192.0.2.1"), in("not-an-ip"))},
			want:  Collected{Addresses: prefixes("192.0.2.1/32"), Nodes: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Collect(tc.nodes, tc.internal)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Collect(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	four := []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32"}
	hold := 2 * time.Minute

	cases := map[string]struct {
		reason    string
		published []string
		peak      *v1alpha1.AddressPeak
		held      *v1alpha1.HeldShrink
		current   []netip.Prefix
		hold      time.Duration
		want      Decision
	}{
		"FirstLook": {
			reason:  "A new set publishes what it finds and records its peak.",
			current: prefixes("192.0.2.1/32"),
			hold:    hold,
			want:    Decision{Addresses: []string{"192.0.2.1/32"}, Peak: &v1alpha1.AddressPeak{Count: 1, Since: at(0)}},
		},
		"GrowthRaisesPeak": {
			reason:    "Growth is applied at once and raises the peak.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32", "192.0.2.5/32"),
			hold:      hold,
			want:      Decision{Addresses: append(append([]string{}, four...), "192.0.2.5/32"), Peak: &v1alpha1.AddressPeak{Count: 5, Since: at(0)}},
		},
		"HalfRemovedAppliedAtOnce": {
			reason:    "Keeping half of the peak is no sudden shrink; the peak stays.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32"),
			hold:      hold,
			want:      Decision{Addresses: []string{"192.0.2.1/32", "192.0.2.2/32"}, Peak: &v1alpha1.AddressPeak{Count: 4, Since: at(0)}},
		},
		"SmallSetShrinksAtOnce": {
			reason:    "A set under MinShrinkGuarded addresses follows every shrink.",
			published: []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"},
			peak:      &v1alpha1.AddressPeak{Count: 3, Since: at(time.Minute)},
			hold:      hold,
			want:      Decision{Addresses: []string{}, Peak: &v1alpha1.AddressPeak{Count: 3, Since: at(0)}},
		},
		"EmptiedIsHeld": {
			reason:    "Losing every address at once is held back for the hold.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			hold:      hold,
			want: Decision{
				Addresses:  four,
				Held:       &v1alpha1.HeldShrink{From: 4, To: 0, Since: at(0)},
				Peak:       &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
				RetryAfter: hold,
			},
		},
		"StepwiseShrinkMeasuredAgainstPeak": {
			reason:    "Nodes leaving a few at a time count together: 8 were published within the hold, 2 remain of the 3 published.",
			published: []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"},
			peak:      &v1alpha1.AddressPeak{Count: 8, Since: at(10 * time.Second)},
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32"),
			hold:      hold,
			want: Decision{
				Addresses:  []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"},
				Held:       &v1alpha1.HeldShrink{From: 8, To: 2, Since: at(0)},
				Peak:       &v1alpha1.AddressPeak{Count: 8, Since: at(10 * time.Second)},
				RetryAfter: hold,
			},
		},
		"LeavingThePeakRenewsIt": {
			reason:    "A set that held its peak until now measures the hold from now: the next step of a drain is measured against the peak.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(hold - time.Second)},
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32"),
			hold:      hold,
			want:      Decision{Addresses: []string{"192.0.2.1/32", "192.0.2.2/32"}, Peak: &v1alpha1.AddressPeak{Count: 4, Since: at(0)}},
		},
		"OldPeakForgotten": {
			reason:    "A peak older than the hold no longer counts: the published set is the new peak.",
			published: []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"},
			peak:      &v1alpha1.AddressPeak{Count: 8, Since: at(hold)},
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32"),
			hold:      hold,
			want:      Decision{Addresses: []string{"192.0.2.1/32", "192.0.2.2/32"}, Peak: &v1alpha1.AddressPeak{Count: 3, Since: at(0)}},
		},
		"HeldKeepsItsStartAndLetsNewcomersIn": {
			reason:    "During a hold the published addresses stay and new ones are added.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: at(30 * time.Second)},
			current:   prefixes("198.51.100.1/32"),
			hold:      hold,
			want: Decision{
				Addresses:  append(append([]string{}, four...), "198.51.100.1/32"),
				Held:       &v1alpha1.HeldShrink{From: 4, To: 1, Since: at(30 * time.Second)},
				Peak:       &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
				RetryAfter: hold - 30*time.Second,
			},
		},
		"HoldOverApplies": {
			reason:    "A shrink that lasted the hold is applied and the peak reset.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: at(hold)},
			hold:      hold,
			want:      Decision{Addresses: []string{}, Peak: &v1alpha1.AddressPeak{Count: 0, Since: at(0)}},
		},
		"NodesBackEndsHold": {
			reason:    "Nodes coming back end the hold.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: at(30 * time.Second)},
			current:   prefixes(four...),
			hold:      hold,
			want:      Decision{Addresses: four, Peak: &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)}},
		},
		"NoHoldAppliesAtOnce": {
			reason:    "shrinkHoldSeconds 0 follows every shrink and keeps no peak.",
			published: four,
			peak:      &v1alpha1.AddressPeak{Count: 4, Since: at(time.Minute)},
			hold:      0,
			want:      Decision{Addresses: []string{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Decide(tc.published, tc.peak, tc.held, tc.current, tc.hold, now)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
