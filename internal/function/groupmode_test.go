package function

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

// gcp plays Crossplane and the provider around the function: what the function desires is
// applied, a resource is in GCP (Ready, Synced on its generation) one step after its spec last
// changed, and a resource no longer desired is gone from GCP at once. GCP refuses rules that
// use address groups unless enterprise is set, as it does on Cloud Armor Standard.
type gcp struct {
	enterprise bool
	// late delays resources, by name, by that many more steps before GCP has them.
	late map[string]int
	// observed is what the function sees, by composition resource name.
	observed map[string]map[string]any
	// inGCP is the spec GCP holds for each resource: the one it last accepted.
	inGCP map[string]map[string]any
	// pending are resources whose spec changed in the last step.
	pending map[string]bool
}

const standardRefusal = "Address groups are available only with Cloud Armor Enterprise."

func newGCP(enterprise bool) *gcp {
	return &gcp{enterprise: enterprise, observed: map[string]map[string]any{}, inGCP: map[string]map[string]any{}, pending: map[string]bool{}}
}

// step runs the function on the XR and what is observed, then applies its desired resources.
// It returns the response.
func (g *gcp) step(t *testing.T, xr map[string]any) *fnv1.RunFunctionResponse {
	t.Helper()
	// Resources whose spec changed last step reach GCP now, or are refused.
	for name := range g.pending {
		if g.late[name] > 0 {
			g.late[name]--
			continue
		}
		delete(g.pending, name)
		o := g.observed[name]
		spec := o["spec"].(map[string]any)
		if strings.HasPrefix(name, groupRulePrefix) && !g.enterprise {
			o["status"] = map[string]any{"conditions": []any{
				map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError", "observedGeneration": float64(1), "message": "create failed: googleapi: Error 400: " + standardRefusal, "lastTransitionTime": "2026-11-26T00:00:00Z"},
			}}
			continue
		}
		g.inGCP[name] = spec
		status := map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-26T00:00:00Z"},
			map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "observedGeneration": float64(1), "lastTransitionTime": "2026-11-26T00:00:00Z"},
		}}
		if items, ok := spec["forProvider"].(map[string]any)["items"].([]any); ok {
			status["atProvider"] = map[string]any{"itemCount": float64(len(items))}
		}
		o["status"] = status
	}

	observed := map[string]*fnv1.Resource{}
	for n, r := range g.observed {
		observed[n] = &fnv1.Resource{Resource: mustStruct(t, r)}
	}
	xr = maps.Clone(xr)
	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, xr)}, Resources: observed},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return rsp // Crossplane applies nothing.
		}
	}
	desired := rsp.GetDesired().GetResources()
	for name := range g.observed {
		if _, ok := desired[name]; !ok {
			delete(g.observed, name)
			delete(g.inGCP, name)
		}
	}
	for name, r := range desired {
		d := r.GetResource().AsMap()
		o, ok := g.observed[name]
		if ok && cmp.Equal(o["spec"], d["spec"]) {
			continue
		}
		d["metadata"] = map[string]any{"name": d["metadata"].(map[string]any)["name"], "generation": float64(1)}
		g.observed[name] = d
		g.pending[name] = true
	}
	return rsp
}

var evaluateAddressGroup = regexp.MustCompile(`evaluateAddressGroup\('([^']+)', origin\.ip\)`)

