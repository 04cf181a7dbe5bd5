package securitypolicyallowlist

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// What GCP holds is judged by content, never by counts or by which objects
// exist: a rule or group counts the ranges of its spec only once its provider
// has made GCP what that spec says (inGCP: Ready, and Synced on that very
// generation, which the provider sets only after GCP answered the write, or a
// read of GCP found it up to date). Objects the allowlist creates in this
// reconcile are not listed yet, so they count nothing.

// confirmed are the ranges GCP holds in the rules and groups that p keeps.
// A range rule p rewrites counts only the ranges both its spec and p give it:
// the others are about to leave it. A group rule counts the items of the
// groups it evaluates, on the same terms.
func confirmed(c children, p plan) []netip.Prefix {
	var out []netip.Prefix
	planned := map[int64][]netip.Prefix{}
	for _, r := range p.ranges {
		planned[r.Priority] = r.Ranges
	}
	for prio, have := range c.ranges {
		want, ok := planned[prio]
		switch {
		case !inGCP(have):
			continue
		case ok:
			out = append(out, shared(ruleRanges(have), want)...)
		case p.keepRanges:
			out = append(out, ruleRanges(have)...)
		}
	}
	for name, have := range c.groupRules {
		keep := p.keepGroupRules[name] || (p.groupRule != nil && p.groupRule.v4Name == name)
		if !keep || !inGCP(have) {
			continue
		}
		for _, g := range evaluated(ruleExpression(have)) {
			out = append(out, groupConfirmed(c, p, g)...)
		}
	}
	return iprange.Minimal(out)
}

// groupConfirmed are the items GCP holds in group name that p keeps.
func groupConfirmed(c children, p plan, name string) []netip.Prefix {
	have, ok := c.groups[name]
	if !ok || !inGCP(have) {
		return nil
	}
	held := prefixes(have.Spec.ForProvider.Items)
	if w, wanted := p.groups[name]; wanted {
		return shared(held, w.items)
	}
	if p.keepGroups[name] {
		return held
	}
	return nil
}

// uncovered are the ranges of want that no range of held contains.
func uncovered(want, held []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, w := range want {
		if !slices.ContainsFunc(held, func(h netip.Prefix) bool { return contains(h, w) }) {
			out = append(out, w)
		}
	}
	return out
}

// removable reports whether a rule holding ranges may leave GCP now: every
// wanted address it allows is confirmed elsewhere (held), be it a range of
// want it allows or the part of a wider wanted range it holds. A rule that
// allows nothing wanted goes at once.
func removable(ranges, want, held []netip.Prefix) bool {
	for _, r := range ranges {
		for _, w := range want {
			if !r.Overlaps(w) {
				continue
			}
			// Two overlapping ranges: the narrower lies in the wider.
			both := r
			if w.Bits() > r.Bits() {
				both = w
			}
			if !slices.ContainsFunc(held, func(h netip.Prefix) bool { return contains(h, both) }) {
				return false
			}
		}
	}
	return true
}

// allowedBy are the ranges a rule of the allowlist allows, as its spec says:
// a range rule's ranges, or the items of the groups a group rule evaluates.
func allowedBy(c children, r *v1beta1.SecurityPolicyRule) []netip.Prefix {
	if e := ruleExpression(r); e != "" {
		var out []netip.Prefix
		for _, g := range evaluated(e) {
			if have, ok := c.groups[g]; ok {
				out = append(out, prefixes(have.Spec.ForProvider.Items)...)
			}
		}
		return out
	}
	return ruleRanges(r)
}

// removals are the range and group rules that p drops and that may leave GCP
// now, and the ranges GCP is confirmed to hold once they are gone. A rule
// whose wanted ranges are not confirmed elsewhere stays, and counts, until
// they are: make before break, whatever made the rule unwanted (a new
// priority range, a mode switch, a wider range replacing it).
func removals(c children, p plan, want []netip.Prefix) (gone []resource.Managed, held []netip.Prefix) {
	held = confirmed(c, p)
	var stay []netip.Prefix
	// The groups of a group rule that stays stay with it.
	used := map[string]bool{}
	wanted := map[int64]bool{}
	for _, r := range p.ranges {
		wanted[r.Priority] = true
	}
	for prio, have := range c.ranges {
		if p.keepRanges || wanted[prio] {
			continue
		}
		if removable(ruleRanges(have), want, held) {
			gone = append(gone, have)
		} else if inGCP(have) {
			stay = append(stay, ruleRanges(have)...)
		}
	}
	for name, have := range c.groupRules {
		if p.keepGroupRules[name] || (p.groupRule != nil && p.groupRule.v4Name == name) {
			continue
		}
		if removable(allowedBy(c, have), want, held) {
			gone = append(gone, have)
		} else if inGCP(have) {
			for _, g := range evaluated(ruleExpression(have)) {
				used[g] = true
				if g, ok := c.groups[g]; ok && inGCP(g) {
					stay = append(stay, prefixes(g.Spec.ForProvider.Items)...)
				}
			}
		}
	}
	for name, have := range c.groups {
		if _, want := p.groups[name]; !want && !p.keepGroups[name] && !used[name] {
			gone = append(gone, have)
		}
	}
	return gone, iprange.Minimal(append(held, stay...))
}

// evaluated are the groups a group rule's expression evaluates.
func evaluated(expression string) []string {
	var out []string
	for _, call := range strings.Split(expression, "||") {
		call = strings.TrimSpace(call)
		name, ok := strings.CutPrefix(call, "evaluateAddressGroup('")
		if !ok {
			continue
		}
		if i := strings.Index(name, "'"); i > 0 {
			out = append(out, name[:i])
		}
	}
	return out
}

// contains reports whether range outer holds every address of inner.
func contains(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// shared are the ranges of have that want holds too.
func shared(have, want []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range have {
		if slices.Contains(want, h) {
			out = append(out, h)
		}
	}
	return out
}

// prefixes parses items, leaving out those it cannot: they hold nothing.
func prefixes(items []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(items))
	for _, s := range items {
		if p, err := iprange.Parse(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}
