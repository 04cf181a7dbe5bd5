package addressset

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// MaxSkippedListed bounds status.skipped: the count says how many there are,
// the list names enough of them to act on without growing the object with
// the cluster.
const MaxSkippedListed = 20

// MinShrinkGuarded is the smallest set a shrink is held back for: a set of a
// few addresses halves when one Node of two goes, which is no sign of a
// transient error.
const MinShrinkGuarded = 4

// Collected is what a set's source holds: the selected Nodes, instances,
// Cloud NATs or objects of its namespace.
type Collected struct {
	// Addresses are distinct canonical prefixes, sorted IPv4 first: hosts
	// (/32, /128) of Nodes, instances and NATs, and wider ones too from a
	// namespace source (a ConfigMap may list a /28).
	Addresses []netip.Prefix
	// Nodes is how many Nodes (instances, NATs, objects) were selected.
	Nodes int
	// Skipped are the selected Nodes left out, sorted by name.
	Skipped []v1alpha1.SkippedNode
	// Warnings need someone but leave no address out (a Cloud NAT short
	// of addresses), sorted.
	Warnings []string
}

// Collect gathers the addresses of nodes (already selected by label): every
// ExternalIP, and every InternalIP too when internal is set. A Node with an
// address that does not parse is left out whole, with the reason, and the
// others are kept: one bad Node must not stop the allowlist following the
// rest. IPv4-mapped IPv6 addresses become IPv4 and zones are dropped.
func Collect(nodes []corev1.Node, internal bool) Collected {
	out := newCollector(len(nodes))
	for i := range nodes {
		n := &nodes[i]
		var addrs []netip.Prefix
		var bad []string
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeExternalIP && (!internal || a.Type != corev1.NodeInternalIP) {
				continue
			}
			ip, err := netip.ParseAddr(strings.TrimSpace(a.Address))
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s %q", a.Type, a.Address))
				continue
			}
			ip = ip.Unmap().WithZone("")
			addrs = append(addrs, netip.PrefixFrom(ip, ip.BitLen()))
		}
		switch {
		case len(bad) > 0:
			out.skip(n.Name, "invalid address: "+strings.Join(bad, ", "))
		case len(addrs) == 0 && internal:
			out.skip(n.Name, "no ExternalIP or InternalIP address")
		case len(addrs) == 0:
			out.skip(n.Name, "no ExternalIP address")
		default:
			out.add(addrs)
		}
	}
	return out.done()
}

// collector gathers what Nodes or instances hold into a Collected: every
// address once, and those left out by name.
type collector struct {
	out  Collected
	seen map[netip.Prefix]bool
}

func newCollector(matched int) *collector {
	return &collector{out: Collected{Nodes: matched}, seen: map[netip.Prefix]bool{}}
}

func (c *collector) skip(name, why string) {
	c.out.Skipped = append(c.out.Skipped, v1alpha1.SkippedNode{Name: name, Reason: why})
}

func (c *collector) warn(msg string) {
	c.out.Warnings = append(c.out.Warnings, msg)
}

func (c *collector) add(addrs []netip.Prefix) {
	for _, p := range addrs {
		if !c.seen[p] {
			c.seen[p] = true
			c.out.Addresses = append(c.out.Addresses, p)
		}
	}
}

// done returns the addresses and those left out, sorted.
func (c *collector) done() Collected {
	slices.SortFunc(c.out.Addresses, netip.Prefix.Compare)
	slices.SortFunc(c.out.Skipped, func(a, b v1alpha1.SkippedNode) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(c.out.Warnings)
	return c.out
}

// Decision is what the set publishes after one look at its Nodes.
type Decision struct {
	// Addresses to publish.
	Addresses []string
	// Held is set when a shrink is held back; Addresses are then the
	// published ones plus any the Nodes gained.
	Held *v1alpha1.HeldShrink
	// Peak is the most addresses published within the hold, to keep.
	Peak *v1alpha1.AddressPeak
	// RetryAfter is when a held shrink is due, zero when none is held.
	RetryAfter time.Duration
}

// Decide returns what to publish, given what is published (published,
// peak, held), what the source holds now (current, prefixes of any
// length), the hold and the time. A shrink counts prefixes, not the
// addresses they cover.
//
// A shrink is measured against the peak: the most addresses published
// within the last hold, so Nodes leaving a few at a time (a deletion of
// every Node arrives as many events) count together. When current would
// leave fewer than half of a peak of at least MinShrinkGuarded addresses,
// the shrink is held back (the published addresses stay, new ones are
// added) until it has lasted hold; it ends as soon as enough Nodes come
// back, and a further shrink during the hold keeps the first one's start.
func Decide(published []string, peak *v1alpha1.AddressPeak, held *v1alpha1.HeldShrink, current []netip.Prefix, hold time.Duration, now time.Time) Decision {
	next := make([]string, 0, len(current))
	for _, p := range current {
		next = append(next, p.String())
	}
	if hold <= 0 {
		return Decision{Addresses: next}
	}
	if peak == nil || now.Sub(peak.Since.Time) >= hold || len(published) > peak.Count {
		peak = &v1alpha1.AddressPeak{Count: len(published), Since: metav1.NewTime(now)}
	}
	if peak.Count < MinShrinkGuarded || len(next)*2 >= peak.Count {
		switch {
		case len(next) > peak.Count:
			peak = &v1alpha1.AddressPeak{Count: len(next), Since: metav1.NewTime(now)}
		case len(next) < len(published) && len(published) == peak.Count:
			// Leaving the peak now: the set held it until this moment, so
			// the window starts here, not when the peak was first reached.
			// Otherwise a set stable for longer than the hold would measure
			// a drain's second step against its first instead of the peak.
			peak = &v1alpha1.AddressPeak{Count: peak.Count, Since: metav1.NewTime(now)}
		}
		return Decision{Addresses: next, Peak: peak}
	}
	since := metav1.NewTime(now)
	if held != nil {
		since = held.Since
	}
	if left := since.Add(hold).Sub(now); left > 0 {
		return Decision{
			Addresses:  union(published, current),
			Held:       &v1alpha1.HeldShrink{From: peak.Count, To: len(next), Since: since},
			Peak:       peak,
			RetryAfter: left,
		}
	}
	return Decision{Addresses: next, Peak: &v1alpha1.AddressPeak{Count: len(next), Since: metav1.NewTime(now)}}
}

// union returns published with the addresses of current it lacks, sorted:
// a held shrink keeps what would go, never what has come.
func union(published []string, current []netip.Prefix) []string {
	all := make([]netip.Prefix, 0, len(published)+len(current))
	seen := make(map[netip.Prefix]bool, len(published)+len(current))
	for _, a := range published {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			// Not written by Decide; nothing to keep.
			continue
		}
		seen[p] = true
		all = append(all, p)
	}
	for _, p := range current {
		if !seen[p] {
			seen[p] = true
			all = append(all, p)
		}
	}
	slices.SortFunc(all, netip.Prefix.Compare)
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.String()
	}
	return out
}
