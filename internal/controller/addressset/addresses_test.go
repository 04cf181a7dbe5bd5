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
	earlier := metav1.NewTime(now.Add(-30 * time.Second))
	four := []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32"}
	hold := 2 * time.Minute

	cases := map[string]struct {
		published []string
		held      *v1alpha1.HeldShrink
		current   []netip.Prefix
		hold      time.Duration
		want      Decision
	}{
		"FirstLook": {
			current: prefixes("192.0.2.1/32"),
			hold:    hold,
			want:    Decision{Addresses: []string{"192.0.2.1/32"}},
		},
		"GrowthAppliedAtOnce": {
			published: four,
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32", "192.0.2.4/32", "192.0.2.5/32"),
			hold:      hold,
			want:      Decision{Addresses: append(append([]string{}, four...), "192.0.2.5/32")},
		},
		"HalfRemovedAppliedAtOnce": {
			published: four,
			current:   prefixes("192.0.2.1/32", "192.0.2.2/32"),
			hold:      hold,
			want:      Decision{Addresses: []string{"192.0.2.1/32", "192.0.2.2/32"}},
		},
		"SmallSetShrinksAtOnce": {
			published: []string{"192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"},
			hold:      hold,
			want:      Decision{Addresses: []string{}},
		},
		"EmptiedIsHeld": {
			published: four,
			hold:      hold,
			want: Decision{
				Addresses:  four,
				Held:       &v1alpha1.HeldShrink{From: 4, To: 0, Since: metav1.NewTime(now)},
				RetryAfter: hold,
			},
		},
		"HeldKeepsItsStartAndLetsNewcomersIn": {
			published: four,
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: earlier},
			current:   prefixes("198.51.100.1/32"),
			hold:      hold,
			want: Decision{
				Addresses:  append(append([]string{}, four...), "198.51.100.1/32"),
				Held:       &v1alpha1.HeldShrink{From: 4, To: 1, Since: earlier},
				RetryAfter: hold - 30*time.Second,
			},
		},
		"HoldOverApplies": {
			published: four,
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: metav1.NewTime(now.Add(-hold))},
			hold:      hold,
			want:      Decision{Addresses: []string{}},
		},
		"NodesBackEndsHold": {
			published: four,
			held:      &v1alpha1.HeldShrink{From: 4, To: 0, Since: earlier},
			current:   prefixes(four...),
			hold:      hold,
			want:      Decision{Addresses: four},
		},
		"NoHoldAppliesAtOnce": {
			published: four,
			hold:      0,
			want:      Decision{Addresses: []string{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Decide(tc.published, tc.held, tc.current, tc.hold, now)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Decide(...): -want, +got:\n%s", diff)
			}
		})
	}
}
