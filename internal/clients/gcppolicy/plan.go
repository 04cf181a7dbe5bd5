package gcppolicy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// Claims maps a priority to the SecurityPolicyRule object (namespace/name)
// that claims it in the same GCP policy.
type Claims map[int64]string

// A Conflict is an inline rule the policy does not write because its priority
// is not the policy's to write.
type Conflict struct {
	// Priority of the inline rule.
	Priority int64
	// Claimant is the SecurityPolicyRule (namespace/name) that owns the
	// priority, or "" for a conflict without one (such as a duplicate).
	Claimant string
	// Message explains the conflict to the user.
	Message string
}

// A RulePlan is what the SecurityPolicy controller must do to the non-default
// rules of a policy.
//
// Callers apply Add, then Widen, then Patch, then Remove. That order never
// weakens an allowlist mid-way: a range that some desired allow rule still
// allows is never missing from GCP between two steps. When an allowed range
// moves from one priority to another, the rule at its new priority holds it
// before the old one lets it go (even when rules swap ranges in a cycle,
// through Widen), and a rule that is not wanted any more is removed last. An
// error stops the sequence; the next reconcile plans again from what GCP
// then holds, and every intermediate state is safe.
type RulePlan struct {
	// Add lists inline rules missing in GCP (addRule), by priority.
	Add []*compute.SecurityPolicyRule
	// Widen lists temporary versions of rules in Patch that would drop a
	// range another desired allow rule takes over: the desired rule plus the
	// ranges it keeps until every patch has run (patchRule; each is followed
	// by its final version in Patch).
	Widen []*compute.SecurityPolicyRule
	// Patch lists inline rules that differ in GCP. Each is a full
	// replacement (patchRule with RuleUpdateMask). Patches that drop no
	// range still allowed elsewhere come first, by priority; patches that
	// drop such ranges come last, by priority.
	Patch []*compute.SecurityPolicyRule
	// Remove lists non-default priorities the policy owns that the spec no
	// longer lists (removeRule).
	Remove []int64
	// Conflicts are inline rules that are reported and never written.
	Conflicts []Conflict
}

// PlanRules decides what the SecurityPolicy controller writes to the
// non-default rules of observed.
//
// With spec.forProvider.rules absent (inlineSet false) the plan is empty: the
// policy leaves every non-default rule to SecurityPolicyRule objects, other
// tools and the console. With rules present, even as [], the policy owns
// every non-default priority except those in claims: it adds and patches the
// inline rules and removes every other unclaimed non-default rule. An inline
// rule at a claimed priority is a Conflict, never written, so the two
// controllers never fight. The default rule (priority 2147483647) is never
// planned: DefaultRuleUpToDate and patchRule handle it.
func PlanRules(inline []v1beta1.PolicyRule, inlineSet bool, observed *compute.SecurityPolicy, claims Claims) RulePlan {
	var plan RulePlan
	if !inlineSet {
		return plan
	}
	wanted := map[int64]bool{}
	for _, r := range sortedInline(inline) {
		if c, ok := conflict(r.Priority, wanted, claims); ok {
			plan.Conflicts = append(plan.Conflicts, c)
			continue
		}
		wanted[r.Priority] = true
		desired := GenerateRule(r.Priority, r.RuleParameters)
		o := FindRule(observed, r.Priority)
		if o == nil {
			plan.Add = append(plan.Add, desired)
			continue
		}
		if ok, _ := RuleUpToDate(desired, o); !ok {
			plan.Patch = append(plan.Patch, desired)
		}
	}
	plan.Remove = unwanted(observed, wanted, claims)
	plan.Widen, plan.Patch = makeBeforeBreak(plan.Add, plan.Patch, observed)
	return plan
}