// allowed is every range GCP allows now through the allowlist's rules: their source ranges, or
// the items of the groups they evaluate.
func (g *gcp) allowed() []string {
	groups := map[string][]any{}
	for name, spec := range g.inGCP {
		if strings.HasPrefix(name, groupPrefix) && !strings.HasPrefix(name, groupRulePrefix) {
			groups[strings.TrimPrefix(name, groupPrefix)] = spec["forProvider"].(map[string]any)["items"].([]any)
		}
	}
	var out []string
	for name, spec := range g.inGCP {
		fp := spec["forProvider"].(map[string]any)
		switch {
		case strings.HasPrefix(name, rulePrefix):
			for _, r := range fp["match"].(map[string]any)["config"].(map[string]any)["srcIpRanges"].([]any) {
				out = append(out, r.(string))
			}
		case strings.HasPrefix(name, groupRulePrefix):
			expr := fp["match"].(map[string]any)["expr"].(map[string]any)["expression"].(string)
			for _, m := range evaluateAddressGroup.FindAllStringSubmatch(expr, -1) {
				for _, item := range groups[m[1]] {
					out = append(out, item.(string))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// kinds is the sorted composition resource names GCP holds.
func (g *gcp) kinds() []string {
	return slices.Sorted(maps.Keys(g.inGCP))
}

func groupXR(mode string, group map[string]any, last int64, cidrs ...string) map[string]any {
	list := make([]any, 0, len(cidrs))
	for _, c := range cidrs {
		list = append(list, c)
	}
	spec := map[string]any{
		"policy":            map[string]any{"name": "web-allowlist"},
		"priorityRange":     map[string]any{"first": float64(1000), "last": float64(last)},
		"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
		"staticSources":     []any{map[string]any{"name": "office", "cidrs": list}},
		"mode":              mode,
	}
	if group != nil {
		spec["addressGroup"] = group
	}
	return map[string]any{
		"apiVersion": "platform.armorplane.io/v1alpha1", "kind": "IPAllowlist",
		"metadata": map[string]any{"name": "web", "namespace": "team-a"},
		"spec":     spec,
	}
}

// current is the Current condition of a response: status, reason and message.
func current(rsp *fnv1.RunFunctionResponse) []string {
	for _, c := range rsp.GetConditions() {
		if c.GetType() == TypeCurrent {
			return []string{strings.TrimPrefix(c.GetStatus().String(), "STATUS_CONDITION_"), c.GetReason(), c.GetMessage()}
		}
	}
	return nil
}

// ranges are n /32 ranges, IPv4 from 198.51.100.0 upward.
func ranges(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String()+"/32")
	}
	return out
}

func TestModeSwitches(t *testing.T) {
	web := map[string]any{"name": "web", "capacity": float64(100)}
	v4 := ranges(12)
	mixed := append(slices.Clone(v4), "2001:db8::/48")

	type want struct {
		// inGCP are the composition resources GCP holds once the steps are done.
		inGCP []string
		// current is the last Current condition.
		current []string
		// expression of the group rule, if any.
		expression string
		// ttl is how soon the last response asks Crossplane to run the function again.
		ttl time.Duration
	}
	cases := map[string]struct {
		reason     string
		enterprise bool
		late       map[string]int
		cidrs      []string
		from, to   map[string]any
		steps      int
		want       want
	}{
		"RulesToGroup": {
			reason:     "Moving to an address group composes the group, then its rule at a priority no range rule holds, and drops the range rules only once both are in GCP.",
			enterprise: true,
			cidrs:      v4,
			from:       groupXR(ModeRules, nil, 1009, v4...),
			to:         groupXR(ModeAddressGroup, web, 1009, v4...),
			steps:      6,
			want: want{
				inGCP:      []string{"group-rule-web", "group-web"},
				current:    []string{"TRUE", ReasonComposed, "12 source ranges in address group web, allowed by the rule at priority 1002 of policy web-allowlist"},
				expression: "evaluateAddressGroup('web', origin.ip)",
				ttl:        response.DefaultTTL,
			},
		},
		"RulesToGroupIPv6Late": {
			reason:     "An IPv6 group that GCP has later than the IPv4 one joins the rule first; the range rules holding the IPv6 ranges stay until GCP has that rule.",
			enterprise: true,
			late:       map[string]int{"group-web-ipv6": 3},
			cidrs:      mixed,
			from:       groupXR(ModeRules, nil, 1009, mixed...),
			to:         groupXR(ModeAddressGroup, web, 1009, mixed...),
			steps:      9,
			want: want{
				inGCP:      []string{"group-rule-web", "group-web", "group-web-ipv6"},
				current:    []string{"TRUE", ReasonComposed, "13 source ranges in address group web, allowed by the rule at priority 1002 of policy web-allowlist"},
				expression: "evaluateAddressGroup('web', origin.ip) || evaluateAddressGroup('web-ipv6', origin.ip)",
				ttl:        response.DefaultTTL,
			},
		},
		"GroupToRules": {
			reason:     "Moving back to rules composes the range rules around the group rule's priority and drops the group and its rule once every range rule is in GCP.",
			enterprise: true,
			cidrs:      v4,
			from:       groupXR(ModeAddressGroup, web, 1009, v4...),
			to:         groupXR(ModeRules, nil, 1009, v4...),
			steps:      6,
			want: want{
				inGCP:   []string{"rule-1001", "rule-1002"},
				current: []string{"TRUE", ReasonComposed, "12 source ranges in 2 rule(s) of policy web-allowlist"},
				ttl:     response.DefaultTTL,
			},
		},
		"RenameGroup": {
			reason:     "A new group name (a larger capacity) moves the allowlist to new groups without a gap.",
			enterprise: true,
			cidrs:      mixed,
			from:       groupXR(ModeAddressGroup, web, 1009, mixed...),
			to:         groupXR(ModeAddressGroup, map[string]any{"name": "web-2", "capacity": float64(5000)}, 1009, mixed...),
			steps:      8,
			want: want{
				inGCP:      []string{"group-rule-web-2", "group-web-2", "group-web-2-ipv6"},
				current:    []string{"TRUE", ReasonComposed, "13 source ranges in address group web-2, allowed by the rule at priority 1001 of policy web-allowlist"},
				expression: "evaluateAddressGroup('web-2', origin.ip) || evaluateAddressGroup('web-2-ipv6', origin.ip)",
				ttl:        response.DefaultTTL,
			},
		},
		"StandardTierKeepsRules": {
			reason:     "On Cloud Armor Standard GCP refuses the group rule: the range rules stay, and Current says why in GCP's words.",
			enterprise: false,
			cidrs:      v4,
			from:       groupXR(ModeRules, nil, 1009, v4...),
			to:         groupXR(ModeAddressGroup, web, 1009, v4...),
			steps:      8,
			want: want{
				inGCP: []string{"group-web", "rule-1000", "rule-1001"},
				current: []string{"FALSE", ReasonSwitching, "the rule at priority 1002 that uses address group web is not in GCP yet: create failed: googleapi: Error 400: " +
					standardRefusal + "; the previous rules stay in place until it is"},
				// Progress would come with no event if the breaker dropped it: the tier
				// changing in GCP, the rule's create retried.
				ttl: WaitingTTL,
			},
		},
		"NoFreePriority": {
			reason:     "A priority range the range rules fill leaves no room for the group rule: the rules stay, and Current says what to widen.",
			enterprise: true,
			cidrs:      v4,
			from:       groupXR(ModeRules, nil, 1001, v4...),
			to:         groupXR(ModeAddressGroup, web, 1001, v4...),
			steps:      5,
			want: want{
				inGCP:   []string{"rule-1000", "rule-1001"},
				current: []string{"FALSE", ReasonCannotCompose, "priorityRange 1000-1001 has no free priority for the rule that uses address group web while the current rules stay in place: widen the range by one"},
				// Only a spec edit mends this, and an edit is an event of its own.
				ttl: response.DefaultTTL,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGCP(tc.enterprise)
			var rsp *fnv1.RunFunctionResponse
			for range 4 {
				rsp = g.step(t, tc.from)
			}
			g.late = tc.late
			want := slices.Clone(tc.cidrs)
			slices.SortFunc(want, func(a, b string) int { return netip.MustParsePrefix(a).Compare(netip.MustParsePrefix(b)) })
			if diff := cmp.Diff(sortedStrings(want), g.allowed()); diff != "" {
				t.Fatalf("%s\nbefore the switch, GCP allows: -want, +got:\n%s", tc.reason, diff)
			}
			for i := range tc.steps {
				rsp = g.step(t, tc.to)
				if diff := cmp.Diff(sortedStrings(want), g.allowed()); diff != "" {
					t.Errorf("%s\nstep %d: a gap: GCP allows -want, +got:\n%s", tc.reason, i, diff)
				}
			}
			if diff := cmp.Diff(tc.want.inGCP, g.kinds()); diff != "" {
				t.Errorf("%s\nresources in GCP: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.current, current(rsp)); diff != "" {
				t.Errorf("%s\nCurrent: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.ttl, rsp.GetMeta().GetTtl().AsDuration()); diff != "" {
				t.Errorf("%s\nTTL: -want, +got:\n%s", tc.reason, diff)
			}
			var expr string
			for name, spec := range g.inGCP {
				if strings.HasPrefix(name, groupRulePrefix) {
					expr = spec["forProvider"].(map[string]any)["match"].(map[string]any)["expr"].(map[string]any)["expression"].(string)
				}
			}
			if diff := cmp.Diff(tc.want.expression, expr); diff != "" {
				t.Errorf("%s\ngroup rule expression: -want, +got:\n%s", tc.reason, diff)
			}
			ready := rsp.GetDesired().GetResources()
			wantReady := tc.want.current[0] == "TRUE"
			for name, r := range ready {
				if r.GetReady() == fnv1.Ready_READY_FALSE && wantReady {
					t.Errorf("%s\n%s marked not ready once the allowlist is current", tc.reason, name)
				}
			}
			if !wantReady && !slices.ContainsFunc(slices.Collect(maps.Values(ready)), func(r *fnv1.Resource) bool { return r.GetReady() == fnv1.Ready_READY_FALSE }) {
				t.Errorf("%s\nnothing marked not ready while the allowlist is not current: the IPAllowlist would be Ready", tc.reason)
			}
		})
	}
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestGroupModeFollowsSources(t *testing.T) {
	web := map[string]any{"name": "web"}
	g := newGCP(true)
	var rsp *fnv1.RunFunctionResponse
	v4 := ranges(30)
	for range 4 {
		rsp = g.step(t, groupXR(ModeAddressGroup, web, 1000, v4...))
	}
	if diff := cmp.Diff(sortedStrings(v4), g.allowed()); diff != "" {
		t.Fatalf("a new allowlist in addressGroup mode: GCP allows -want, +got:\n%s", diff)
	}
	status := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"]
	if diff := cmp.Diff(map[string]any{"ipCount": float64(30), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist", "addressGroup": "web"}, status); diff != "" {
		t.Errorf("status: -want, +got:\n%s", diff)
	}

	// A range added and one removed change the group's items only; the rule, its priority
	// (the only one of the range) and the condition stay.
	changed := append(slices.Clone(v4[1:]), "203.0.113.7/32")
	for i := range 2 {
		rsp = g.step(t, groupXR(ModeAddressGroup, web, 1000, changed...))
		if got := current(rsp); got[0] != "TRUE" {
			t.Errorf("step %d of an ordinary change: Current %v, want True", i, got)
		}
		for name, r := range rsp.GetDesired().GetResources() {
			if r.GetReady() == fnv1.Ready_READY_FALSE {
				t.Errorf("step %d of an ordinary change: %s marked not ready", i, name)
			}
		}
	}
	if diff := cmp.Diff(sortedStrings(changed), g.allowed()); diff != "" {
		t.Errorf("after a change: GCP allows -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"group-rule-web", "group-web"}, g.kinds()); diff != "" {
		t.Errorf("resources in GCP: -want, +got:\n%s", diff)
	}

	// More ranges than the group holds: the allowlist is held as it is and says how to grow.
	rsp = g.step(t, groupXR(ModeAddressGroup, map[string]any{"name": "web", "capacity": float64(10)}, 1000, changed...))
	want := []string{"FALSE", ReasonCannotCompose, "30 IPv4 and 0 IPv6 ranges do not fit address groups of capacity 10: GCP fixes a group's capacity at creation, so set a new spec.addressGroup.name with a larger capacity (the allowlist moves to the new group without a gap)"}
	if diff := cmp.Diff(want, current(rsp)); diff != "" {
		t.Errorf("over capacity: Current -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(sortedStrings(changed), g.allowed()); diff != "" {
		t.Errorf("over capacity: GCP allows -want, +got:\n%s", diff)
	}
}

func TestGroupResource(t *testing.T) {
	s := Spec{
		Policy:            Policy{Name: "web-allowlist", Project: "p1", Region: "europe-west1"},
		ProviderConfigRef: &ProviderConfigRef{Kind: "ProviderConfig", Name: "team"},
		Mode:              ModeAddressGroup,
		AddressGroup:      &GroupSpec{Name: "web"},
	}
	got := GroupResource(s, "team-a", "api", "web-ipv6", "IPV6", []netip.Prefix{netip.MustParsePrefix("2001:db8::/48")}).Object
	want := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1",
		"kind":       "AddressGroup",
		"metadata": map[string]any{
			"name":        "api-web-ipv6",
			"annotations": map[string]any{"crossplane.io/external-name": "web-ipv6"},
		},
		"spec": map[string]any{
			"forProvider": map[string]any{
				"type": "IPV6", "capacity": int64(DefaultGroupCapacity), "purpose": []any{"CLOUD_ARMOR"},
				"location": "europe-west1", "project": "p1", "description": "IPAllowlist team-a/api",
				"items": []any{"2001:db8::/48"},
			},
			"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "team"},
		},
	}
	// The JSON round trip is how Crossplane receives it.
	st, err := structpb.NewStruct(got)
	if err != nil {
		t.Fatal(err)
	}
	wantSt := mustStruct(t, want)
	if diff := cmp.Diff(wantSt.AsMap(), st.AsMap()); diff != "" {
		t.Errorf("GroupResource: -want, +got:\n%s", diff)
	}
	if fmt.Sprint(GroupRuleResource(s, "team-a", "api", 1004, []string{"web", "web-ipv6"}).Object["spec"].(map[string]any)["forProvider"].(map[string]any)["match"]) !=
		"map[expr:map[expression:evaluateAddressGroup('web', origin.ip) || evaluateAddressGroup('web-ipv6', origin.ip)]]" {
		t.Errorf("GroupRuleResource: unexpected match %v", GroupRuleResource(s, "team-a", "api", 1004, []string{"web", "web-ipv6"}).Object["spec"])
	}
}
