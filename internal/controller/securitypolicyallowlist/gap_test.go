package securitypolicyallowlist

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// attachable reports whether the allowlist says what a composition waits
// for before it attaches the policy to a backend: Ready on its current spec,
// every range in GCP.
func attachable(al *v1alpha1.SecurityPolicyAllowlist) bool {
	st := al.Status
	return st.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && st.ObservedGeneration == al.GetGeneration() &&
		st.RangesInGCP == st.IPCount
}

// lacking are the ranges of want GCP does not allow now.
func (g *gcp) lacking(want []string) []string {
	allowed := g.allowed()
	var out []string
	for _, w := range want {
		if !slices.Contains(allowed, w) {
			out = append(out, w)
		}
	}
	return out
}

// seed puts o in the cluster as one of al's objects, in GCP.
func (g *gcp) seed(o resource.Managed) {
	g.t.Helper()
	ctx := context.Background()
	if err := g.kube.Create(ctx, o); err != nil {
		g.t.Fatal(err)
	}
	o.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(o.GetGeneration()))
	if ag, ok := o.(*v1alpha1.AddressGroup); ok {
		ag.Status.AtProvider.ItemCount = len(ag.Spec.ForProvider.Items)
	}
	if err := g.kube.Status().Update(ctx, o); err != nil {
		g.t.Fatal(err)
	}
	g.accepted[o.GetName()] = o.GetResourceVersion()
	g.inGCP[o.GetName()] = o.DeepCopyObject().(client.Object)
}

