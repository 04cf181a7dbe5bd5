package function

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
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

// addressSet is the observed AddressSet of node source pool-web.
func addressSet(generation, observedGeneration int64, ready string, addrs ...any) map[string]any {
	status := map[string]any{
		"addresses": addrs, "addressCount": int64(len(addrs)), "nodeCount": int64(len(addrs)),
		"observedGeneration": observedGeneration,
	}
	if ready != "" {
		c := map[string]any{"type": "Ready", "status": ready, "reason": "Available"}
		if ready == "False" {
			c["reason"], c["message"] = "ShrinkHeld", "holding back a shrink from 4 to 0 addresses"
		}
		status["conditions"] = []any{c}
	}
	return map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "AddressSet",
		"metadata": map[string]any{"name": "web-nodes-pool-web", "generation": generation},
		"spec":     map[string]any{"nodes": map[string]any{"matchLabels": map[string]any{"pool": "web"}}},
		"status":   status,
	}
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
	policy := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1beta1", "kind": "SecurityPolicy",
		"metadata": map[string]any{"name": "web-allowlist"},
		"spec": map[string]any{
			"forProvider":       map[string]any{"defaultRule": map[string]any{"action": "deny(403)"}},
			"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
		},
	}
	desiredSet := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "AddressSet",
		"metadata": map[string]any{"name": "web-nodes-pool-web"},
		"spec":     map[string]any{"nodes": map[string]any{"matchLabels": map[string]any{"pool": "web"}}},
	}
	observedStatus := map[string]any{"ipCount": int64(7), "ruleCount": int64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"}
	withStatus := func(xr map[string]any) map[string]any {
		xr["status"] = observedStatus
		return xr
	}
	type condition struct{ Status, Reason, Message string }

	cases := map[string]struct {
		reason   string
		xr       map[string]any
		observed map[string]map[string]any
		// wantDesired is the desired state; nil when only results and conditions matter.
		wantDesired   map[string]map[string]any
		wantNotReady  []string
		wantStatus    map[string]any
		wantSeverity  []fnv1.Severity
		wantCurrent   condition
		wantFatalText string
		// wantTTL is how soon Crossplane is to run the function again; 0 means the
		// SDK's default.
		wantTTL time.Duration
	}{
		"FirstPassComposesAddressSet": {
			reason:       "Before its AddressSet has reported, the function composes it (and the policy) and no rule; nothing is Ready.",
			xr:           xrSpec(true, false),
			wantDesired:  map[string]map[string]any{"policy": policy, "nodes-pool-web": desiredSet},
			wantNotReady: []string{"nodes-pool-web", "policy"},
			wantCurrent:  condition{"False", ReasonSourcesPending, `waiting for the AddressSet(s) of node source(s) "pool-web" to report their Nodes' addresses`},
			wantTTL:      WaitingTTL,
		},
		"CreatePolicy": {
			reason:       "With create, the policy is composed with a deny(403) default rule, and rules reference it.",
			xr:           xrSpec(true, false),
			observed:     map[string]map[string]any{"nodes-pool-web": addressSet(1, 1, "True", "198.51.100.1/32", "2001:db8::1/128")},
			wantDesired:  map[string]map[string]any{"policy": policy, "nodes-pool-web": desiredSet, "rule-1000": rule(1000, byRef, "198.51.100.1/32", "203.0.113.0/24", "2001:db8::1/128")},
			wantStatus:   map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", ReasonComposed, "3 source ranges in 1 rule(s) of policy web-allowlist"},
			wantSeverity: nil,
		},
		"ExistingPolicyKeepsObservedSlots": {
			reason: "Without create, rules name the policy; an address observed in rule 1001 stays there; a Node inside the office's /24 is dropped.",
			xr:     xrSpec(false, false),
			observed: map[string]map[string]any{
				"nodes-pool-web": addressSet(1, 1, "True", "198.51.100.1/32", "198.51.100.2/32", "203.0.113.9/32"),
				"rule-1001":      rule(1001, byName, "198.51.100.2/32", "198.51.100.99/32"),
			},
			wantDesired: map[string]map[string]any{
				"nodes-pool-web": desiredSet,
				"rule-1001":      rule(1001, byName, "198.51.100.1/32", "198.51.100.2/32", "203.0.113.0/24"),
			},
			wantStatus:  map[string]any{"ipCount": float64(3), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent: condition{"True", ReasonComposed, "3 source ranges in 1 rule(s) of policy web-allowlist"},
		},
		"OptionalEmpty": {
			reason:       "An optional source matching nothing is a warning and reported in status.",
			xr:           xrSpec(false, false),
			observed:     map[string]map[string]any{"nodes-pool-web": addressSet(1, 1, "True")},
			wantDesired:  map[string]map[string]any{"nodes-pool-web": desiredSet, "rule-1000": rule(1000, byName, "203.0.113.0/24")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{"pool-web"}, "policyName": "web-allowlist"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_WARNING},
			wantCurrent:  condition{"True", ReasonComposed, "1 source ranges in 1 rule(s) of policy web-allowlist"},
		},
		"RequiredEmptyHoldsRules": {
			reason: "A required source matching nothing leaves the rules exactly as observed, not Ready, and says why.",
			xr:     withStatus(xrSpec(false, true)),
			observed: map[string]map[string]any{
				"nodes-pool-web": addressSet(1, 1, "True"),
				"rule-1000":      rule(1000, byName, "198.51.100.7/32", "203.0.113.0/24"),
			},
			wantDesired:  map[string]map[string]any{"nodes-pool-web": desiredSet, "rule-1000": rule(1000, byName, "198.51.100.7/32", "203.0.113.0/24")},
			wantNotReady: []string{"nodes-pool-web", "rule-1000"},
			wantStatus:   map[string]any{"ipCount": float64(7), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_WARNING},
			wantCurrent:  condition{"False", ReasonCannotCompose, `node source "pool-web": no address: 0 node(s) match labels {pool=web}, and the source is required; the rules are left as they are`},
		},
		"AddressSetBehindItsSpecHoldsRules": {
			reason: "An AddressSet that has not reported on its current spec (a selector just edited) holds the rules.",
			xr:     xrSpec(false, false),
			observed: map[string]map[string]any{
				"nodes-pool-web": addressSet(2, 1, "True"),
				"rule-1000":      rule(1000, byName, "198.51.100.7/32"),
			},
			wantDesired:  map[string]map[string]any{"nodes-pool-web": desiredSet, "rule-1000": rule(1000, byName, "198.51.100.7/32")},
			wantNotReady: []string{"nodes-pool-web", "rule-1000"},
			wantCurrent:  condition{"False", ReasonSourcesPending, `waiting for the AddressSet(s) of node source(s) "pool-web" to report their Nodes' addresses`},
			wantTTL:      WaitingTTL,
		},
		"HeldShrinkFollowedAndReported": {
			reason:      "An AddressSet holding back a shrink publishes its kept addresses; the rules follow them and Current says why it is not current.",
			xr:          xrSpec(false, false),
			observed:    map[string]map[string]any{"nodes-pool-web": addressSet(1, 1, "False", "198.51.100.1/32")},
			wantDesired: map[string]map[string]any{"nodes-pool-web": desiredSet, "rule-1000": rule(1000, byName, "198.51.100.1/32", "203.0.113.0/24")},
			wantCurrent: condition{"False", ReasonSourceHeld, `node source "pool-web": AddressSet web-nodes-pool-web is not Ready (ShrinkHeld): holding back a shrink from 4 to 0 addresses`},
		},
		"OverflowHoldsRules": {
			reason: "More ranges than the priority range holds leaves the rules as they are.",
			xr:     xrSpec(false, false),
			observed: func() map[string]map[string]any {
				var addrs []any
				for i := range 20 {
					addrs = append(addrs, fmt.Sprintf("198.51.100.%d/32", i))
				}
				return map[string]map[string]any{"nodes-pool-web": addressSet(1, 1, "True", addrs...)}
			}(),
			wantDesired:  map[string]map[string]any{"nodes-pool-web": desiredSet},
			wantNotReady: []string{"nodes-pool-web"},
			wantSeverity: []fnv1.Severity{fnv1.Severity_SEVERITY_WARNING},
			wantCurrent:  condition{"False", ReasonCannotCompose, "21 source ranges need 3 rules of 10, but priorityRange 1000-1001 reserves only 2: widen the range or remove sources"},
		},
		"InvalidSpecFatal": {
			reason: "A spec no source can fix is fatal: Crossplane applies nothing.",
			xr: func() map[string]any {
				xr := xrSpec(false, false)
				xr["spec"].(map[string]any)["priorityRange"] = map[string]any{"first": 5, "last": 1}
				return xr
			}(),
			wantSeverity:  []fnv1.Severity{fnv1.Severity_SEVERITY_FATAL},
			wantFatalText: "spec.priorityRange 5-1 is invalid: need 0 <= first <= last < 2147483647",
			wantCurrent:   condition{"False", ReasonInvalidSpec, "spec.priorityRange 5-1 is invalid: need 0 <= first <= last < 2147483647"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := map[string]*fnv1.Resource{}
			for n, r := range tc.observed {
				observed[n] = &fnv1.Resource{Resource: mustStruct(t, r)}
			}
			req := &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, tc.xr)}, Resources: observed},
			}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if rsp.GetRequirements() != nil {
				t.Errorf("%s\nrequirements: want none (the function reads no Nodes), got %v", tc.reason, rsp.GetRequirements())
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
			var current []condition
			for _, c := range rsp.GetConditions() {
				if c.GetType() != TypeCurrent || c.GetTarget() != fnv1.Target_TARGET_COMPOSITE {
					t.Errorf("%s\nunexpected condition %v", tc.reason, c)
					continue
				}
				st := map[fnv1.Status]string{fnv1.Status_STATUS_CONDITION_TRUE: "True", fnv1.Status_STATUS_CONDITION_FALSE: "False"}[c.GetStatus()]
				current = append(current, condition{st, c.GetReason(), c.GetMessage()})
			}
			if diff := cmp.Diff([]condition{tc.wantCurrent}, current); diff != "" {
				t.Errorf("%s\nCurrent condition: -want, +got:\n%s", tc.reason, diff)
			}
			wantTTL := tc.wantTTL
			if wantTTL == 0 {
				wantTTL = response.DefaultTTL
			}
			if diff := cmp.Diff(wantTTL, rsp.GetMeta().GetTtl().AsDuration()); diff != "" {
				t.Errorf("%s\nTTL: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantDesired == nil {
				return
			}
			got := map[string]map[string]any{}
			var notReady []string
			for n, r := range rsp.GetDesired().GetResources() {
				got[n] = r.GetResource().AsMap()
				if r.GetReady() == fnv1.Ready_READY_FALSE {
					notReady = append(notReady, n)
				}
			}
			if diff := cmp.Diff(tc.wantDesired, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndesired composed resources: -want, +got:\n%s", tc.reason, diff)
			}
			slices.Sort(notReady)
			if diff := cmp.Diff(tc.wantNotReady, notReady); diff != "" {
				t.Errorf("%s\nresources marked not ready: -want, +got:\n%s", tc.reason, diff)
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

func TestAddressSetName(t *testing.T) {
	cases := map[string]struct {
		xr, source, want string
	}{
		"Plain":      {xr: "web", source: "pool-web", want: "web-nodes-pool-web"},
		"UpperCase":  {xr: "web", source: "Pool Web", want: "web-nodes-pool-web-a4f08217"},
		"OtherCase":  {xr: "web", source: "pool web", want: "web-nodes-pool-web-af161b67"},
		"Dots":       {xr: "web", source: "eu.pool", want: "web-nodes-eu-pool-ad61a6fd"},
		"TooLongCut": {xr: strings.Repeat("x", 250), source: "a", want: strings.Repeat("x", 244) + "-ca978112"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AddressSetName(tc.xr, tc.source)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AddressSetName(%q, %q): -want, +got:\n%s", tc.xr, tc.source, diff)
			}
			if len(got) > 253 {
				t.Errorf("AddressSetName: %d characters", len(got))
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
