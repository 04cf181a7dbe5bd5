package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/chaos/harness"
)

const (
	ns       = "default"
	project  = "chaos-project"
	denyAll  = "deny(403)"
	basePrio = 1000
)

// rule is the desired state of one rule.
type rule struct {
	action      string
	description string
	ranges      []string
}

// policy is the desired state of one policy: inline rules (owned by the
// SecurityPolicy) or SecurityPolicyRule objects, never both.
type policy struct {
	name    string
	inline  bool
	rules   map[int64]rule
	deleted bool
}

// workload is the desired state of every policy.
type workload struct {
	policies []*policy
}

func newWorkload(policies, rules int) *workload {
	w := &workload{}
	for i := range policies {
		p := &policy{name: fmt.Sprintf("chaos-%d", i), inline: i%2 == 0, rules: map[int64]rule{}}
		for j := range rules {
			p.rules[int64(basePrio+10*j)] = rule{action: "allow", description: "v1",
				ranges: []string{fmt.Sprintf("10.%d.%d.0/24", i, j), fmt.Sprintf("192.0.2.%d/32", j%250)}}
		}
		w.policies = append(w.policies, p)
	}
	return w
}

// edit changes the ranges of every third rule, deletes every fifth (offset
// 1) and adds a rule for every seventh; it returns how many rules changed.
func (w *workload) edit() int {
	n := 0
	for i, p := range w.policies {
		if p.deleted {
			continue
		}
		for _, prio := range slices.Sorted(maps.Keys(p.rules)) {
			j := int(prio-basePrio) / 10
			switch {
			case j%3 == 0:
				p.rules[prio] = rule{action: "allow", description: "v2",
					ranges: []string{fmt.Sprintf("10.%d.%d.128/25", i, j), fmt.Sprintf("198.51.100.%d/32", j%250)}}
			case j%5 == 1:
				delete(p.rules, prio)
			case j%7 == 0:
				p.rules[int64(5000+j)] = rule{action: "deny(404)", description: "added", ranges: []string{fmt.Sprintf("203.0.113.%d/32", j%250)}}
			default:
				continue
			}
			n++
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func (r rule) params() v1beta1.RuleParameters {
	rs := make([]v1beta1.IPRange, len(r.ranges))
	for i, s := range r.ranges {
		rs[i] = v1beta1.IPRange(s)
	}
	return v1beta1.RuleParameters{Action: r.action, Description: ptr(r.description),
		Match: &v1beta1.RuleMatcher{VersionedExpr: ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: rs}}}
}

func ruleName(p string, prio int64) string { return fmt.Sprintf("%s-%d", p, prio) }

// forProvider is the SecurityPolicy's spec for p.
func (p *policy) forProvider() v1beta1.SecurityPolicyParameters {
	fp := v1beta1.SecurityPolicyParameters{Description: ptr("chaos"), DefaultRule: &v1beta1.RuleParameters{Action: denyAll}}
	if p.inline {
		fp.Rules = []v1beta1.PolicyRule{}
		for _, prio := range slices.Sorted(maps.Keys(p.rules)) {
			fp.Rules = append(fp.Rules, v1beta1.PolicyRule{Priority: prio, RuleParameters: p.rules[prio].params()})
		}
	}
	return fp
}

// apply makes the API server hold w: it creates, updates and deletes
// SecurityPolicies and SecurityPolicyRules. It returns the objects deleted.
func (w *workload) apply(ctx context.Context, t *testing.T, e *harness.Env) []client.Object {
	t.Helper()
	var deleted []client.Object
	for _, p := range w.policies {
		sp := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name}}
		exists := e.Admin.Get(ctx, client.ObjectKeyFromObject(sp), sp) == nil
		switch {
		case p.deleted && exists:
			if err := e.Admin.Delete(ctx, sp); err != nil {
				t.Fatalf("delete %s: %v", p.name, err)
			}
			deleted = append(deleted, sp)
		case p.deleted:
		case !exists:
			sp.Spec.ForProvider = p.forProvider()
			if err := e.Admin.Create(ctx, sp); err != nil {
				t.Fatalf("create %s: %v", p.name, err)
			}
		default:
			if err := e.Update(ctx, sp, func() { sp.Spec.ForProvider = p.forProvider() }); err != nil {
				t.Fatalf("update %s: %v", p.name, err)
			}
		}
		if p.inline {
			continue
		}
		deleted = append(deleted, w.applyRules(ctx, t, e, p)...)
	}
	return deleted
}

