package securitypolicyallowlist

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

type noRecorder struct{}

func (noRecorder) Event(runtime.Object, event.Event)        {}
func (noRecorder) WithAnnotations(...string) event.Recorder { return noRecorder{} }

type noSets struct{}

func (noSets) Get(types.NamespacedName) (addressset.Published, bool) {
	return addressset.Published{}, false
}

const standardRefusal = "Address groups are available only with Cloud Armor Enterprise."

// gcp plays the provider's other controllers and GCP around the allowlist's
// reconciler: an object is in GCP (Ready, Synced on its spec) one step after
// its spec last changed, an object deleted is gone from GCP at once, and GCP
// refuses rules that use address groups unless enterprise is set, as it does
// on Cloud Armor Standard.
type gcp struct {
	t          *testing.T
	kube       client.Client
	r          *Reconciler
	enterprise bool
	// late delays objects, by name, by that many more steps.
	late map[string]int
	// accepted is the resourceVersion of each object GCP holds, after its
	// status was written; inGCP what GCP holds of it.
	accepted map[string]string
	inGCP    map[string]client.Object
}

func newGCP(t *testing.T, enterprise bool, al *v1alpha1.SecurityPolicyAllowlist) *gcp {
	s := runtime.NewScheme()
	_ = v1alpha1.SchemeBuilder.AddToScheme(s)
	_ = v1beta1.SchemeBuilder.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(al).
		WithStatusSubresource(&v1alpha1.SecurityPolicyAllowlist{}, &v1beta1.SecurityPolicyRule{}, &v1alpha1.AddressGroup{}, &v1alpha1.AddressSet{}, &v1beta1.SecurityPolicy{}).Build()
	r := NewReconciler(kube, noSets{}, logging.NewNopLogger(), noRecorder{})
	// A step takes no time on the wall clock, so a batch window would hold
	// every change after the first; TestBatchRanges steps a clock instead.
	r.batch = newBatcher(0)
	return &gcp{t: t, kube: kube, r: r, enterprise: enterprise, accepted: map[string]string{}, inGCP: map[string]client.Object{}}
}

func (g *gcp) objects() []resource.Managed {
	rules := &v1beta1.SecurityPolicyRuleList{}
	groups := &v1alpha1.AddressGroupList{}
	policies := &v1beta1.SecurityPolicyList{}
	if err := g.kube.List(context.Background(), rules); err != nil {
		g.t.Fatal(err)
	}
	if err := g.kube.List(context.Background(), groups); err != nil {
		g.t.Fatal(err)
	}
	if err := g.kube.List(context.Background(), policies); err != nil {
		g.t.Fatal(err)
	}
	var out []resource.Managed
	for i := range policies.Items {
		out = append(out, &policies.Items[i])
	}
	for i := range rules.Items {
		out = append(out, &rules.Items[i])
	}
	for i := range groups.Items {
		out = append(out, &groups.Items[i])
	}
	return out
}

// step brings to GCP what changed last step, then reconciles the allowlist.
func (g *gcp) step(al *v1alpha1.SecurityPolicyAllowlist) {
	g.t.Helper()
	ctx := context.Background()
	present := map[string]bool{}
	for _, o := range g.objects() {
		present[o.GetName()] = true
		if g.accepted[o.GetName()] == o.GetResourceVersion() {
			continue
		}
		if g.late[o.GetName()] > 0 {
			g.late[o.GetName()]--
			continue
		}
		if r, ok := o.(*v1beta1.SecurityPolicyRule); ok && r.GetLabels()[LabelRole] == RoleGroupRule && !g.enterprise {
			o.SetConditions(xpv2.ReconcileError(fmt.Errorf("create failed: googleapi: Error 400: %s", standardRefusal)).WithObservedGeneration(o.GetGeneration()))
		} else {
			o.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess().WithObservedGeneration(o.GetGeneration()))
			if ag, ok := o.(*v1alpha1.AddressGroup); ok {
				ag.Status.AtProvider.ItemCount = len(ag.Spec.ForProvider.Items)
			}
			g.inGCP[o.GetName()] = o.DeepCopyObject().(client.Object)
		}
		if err := g.kube.Status().Update(ctx, o); err != nil {
			g.t.Fatal(err)
		}
		g.accepted[o.GetName()] = o.GetResourceVersion()
	}
	for name := range g.inGCP {
		if !present[name] {
			delete(g.inGCP, name)
		}
	}
	// The allowlist's spec as the test wants it now.
	have := &v1alpha1.SecurityPolicyAllowlist{}
	if err := g.kube.Get(ctx, client.ObjectKeyFromObject(al), have); err != nil {
		g.t.Fatal(err)
	}
	if !cmp.Equal(have.Spec, al.Spec) {
		have.Spec = al.Spec
		have.Generation++
		if err := g.kube.Update(ctx, have); err != nil {
			g.t.Fatal(err)
		}
	}
	if _, err := g.r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(al)}); err != nil {
		g.t.Fatalf("Reconcile: %v", err)
	}
	// Deleted objects leave GCP at once.
	for name := range g.inGCP {
		if !slices.ContainsFunc(g.objects(), func(o resource.Managed) bool { return o.GetName() == name }) {
			delete(g.inGCP, name)
		}
	}
}

