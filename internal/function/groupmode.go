package function

// The addressGroup mode: the allowlist's ranges live in a Cloud Armor address group (one for
// IPv4, one for IPv6 when there are IPv6 ranges), which one rule matches with
// evaluateAddressGroup. A range coming or going is then one addItems or removeItems call on
// the group, whatever the number of ranges, instead of a rewrite of a rule of ten.
//
// Switching is make-before-break, in both directions and when the group is renamed: what the
// allowlist switches to is composed beside what it switches from, and what it switches from
// goes only once what it switches to is Ready in GCP (a group holding every range, and the rule
// that uses it; or every range rule). A project on Cloud Armor Standard, where GCP refuses rules
// that use address groups, therefore keeps its range rules, and the IPAllowlist says why.

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
)

// Modes of an IPAllowlist.
const (
	ModeRules        = "rules"
	ModeAddressGroup = "addressGroup"
)

const (
	// groupPrefix prefixes the composition resource name of an address group: group-<GCP name>.
	groupPrefix = "group-"
	// groupRulePrefix prefixes the composition resource name of the rule that uses a group:
	// group-rule-<GCP name of its IPv4 group>.
	groupRulePrefix = "group-rule-"
	// ipv6Suffix names the IPv6 group beside the IPv4 one.
	ipv6Suffix = "-ipv6"
	// DefaultGroupCapacity is the capacity of a group whose spec sets none.
	DefaultGroupCapacity = 1000
	// ReasonSwitching is the Current condition's reason while the allowlist moves between
	// rules and an address group, or between groups.
	ReasonSwitching = "Switching"
)

// GroupSpec is spec.addressGroup: the group of an allowlist in addressGroup mode.
type GroupSpec struct {
	// Name of the GCP address group holding the IPv4 ranges; the IPv6 ranges go to
	// <name>-ipv6.
	Name string `json:"name"`
	// Capacity of each group, fixed when GCP creates it.
	Capacity int64 `json:"capacity,omitempty"`
}

// capacity is the group's capacity, or its default.
func (g *GroupSpec) capacity() int64 {
	if g == nil || g.Capacity == 0 {
		return DefaultGroupCapacity
	}
	return g.Capacity
}

// groupMode reports whether s keeps its ranges in an address group.
func (s Spec) groupMode() bool { return s.Mode == ModeAddressGroup }

// composedGroups is what the allowlist's address groups and the rules that use them look like
// in the observed composed resources.
type composedGroups struct {
	// groups are the observed groups, by GCP name.
	groups map[string]resource.ObservedComposed
	// rules are the observed rules that use a group, by GCP name of their IPv4 group.
	rules map[string]resource.ObservedComposed
}

func readComposedGroups(observed map[resource.Name]resource.ObservedComposed) composedGroups {
	out := composedGroups{groups: map[string]resource.ObservedComposed{}, rules: map[string]resource.ObservedComposed{}}
	for name, oc := range observed {
		if oc.Resource == nil {
			continue
		}
		switch n := string(name); {
		case strings.HasPrefix(n, groupRulePrefix):
			out.rules[strings.TrimPrefix(n, groupRulePrefix)] = oc
		case strings.HasPrefix(n, groupPrefix):
			out.groups[strings.TrimPrefix(n, groupPrefix)] = oc
		}
	}
	return out
}

// priorities are the priorities the observed group rules hold.
func (c composedGroups) priorities() map[int64]bool {
	out := map[int64]bool{}
	for _, oc := range c.rules {
		var p int64
		if err := oc.Resource.GetValueInto("spec.forProvider.priority", &p); err == nil {
			out[p] = true
		}
	}
	return out
}

// keep re-emits the observed groups and group rules (but those named in except) as they are.
// A group is kept while a rule that uses it is, even when it is not asked for, so that it is
// deleted only once no rule of this allowlist references it.
func (c composedGroups) keep(desired map[resource.Name]*resource.DesiredComposed, keepRules bool, except ...string) {
	if keepRules {
		for name, oc := range c.rules {
			if !slices.Contains(except, name) {
				desired[resource.Name(groupRulePrefix+name)] = &resource.DesiredComposed{Resource: unchanged(oc)}
			}
		}
	}
	for name, oc := range c.groups {
		base := strings.TrimSuffix(name, ipv6Suffix)
		if slices.Contains(except, base) {
			continue
		}
		if _, used := c.rules[base]; keepRules || used {
			desired[resource.Name(groupPrefix+name)] = &resource.DesiredComposed{Resource: unchanged(oc)}
		}
	}
}