// makeBeforeBreak orders patches so that no range a desired allow rule
// allows disappears from GCP between two steps. A patch that drops such a
// range (it moves to another priority) runs after every other patch, once a
// rule that allows the range exists; when the rule stays a basic allow rule
// and the union fits GCP's 10 ranges, it is first widened (desired ranges
// plus the ones it drops): without that, rules that hand ranges on in a
// cycle would each lose theirs before the next one takes them. When neither
// helps (a cycle of full rules) the lowest priority goes first.
func makeBeforeBreak(add, patch []*compute.SecurityPolicyRule, observed *compute.SecurityPolicy) (widen, ordered []*compute.SecurityPolicyRule) {
	// Ranges the plan's new and patched rules allow once it has run. Rules
	// the plan leaves alone keep allowing theirs throughout.
	allowed := map[string]bool{}
	for _, rs := range [][]*compute.SecurityPolicyRule{add, patch} {
		for _, r := range rs {
			for _, rg := range allowedRanges(r) {
				allowed[CanonicalRange(rg)] = true
			}
		}
	}
	// state is GCP's rules as each step leaves them.
	state := map[int64]*compute.SecurityPolicyRule{}
	if observed != nil {
		for _, r := range observed.Rules {
			if r != nil {
				state[r.Priority] = r
			}
		}
	}
	for _, r := range add {
		state[r.Priority] = r
	}
	// Rules the plan does not patch hold their ranges through every patch
	// (removals come last), so a range one of them holds is never at risk
	// and needs no widening. Leaving such ranges out keeps widened rules
	// within GCP's 10 ranges when an earlier, interrupted plan left a rule
	// widened and the spec has moved on since.
	stable := stableRanges(state, patch)
	var narrowing []*compute.SecurityPolicyRule
	for _, p := range patch {
		dropped := without(droppedRanges(state[p.Priority], p, allowed), stable)
		if len(dropped) == 0 {
			ordered = append(ordered, p)
			continue
		}
		narrowing = append(narrowing, p)
		// Only an enforced rule holds a range: widening a rule that is
		// moving to preview would keep nothing allowed.
		if kept := allowedRanges(p); isBasicAllow(p) && !p.Preview && len(kept)+len(dropped) <= maxSrcIPRanges {
			w := *p
			m := *p.Match
			m.Config = &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: append(slices.Clone(kept), dropped...)}
			w.Match = &m
			widen = append(widen, &w)
			state[p.Priority] = &w
		}
	}
	for _, p := range ordered {
		state[p.Priority] = p
	}
	for len(narrowing) > 0 {
		next := 0
		for i, p := range narrowing {
			if heldElsewhere(state, p.Priority, droppedRanges(state[p.Priority], p, allowed)) {
				next = i
				break
			}
		}
		p := narrowing[next]
		ordered = append(ordered, p)
		state[p.Priority] = p
		narrowing = slices.Delete(narrowing, next, next+1)
	}
	return widen, ordered
}

// droppedRanges returns the ranges from that to no longer allows and some
// desired rule (in allowed) does.
func droppedRanges(from, to *compute.SecurityPolicyRule, allowed map[string]bool) []string {
	keeps := map[string]bool{}
	for _, rg := range allowedRanges(to) {
		keeps[CanonicalRange(rg)] = true
	}
	var dropped []string
	for _, rg := range allowedRanges(from) {
		if c := CanonicalRange(rg); allowed[c] && !keeps[c] {
			dropped = append(dropped, rg)
			keeps[c] = true
		}
	}
	return dropped
}

// stableRanges returns the ranges allowed by rules in state that patch does
// not change.
func stableRanges(state map[int64]*compute.SecurityPolicyRule, patch []*compute.SecurityPolicyRule) map[string]bool {
	patched := map[int64]bool{}
	for _, p := range patch {
		patched[p.Priority] = true
	}
	held := map[string]bool{}
	for prio, r := range state {
		if patched[prio] {
			continue
		}
		for _, rg := range allowedRanges(r) {
			held[CanonicalRange(rg)] = true
		}
	}
	return held
}

// without returns ranges minus those in held.
func without(ranges []string, held map[string]bool) []string {
	var out []string
	for _, rg := range ranges {
		if !held[CanonicalRange(rg)] {
			out = append(out, rg)
		}
	}
	return out
}