var evaluateAddressGroup = regexp.MustCompile(`evaluateAddressGroup\('([^']+)', origin\.ip\)`)

// allowed is every range GCP allows now: range rules' ranges, and the items of
// the groups group rules evaluate.
func (g *gcp) allowed() []string {
	groups := map[string][]string{}
	for _, o := range g.inGCP {
		if ag, ok := o.(*v1alpha1.AddressGroup); ok {
			groups[meta.GetExternalName(ag)] = ag.Spec.ForProvider.Items
		}
	}
	var out []string
	for _, o := range g.inGCP {
		r, ok := o.(*v1beta1.SecurityPolicyRule)
		if !ok {
			continue
		}
		m := r.Spec.ForProvider.Match
		if m.Config != nil {
			for _, s := range m.Config.SrcIpRanges {
				out = append(out, string(s))
			}
		}
		if m.Expr != nil {
			for _, sub := range evaluateAddressGroup.FindAllStringSubmatch(m.Expr.Expression, -1) {
				out = append(out, groups[sub[1]]...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// names is the sorted names of what GCP holds.
func (g *gcp) names() []string { return slices.Sorted(maps.Keys(g.inGCP)) }

func (g *gcp) allowlist(al *v1alpha1.SecurityPolicyAllowlist) *v1alpha1.SecurityPolicyAllowlist {
	got := &v1alpha1.SecurityPolicyAllowlist{}
	if err := g.kube.Get(context.Background(), client.ObjectKeyFromObject(al), got); err != nil {
		g.t.Fatal(err)
	}
	return got
}

func allowlist(mode string, group *v1alpha1.AllowlistAddressGroup, last int64, cidrs ...string) *v1alpha1.SecurityPolicyAllowlist {
	return &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", Generation: 1, UID: "uid-web"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy: "web-allowlist",
			PriorityRange:  v1alpha1.AllowlistPriorityRange{First: 1000, Last: last},
			Mode:           mode,
			AddressGroup:   group,
			Sources:        []v1alpha1.AllowlistSource{{Name: "office", CIDRs: cidrs}},
		},
	}
}

// ranges are n /32 ranges from 198.51.100.0 upward.
func ranges(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String()+"/32")
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func TestModeSwitches(t *testing.T) {
	web := &v1alpha1.AllowlistAddressGroup{Name: "web", Capacity: 100}
	v4 := ranges(12)
	mixed := append(slices.Clone(v4), "2001:db8::/48")

	type want struct {
		inGCP      []string
		current    []string
		ready      corev1.ConditionStatus
		expression string
	}
	cases := map[string]struct {
		reason     string
		enterprise bool
		late       map[string]int
		from, to   *v1alpha1.SecurityPolicyAllowlist
		steps      int
		want       want
	}{
		"RulesToGroup": {
			reason:     "Moving to an address group makes the group, then its rule at a priority no range rule holds, and drops the range rules only once both are in GCP.",
			enterprise: true,
			from:       allowlist(v1alpha1.AllowlistModeRules, nil, 1009, v4...),
			to:         allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, v4...),
			steps:      6,
			want: want{
				inGCP:      []string{"web-group-1002", "web-web"},
				current:    []string{"True", "Composed", "every source's ranges are in address group web, allowed by the rule at priority 1002 of policy web-allowlist"},
				ready:      corev1.ConditionTrue,
				expression: "evaluateAddressGroup('web', origin.ip)",
			},
		},
		"RulesToGroupIPv6Late": {
			reason:     "An IPv6 group that GCP has later than the IPv4 one joins the rule after it; the range rules holding the IPv6 ranges stay until GCP has that rule.",
			enterprise: true,
			late:       map[string]int{"web-web-ipv6": 3},
			from:       allowlist(v1alpha1.AllowlistModeRules, nil, 1009, mixed...),
			to:         allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, mixed...),
			steps:      9,
			want: want{
				inGCP:      []string{"web-group-1002", "web-web", "web-web-ipv6"},
				current:    []string{"True", "Composed", "every source's ranges are in address group web, allowed by the rule at priority 1002 of policy web-allowlist"},
				ready:      corev1.ConditionTrue,
				expression: "evaluateAddressGroup('web', origin.ip) || evaluateAddressGroup('web-ipv6', origin.ip)",
			},
		},
		"GroupToRules": {
			reason:     "Moving back to rules packs the range rules around the group rule's priority and drops the group and its rule once every range rule is in GCP.",
			enterprise: true,
			from:       allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, v4...),
			to:         allowlist(v1alpha1.AllowlistModeRules, nil, 1009, v4...),
			steps:      6,
			want: want{
				inGCP:   []string{"web-1001", "web-1002"},
				current: []string{"True", "Composed", "every source's ranges are in the allow rules of policy web-allowlist, priorities 1000-1009"},
				ready:   corev1.ConditionTrue,
			},
		},
		"RenameGroup": {
			reason:     "A new group name (a larger capacity) moves the ranges to new groups without a gap.",
			enterprise: true,
			from:       allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, mixed...),
			to:         allowlist(v1alpha1.AllowlistModeAddressGroup, &v1alpha1.AllowlistAddressGroup{Name: "web-2", Capacity: 5000}, 1009, mixed...),
			steps:      8,
			want: want{
				inGCP:      []string{"web-group-1001", "web-web-2", "web-web-2-ipv6"},
				current:    []string{"True", "Composed", "every source's ranges are in address group web-2, allowed by the rule at priority 1001 of policy web-allowlist"},
				ready:      corev1.ConditionTrue,
				expression: "evaluateAddressGroup('web-2', origin.ip) || evaluateAddressGroup('web-2-ipv6', origin.ip)",
			},
		},
		"StandardTierKeepsRules": {
			reason: "On Cloud Armor Standard GCP refuses the group rule: the range rules stay, and Current says why in GCP's words.",
			from:   allowlist(v1alpha1.AllowlistModeRules, nil, 1009, v4...),
			to:     allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, v4...),
			steps:  8,
			want: want{
				inGCP: []string{"web-1000", "web-1001", "web-web"},
				current: []string{"False", "Switching", "the rule at priority 1002 that uses address group web is not in GCP yet: create failed: googleapi: Error 400: " +
					standardRefusal + "; the previous rules stay in place until it is"},
				ready: corev1.ConditionFalse,
			},
		},
		"NoFreePriority": {
			reason:     "A priority range the range rules fill leaves no room for the group rule: the rules stay, and Current says what to widen.",
			enterprise: true,
			from:       allowlist(v1alpha1.AllowlistModeRules, nil, 1001, v4...),
			to:         allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1001, v4...),
			steps:      5,
			want: want{
				inGCP:   []string{"web-1000", "web-1001"},
				current: []string{"False", "CannotCompose", "priorityRange 1000-1001 has no free priority for the rule that uses address group web while the current rules stay in place: widen the range by one"},
				ready:   corev1.ConditionFalse,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGCP(t, tc.enterprise, tc.from)
			g.r.pacer = pace.New(0, 0, 0) // every status written at once: the test reads it after each step
			for range 4 {
				g.step(tc.from)
			}
			want := sorted(tc.from.Spec.Sources[0].CIDRs)
			if diff := cmp.Diff(want, g.allowed()); diff != "" {
				t.Fatalf("%s\nbefore the switch, GCP allows: -want, +got:\n%s", tc.reason, diff)
			}
			g.late = tc.late
			for i := range tc.steps {
				g.step(tc.to)
				if diff := cmp.Diff(want, g.allowed()); diff != "" {
					t.Errorf("%s\nstep %d: a gap: GCP allows -want, +got:\n%s", tc.reason, i, diff)
				}
			}
			if diff := cmp.Diff(tc.want.inGCP, g.names()); diff != "" {
				t.Errorf("%s\nobjects in GCP: -want, +got:\n%s", tc.reason, diff)
			}
			al := g.allowlist(tc.to)
			c := al.Status.GetCondition(v1alpha1.TypeCurrent)
			if diff := cmp.Diff(tc.want.current, []string{string(c.Status), string(c.Reason), c.Message}); diff != "" {
				t.Errorf("%s\nCurrent: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.ready, al.Status.GetCondition(xpv2.TypeReady).Status); diff != "" {
				t.Errorf("%s\nReady: -want, +got:\n%s", tc.reason, diff)
			}
			var expr string
			for _, o := range g.inGCP {
				if r, ok := o.(*v1beta1.SecurityPolicyRule); ok && r.Spec.ForProvider.Match.Expr != nil {
					expr = r.Spec.ForProvider.Match.Expr.Expression
				}
			}
			if diff := cmp.Diff(tc.want.expression, expr); diff != "" {
				t.Errorf("%s\ngroup rule expression: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRulesFollowSources: rules of ten, stable under churn, each step's
// change in GCP as small as the packing allows.
func TestRulesFollowSources(t *testing.T) {
	al := allowlist(v1alpha1.AllowlistModeRules, nil, 1009, ranges(25)...)
	g := newGCP(t, true, al)
	g.r.pacer = pace.New(0, 0, 0)
	for range 3 {
		g.step(al)
	}
	if diff := cmp.Diff([]string{"web-1000", "web-1001", "web-1002"}, g.names()); diff != "" {
		t.Fatalf("rules for 25 ranges: -want, +got:\n%s", diff)
	}
	before := map[string]string{}
	for n, o := range g.inGCP {
		before[n] = o.GetResourceVersion()
	}
	current := g.allowlist(al).Status.GetCondition(v1alpha1.TypeCurrent)
	// One range replaced: only the rule that held it changes.
	next := ranges(25)
	next[3] = "203.0.113.7/32"
	al.Spec.Sources[0].CIDRs = next
	for range 3 {
		g.step(al)
	}
	if diff := cmp.Diff(sorted(next), g.allowed()); diff != "" {
		t.Fatalf("GCP allows: -want, +got:\n%s", diff)
	}
	changed := 0
	for n, o := range g.inGCP {
		if before[n] != o.GetResourceVersion() {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("rules changed for one range replaced: want 1, got %d", changed)
	}
	st := g.allowlist(al).Status
	if st.IPCount != 25 || st.RuleCount != 3 {
		t.Errorf("status: want 25 ranges in 3 rules, got %d in %d", st.IPCount, st.RuleCount)
	}
	// The IPAllowlist shows Current as its own condition: one that changed
	// with the ranges would cost Crossplane events on every change.
	state := func(c xpv2.Condition) []string {
		return []string{string(c.Status), string(c.Reason), c.Message, c.LastTransitionTime.String()}
	}
	if diff := cmp.Diff(state(current), state(st.GetCondition(v1alpha1.TypeCurrent))); diff != "" {
		t.Errorf("Current changed with the ranges: -before, +after:\n%s", diff)
	}
}

type fixedSets map[types.NamespacedName]addressset.Published

func (f fixedSets) Get(k types.NamespacedName) (addressset.Published, bool) {
	p, ok := f[k]
	return p, ok
}

func TestResolve(t *testing.T) {
	set := func(uid types.UID, gen int64) *v1alpha1.AddressSet {
		return &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-nodes-pool", UID: uid, Generation: gen}}
	}
	key := types.NamespacedName{Namespace: "team-a", Name: "web-nodes-pool"}
	nodes := func(required bool) v1alpha1.AllowlistSource {
		return v1alpha1.AllowlistSource{Name: "pool", Required: required, Nodes: &v1alpha1.AllowlistNodes{NodeSelector: v1alpha1.NodeSelector{MatchLabels: map[string]string{"pool": "web"}}}}
	}
	office := v1alpha1.AllowlistSource{Name: "office", CIDRs: []string{"203.0.113.0/24", "2001:db8::/48"}}
	instances := v1alpha1.AllowlistSource{Name: "pool", Instances: &v1alpha1.AllowlistInstances{InstanceSelector: v1alpha1.InstanceSelector{MatchLabels: map[string]string{"goog-k8s-node-pool-name": "batch"}}}}
	nat := v1alpha1.AllowlistSource{Name: "pool", NAT: &v1alpha1.AllowlistNAT{NATSelector: v1alpha1.NATSelector{Region: "us-central1", Router: "egress"}}}
	remote := nodes(false)
	remote.Nodes.Cluster = &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1-kubeconfig"}}
	type want struct {
		ranges      []string
		unmatched   []string
		warnings    []string
		pending     []string
		held        []string
		unreadable  bool
		keepAllowed bool
		err         string
	}
	services := v1alpha1.AllowlistSource{Name: "pool", Services: &v1alpha1.ServiceSelector{MatchLabels: map[string]string{"app": "egress"}}}
	cases := map[string]struct {
		reason  string
		sources []v1alpha1.AllowlistSource
		have    map[string]*v1alpha1.AddressSet
		pub     fixedSets
		want    want
	}{
		"StaticAndNodes": {
			reason:  "Ranges of every source, once each, none inside another, IPv4 first.",
			sources: []v1alpha1.AllowlistSource{office, nodes(false)},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 2)},
			pub:     fixedSets{key: {UID: "u1", Generation: 2, Addresses: []string{"192.0.2.1/32", "203.0.113.9/32"}, Nodes: 2}},
			want:    want{ranges: []string{"192.0.2.1/32", "203.0.113.0/24", "2001:db8::/48"}},
		},
		"SetNotComputedYet": {
			reason:  "An AddressSet that has not published, or published for another generation, is pending, not empty.",
			sources: []v1alpha1.AllowlistSource{office, nodes(false)},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 3)},
			pub:     fixedSets{key: {UID: "u1", Generation: 2, Addresses: []string{"192.0.2.1/32"}}},
			want:    want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, pending: []string{`"pool"`}},
		},
		"OptionalEmpty": {
			reason:  "An optional node source without address is unmatched, with a warning.",
			sources: []v1alpha1.AllowlistSource{office, nodes(false)},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1}},
			want: want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, unmatched: []string{"pool"},
				warnings: []string{`node source "pool": no address: 0 node(s) match labels {pool=web}`}},
		},
		"RequiredEmpty": {
			reason:  "A required node source without address holds everything.",
			sources: []v1alpha1.AllowlistSource{office, nodes(true)},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1}},
			want:    want{err: `node source "pool": no address: 0 node(s) match labels {pool=web}, and the source is required; the rules are left as they are`},
		},
		"HeldAndSkipped": {
			reason:  "A held shrink and skipped Nodes are reported; the addresses still count.",
			sources: []v1alpha1.AllowlistSource{nodes(false)},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub: fixedSets{key: {UID: "u1", Generation: 1, Addresses: []string{"192.0.2.1/32"}, Nodes: 2, Held: "holding back a shrink",
				Skipped: []v1alpha1.SkippedNode{{Name: "n2", Reason: "no ExternalIP"}}, SkippedCount: 1}},
			want: want{ranges: []string{"192.0.2.1/32"},
				warnings: []string{`node source "pool": 1 node(s) left out, the others kept: n2 (no ExternalIP)`},
				held:     []string{`node source "pool": AddressSet web-nodes-pool: holding back a shrink`}},
		},
		"InstancesUnreadable": {
			reason:  "An instance source that cannot be listed keeps its last addresses, held because unreadable.",
			sources: []v1alpha1.AllowlistSource{instances},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Addresses: []string{"192.0.2.1/32"}, Nodes: 1, Held: "cannot read the instances of project p", Unreadable: true}},
			want: want{ranges: []string{"192.0.2.1/32"}, unreadable: true,
				held: []string{`instance source "pool": AddressSet web-nodes-pool: cannot read the instances of project p`}},
		},
		"InstancesNoAddress": {
			reason:  "An instance source without address says how many instances match.",
			sources: []v1alpha1.AllowlistSource{office, instances},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Nodes: 3}},
			want: want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, unmatched: []string{"pool"},
				warnings: []string{`instance source "pool": no address: 3 instance(s) match labels {goog-k8s-node-pool-name=batch}`}},
		},
		"NATWarningAndHeld": {
			reason:  "A nat source's warning (a NAT short of addresses) goes up as a warning; a router that cannot be read holds, unreadable.",
			sources: []v1alpha1.AllowlistSource{nat},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub: fixedSets{key: {UID: "u1", Generation: 1, Addresses: []string{"203.0.113.1/32"}, Nodes: 1,
				Warnings: []string{"Cloud NAT us-central1/egress/egress-nat needs 1 more address(es)"},
				Held:     "cannot read the Cloud NAT of router us-central1/egress", Unreadable: true}},
			want: want{ranges: []string{"203.0.113.1/32"}, unreadable: true,
				warnings: []string{`nat source "pool": Cloud NAT us-central1/egress/egress-nat needs 1 more address(es)`},
				held:     []string{`nat source "pool": AddressSet web-nodes-pool: cannot read the Cloud NAT of router us-central1/egress`}},
		},
		"NATNoAddress": {
			reason:  "A nat source without address says how many NATs were read.",
			sources: []v1alpha1.AllowlistSource{office, nat},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Nodes: 1}},
			want: want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, unmatched: []string{"pool"},
				warnings: []string{`nat source "pool": no address: 1 Cloud NAT(s) read`}},
		},
		"RemoteClusterNoAddress": {
			reason:  "A node source of another cluster names the cluster's Secret when it yields nothing.",
			sources: []v1alpha1.AllowlistSource{office, remote},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1}},
			want: want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, unmatched: []string{"pool"},
				warnings: []string{`node source "pool": no address: 0 node(s) in the cluster of Secret eu-1-kubeconfig match labels {pool=web}`}},
		},
		"NeverReadUnreadableKeepsAllowed": {
			reason: "A source that cannot be read and has no last addresses (new to an allowlist whose rules may allow what it " +
				"reads, as after an upgrade) is neither unmatched nor pending: what the rules allow is kept.",
			sources: []v1alpha1.AllowlistSource{office, services},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Held: "cannot read Services of namespace team-a", Unreadable: true}},
			want: want{ranges: []string{"203.0.113.0/24", "2001:db8::/48"}, unreadable: true, keepAllowed: true,
				held: []string{`service source "pool": AddressSet web-nodes-pool: cannot read Services of namespace team-a`}},
		},
		"ServicesNoAddress": {
			reason:  "A service source without address says how many LoadBalancer Services match.",
			sources: []v1alpha1.AllowlistSource{services},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Nodes: 2}},
			want: want{unmatched: []string{"pool"}, ranges: []string{},
				warnings: []string{`service source "pool": no address: 2 Service(s) of type LoadBalancer match labels {app=egress}`}},
		},
		"NamedObjectNoAddress": {
			reason: "An object source naming its object says it has no address at the field.",
			sources: []v1alpha1.AllowlistSource{{Name: "pool", Object: &v1alpha1.ObjectSelector{APIVersion: "compute.gcp.m.upbound.io/v1beta1",
				Kind: "Address", ObjectName: "nat", FieldPath: "status.atProvider.address"}}},
			have: map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:  fixedSets{key: {UID: "u1", Generation: 1, Nodes: 1}},
			want: want{unmatched: []string{"pool"}, ranges: []string{},
				warnings: []string{`object source "pool": no address: Address nat has none at status.atProvider.address`}},
		},
		"ConfigMapWarnings": {
			reason:  "A configMap source's warnings (a malformed line) name the source; its addresses count.",
			sources: []v1alpha1.AllowlistSource{{Name: "pool", ConfigMap: &v1alpha1.ConfigMapKeySelector{Name: "egress", Key: "cidrs"}}},
			have:    map[string]*v1alpha1.AddressSet{"web-nodes-pool": set("u1", 1)},
			pub:     fixedSets{key: {UID: "u1", Generation: 1, Nodes: 1, Addresses: []string{"198.51.100.0/28"}, Warnings: []string{"ConfigMap team-a/egress key cidrs line 2 left out"}}},
			want: want{ranges: []string{"198.51.100.0/28"},
				warnings: []string{`configMap source "pool": ConfigMap team-a/egress key cidrs line 2 left out`}},
		},
		"InvalidCIDR": {
			reason:  "A CIDR with host bits set is refused, naming the source.",
			sources: []v1alpha1.AllowlistSource{{Name: "office", CIDRs: []string{"203.0.113.7/24"}}},
			want:    want{err: `static source "office": "203.0.113.7/24" has host bits set: did you mean 203.0.113.0/24?`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			al := &v1alpha1.SecurityPolicyAllowlist{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}, Spec: v1alpha1.SecurityPolicyAllowlistSpec{Sources: tc.sources}}
			got, err := resolve(al, tc.have, tc.pub)
			if tc.want.err != "" || err != nil {
				if diff := cmp.Diff(tc.want.err, fmt.Sprint(err)); diff != "" {
					t.Errorf("%s\nresolve(...): -want error, +got error:\n%s", tc.reason, diff)
				}
				return
			}
			gotRanges := make([]string, 0, len(got.ranges))
			for _, p := range got.ranges {
				gotRanges = append(gotRanges, p.String())
			}
			w := want{ranges: gotRanges, unmatched: got.unmatched, warnings: got.warnings, pending: got.pending, held: got.held, unreadable: got.unreadable, keepAllowed: got.keepAllowed}
			if diff := cmp.Diff(tc.want, w, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nresolve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSetName: the names the IPAllowlist composition gave its AddressSets,
// which an allowlist of the composite's name adopts.
func TestSetName(t *testing.T) {
	cases := map[string]struct {
		allowlist, source, want string
	}{
		"Plain":      {allowlist: "web", source: "pool-web", want: "web-nodes-pool-web"},
		"UpperCase":  {allowlist: "web", source: "Pool Web", want: "web-nodes-pool-web-a4f08217"},
		"OtherCase":  {allowlist: "web", source: "pool web", want: "web-nodes-pool-web-af161b67"},
		"Dots":       {allowlist: "web", source: "eu.pool", want: "web-nodes-eu-pool-ad61a6fd"},
		"TooLongCut": {allowlist: strings.Repeat("x", 250), source: "a", want: strings.Repeat("x", 244) + "-ca978112"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := SetName(tc.allowlist, tc.source)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetName(%q, %q): -want, +got:\n%s", tc.allowlist, tc.source, diff)
			}
			if len(got) > 253 {
				t.Errorf("SetName: %d characters", len(got))
			}
		})
	}
}

