// Package iprange parses source IP ranges, removes the ones other ranges
// already cover, and packs them into allow rules of at most ten ranges.
//
// Packing is stable without state of its own: it takes the rules as they are
// (priority -> ranges) and keeps every range that is still wanted in the rule
// that holds it; new ranges fill the holes of existing rules first, lowest
// priority first, and only then open a rule at the lowest free priority. So
// one address replaced changes one rule, one added or removed changes at most
// one rule, and every other rule keeps its content and priority. A rule left
// without a range is dropped, never written empty.
package iprange

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// MaxPerRule is Cloud Armor's limit of source ranges in one basic
// (SRC_IPS_V1) match.
const MaxPerRule = 10

// Parse parses a CIDR or a bare IP address (made a /32 or /128) into its
// canonical form. A CIDR with host bits set is refused rather than silently
// widened or narrowed.
func Parse(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a valid CIDR", s)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set: did you mean %s?", s, m)
	}
	return p, nil
}

// Minimal returns ranges sorted (IPv4 first, then by address, then by
// length) without duplicates and without any range inside another: the
// wider range allows it already, and the rules hold fewer entries. It
// reorders ranges in place.
func Minimal(ranges []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ranges, netip.Prefix.Compare)
	// Sorted by address then length, a range's container comes before it,
	// and the ranges kept so far do not overlap, so only the last one kept
	// can contain the next.
	out := ranges[:0]
	for _, p := range ranges {
		if n := len(out); n > 0 && out[n-1].Bits() <= p.Bits() && out[n-1].Contains(p.Addr()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Rule is one allow rule's ranges at its priority.
type Rule struct {
	Priority int64
	Ranges   []netip.Prefix
}

// Pack places ranges into rules at priorities first..last, keeping each range
// that a current rule (priority -> ranges) holds in that rule, and leaving the
// priorities in taken free (rules that stay in place beside the packed ones).
// It fails when the ranges do not fit.
func Pack(ranges []netip.Prefix, current map[int64][]netip.Prefix, first, last int64, taken map[int64]bool) ([]Rule, error) {
	slots := last - first + 1
	for p := range taken {
		if p >= first && p <= last {
			slots--
		}
	}
	if need := (int64(len(ranges)) + MaxPerRule - 1) / MaxPerRule; need > slots {
		room := fmt.Sprintf("reserves only %d", slots)
		if slots < last-first+1 {
			room = fmt.Sprintf("has only %d free beside the rules that stay in place", slots)
		}
		return nil, fmt.Errorf("%d source ranges need %d rules of %d, but priorityRange %d-%d %s: widen the range or remove sources",
			len(ranges), need, MaxPerRule, first, last, room)
	}
	want := make(map[netip.Prefix]bool, len(ranges))
	for _, p := range ranges {
		want[p] = true
	}

	// Keep what current rules hold, lowest priority first so that a range
	// found in two rules (never written by us, but possible by hand) stays in
	// the first.
	prios := make([]int64, 0, len(current))
	for p := range current {
		if p >= first && p <= last {
			prios = append(prios, p)
		}
	}
	slices.Sort(prios)
	placed := map[netip.Prefix]bool{}
	rules := map[int64][]netip.Prefix{}
	for _, prio := range prios {
		for _, p := range current[prio] {
			if want[p] && !placed[p] && len(rules[prio]) < MaxPerRule {
				placed[p] = true
				rules[prio] = append(rules[prio], p)
			}
		}
	}

	// New ranges, in order: holes of kept rules first, then new rules at free
	// priorities.
	var fresh []netip.Prefix
	for _, p := range ranges {
		if !placed[p] {
			fresh = append(fresh, p)
		}
	}
	for _, prio := range prios {
		for len(fresh) > 0 && len(rules[prio]) > 0 && len(rules[prio]) < MaxPerRule {
			rules[prio] = append(rules[prio], fresh[0])
			fresh = fresh[1:]
		}
	}
	for prio := first; prio <= last && len(fresh) > 0; prio++ {
		if len(rules[prio]) > 0 || taken[prio] {
			continue
		}
		n := min(len(fresh), MaxPerRule)
		rules[prio] = fresh[:n]
		fresh = fresh[n:]
	}

	out := make([]Rule, 0, len(rules))
	for prio, rs := range rules {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, netip.Prefix.Compare)
		out = append(out, Rule{Priority: prio, Ranges: rs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out, nil
}
