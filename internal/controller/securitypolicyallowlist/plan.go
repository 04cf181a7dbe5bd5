package securitypolicyallowlist

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// ipv6Suffix names the IPv6 group beside the IPv4 one.
const ipv6Suffix = "-ipv6"

// children are the objects an allowlist keeps, as the cache has them.
type children struct {
	// ranges are the rules holding ranges, by priority.
	ranges map[int64]*v1beta1.SecurityPolicyRule
	// groupRules are the rules that use address groups, by GCP name of
	// their IPv4 group.
	groupRules map[string]*v1beta1.SecurityPolicyRule
	// groups are the address groups, by GCP name.
	groups map[string]*v1alpha1.AddressGroup
}

// held are the ranges each range rule asks for, by priority.
func (c children) held() map[int64][]netip.Prefix {
	out := make(map[int64][]netip.Prefix, len(c.ranges))
	for prio, r := range c.ranges {
		out[prio] = ruleRanges(r)
	}
	return out
}

// groupRulePriorities are the priorities the group rules hold.
func (c children) groupRulePriorities() map[int64]bool {
	out := map[int64]bool{}
	for _, r := range c.groupRules {
		out[r.Spec.ForProvider.Priority] = true
	}
	return out
}

// plan is what the allowlist's children should be.
type plan struct {
	// ranges are the range rules wanted; keepRanges keeps the existing ones
	// as they are instead.
	ranges     []iprange.Rule
	keepRanges bool
	// groups are the wanted groups' items, by GCP name.
	groups map[string]groupWant
	// groupRule is the wanted rule that uses the groups; nil when none.
	groupRule *groupRuleWant
	// keepGroupRules and keepGroups name existing ones to keep as they are;
	// every other existing one goes.
	keepGroupRules map[string]bool
	keepGroups     map[string]bool
	// switching says what a switch between rules and groups waits for; ""
	// when none is under way.
	switching string
}

type groupWant struct {
	family string // IPV4 or IPV6
	items  []netip.Prefix
}

type groupRuleWant struct {
	v4Name     string
	priority   int64
	expression string
}

// hold keeps every child as it is.
func hold(c children) plan {
	p := plan{keepRanges: true, keepGroupRules: map[string]bool{}, keepGroups: map[string]bool{}}
	for n := range c.groupRules {
		p.keepGroupRules[n] = true
	}
	for n := range c.groups {
		p.keepGroups[n] = true
	}
	return p
}

// planRules packs ranges into range rules and keeps the groups an allowlist
// had until every range rule is in GCP.
func planRules(s v1alpha1.SecurityPolicyAllowlistSpec, ranges []netip.Prefix, c children) (plan, error) {
	rules, err := iprange.Pack(ranges, c.held(), s.PriorityRange.First, s.PriorityRange.Last, c.groupRulePriorities())
	if err != nil {
		return plan{}, err
	}
	p := plan{ranges: rules, keepGroupRules: map[string]bool{}, keepGroups: map[string]bool{}}
	if len(c.groupRules)+len(c.groups) == 0 {
		return p, nil
	}
	waiting := 0
	for _, r := range rules {
		if have, ok := c.ranges[r.Priority]; !ok || !inGCP(have) || !slices.Equal(ruleRanges(have), r.Ranges) {
			waiting++
		}
	}
	if waiting > 0 {
		for n := range c.groupRules {
			p.keepGroupRules[n] = true
		}
		for n := range c.groups {
			p.keepGroups[n] = true
		}
		// No counts: the message is the IPAllowlist's Current condition (status.go).
		p.switching = "the range rules are not all in GCP yet; the address group rules stay in place until they are"
		return p, nil
	}
	// The group rules go now, each group once no rule uses it.
	keepUsedGroups(p.keepGroups, c, "")
	return p, nil
}

// keepUsedGroups keeps every group of c that a group rule of c still uses,
// but those of except.
func keepUsedGroups(keep map[string]bool, c children, except string) {
	for n := range c.groups {
		base := strings.TrimSuffix(n, ipv6Suffix)
		if _, used := c.groupRules[base]; used && base != except {
			keep[n] = true
		}
	}
}