// TestNeverLiveWithoutAllows drives the allowlist's reconciler against a GCP
// that takes one step to hold what an object's spec says, and checks after
// every step that a policy a backend could name (the allowlist says it may be
// attached, or it is attached already) allows every range the spec wants.
func TestNeverLiveWithoutAllows(t *testing.T) {
	thirtyFive := ranges(35)
	web := &v1alpha1.AllowlistAddressGroup{Name: "web", Capacity: 100}
	withPolicy := func(al *v1alpha1.SecurityPolicyAllowlist) *v1alpha1.SecurityPolicyAllowlist {
		al.Spec.CreatePolicy = &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"}
		return al
	}
	cases := map[string]struct {
		reason string
		// from is the allowlist already in GCP, and live; nil when the
		// allowlist is new.
		from *v1alpha1.SecurityPolicyAllowlist
		// seed adds objects to GCP before the change to al.
		seed  func(g *gcp, al *v1alpha1.SecurityPolicyAllowlist)
		to    *v1alpha1.SecurityPolicyAllowlist
		steps int
		// wantInGCP are the objects GCP holds at the end, by name.
		wantInGCP []string
	}{
		"CreateRules": {
			reason:    "A new allowlist of 35 ranges in an existing policy is attachable only once its four rules are in GCP.",
			to:        allowlist(v1alpha1.AllowlistModeRules, nil, 1009, thirtyFive...),
			steps:     4,
			wantInGCP: []string{"web-1000", "web-1001", "web-1002", "web-1003"},
		},
		"CreateRulesAndPolicy": {
			reason:    "A new allowlist that creates its deny policy is attachable only once the policy and its rules are in GCP.",
			to:        withPolicy(allowlist(v1alpha1.AllowlistModeRules, nil, 1009, thirtyFive...)),
			steps:     5,
			wantInGCP: []string{"web-1000", "web-1001", "web-1002", "web-1003", "web-allowlist"},
		},
		"CreateGroup": {
			reason:    "A new allowlist in mode addressGroup is attachable only once its group and the rule that uses it are in GCP.",
			to:        allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, thirtyFive...),
			steps:     5,
			wantInGCP: []string{"web-group-1000", "web-web"},
		},
		"PriorityRangeMove": {
			reason: "Moving the priority range makes the new rules, and drops the old only once GCP holds the new: " +
				"it used to delete them in the pass that created the new ones.",
			from:      allowlist(v1alpha1.AllowlistModeRules, nil, 1009, thirtyFive...),
			to:        moved(allowlist(v1alpha1.AllowlistModeRules, nil, 1009, thirtyFive...), 2000, 2009),
			steps:     5,
			wantInGCP: []string{"web-2000", "web-2001", "web-2002", "web-2003"},
		},
		"SwitchToGroupHoldingAnOlderSetOfTheSameSize": {
			reason: "A group in GCP that holds another set of as many items does not hold the ranges: " +
				"the range rules stay until the group holds these very items.",
			from: allowlist(v1alpha1.AllowlistModeRules, nil, 1009, thirtyFive[:12]...),
			seed: func(g *gcp, al *v1alpha1.SecurityPolicyAllowlist) {
				group := allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009)
				g.seed(addressGroup(al, "web", groupWant{family: "IPV4", items: prefixes(thirtyFive[20:32])}))
				g.seed(groupRule(group, &groupRuleWant{v4Name: "web", priority: 1005, expression: groupExpression([]string{"web"})}))
			},
			to:        allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, thirtyFive[:12]...),
			steps:     5,
			wantInGCP: []string{"web-group-1005", "web-web"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := sorted(tc.to.Spec.Sources[0].CIDRs)
			start := tc.to
			if tc.from != nil {
				start = tc.from
			}
			g := newGCP(t, true, start)
			g.r.pacer = pace.New(0, 0, 0)
			live := false
			if tc.from != nil {
				for range 4 {
					g.step(tc.from)
				}
				if l := g.lacking(want); len(l) > 0 {
					t.Fatalf("%s\nbefore the change, GCP lacks %v", tc.reason, l)
				}
				live = true // attached: every step from now on must allow every range
				if tc.seed != nil {
					tc.seed(g, g.allowlist(tc.from))
				}
			}
			for i := range tc.steps {
				g.step(tc.to)
				live = live || attachable(g.allowlist(tc.to))
				if l := g.lacking(want); live && len(l) > 0 {
					t.Errorf("%s\nstep %d: the policy may be attached, but GCP lacks %d wanted range(s): %v", tc.reason, i, len(l), l)
				}
			}
			if !attachable(g.allowlist(tc.to)) {
				st := g.allowlist(tc.to).Status
				t.Errorf("%s\nat the end: not attachable: Ready %v, %d of %d ranges in GCP", tc.reason, st.GetCondition(xpv2.TypeReady), st.RangesInGCP, st.IPCount)
			}
			if diff := cmp.Diff(tc.wantInGCP, g.names()); diff != "" {
				t.Errorf("%s\nobjects in GCP at the end: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func moved(al *v1alpha1.SecurityPolicyAllowlist, first, last int64) *v1alpha1.SecurityPolicyAllowlist {
	al.Spec.PriorityRange = v1alpha1.AllowlistPriorityRange{First: first, Last: last}
	return al
}

// TestRemovals: which rules and groups may leave GCP now, judged by the
// ranges GCP is confirmed to hold elsewhere.
func TestRemovals(t *testing.T) {
	al := allowlist(v1alpha1.AllowlistModeRules, nil, 1009)
	inGCPRule := func(prio int64, cidrs ...string) *v1beta1.SecurityPolicyRule {
		r := rangeRule(al, ruleOf(prio, cidrs...))
		r.SetGeneration(1)
		r.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(1))
		return r
	}
	notInGCP := func(r *v1beta1.SecurityPolicyRule) *v1beta1.SecurityPolicyRule {
		r.SetGeneration(2)
		return r
	}
	a, b, wide := "198.51.100.1/32", "198.51.100.2/32", "198.51.100.0/24"
	type want struct {
		Gone []string
		Held []string
	}
	cases := map[string]struct {
		reason string
		c      children
		p      plan
		want   []string
		out    want
	}{
		"NothingListed": {
			reason: "Objects not listed yet hold nothing.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{}},
			p:      planOf(ruleOf(1000, a, b)),
			want:   []string{a, b},
		},
		"NewRuleNotInGCPKeepsOld": {
			reason: "A rule at the new priority not in GCP yet keeps the old one, which still counts.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1000: inGCPRule(1000, a, b), 2000: notInGCP(inGCPRule(2000, a, b))}},
			p:      planOf(ruleOf(2000, a, b)),
			want:   []string{a, b},
			out:    want{Held: []string{a, b}},
		},
		"NewRuleInGCPOldGoes": {
			reason: "Once GCP holds the new rule on its spec the old one goes.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1000: inGCPRule(1000, a, b), 2000: inGCPRule(2000, a, b)}},
			p:      planOf(ruleOf(2000, a, b)),
			want:   []string{a, b},
			out:    want{Gone: []string{"web-1000"}, Held: []string{a, b}},
		},
		"RewrittenRuleCountsWhatStays": {
			reason: "A rule the plan rewrites counts only the ranges it keeps: the one leaving it does not hold up another rule's removal.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1000: inGCPRule(1000, a, b), 1001: inGCPRule(1001, b)}},
			p:      planOf(ruleOf(1000, a)),
			want:   []string{a, b},
			out:    want{Held: []string{a, b}},
		},
		"UnwantedRuleGoesAtOnce": {
			reason: "A rule allowing nothing wanted goes at once, whatever else waits.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1001: inGCPRule(1001, "203.0.113.9/32")}},
			p:      planOf(ruleOf(1000, a)),
			want:   []string{a},
			out:    want{Gone: []string{"web-1001"}},
		},
		"WiderRangeMustLandFirst": {
			reason: "A rule whose range a wider wanted range replaces stays until GCP holds the wider one: its addresses are still wanted.",
			c:      children{ranges: map[int64]*v1beta1.SecurityPolicyRule{1001: inGCPRule(1001, a)}},
			p:      planOf(ruleOf(1000, wide)),
			want:   []string{wide},
			out:    want{Held: []string{a}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gone, held := removals(tc.c, tc.p, prefixes(tc.want))
			got := want{}
			for _, o := range gone {
				got.Gone = append(got.Gone, o.GetName())
			}
			for _, h := range held {
				got.Held = append(got.Held, h.String())
			}
			slices.Sort(got.Gone)
			if diff := cmp.Diff(tc.out, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nremovals(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGroupHolds: a group holds ranges when GCP has its spec and the spec
// lists those very items.
func TestGroupHolds(t *testing.T) {
	al := allowlist(v1alpha1.AllowlistModeAddressGroup, &v1alpha1.AllowlistAddressGroup{Name: "web", Capacity: 10}, 1009)
	group := func(gen int64, items ...string) *v1alpha1.AddressGroup {
		g := addressGroup(al, "web", groupWant{family: "IPV4", items: prefixes(items)})
		g.SetGeneration(gen)
		g.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(1))
		g.Status.AtProvider.ItemCount = len(items)
		return g
	}
	cases := map[string]struct {
		reason string
		g      *v1alpha1.AddressGroup
		want   []string
		holds  bool
	}{
		"SameItems":           {reason: "GCP has the spec, which lists the items.", g: group(1, "198.51.100.1/32", "198.51.100.2/32"), want: []string{"198.51.100.2/32", "198.51.100.1/32"}, holds: true},
		"OtherItemsSameCount": {reason: "Another set of the same size is not these ranges.", g: group(1, "198.51.100.1/32", "198.51.100.3/32"), want: []string{"198.51.100.1/32", "198.51.100.2/32"}},
		"SpecNotInGCP":        {reason: "A spec GCP does not have yet holds nothing.", g: group(2, "198.51.100.1/32"), want: []string{"198.51.100.1/32"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := groupHolds(tc.g, true, prefixes(tc.want)); got != tc.holds {
				t.Errorf("%s\ngroupHolds(...): want %t, got %t", tc.reason, tc.holds, got)
			}
		})
	}
}

func ruleOf(prio int64, cidrs ...string) iprange.Rule {
	return iprange.Rule{Priority: prio, Ranges: prefixes(cidrs)}
}

func planOf(rules ...iprange.Rule) plan {
	p := newPlan()
	p.ranges = rules
	return p
}

// TestCatchUp: an object the cache shows older than the allowlist's last
// write of it does not count as in GCP, however Synced its old spec is.
func TestCatchUp(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "web"}
	rule := func(gen int64) *v1beta1.SecurityPolicyRule {
		r := rangeRule(allowlist(v1alpha1.AllowlistModeRules, nil, 1009), ruleOf(1000, "198.51.100.1/32"))
		r.SetUID("uid-rule")
		r.SetGeneration(gen)
		r.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(gen))
		return r
	}
	cases := map[string]struct {
		reason  string
		wrote   int64
		cached  int64
		inGCP   bool
		behinds int
	}{
		"CacheBehindOurWrite": {reason: "The cache shows generation 2, our write made 3: not in GCP until the cache has 3.", wrote: 3, cached: 2, behinds: 1},
		"CacheCaughtUp":       {reason: "The cache has our write: the object counts again, and is forgotten.", wrote: 3, cached: 3, inGCP: true},
		"NeverWritten":        {reason: "An object the allowlist never rewrote is as the cache says.", cached: 2, inGCP: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReconciler(nil, noSets{}, nil, noRecorder{})
			o := rule(tc.cached)
			if tc.wrote > 0 {
				r.written(key, rule(tc.wrote))
			}
			r.catchUp(key, []resource.Managed{o})
			if got := inGCP(o); got != tc.inGCP {
				t.Errorf("%s\ninGCP after catchUp: want %t, got %t", tc.reason, tc.inGCP, got)
			}
			if got := len(r.wrote[key]); got != tc.behinds {
				t.Errorf("%s\nobjects remembered as behind: want %d, got %d", tc.reason, tc.behinds, got)
			}
		})
	}
}
