package function

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func xrSpec(create bool, required bool) map[string]any {
	return map[string]any{
		"apiVersion": "platform.armorplane.io/v1alpha1",
		"kind":       "IPAllowlist",
		"metadata":   map[string]any{"name": "web", "namespace": "team-a"},
		"spec": map[string]any{
			"policy":            map[string]any{"name": "web-allowlist", "create": create},
			"priorityRange":     map[string]any{"first": 1000, "last": 1001},
			"providerConfigRef": map[string]any{"name": "gcp"},
			"staticSources":     []any{map[string]any{"name": "office", "cidrs": []any{"203.0.113.0/24"}}},
			"nodeSources": []any{map[string]any{
				"name": "pool-web", "matchLabels": map[string]any{"pool": "web"}, "required": required,
			}},
		},
	}
}

func nodeItem(name, external string) *fnv1.Resource {
	addrs := []any{map[string]any{"type": "InternalIP", "address": "10.0.0.1"}}
	if external != "" {
		addrs = append(addrs, map[string]any{"type": "ExternalIP", "address": external})
	}
	s, _ := structpb.NewStruct(map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"addresses": addrs},
	})
	return &fnv1.Resource{Resource: s}
}

func wantRequirements() *fnv1.Requirements {
	return &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		"nodes-pool-web": {
			ApiVersion: "v1", Kind: "Node",
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"pool": "web"}}},
		},
	}}
}