// unchanged is a desired resource equal to what was composed before: its apiVersion, kind,
// name, annotations and spec.
func unchanged(oc resource.ObservedComposed) *composed.Unstructured {
	u := composed.New()
	u.SetAPIVersion(oc.Resource.GetAPIVersion())
	u.SetKind(oc.Resource.GetKind())
	u.SetName(oc.Resource.GetName())
	if a := oc.Resource.GetAnnotations(); len(a) > 0 {
		u.SetAnnotations(a)
	}
	if spec, ok := oc.Resource.Object["spec"]; ok {
		u.Object["spec"] = spec
	}
	return u
}

// readyInGCP reports whether an observed managed resource is Ready, and Synced on its current
// spec: the provider has made GCP what the spec says.
func readyInGCP(oc resource.ObservedComposed) bool {
	if oc.Resource == nil {
		return false
	}
	var gen int64
	_ = oc.Resource.GetValueInto("metadata.generation", &gen)
	synced := oc.Resource.GetCondition(xpv2.TypeSynced)
	return oc.Resource.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue &&
		synced.Status == corev1.ConditionTrue && synced.ObservedGeneration >= gen
}

// groupHolds reports whether an observed group is in GCP holding want items.
func groupHolds(oc resource.ObservedComposed, ok bool, want int) bool {
	if !ok || !readyInGCP(oc) {
		return false
	}
	var n int
	_ = oc.Resource.GetValueInto("status.atProvider.itemCount", &n)
	return n == want
}

// splitFamilies splits ranges into IPv4 and IPv6.
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

// groupOutcome is what composing in addressGroup mode decided.
type groupOutcome struct {
	// current is set once the group holds every range and its rule is in GCP, or when there
	// is nothing the group replaces; what the allowlist switched from is then gone from the
	// desired resources.
	current bool
	// priority of the rule that uses the group; 0 with rule unset while the group is being
	// created.
	priority int64
	rule     bool
	// message says what the allowlist waits for while not current.
	message string
}

// composition is what the allowlist's ranges were made into.
type composition struct {
	// rules are the range rules to compose (rules mode, or held while switching to a group).
	rules []Rule
	// group is what composing in addressGroup mode decided.
	group groupOutcome
	// switching says what a switch between rules and address groups waits for; "" when none
	// is under way.
	switching string
}

// compose adds to desired what holds ranges in spec's mode, and what it replaces until the
// replacement is in GCP.
func compose(s Spec, xrNamespace, xrName string, ranges []netip.Prefix, observed map[resource.Name]resource.ObservedComposed, held map[int64][]netip.Prefix, desired map[resource.Name]*resource.DesiredComposed) (composition, error) {
	if s.groupMode() {
		add, g, err := composeGroupMode(s, xrNamespace, xrName, ranges, observed, held)
		if err != nil {
			return composition{}, err
		}
		maps.Copy(desired, add)
		c := composition{group: g}
		if !g.current {
			c.switching = g.message
			c.rules = heldRules(held)
		}
		return c, nil
	}
	rules, err := AssignAround(ranges, held, s.PriorityRange, readComposedGroups(observed).priorities())
	if err != nil {
		return composition{}, err
	}
	return composition{rules: rules, switching: rulesReplaceGroups(observed, rules, desired)}, nil
}