// heldElsewhere reports whether a rule other than the one at priority allows
// every range.
func heldElsewhere(state map[int64]*compute.SecurityPolicyRule, priority int64, ranges []string) bool {
	held := map[string]bool{}
	for prio, r := range state {
		if prio == priority {
			continue
		}
		for _, rg := range allowedRanges(r) {
			held[CanonicalRange(rg)] = true
		}
	}
	for _, rg := range ranges {
		if !held[CanonicalRange(rg)] {
			return false
		}
	}
	return true
}

// maxSrcIPRanges is GCP's limit of srcIpRanges per rule.
const maxSrcIPRanges = 10

// allowedRanges returns the srcIpRanges r allows: none unless r is an allow
// rule with a basic match that is enforced (not in preview).
func allowedRanges(r *compute.SecurityPolicyRule) []string {
	if !isBasicAllow(r) || r.Preview {
		return nil
	}
	return r.Match.Config.SrcIpRanges
}

func isBasicAllow(r *compute.SecurityPolicyRule) bool {
	return r != nil && r.Action == v1beta1.ActionAllow && r.Match != nil && r.Match.Expr == nil && r.Match.Config != nil
}

// sortedInline returns the inline rules sorted by priority; a stable sort
// keeps the first of two rules with the same priority first.
func sortedInline(inline []v1beta1.PolicyRule) []v1beta1.PolicyRule {
	out := slices.Clone(inline)
	slices.SortStableFunc(out, func(a, b v1beta1.PolicyRule) int { return cmp.Compare(a.Priority, b.Priority) })
	return out
}

// conflict reports why the inline rule at priority may not be written, if it
// may not.
func conflict(priority int64, wanted map[int64]bool, claims Claims) (Conflict, bool) {
	if by, ok := claims[priority]; ok {
		return Conflict{Priority: priority, Claimant: by,
			Message: fmt.Sprintf("inline rule at priority %d is ignored: SecurityPolicyRule %s claims it", priority, by)}, true
	}
	if priority == v1beta1.DefaultRulePriority {
		return Conflict{Priority: priority,
			Message: fmt.Sprintf("inline rule at priority %d is ignored: set the default rule through defaultRule", priority)}, true
	}
	if wanted[priority] {
		return Conflict{Priority: priority,
			Message: fmt.Sprintf("inline rule at priority %d is ignored: an earlier inline rule has the same priority", priority)}, true
	}
	return Conflict{}, false
}

// unwanted returns the sorted non-default priorities in observed that are
// neither wanted nor claimed.
func unwanted(observed *compute.SecurityPolicy, wanted map[int64]bool, claims Claims) []int64 {
	if observed == nil {
		return nil
	}
	var out []int64
	for _, r := range observed.Rules {
		if r == nil || r.Priority == v1beta1.DefaultRulePriority || wanted[r.Priority] {
			continue
		}
		if _, claimed := claims[r.Priority]; claimed {
			continue
		}
		out = append(out, r.Priority)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Empty reports whether the plan writes nothing. Conflicts alone leave it
// empty: they are reported, not acted upon.
func (p RulePlan) Empty() bool {
	return len(p.Add) == 0 && len(p.Patch) == 0 && len(p.Remove) == 0
}

// Describe returns a one-line summary of the plan for an ExternalObservation
// Diff, e.g. "add rules at priorities [0 1000]; remove rules at priorities
// [3000]". It is "" for a plan with nothing to write or report.
func (p RulePlan) Describe() string {
	var parts []string
	if len(p.Add) > 0 {
		parts = append(parts, fmt.Sprintf("add rules at priorities %v", priorities(p.Add)))
	}
	if len(p.Patch) > 0 {
		parts = append(parts, fmt.Sprintf("patch rules at priorities %v", priorities(p.Patch)))
	}
	if len(p.Remove) > 0 {
		parts = append(parts, fmt.Sprintf("remove rules at priorities %v", p.Remove))
	}
	for _, c := range p.Conflicts {
		parts = append(parts, c.Message)
	}
	return strings.Join(parts, "; ")
}

func priorities(rs []*compute.SecurityPolicyRule) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Priority
	}
	return out
}