func TestRunFunction(t *testing.T) {
	rule := func(prio int64, policy map[string]any, ranges ...any) map[string]any {
		fp := map[string]any{
			"priority": float64(prio), "action": "allow", "description": "IPAllowlist team-a/web",
			"match": map[string]any{"versionedExpr": "SRC_IPS_V1", "config": map[string]any{"srcIpRanges": ranges}},
		}
		for k, v := range policy {
			fp[k] = v
		}
		return map[string]any{
			"apiVersion": "cloudarmor.armorplane.io/v1beta1", "kind": "SecurityPolicyRule",
			"metadata": map[string]any{"name": fmt.Sprintf("web-%d", prio)},
			"spec": map[string]any{
				"forProvider":       fp,
				"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
			},
		}
	}
	byRef := map[string]any{"securityPolicyRef": map[string]any{"name": "web-allowlist"}}
	byName := map[string]any{"securityPolicy": "web-allowlist"}
	nodes := func(items ...*fnv1.Resource) map[string]*fnv1.Resources {
		return map[string]*fnv1.Resources{"nodes-pool-web": {Items: items}}
	}

	cases := map[string]struct {
		reason   string
		xr       map[string]any
		required map[string]*fnv1.Resources
		observed map[string]*fnv1.Resource
		// want is the desired state; nil when only results and requirements matter.
		wantDesired   map[string]map[string]any
		wantStatus    map[string]any
		wantSeverity  []fnv1.Severity
		wantFatalText string
	}{
		"FirstPassRequiresNodes": {
			reason:      "Before Crossplane resolved the Nodes the function only asks for them.",
			xr:          xrSpec(true, false),
			wantDesired: map[string]map[string]any{},
		},
		"CreatePolicy": {
			reason:   "With create, the policy is composed with a deny(403) default rule, and rules reference it.",
			xr:       xrSpec(true, false),
			required: nodes(nodeItem("a", "198.51.100.1"), nodeItem("b", "2001:db8::1")),
			wantDesired: map[string]map[string]any{
				"policy": {
					"apiVersion": "cloudarmor.armorplane.io/v1beta1", "kind": "SecurityPolicy",
					"metadata": map[string]any{"name": "web-allowlist"},
					"spec": map[string]any{
						"forProvider":       map[string]any{"defaultRule": map[string]any{"action": "deny(403)"}},
						"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
					},
				},
				"rule-1000": rule(1000, byRef, "198.51.100.1/32", "203.0.113.0/24", "2001:db8::1/128"),
			},
			wantStatus:   map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_NORMAL},
		},
		"ExistingPolicyKeepsObservedSlots": {
			reason: "Without create, rules name the policy; an address observed in rule 1001 stays there.",
			xr:     xrSpec(false, false),
			required: nodes(nodeItem("a", "198.51.100.1"), nodeItem("b", "198.51.100.2"),
				nodeItem("c", "")),
			observed: map[string]*fnv1.Resource{
				"rule-1001": {Resource: mustStruct(t, rule(1001, byName, "198.51.100.2/32", "198.51.100.99/32"))},
			},
			wantDesired: map[string]map[string]any{
				"rule-1001": rule(1001, byName, "198.51.100.1/32", "198.51.100.2/32", "203.0.113.0/24"),
			},
			wantStatus:   map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_WARNING, fnv1.Severity_SEVERITY_NORMAL},
		},
		"OptionalEmpty": {
			reason:       "An optional source matching nothing is a warning and reported in status.",
			xr:           xrSpec(false, false),
			required:     nodes(),
			wantDesired:  map[string]map[string]any{"rule-1000": rule(1000, byName, "203.0.113.0/24")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{"pool-web"}, "policyName": "web-allowlist"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_WARNING, fnv1.Severity_SEVERITY_NORMAL},
		},
		"RequiredEmpty": {
			reason:        "A required source matching nothing is fatal.",
			xr:            xrSpec(false, true),
			required:      nodes(),
			wantSeverity:  []fnv1.Severity{fnv1.Severity_SEVERITY_FATAL},
			wantFatalText: `node source "pool-web": no address: 0 node(s) match labels {pool=web}, and the source is required; the rules are left as they are`,
		},
		"Overflow": {
			reason: "More ranges than the priority range holds is fatal.",
			xr:     xrSpec(false, false),
			required: func() map[string]*fnv1.Resources {
				var items []*fnv1.Resource
				for i := range 20 {
					items = append(items, nodeItem(fmt.Sprint(i), fmt.Sprintf("198.51.100.%d", i)))
				}
				return nodes(items...)
			}(),
			wantSeverity:  []fnv1.Severity{fnv1.Severity_SEVERITY_FATAL},
			wantFatalText: "21 source ranges need 3 rules of 10, but priorityRange 1000-1001 reserves only 2: widen the range or remove sources",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{
				Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, tc.xr)}, Resources: tc.observed},
				RequiredResources: tc.required,
			}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantRequirements(), rsp.GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequirements: -want, +got:\n%s", tc.reason, diff)
			}
			var sev []fnv1.Severity
			for _, r := range rsp.GetResults() {
				sev = append(sev, r.GetSeverity())
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					if diff := cmp.Diff(tc.wantFatalText, r.GetMessage()); diff != "" {
						t.Errorf("%s\nfatal message: -want, +got:\n%s", tc.reason, diff)
					}
				}
			}
			if diff := cmp.Diff(tc.wantSeverity, sev); diff != "" {
				t.Errorf("%s\nresult severities: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantDesired == nil {
				return
			}
			got := map[string]map[string]any{}
			for n, r := range rsp.GetDesired().GetResources() {
				got[n] = r.GetResource().AsMap()
			}
			if diff := cmp.Diff(tc.wantDesired, got); diff != "" {
				t.Errorf("%s\ndesired composed resources: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantStatus != nil {
				status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
				if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
					t.Errorf("%s\ndesired XR status: -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

func TestObservedRules(t *testing.T) {
	obs := func(m map[string]any) resource.ObservedComposed {
		u := resource.NewDesiredComposed().Resource
		u.Object = m
		return resource.ObservedComposed{Resource: u}
	}
	in := map[resource.Name]resource.ObservedComposed{
		"rule-1000": obs(map[string]any{"spec": map[string]any{"forProvider": map[string]any{
			"match": map[string]any{"config": map[string]any{"srcIpRanges": []any{"203.0.113.0/24", "not-a-range"}}},
		}}}),
		"policy":   obs(map[string]any{"spec": map[string]any{}}),
		"rule-abc": obs(map[string]any{}),
	}
	got := ObservedRules(in)
	want := map[int64][]string{1000: {"203.0.113.0/24"}}
	gotS := map[int64][]string{}
	for p, rs := range got {
		for _, r := range rs {
			gotS[p] = append(gotS[p], r.String())
		}
	}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("ObservedRules(): -want, +got:\n%s", diff)
	}
}