// TestSetSpec: the AddressSet of each kind of source, with the defaults the CRD would add
// written out, and the allowlist's ProviderConfig only where the set reads GCP.
func TestSetSpec(t *testing.T) {
	pc := &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
	def := &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}
	web := map[string]string{"pool": "web"}
	cluster := func(identity string) *v1alpha1.NodeCluster {
		return &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1"}, Identity: identity}
	}
	cases := map[string]struct {
		reason string
		src    v1alpha1.AllowlistSource
		pc     *xpv2.ProviderConfigReference
		want   v1alpha1.AddressSetSpec
	}{
		"LocalNodes": {
			reason: "The Nodes of the provider's cluster: no ProviderConfig, as before remote sources existed.",
			src:    v1alpha1.AllowlistSource{Name: "pool", Nodes: &v1alpha1.AllowlistNodes{NodeSelector: v1alpha1.NodeSelector{MatchLabels: web}, ShrinkHoldSeconds: ptr.To[int32](0)}},
			pc:     pc,
			want:   v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{MatchLabels: web}, ShrinkHoldSeconds: ptr.To[int32](0)},
		},
		"RemoteKubeconfig": {
			reason: "Another cluster read with its kubeconfig's own credentials: the key and identity defaulted, no ProviderConfig.",
			src:    v1alpha1.AllowlistSource{Name: "eu", Nodes: &v1alpha1.AllowlistNodes{NodeSelector: v1alpha1.NodeSelector{MatchLabels: web, Cluster: cluster("")}}},
			pc:     pc,
			want: v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{MatchLabels: web, Cluster: &v1alpha1.NodeCluster{
				KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1", Key: "kubeconfig"}, Identity: v1alpha1.IdentityKubeconfig}}},
		},
		"RemoteProviderConfig": {
			reason: "Another cluster read as the ProviderConfig: the allowlist's ProviderConfig goes with it.",
			src:    v1alpha1.AllowlistSource{Name: "eu", Nodes: &v1alpha1.AllowlistNodes{NodeSelector: v1alpha1.NodeSelector{Cluster: cluster(v1alpha1.IdentityProviderConfig)}}},
			pc:     pc,
			want: v1alpha1.AddressSetSpec{ProviderConfigRef: pc, Nodes: &v1alpha1.NodeSelector{Cluster: &v1alpha1.NodeCluster{
				KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1", Key: "kubeconfig"}, Identity: v1alpha1.IdentityProviderConfig}}},
		},
		"Instances": {
			reason: "Instances are listed with the allowlist's ProviderConfig, the default ClusterProviderConfig when it names none; the poll defaulted.",
			src:    v1alpha1.AllowlistSource{Name: "batch", Instances: &v1alpha1.AllowlistInstances{InstanceSelector: v1alpha1.InstanceSelector{MatchLabels: web}}},
			want:   v1alpha1.AddressSetSpec{ProviderConfigRef: def, Instances: &v1alpha1.InstanceSelector{MatchLabels: web, PollSeconds: ptr.To[int32](30)}},
		},
		"NAT": {
			reason: "Cloud NAT is read with the allowlist's ProviderConfig, as instances; the poll defaulted, the shrink hold passed on.",
			src: v1alpha1.AllowlistSource{Name: "egress", NAT: &v1alpha1.AllowlistNAT{ShrinkHoldSeconds: ptr.To[int32](0),
				NATSelector: v1alpha1.NATSelector{Region: "us-central1", Router: "egress", NAT: "egress-nat"}}},
			pc: pc,
			want: v1alpha1.AddressSetSpec{ProviderConfigRef: pc, ShrinkHoldSeconds: ptr.To[int32](0),
				NAT: &v1alpha1.NATSelector{Region: "us-central1", Router: "egress", NAT: "egress-nat", PollSeconds: ptr.To[int32](30)}},
		},
		"Services": {
			reason: "Services of the allowlist's namespace: no ProviderConfig, every shrink at once, as when the function read them.",
			src:    v1alpha1.AllowlistSource{Name: "gw", Services: &v1alpha1.ServiceSelector{MatchLabels: web}},
			pc:     pc,
			want:   v1alpha1.AddressSetSpec{Services: &v1alpha1.ServiceSelector{MatchLabels: web}, ShrinkHoldSeconds: ptr.To[int32](0)},
		},
		"ConfigMap": {
			reason: "A ConfigMap's list: every shrink at once, an edit is meant.",
			src:    v1alpha1.AllowlistSource{Name: "list", ConfigMap: &v1alpha1.ConfigMapKeySelector{Name: "egress", Key: "cidrs"}},
			want:   v1alpha1.AddressSetSpec{ConfigMap: &v1alpha1.ConfigMapKeySelector{Name: "egress", Key: "cidrs"}, ShrinkHoldSeconds: ptr.To[int32](0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, setSpec(tc.src, tc.pc)); diff != "" {
				t.Errorf("%s\nsetSpec(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReadersOf: the registry's news of an AddressSet of a node source and
// of an instance source wake the allowlist that reads it; a CIDR source
// has none.
func TestReadersOf(t *testing.T) {
	r := NewReconciler(nil, nil, nil, nil)
	al := &v1alpha1.SecurityPolicyAllowlist{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "al"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{Sources: []v1alpha1.AllowlistSource{
			{Name: "office", CIDRs: []string{"203.0.113.0/24"}},
			{Name: "nodes", Nodes: &v1alpha1.AllowlistNodes{}},
			{Name: "vms", Instances: &v1alpha1.AllowlistInstances{}},
		}}}
	r.reads(al)
	for set, want := range map[string]bool{"nodes": true, "vms": true, "office": false} {
		got, ok := r.readerOf(types.NamespacedName{Namespace: "ns", Name: SetName("al", set)})
		if ok != want || (ok && got != (types.NamespacedName{Namespace: "ns", Name: "al"})) {
			t.Errorf("readerOf(AddressSet of source %s): want found %t, got %v %t", set, want, got, ok)
		}
	}
}

// TestPlanKeeps: what each plan keeps while a switch between range rules and
// address groups is under way, and what it lets go.
func TestPlanKeeps(t *testing.T) {
	web := &v1alpha1.AllowlistAddressGroup{Name: "web", Capacity: 100}
	rules := allowlist(v1alpha1.AllowlistModeRules, nil, 1009, ranges(2)...)
	group := allowlist(v1alpha1.AllowlistModeAddressGroup, web, 1009, ranges(2)...)
	stale := rangeRule(rules, iprange.Rule{Priority: 1005, Ranges: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}})
	groupChildren := func() children {
		return children{
			ranges:     map[int64]*v1beta1.SecurityPolicyRule{1005: stale},
			groupRules: map[string]*v1beta1.SecurityPolicyRule{"web": groupRule(group, &groupRuleWant{v4Name: "web", priority: 1001, expression: groupExpression([]string{"web"})})},
			groups:     map[string]*v1alpha1.AddressGroup{"web": addressGroup(group, "web", groupWant{family: "IPV4"})},
		}
	}
	type keeps struct {
		Wanted     []int64 // the range rules the plan wants, by priority
		Ranges     bool
		GroupRules []string
		Groups     []string
		Switching  bool
	}
	cases := map[string]struct {
		reason string
		plan   func() (plan, error)
		want   keeps
	}{
		"HoldKeepsEverything": {
			reason: "A held allowlist keeps every child as it is.",
			plan:   func() (plan, error) { return hold(groupChildren()), nil },
			want:   keeps{Ranges: true, GroupRules: []string{"web"}, Groups: []string{"web"}},
		},
		"RulesWaitKeepGroups": {
			reason: "Back to rules: the group and its rule stay until every range rule is in GCP, and a range rule the packing no longer wants goes at once.",
			plan:   func() (plan, error) { return planRules(rules.Spec, prefixes(ranges(2)), groupChildren()) },
			want:   keeps{Wanted: []int64{1000}, GroupRules: []string{"web"}, Groups: []string{"web"}, Switching: true},
		},
		"GroupsWaitKeepRules": {
			reason: "To a group: while the group is being filled, the range rules and every group stay.",
			plan:   func() (plan, error) { return planGroups(group.Spec, prefixes(ranges(2)), groupChildren()) },
			want:   keeps{Ranges: true, GroupRules: []string{"web"}, Groups: []string{"web"}, Switching: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := tc.plan()
			if err != nil {
				t.Fatal(err)
			}
			var wanted []int64
			for _, r := range p.ranges {
				wanted = append(wanted, r.Priority)
			}
			got := keeps{Wanted: wanted, Ranges: p.keepRanges, GroupRules: slices.Sorted(maps.Keys(p.keepGroupRules)),
				Groups: slices.Sorted(maps.Keys(p.keepGroups)), Switching: p.switching != ""}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// unreadableSets publishes, for every AddressSet the allowlist made, that its
// source cannot be read and has no last addresses; with addresses set, that
// it reads them.
type unreadableSets struct {
	kube      client.Client
	addresses []string
}

func (u *unreadableSets) Get(k types.NamespacedName) (addressset.Published, bool) {
	as := &v1alpha1.AddressSet{}
	if err := u.kube.Get(context.Background(), k, as); err != nil {
		return addressset.Published{}, false
	}
	p := addressset.Published{UID: as.GetUID(), Generation: as.GetGeneration(), Addresses: u.addresses, Nodes: len(u.addresses)}
	if u.addresses == nil {
		p.Held, p.Unreadable = "cannot read Services of namespace team-a: services is forbidden", true
	}
	return p, true
}

// TestMovedSourceKeepsAllowed: an upgrade turns a source whose ranges the
// allowlist held as CIDRs (the IPAllowlist function read the Service itself)
// into one the provider reads. Until the provider can read it (its
// platform has not granted it Services yet), GCP keeps allowing what the
// rules allowed: the Service's address is not dropped because of a missing
// grant. Once readable, the source is followed.
func TestMovedSourceKeepsAllowed(t *testing.T) {
	al := allowlist(v1alpha1.AllowlistModeRules, nil, 1009, "203.0.113.0/24")
	al.Spec.Sources = append(al.Spec.Sources, v1alpha1.AllowlistSource{Name: "gateway", CIDRs: []string{"34.120.0.10/32"}})
	g := newGCP(t, true, al)
	g.r.pacer = pace.New(0, 0, 0)
	for range 3 {
		g.step(al)
	}
	if diff := cmp.Diff([]string{"203.0.113.0/24", "34.120.0.10/32"}, g.allowed()); diff != "" {
		t.Fatalf("GCP allows before the upgrade: -want, +got:\n%s", diff)
	}
	sets := &unreadableSets{kube: g.kube}
	g.r.sets = sets
	al.Spec.Sources[1] = v1alpha1.AllowlistSource{Name: "gateway", Services: &v1alpha1.ServiceSelector{MatchLabels: map[string]string{"app": "egress-gateway"}}}
	for range 4 {
		g.step(al)
		if diff := cmp.Diff([]string{"203.0.113.0/24", "34.120.0.10/32"}, g.allowed()); diff != "" {
			t.Fatalf("GCP allows while the moved source cannot be read: -want, +got:\n%s", diff)
		}
	}
	if c := g.allowlist(al).Status.GetCondition(v1alpha1.TypeCurrent); c.Reason != v1alpha1.ReasonSourceUnreadable {
		t.Errorf("Current while the source cannot be read: want reason %s, got %s %q", v1alpha1.ReasonSourceUnreadable, c.Reason, c.Message)
	}
	sets.addresses = []string{"34.120.0.11/32"}
	for range 4 {
		g.step(al)
	}
	if diff := cmp.Diff([]string{"203.0.113.0/24", "34.120.0.11/32"}, g.allowed()); diff != "" {
		t.Errorf("GCP allows once the source is read: -want, +got:\n%s", diff)
	}
}