// composeGroupMode returns the allowlist's groups and the rule that uses them and, until they
// are current, what the allowlist had: the observed range rules (held, by priority) and other
// groups with their rules.
func composeGroupMode(s Spec, xrNamespace, xrName string, ranges []netip.Prefix, observed map[resource.Name]resource.ObservedComposed, held map[int64][]netip.Prefix) (map[resource.Name]*resource.DesiredComposed, groupOutcome, error) {
	desired := map[resource.Name]*resource.DesiredComposed{}
	g := s.AddressGroup
	v4, v6 := splitFamilies(ranges)
	capacity := g.capacity()
	if int64(len(v4)) > capacity || int64(len(v6)) > capacity {
		return nil, groupOutcome{}, fmt.Errorf("%d IPv4 and %d IPv6 ranges do not fit address groups of capacity %d: GCP fixes a group's capacity at creation, so set a new spec.addressGroup.name with a larger capacity (the allowlist moves to the new group without a gap)", len(v4), len(v6), capacity)
	}
	cg := readComposedGroups(observed)
	v4Name, v6Name := g.Name, g.Name+ipv6Suffix
	desired[resource.Name(groupPrefix+v4Name)] = &resource.DesiredComposed{Resource: GroupResource(s, xrNamespace, xrName, v4Name, "IPV4", v4)}
	v6Observed, hasV6 := cg.groups[v6Name]
	if len(v6) > 0 || hasV6 {
		desired[resource.Name(groupPrefix+v6Name)] = &resource.DesiredComposed{Resource: GroupResource(s, xrNamespace, xrName, v6Name, "IPV6", v6)}
	}

	out := groupOutcome{}
	v4Observed, hasV4 := cg.groups[v4Name]
	ruleObserved, hasRule := cg.rules[v4Name]
	if hasRule {
		_ = ruleObserved.Resource.GetValueInto("spec.forProvider.priority", &out.priority)
		out.rule = true
	} else {
		// The rule takes a priority no rule of the allowlist holds. It is checked before
		// the group is created, so that an allowlist without room creates nothing.
		taken := cg.priorities()
		for p := range held {
			taken[p] = true
		}
		prio, ok := freePriority(s.PriorityRange, taken)
		if !ok {
			return nil, groupOutcome{}, fmt.Errorf("priorityRange %d-%d has no free priority for the rule that uses address group %s while the current rules stay in place: widen the range by one", s.PriorityRange.First, s.PriorityRange.Last, v4Name)
		}
		// The rule comes once its group is in GCP, which refuses a rule naming a group it
		// does not have.
		out.priority, out.rule = prio, hasV4 && readyInGCP(v4Observed)
	}
	if !out.rule {
		// Ready groups allow nothing until their rule exists: the allowlist is not Ready.
		desired[resource.Name(groupPrefix+v4Name)].Ready = resource.ReadyFalse
	}
	var expression string
	if out.rule {
		groups := []string{v4Name}
		if hasV6 && readyInGCP(v6Observed) {
			groups = append(groups, v6Name)
		}
		rule := GroupRuleResource(s, xrNamespace, xrName, out.priority, groups)
		expression, _ = rule.GetString(ruleExpression)
		desired[resource.Name(groupRulePrefix+v4Name)] = &resource.DesiredComposed{Resource: rule}
	}

	v6Done := len(v6) == 0 && !hasV6 || groupHolds(v6Observed, hasV6, len(v6))
	switch {
	case !groupHolds(v4Observed, hasV4, len(v4)) || !v6Done:
		out.message = fmt.Sprintf("address group %s is being created or filled with %d IPv4 and %d IPv6 ranges", v4Name, len(v4), len(v6))
	case !hasRule || !readyInGCP(ruleObserved):
		out.message = fmt.Sprintf("the rule at priority %d that uses address group %s is not in GCP yet", out.priority, v4Name)
		if hasRule {
			if c := ruleObserved.Resource.GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse && c.Message != "" {
				out.message += ": " + c.Message
			}
		}
	case !sameExpression(ruleObserved, expression):
		// The IPv6 group joins the rule once GCP has it: until GCP has the rule that
		// uses both, the IPv6 ranges are allowed only by what the group replaces.
		out.message = fmt.Sprintf("the rule at priority %d is being changed to use address group %s", out.priority, v6Name)
	default:
		out.current = true
	}
	if out.current || !cg.replaces(held, v4Name) {
		// What the allowlist had goes, or there was nothing: range rules are not emitted,
		// other groups' rules neither, and their groups only while such a rule is still
		// observed. A group being filled with nothing to replace is an ordinary update.
		out.current, out.message = true, ""
		cg.keep(desired, false, v4Name)
		return desired, out, nil
	}
	out.message += "; the previous rules stay in place until it is"
	cg.keep(desired, true, v4Name)
	return desired, out, nil
}

