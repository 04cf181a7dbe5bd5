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

// allowed are the ranges the range rules and address groups ask for now.
func (c children) allowed() []netip.Prefix {
	var out []netip.Prefix
	for _, r := range c.ranges {
		out = append(out, ruleRanges(r)...)
	}
	for _, g := range c.groups {
		out = append(out, prefixes(g.Spec.ForProvider.Items)...)
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
	// as they are instead. waitRules are the priorities of wanted rules
	// that wait for the rest of a burst (batcher) and are not written yet.
	ranges     []iprange.Rule
	keepRanges bool
	waitRules  map[int64]bool
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

// newPlan returns a plan that keeps nothing; the range rules, groups and
// group rule it wants are set by the caller.
func newPlan() plan {
	return plan{keepGroupRules: map[string]bool{}, keepGroups: map[string]bool{}}
}

// keepEveryGroup keeps every group rule and group of c as it is, besides
// what p wants.
func (p *plan) keepEveryGroup(c children) {
	for n := range c.groupRules {
		p.keepGroupRules[n] = true
	}
	for n := range c.groups {
		p.keepGroups[n] = true
	}
}

// hold keeps every child as it is.
func hold(c children) plan {
	p := newPlan()
	p.keepRanges = true
	p.keepEveryGroup(c)
	return p
}

// planRules packs ranges into range rules and keeps the groups an allowlist
// had until every range rule is in GCP.
func planRules(s v1alpha1.SecurityPolicyAllowlistSpec, ranges []netip.Prefix, c children) (plan, error) {
	rules, err := iprange.Pack(ranges, c.held(), s.PriorityRange.First, s.PriorityRange.Last, c.groupRulePriorities())
	if err != nil {
		return plan{}, err
	}
	p := newPlan()
	p.ranges = rules
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
		p.keepEveryGroup(c)
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
	p := newPlan()
	p.groups = map[string]groupWant{v4Name: {family: "IPV4", items: v4}}
	if _, hasV6 := c.groups[v6Name]; len(v6) > 0 || hasV6 {
		p.groups[v6Name] = groupWant{family: "IPV6", items: v6}
	}
	priority, err := groupRulePriority(s.PriorityRange, c, v4Name)
	if err != nil {
		return plan{}, err
	}
	p.groupRule = wantGroupRule(c, v4Name, v6Name, priority)

	waiting := groupsWaiting(c, p, v4Name, v6Name, priority)
	if waiting == "" || !replaces(c, v4Name) {
		// What the allowlist had goes, or there was nothing: range rules and
		// other groups' rules go, their groups once no rule uses them. A
		// group being filled with nothing to replace is an ordinary update.
		keepUsedGroups(p.keepGroups, c, v4Name)
		if _, hasRule := c.groupRules[v4Name]; hasRule {
			p.keepGroupRules[v4Name] = true
		}
		return p, nil
	}
	p.switching = waiting + "; the previous rules stay in place until it is"
	p.keepRanges = true
	p.keepEveryGroup(c)
	return p, nil
}

// groupRulePriority is the priority of the rule that uses address group
// v4Name: the one it has, else one no rule of the allowlist holds. It is
// chosen before the group is created, so that an allowlist without room
// creates nothing.
func groupRulePriority(r v1alpha1.AllowlistPriorityRange, c children, v4Name string) (int64, error) {
	if have, ok := c.groupRules[v4Name]; ok {
		return have.Spec.ForProvider.Priority, nil
	}
	taken := c.groupRulePriorities()
	for prio := range c.ranges {
		taken[prio] = true
	}
	prio, ok := freePriority(r, taken)
	if !ok {
		return 0, fmt.Errorf("priorityRange %d-%d has no free priority for the rule that uses address group %s while the current rules stay in place: widen the range by one", r.First, r.Last, v4Name)
	}
	return prio, nil
}

// wantGroupRule is the rule that uses the groups, or nil while a new rule
// would name an IPv4 group GCP does not have yet (GCP refuses it). The IPv6
// group joins once GCP has it.
func wantGroupRule(c children, v4Name, v6Name string, priority int64) *groupRuleWant {
	_, hasRule := c.groupRules[v4Name]
	v4Have, hasV4 := c.groups[v4Name]
	if !hasRule && !(hasV4 && inGCP(v4Have)) {
		return nil
	}
	groups := []string{v4Name}
	if v6Have, hasV6 := c.groups[v6Name]; hasV6 && inGCP(v6Have) {
		groups = append(groups, v6Name)
	}
	return &groupRuleWant{v4Name: v4Name, priority: priority, expression: groupExpression(groups)}
}

// groupsWaiting says what the groups p wants and their rule wait for before
// they can replace what the allowlist had; "" when nothing.
func groupsWaiting(c children, p plan, v4Name, v6Name string, priority int64) string {
	v4Have, hasV4 := c.groups[v4Name]
	v6Have, hasV6 := c.groups[v6Name]
	v6Want := p.groups[v6Name].items
	v6Done := len(v6Want) == 0 && !hasV6 || groupHolds(v6Have, hasV6, v6Want)
	ruleHave, hasRule := c.groupRules[v4Name]
	switch {
	case !groupHolds(v4Have, hasV4, p.groups[v4Name].items) || !v6Done:
		return fmt.Sprintf("address group %s is being created or filled", v4Name)
	case !hasRule || !inGCP(ruleHave):
		waiting := fmt.Sprintf("the rule at priority %d that uses address group %s is not in GCP yet", priority, v4Name)
		if hasRule {
			if sc := ruleHave.GetCondition(xpv2.TypeSynced); sc.Status == corev1.ConditionFalse && sc.Message != "" {
				waiting += ": " + sc.Message
			}
		}
		return waiting
	case ruleExpression(ruleHave) != p.groupRule.expression:
		// Until GCP has the rule that uses both groups, the IPv6 ranges are
		// allowed only by what the groups replace.
		return fmt.Sprintf("the rule at priority %d is being changed to use address group %s", priority, v6Name)
	}
	return ""
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

// groupHolds reports whether a group is in GCP holding exactly the items
// want: judged by the items, not their count, since a group that held another
// set of the same size would pass a count, and the plan is made before this
// reconcile writes the group.
func groupHolds(g *v1alpha1.AddressGroup, ok bool, want []netip.Prefix) bool {
	if !ok || !inGCP(g) {
		return false
	}
	have := iprange.Minimal(prefixes(g.Spec.ForProvider.Items))
	return slices.Equal(have, iprange.Minimal(slices.Clone(want)))
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