func (w *workload) applyRules(ctx context.Context, t *testing.T, e *harness.Env, p *policy) []client.Object {
	t.Helper()
	l := &v1beta1.SecurityPolicyRuleList{}
	if err := e.Admin.List(ctx, l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	have := map[int64]*v1beta1.SecurityPolicyRule{}
	for i := range l.Items {
		r := &l.Items[i]
		if r.Spec.ForProvider.SecurityPolicy != nil && *r.Spec.ForProvider.SecurityPolicy == p.name && r.DeletionTimestamp == nil {
			have[r.Spec.ForProvider.Priority] = r
		}
	}
	var deleted []client.Object
	for prio, r := range have {
		if _, ok := p.rules[prio]; !ok || p.deleted {
			if err := e.Admin.Delete(ctx, r); err != nil {
				t.Fatalf("delete %s: %v", r.Name, err)
			}
			deleted = append(deleted, r)
		}
	}
	if p.deleted {
		return deleted
	}
	for _, prio := range slices.Sorted(maps.Keys(p.rules)) {
		want := p.rules[prio].params()
		if r, ok := have[prio]; ok {
			if err := e.Update(ctx, r, func() { r.Spec.ForProvider.RuleParameters = want }); err != nil {
				t.Fatalf("update %s: %v", r.Name, err)
			}
			continue
		}
		r := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ruleName(p.name, prio)},
			Spec: v1beta1.SecurityPolicyRuleSpec{ForProvider: v1beta1.SecurityPolicyRuleParameters{
				SecurityPolicy: ptr(p.name), Priority: prio, RuleParameters: want}}}
		if err := e.Admin.Create(ctx, r); err != nil {
			t.Fatalf("create %s: %v", r.Name, err)
		}
	}
	return deleted
}

// objects returns every object the workload wants to exist.
func (w *workload) objects() []client.Object {
	var out []client.Object
	for _, p := range w.policies {
		if p.deleted {
			continue
		}
		out = append(out, &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name}})
		if p.inline {
			continue
		}
		for prio := range p.rules {
			out = append(out, &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ruleName(p.name, prio)}})
		}
	}
	return out
}

func policyPath(name string) string {
	return fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, name)
}

// gcpDiff compares the emulator's whole state with w: exactly the wanted
// policies, each with exactly the wanted rules (keyed by priority) and a
// deny default. It returns one line per difference.
func (w *workload) gcpDiff(state map[string]map[string]any) []string {
	var diffs []string
	want := map[string]*policy{}
	for _, p := range w.policies {
		if !p.deleted {
			want[policyPath(p.name)] = p
		}
	}
	for path := range state {
		if want[path] == nil {
			diffs = append(diffs, "unexpected (leaked or duplicate) policy "+path)
		}
	}
	for path, p := range want {
		sp, ok := state[path]
		if !ok {
			diffs = append(diffs, "missing policy "+path)
			continue
		}
		got := rulesByPriority(sp)
		wantRules := map[int64]string{v1beta1.DefaultRulePriority: summary(denyAll, "", []string{"*"})}
		for prio, r := range p.rules {
			wantRules[prio] = summary(r.action, r.description, r.ranges)
		}
		for prio, g := range got {
			if prio == v1beta1.DefaultRulePriority {
				// The description of the default rule is GCP's; compare the rest.
				g = summary(actionOf(sp, prio), "", []string{"*"})
			}
			if wr, ok := wantRules[prio]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: rule outside the spec at %d: %s", p.name, prio, g))
			} else if wr != g {
				diffs = append(diffs, fmt.Sprintf("%s: rule %d is %s, want %s", p.name, prio, g, wr))
			}
		}
		for prio, wr := range wantRules {
			if _, ok := got[prio]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: missing rule %d (%s)", p.name, prio, wr))
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

func summary(action, description string, ranges []string) string {
	return fmt.Sprintf("%s %q %s", action, description, strings.Join(ranges, ","))
}

// rulesByPriority summarises the rules of a policy as rendered by the
// emulator's Snapshot.
func rulesByPriority(sp map[string]any) map[int64]string {
	out := map[int64]string{}
	rules, _ := sp["rules"].([]any)
	for _, r := range rules {
		m, _ := r.(map[string]any)
		prio := priorityOf(m)
		desc, _ := m["description"].(string)
		action, _ := m["action"].(string)
		out[prio] = summary(action, desc, rangesOf(m))
	}
	return out
}

func priorityOf(m map[string]any) int64 {
	switch v := m["priority"].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	case string:
		var n int64
		_, _ = fmt.Sscan(v, &n)
		return n
	}
	return -1
}

func rangesOf(m map[string]any) []string {
	match, _ := m["match"].(map[string]any)
	cfg, _ := match["config"].(map[string]any)
	if ss, ok := cfg["srcIpRanges"].([]string); ok {
		return ss
	}
	raw, _ := cfg["srcIpRanges"].([]any)
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		s, _ := r.(string)
		out = append(out, s)
	}
	return out
}

func actionOf(sp map[string]any, prio int64) string {
	rules, _ := sp["rules"].([]any)
	for _, r := range rules {
		m, _ := r.(map[string]any)
		if priorityOf(m) == prio {
			a, _ := m["action"].(string)
			return a
		}
	}
	return ""
}