// replaces reports whether the allowlist has something that its address group v4Name is to
// replace: range rules (held) or the groups and rule of another name.
func (c composedGroups) replaces(held map[int64][]netip.Prefix, v4Name string) bool {
	if len(held) > 0 {
		return true
	}
	for name := range c.rules {
		if name != v4Name {
			return true
		}
	}
	for name := range c.groups {
		if strings.TrimSuffix(name, ipv6Suffix) != v4Name {
			return true
		}
	}
	return false
}

// rulesReplaceGroups keeps, in rules mode, the groups and group rules an allowlist had until
// every rule it now wants is in GCP. It returns what it waits for, "" when nothing.
func rulesReplaceGroups(observed map[resource.Name]resource.ObservedComposed, rules []Rule, desired map[resource.Name]*resource.DesiredComposed) string {
	cg := readComposedGroups(observed)
	if len(cg.rules)+len(cg.groups) == 0 {
		return ""
	}
	waiting := 0
	for _, r := range rules {
		if oc, ok := observed[resource.Name(rulePrefix+fmt.Sprint(r.Priority))]; !ok || !readyInGCP(oc) || !sameRanges(oc, r.Ranges) {
			waiting++
		}
	}
	if waiting == 0 {
		cg.keep(desired, false)
		return ""
	}
	cg.keep(desired, true)
	return fmt.Sprintf("%d of %d rule(s) are not in GCP yet; the address group rules stay in place until they are", waiting, len(rules))
}

// sameRanges reports whether an observed rule asks for exactly ranges.
func sameRanges(oc resource.ObservedComposed, ranges []netip.Prefix) bool {
	have, err := oc.Resource.GetStringArray("spec.forProvider.match.config.srcIpRanges")
	if err != nil || len(have) != len(ranges) {
		return false
	}
	for i, p := range ranges {
		if have[i] != p.String() {
			return false
		}
	}
	return true
}

// ruleExpression is the field of a SecurityPolicyRule holding its CEL expression.
const ruleExpression = "spec.forProvider.match.expr.expression"

// sameExpression reports whether an observed rule evaluates exactly expression.
func sameExpression(oc resource.ObservedComposed, expression string) bool {
	have, err := oc.Resource.GetString(ruleExpression)
	return err == nil && have == expression
}

// freePriority is the lowest priority of r that taken does not hold.
func freePriority(r PriorityRange, taken map[int64]bool) (int64, bool) {
	for p := r.First; p <= r.Last; p++ {
		if !taken[p] {
			return p, true
		}
	}
	return 0, false
}

// GroupResource is the AddressGroup holding one family's ranges, named <xr>-<GCP name>.
func GroupResource(s Spec, xrNamespace, xrName, gcpName, typ string, ranges []netip.Prefix) *composed.Unstructured {
	items := make([]any, 0, len(ranges))
	for _, p := range ranges {
		items = append(items, p.String())
	}
	location := "global"
	if s.Policy.Region != "" {
		location = s.Policy.Region
	}
	fp := map[string]any{
		"type":        typ,
		"capacity":    s.AddressGroup.capacity(),
		"purpose":     []any{"CLOUD_ARMOR"},
		"location":    location,
		"description": fmt.Sprintf("IPAllowlist %s/%s", xrNamespace, xrName),
		"items":       items,
	}
	if s.Policy.Project != "" {
		fp["project"] = s.Policy.Project
	}
	spec := map[string]any{"forProvider": fp}
	providerConfig(spec, s.ProviderConfigRef)

	u := composed.New()
	u.SetAPIVersion(addressSetAPIVersion)
	u.SetKind("AddressGroup")
	u.SetName(xrName + "-" + gcpName)
	u.SetAnnotations(map[string]string{"crossplane.io/external-name": gcpName})
	u.Object["spec"] = spec
	return u
}

// GroupRuleResource is the rule that allows every address of groups, named
// <xr>-group-<priority>.
func GroupRuleResource(s Spec, xrNamespace, xrName string, priority int64, groups []string) *composed.Unstructured {
	calls := make([]string, 0, len(groups))
	for _, g := range groups {
		calls = append(calls, fmt.Sprintf("evaluateAddressGroup('%s', origin.ip)", g))
	}
	return allowRule(s, xrNamespace, xrName, fmt.Sprintf("%s-group-%d", xrName, priority), priority,
		map[string]any{"expr": map[string]any{"expression": strings.Join(calls, " || ")}})
}