// planGroups puts ranges into the allowlist's address groups, allowed by one
// rule, and keeps what the allowlist had until the groups and their rule are
// in GCP.
func planGroups(s v1alpha1.SecurityPolicyAllowlistSpec, ranges []netip.Prefix, c children) (plan, error) {
	g := s.AddressGroup
	v4, v6 := splitFamilies(ranges)
	capacity := g.GroupCapacity()
	if int64(len(v4)) > capacity || int64(len(v6)) > capacity {
		return plan{}, fmt.Errorf("%d IPv4 and %d IPv6 ranges do not fit address groups of capacity %d: GCP fixes a group's capacity at creation, so set a new addressGroup.name with a larger capacity (the allowlist moves to the new group without a gap)", len(v4), len(v6), capacity)
	}
	v4Name, v6Name := g.Name, g.Name+ipv6Suffix
	p := plan{groups: map[string]groupWant{v4Name: {family: "IPV4", items: v4}}, keepGroupRules: map[string]bool{}, keepGroups: map[string]bool{}}
	v6Have, hasV6 := c.groups[v6Name]
	if len(v6) > 0 || hasV6 {
		p.groups[v6Name] = groupWant{family: "IPV6", items: v6}
	}

	v4Have, hasV4 := c.groups[v4Name]
	ruleHave, hasRule := c.groupRules[v4Name]
	var priority int64
	withRule := hasRule
	if hasRule {
		priority = ruleHave.Spec.ForProvider.Priority
	} else {
		// The rule takes a priority no rule of the allowlist holds. It is
		// checked before the group is created, so that an allowlist without
		// room creates nothing.
		taken := c.groupRulePriorities()
		for prio := range c.ranges {
			taken[prio] = true
		}
		prio, ok := freePriority(s.PriorityRange, taken)
		if !ok {
			return plan{}, fmt.Errorf("priorityRange %d-%d has no free priority for the rule that uses address group %s while the current rules stay in place: widen the range by one", s.PriorityRange.First, s.PriorityRange.Last, v4Name)
		}
		// The rule comes once its group is in GCP, which refuses a rule
		// naming a group it does not have.
		priority, withRule = prio, hasV4 && inGCP(v4Have)
	}
	var expression string
	if withRule {
		groups := []string{v4Name}
		if hasV6 && inGCP(v6Have) {
			groups = append(groups, v6Name)
		}
		expression = groupExpression(groups)
		p.groupRule = &groupRuleWant{v4Name: v4Name, priority: priority, expression: expression}
	}

	v6Done := len(v6) == 0 && !hasV6 || groupHolds(v6Have, hasV6, len(v6))
	var waiting string
	switch {
	case !groupHolds(v4Have, hasV4, len(v4)) || !v6Done:
		waiting = fmt.Sprintf("address group %s is being created or filled", v4Name)
	case !hasRule || !inGCP(ruleHave):
		waiting = fmt.Sprintf("the rule at priority %d that uses address group %s is not in GCP yet", priority, v4Name)
		if hasRule {
			if sc := ruleHave.GetCondition(xpv2.TypeSynced); sc.Status == corev1.ConditionFalse && sc.Message != "" {
				waiting += ": " + sc.Message
			}
		}
	case ruleExpression(ruleHave) != expression:
		// The IPv6 group joins the rule once GCP has it: until GCP has the
		// rule that uses both, the IPv6 ranges are allowed only by what the
		// group replaces.
		waiting = fmt.Sprintf("the rule at priority %d is being changed to use address group %s", priority, v6Name)
	}
	if waiting == "" || !replaces(c, v4Name) {
		// What the allowlist had goes, or there was nothing: range rules and
		// other groups' rules go, their groups once no rule uses them. A
		// group being filled with nothing to replace is an ordinary update.
		keepUsedGroups(p.keepGroups, c, v4Name)
		p.ranges = nil
		if hasRule {
			p.keepGroupRules[v4Name] = true
		}
		return p, nil
	}
	p.switching = waiting + "; the previous rules stay in place until it is"
	p.keepRanges = true
	for n := range c.groupRules {
		p.keepGroupRules[n] = true
	}
	for n := range c.groups {
		p.keepGroups[n] = true
	}
	return p, nil
}

// replaces reports whether the allowlist has something that its address group
// v4Name is to replace: range rules, or the groups and rules of another name.
func replaces(c children, v4Name string) bool {
	if len(c.ranges) > 0 {
		return true
	}
	for n := range c.groupRules {
		if n != v4Name {
			return true
		}
	}
	for n := range c.groups {
		if strings.TrimSuffix(n, ipv6Suffix) != v4Name {
			return true
		}
	}
	return false
}

func splitFamilies(ranges []netip.Prefix) (v4, v6 []netip.Prefix) {
	for _, p := range ranges {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	return v4, v6
}

func freePriority(r v1alpha1.AllowlistPriorityRange, taken map[int64]bool) (int64, bool) {
	for p := r.First; p <= r.Last; p++ {
		if !taken[p] {
			return p, true
		}
	}
	return 0, false
}

func groupExpression(groups []string) string {
	calls := make([]string, 0, len(groups))
	for _, g := range groups {
		calls = append(calls, fmt.Sprintf("evaluateAddressGroup('%s', origin.ip)", g))
	}
	return strings.Join(calls, " || ")
}

// inGCP reports whether a managed resource is Ready, and Synced on its
// current spec: the provider has made GCP what the spec says.
func inGCP(mg resource.Managed) bool {
	if mg == nil {
		return false
	}
	synced := mg.GetCondition(xpv2.TypeSynced)
	return mg.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue &&
		synced.Status == corev1.ConditionTrue && synced.ObservedGeneration >= mg.GetGeneration()
}

// groupHolds reports whether a group is in GCP holding want items.
func groupHolds(g *v1alpha1.AddressGroup, ok bool, want int) bool {
	return ok && inGCP(g) && g.Status.AtProvider.ItemCount == want
}

// ruleRanges are the ranges a range rule asks for; those it cannot parse are
// left out, so the rule is rewritten without them.
func ruleRanges(r *v1beta1.SecurityPolicyRule) []netip.Prefix {
	m := r.Spec.ForProvider.Match
	if m == nil || m.Config == nil {
		return nil
	}
	out := make([]netip.Prefix, 0, len(m.Config.SrcIpRanges))
	for _, s := range m.Config.SrcIpRanges {
		if p, err := iprange.Parse(string(s)); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, netip.Prefix.Compare)
	return out
}

// ruleExpression is a group rule's expression.
func ruleExpression(r *v1beta1.SecurityPolicyRule) string {
	if r == nil || r.Spec.ForProvider.Match == nil || r.Spec.ForProvider.Match.Expr == nil {
		return ""
	}
	return r.Spec.ForProvider.Match.Expr.Expression
}
