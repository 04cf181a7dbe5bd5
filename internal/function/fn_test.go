package function

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
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
				"name": "pool-web", "matchLabels": map[string]any{"pool": "web"}, "required": required, "shrinkHoldSeconds": 30,
			}},
		},
	}
}

// desiredAllowlist is the SecurityPolicyAllowlist the function composes for xrSpec.
func desiredAllowlist(create, required bool) map[string]any {
	nodes := map[string]any{"name": "pool-web", "nodes": map[string]any{"matchLabels": map[string]any{"pool": "web"}, "shrinkHoldSeconds": float64(30)}}
	if required {
		nodes["required"] = true
	}
	spec := map[string]any{
		"securityPolicy":    "web-allowlist",
		"priorityRange":     map[string]any{"first": float64(1000), "last": float64(1001)},
		"ruleDescription":   "IPAllowlist team-a/web",
		"mode":              "rules",
		"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
		"sources":           []any{map[string]any{"name": "office", "cidrs": []any{"203.0.113.0/24"}}, nodes},
	}
	if create {
		spec["createPolicy"] = map[string]any{"defaultAction": "deny(403)"}
	}
	return map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "SecurityPolicyAllowlist",
		"metadata": map[string]any{"name": "web"},
		"spec":     spec,
	}
}

// observedAllowlist is the allowlist of desiredAllowlist(create, false) as the provider reports
// on it: generation, observedGeneration and its Current condition.
func observedAllowlist(create bool, generation, observedGeneration float64, current map[string]any, status map[string]any) map[string]any {
	a := desiredAllowlist(create, false)
	a["metadata"] = map[string]any{"name": "web", "generation": generation}
	st := map[string]any{"observedGeneration": observedGeneration}
	for k, v := range status {
		st[k] = v
	}
	if current != nil {
		ready := map[string]any{"type": "Ready", "status": current["status"], "reason": "Available", "lastTransitionTime": "2026-11-28T00:00:00Z"}
		st["conditions"] = []any{current, ready}
	}
	a["status"] = st
	return a
}

func currentCondition(status, reason, message string) map[string]any {
	return map[string]any{"type": "Current", "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-28T00:00:00Z"}
}

// withAttachTo is xr naming the backend services of attachTo.
func withAttachTo(xr map[string]any, services ...string) map[string]any {
	targets := make([]any, 0, len(services))
	for _, s := range services {
		targets = append(targets, map[string]any{"backendService": s})
	}
	xr["spec"].(map[string]any)["attachTo"] = targets
	return xr
}

// desiredAttachment is the SecurityPolicyAttachment composed for backend service service.
func desiredAttachment(service string) map[string]any {
	return map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "SecurityPolicyAttachment",
		"spec": map[string]any{
			"forProvider": map[string]any{
				"securityPolicy": "web-allowlist",
				"target":         map[string]any{"kind": "BackendService", "name": service},
				"field":          "securityPolicy",
			},
			"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
		},
	}
}

// observedAttachment is desiredAttachment(service) as the provider reports on it, with
// conditions of type, status, reason and message, four strings each.
func observedAttachment(service string, conditions ...[4]string) map[string]any {
	a := desiredAttachment(service)
	a["metadata"] = map[string]any{"name": "web-x7k2p"}
	conds := make([]any, 0, len(conditions))
	for _, c := range conditions {
		conds = append(conds, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "message": c[3], "lastTransitionTime": "2026-11-28T00:00:00Z"})
	}
	a["status"] = map[string]any{"conditions": conds}
	return a
}

func TestRunFunction(t *testing.T) {
	xrStatus := map[string]any{"ipCount": float64(7), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"}
	withStatus := func(xr map[string]any) map[string]any {
		xr["status"] = xrStatus
		return xr
	}
	// showing is an IPAllowlist with xrStatus whose Current condition says status, reason and
	// message.
	showing := func(xr map[string]any, status, reason, message string) map[string]any {
		st := maps.Clone(xrStatus)
		st["conditions"] = []any{map[string]any{"type": TypeCurrent, "status": status, "reason": reason, "message": message, "lastTransitionTime": "2026-11-28T00:00:00Z"}}
		xr["status"] = st
		return xr
	}
	earlierRule := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1beta1", "kind": "SecurityPolicyRule",
		"metadata": map[string]any{"name": "web-1000", "annotations": map[string]any{"crossplane.io/composition-resource-name": "rule-1000"}},
		"spec": map[string]any{"forProvider": map[string]any{"priority": float64(1000), "securityPolicy": "web-allowlist",
			"action": "allow", "match": map[string]any{"versionedExpr": "SRC_IPS_V1", "config": map[string]any{"srcIpRanges": []any{"203.0.113.0/24"}}}}},
		"status": map[string]any{"conditions": []any{}},
	}
	earlierPolicy := map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1beta1", "kind": "SecurityPolicy",
		"metadata": map[string]any{"name": "web-allowlist"},
		"spec": map[string]any{
			"forProvider":       map[string]any{"defaultRule": map[string]any{"action": "deny(403)"}},
			"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": "gcp"},
		},
	}
	earlierRuleDesired := map[string]any{
		"apiVersion": earlierRule["apiVersion"], "kind": earlierRule["kind"], "metadata": earlierRule["metadata"], "spec": earlierRule["spec"],
	}
	type condition struct{ Status, Reason, Message string }

	cases := map[string]struct {
		reason       string
		xr           map[string]any
		observed     map[string]map[string]any
		wantDesired  map[string]map[string]any
		wantNotReady []string
		wantStatus   map[string]any
		wantCurrent  condition
		// wantAttached is the Attached condition; nil for none.
		wantAttached *condition
		wantWarnings []string
		wantFatal    string
		// wantTTL is how soon Crossplane is to run the function again.
		wantTTL time.Duration
	}{
		"FirstPass": {
			reason:      "The allowlist is composed, asked to create the policy; until it reports, the IPAllowlist says so.",
			xr:          xrSpec(true, false),
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantTTL:     WaitingTTL,
		},
		"ExistingPolicy": {
			reason:      "Without create the allowlist names the policy by GCP name only and creates none.",
			xr:          xrSpec(false, true),
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(false, true)},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantTTL:     WaitingTTL,
		},
		"Reported": {
			reason: "What the allowlist reports is the IPAllowlist's status and Current condition; its warnings are the IPAllowlist's.",
			xr:     xrSpec(true, false),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 1, 1,
				currentCondition("True", "Composed", "40 source ranges in 4 rule(s) of policy web-allowlist"),
				map[string]any{"ipCount": float64(40), "ruleCount": float64(4), "unmatchedSources": []any{"spare"}, "warnings": []any{`node source "pool-web": 1 node(s) left out`}})},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:   map[string]any{"ipCount": float64(40), "ruleCount": float64(4), "unmatchedSources": []any{"spare"}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", "Composed", "40 source ranges in 4 rule(s) of policy web-allowlist"},
			wantWarnings: []string{`node source "pool-web": 1 node(s) left out`},
			wantTTL:      response.DefaultTTL,
		},
		"Switching": {
			reason: "An allowlist moving between rules and a group says so, and the IPAllowlist with it.",
			xr:     xrSpec(true, false),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 2, 2,
				currentCondition("False", "Switching", "address group web is being created"), map[string]any{"ipCount": float64(40), "ruleCount": float64(4)})},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:  map[string]any{"ipCount": float64(40), "ruleCount": float64(4), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent: condition{"False", "Switching", "address group web is being created"},
			wantTTL:     WaitingTTL,
		},
		"NotReportedOnSpecYet": {
			reason: "An allowlist that has not reported on its current spec keeps the IPAllowlist's status as it is.",
			xr:     withStatus(xrSpec(true, false)),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 3, 2,
				currentCondition("True", "Composed", "old"), map[string]any{"ipCount": float64(1)})},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:  xrStatus,
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantTTL:     WaitingTTL,
		},
		"SpecNotAppliedYet": {
			reason: "In the reconcile that applies an edit the observed allowlist still has the old spec: its report describes that spec, so the IPAllowlist keeps its status.",
			xr:     withStatus(xrSpec(true, false)),
			observed: map[string]map[string]any{"allowlist": func() map[string]any {
				a := observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "old"), map[string]any{"ipCount": float64(1)})
				a["spec"].(map[string]any)["mode"] = "addressGroup"
				return a
			}()},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:  xrStatus,
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantTTL:     WaitingTTL,
		},
		"NotReportedKeepsCurrent": {
			reason: "An IPAllowlist that shows a Current condition keeps it, and its status, until the allowlist reports on its new spec: flipping to SourcesPending and back on every edit made Crossplane write it twice more, and echo each change.",
			xr:     showing(xrSpec(true, false), "True", "Composed", "every source's ranges are in the allow rules of policy web-allowlist, priorities 1000-1099"),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 3, 2,
				currentCondition("True", "Composed", "old"), map[string]any{"ipCount": float64(1)})},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:  xrStatus,
			wantCurrent: condition{"True", "Composed", "every source's ranges are in the allow rules of policy web-allowlist, priorities 1000-1099"},
			wantTTL:     WaitingTTL,
		},
		"SpecNotAppliedKeepsFalseCurrent": {
			reason: "A Current=False the IPAllowlist shows is kept as it is too until the allowlist reports on the spec being applied.",
			xr:     showing(xrSpec(true, false), "False", "Switching", "address group web is being created"),
			observed: map[string]map[string]any{"allowlist": func() map[string]any {
				a := observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "old"), map[string]any{"ipCount": float64(1)})
				a["spec"].(map[string]any)["mode"] = "addressGroup"
				return a
			}()},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:  xrStatus,
			wantCurrent: condition{"False", "Switching", "address group web is being created"},
			wantTTL:     WaitingTTL,
		},
		"CannotComposeWarns": {
			reason: "An allowlist that cannot compose is mirrored, with a warning as when the function itself cannot.",
			xr:     xrSpec(true, false),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 1, 1,
				currentCondition("False", "CannotCompose", "41 source ranges need 5 rules"), map[string]any{"ipCount": float64(40), "ruleCount": float64(4)})},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:   map[string]any{"ipCount": float64(40), "ruleCount": float64(4), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"False", "CannotCompose", "41 source ranges need 5 rules"},
			wantWarnings: []string{"41 source ranges need 5 rules"},
			wantTTL:      WaitingTTL,
		},
		"EarlierCompositionKept": {
			reason:      "The policy and a rule an earlier version composed are kept as they are until the allowlist adopts them: an upgrade never deletes a rule.",
			xr:          xrSpec(true, false),
			observed:    map[string]map[string]any{"rule-1000": earlierRule, "policy": earlierPolicy},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false), "rule-1000": earlierRuleDesired, "policy": earlierPolicy},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantTTL:     WaitingTTL,
		},
		"AttachWaitsForAllowlist": {
			reason:       "A policy is attached only once the allowlist is Ready: before, its allow rules may not be in GCP.",
			xr:           withAttachTo(xrSpec(true, false), "web"),
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantCurrent:  condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantAttached: &condition{"False", ReasonAttaching, "backend service web: attached once GCP holds every range of the allowlist (its SecurityPolicyAllowlist is Ready, rangesInGCP equal to ipCount)"},
			wantTTL:      WaitingTTL,
		},
		"AttachWaitsForEveryRangeInGCP": {
			reason: "A Ready allowlist whose ranges GCP is not confirmed to hold yet (rangesInGCP below ipCount) gets no attachment: the policy would deny them.",
			xr:     withAttachTo(xrSpec(true, false), "web"),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 1, 1,
				currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(35), "rangesInGCP": float64(34), "ruleCount": float64(4)})},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:   map[string]any{"ipCount": float64(35), "ruleCount": float64(4), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", "Composed", "composed"},
			wantAttached: &condition{"False", ReasonAttaching, "backend service web: attached once GCP holds every range of the allowlist (its SecurityPolicyAllowlist is Ready, rangesInGCP equal to ipCount)"},
			wantTTL:      WaitingTTL,
		},
		"AttachWaitsForReportOnSpec": {
			reason: "An allowlist Ready on its previous spec says nothing of the ranges of this one: no attachment until it reports on it.",
			xr:     withAttachTo(xrSpec(true, false), "web"),
			observed: map[string]map[string]any{"allowlist": func() map[string]any {
				a := observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "old"), map[string]any{"ipCount": float64(1), "rangesInGCP": float64(1)})
				a["spec"].(map[string]any)["sources"] = []any{map[string]any{"name": "office", "cidrs": []any{"198.51.100.0/24"}}}
				return a
			}()},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantCurrent:  condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantAttached: &condition{"False", ReasonAttaching, "backend service web: attached once GCP holds every range of the allowlist (its SecurityPolicyAllowlist is Ready, rangesInGCP equal to ipCount)"},
			wantTTL:      WaitingTTL,
		},
		"NewPolicyNameWaits": {
			reason: "A backend attached to the policy keeps naming it when the IPAllowlist names another, until the allowlist holds every range in the new one.",
			xr: func() map[string]any {
				xr := withAttachTo(xrSpec(true, false), "web")
				xr["spec"].(map[string]any)["policy"].(map[string]any)["name"] = "web-allowlist-2"
				return xr
			}(),
			observed: map[string]map[string]any{
				"allowlist": observedAllowlist(true, 2, 1, currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(1), "rangesInGCP": float64(1)}),
				"attachment-backendService-web": observedAttachment("web", [4]string{"Ready", "True", "Available", ""},
					[4]string{"Synced", "True", "ReconcileSuccess", ""}),
			},
			wantDesired: map[string]map[string]any{
				"allowlist": func() map[string]any {
					a := desiredAllowlist(true, false)
					a["spec"].(map[string]any)["securityPolicy"] = "web-allowlist-2"
					return a
				}(),
				"attachment-backendService-web": func() map[string]any {
					a := desiredAttachment("web")
					a["metadata"] = map[string]any{"name": "web-x7k2p"}
					return a
				}(),
			},
			wantCurrent:  condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantAttached: &condition{"True", ReasonAttached, "backend service web names policy web-allowlist-2"},
			wantTTL:      WaitingTTL,
		},
		"AttachOnceAllowlistReady": {
			reason: "The allowlist Ready with every range in GCP, each backend gets its attachment, named after the target.",
			xr:     withAttachTo(xrSpec(true, false), "web", "api"),
			observed: map[string]map[string]any{"allowlist": observedAllowlist(true, 1, 1,
				currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(1), "rangesInGCP": float64(1), "ruleCount": float64(1)})},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false),
				"attachment-backendService-web": desiredAttachment("web"), "attachment-backendService-api": desiredAttachment("api")},
			wantStatus:  map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent: condition{"True", "Composed", "composed"},
			wantAttached: &condition{"False", ReasonAttaching,
				"backend service web: waiting for its SecurityPolicyAttachment; backend service api: waiting for its SecurityPolicyAttachment"},
			wantTTL: WaitingTTL,
		},
		"Attached": {
			reason: "Every attachment Ready: the IPAllowlist is Attached, and nothing is left to wait for.",
			xr:     withAttachTo(xrSpec(true, false), "web"),
			observed: map[string]map[string]any{
				"allowlist": observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(1), "ruleCount": float64(1)}),
				"attachment-backendService-web": observedAttachment("web", [4]string{"Ready", "True", "Available", ""},
					[4]string{"Synced", "True", "ReconcileSuccess", ""}),
			},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false), "attachment-backendService-web": desiredAttachment("web")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", "Composed", "composed"},
			wantAttached: &condition{"True", ReasonAttached, "backend service web names policy web-allowlist"},
			wantTTL:      response.DefaultTTL,
		},
		"Contested": {
			reason: "A contested attachment is the IPAllowlist's Attached=False Contested, and a warning: it waits for the team.",
			xr:     withAttachTo(xrSpec(true, false), "web", "api"),
			observed: map[string]map[string]any{
				"allowlist": observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(1), "ruleCount": float64(1)}),
				"attachment-backendService-web": observedAttachment("web", [4]string{"Ready", "False", "Unavailable", "securityPolicy of projects/p/global/backendServices/web names none, not projects/p/global/securityPolicies/web-allowlist"},
					[4]string{"Synced", "False", "ReconcileError", "contested"}, [4]string{"Contested", "True", "Contested", "another writer set it back 3 times"}),
				"attachment-backendService-api": observedAttachment("api", [4]string{"Synced", "False", "ReconcileError", "managed by SecurityPolicyAttachment team-b/api"}),
			},
			wantDesired: map[string]map[string]any{"allowlist": desiredAllowlist(true, false),
				"attachment-backendService-web": desiredAttachment("web"), "attachment-backendService-api": desiredAttachment("api")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", "Composed", "composed"},
			wantAttached: &condition{"False", ReasonContested, "backend service web: another writer set it back 3 times"},
			wantWarnings: []string{"backend service web: another writer set it back 3 times"},
			wantTTL:      WaitingTTL,
		},
		"AttachError": {
			reason: "An attachment that cannot write says why on the IPAllowlist, without a warning: it may be GCP's passing refusal.",
			xr:     withAttachTo(xrSpec(true, false), "api"),
			observed: map[string]map[string]any{
				"allowlist":                     observedAllowlist(true, 1, 1, currentCondition("True", "Composed", "composed"), map[string]any{"ipCount": float64(1), "ruleCount": float64(1)}),
				"attachment-backendService-api": observedAttachment("api", [4]string{"Synced", "False", "ReconcileError", "managed by SecurityPolicyAttachment team-b/api"}),
			},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false), "attachment-backendService-api": desiredAttachment("api")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"True", "Composed", "composed"},
			wantAttached: &condition{"False", ReasonAttachError, "backend service api: managed by SecurityPolicyAttachment team-b/api"},
			wantTTL:      WaitingTTL,
		},
		"AttachmentKeptWhileAllowlistNotReady": {
			reason: "An attachment composed before stays while the allowlist is not Ready: a held source never detaches the policy.",
			xr:     withAttachTo(xrSpec(true, false), "web"),
			observed: map[string]map[string]any{
				"allowlist": observedAllowlist(true, 1, 1, currentCondition("False", "SourceHeld", "held"), map[string]any{"ipCount": float64(1), "ruleCount": float64(1)}),
				"attachment-backendService-web": observedAttachment("web", [4]string{"Ready", "True", "Available", ""},
					[4]string{"Synced", "True", "ReconcileSuccess", ""}),
			},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false), "attachment-backendService-web": desiredAttachment("web")},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"False", "SourceHeld", "held"},
			wantAttached: &condition{"True", ReasonAttached, "backend service web names policy web-allowlist"},
			wantTTL:      WaitingTTL,
		},
		"SourceUnreadableWarned": {
			reason: "A source the provider cannot read is the allowlist's Current reason and a warning: its last addresses stay in GCP, maybe stale.",
			xr:     xrSpec(true, false),
			observed: map[string]map[string]any{
				"allowlist": observedAllowlist(true, 1, 1, currentCondition("False", "SourceUnreadable", "cannot read the cluster of Secret default/eu-1"), map[string]any{"ipCount": float64(1), "ruleCount": float64(1)}),
			},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantStatus:   map[string]any{"ipCount": float64(1), "ruleCount": float64(1), "unmatchedSources": []any{}, "policyName": "web-allowlist"},
			wantCurrent:  condition{"False", "SourceUnreadable", "cannot read the cluster of Secret default/eu-1"},
			wantWarnings: []string{"cannot read the cluster of Secret default/eu-1"},
			wantTTL:      WaitingTTL,
		},
		"TargetRemoved": {
			reason: "A target gone from attachTo loses its attachment (Crossplane deletes it, which detaches), and the IPAllowlist says so.",
			xr: func() map[string]any {
				xr := xrSpec(true, false)
				xr["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Attached", "status": "True", "reason": "Attached",
					"lastTransitionTime": "2026-11-28T00:00:00Z"}}}
				return xr
			}(),
			observed: map[string]map[string]any{
				"attachment-backendService-web": observedAttachment("web", [4]string{"Ready", "True", "Available", ""}),
			},
			wantDesired:  map[string]map[string]any{"allowlist": desiredAllowlist(true, false)},
			wantCurrent:  condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
			wantAttached: &condition{"False", ReasonNoTarget, "spec.attachTo names no backend"},
			wantTTL:      WaitingTTL,
		},
		"InvalidSpec": {
			reason: "Source names used twice are fatal: Crossplane applies nothing.",
			xr: func() map[string]any {
				xr := xrSpec(true, false)
				xr["spec"].(map[string]any)["staticSources"] = []any{map[string]any{"name": "pool-web", "cidrs": []any{"203.0.113.0/24"}}}
				return xr
			}(),
			wantCurrent: condition{"False", ReasonInvalidSpec, `source name "pool-web" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`},
			wantFatal:   `source name "pool-web" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := map[string]*fnv1.Resource{}
			for n, r := range tc.observed {
				observed[n] = &fnv1.Resource{Resource: mustStruct(t, r)}
			}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, tc.xr)}, Resources: observed},
			})
			if err != nil {
				t.Fatal(err)
			}
			var fatal string
			var warnings []string
			for _, r := range rsp.GetResults() {
				switch r.GetSeverity() {
				case fnv1.Severity_SEVERITY_FATAL:
					fatal = r.GetMessage()
				case fnv1.Severity_SEVERITY_WARNING:
					warnings = append(warnings, r.GetMessage())
				}
			}
			if diff := cmp.Diff(tc.wantFatal, fatal); diff != "" {
				t.Errorf("%s\nfatal result: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("%s\nwarnings: -want, +got:\n%s", tc.reason, diff)
			}
			byType := map[string][]condition{}
			for _, c := range rsp.GetConditions() {
				st := map[fnv1.Status]string{fnv1.Status_STATUS_CONDITION_TRUE: "True", fnv1.Status_STATUS_CONDITION_FALSE: "False"}[c.GetStatus()]
				byType[c.GetType()] = append(byType[c.GetType()], condition{st, c.GetReason(), c.GetMessage()})
			}
			if diff := cmp.Diff([]condition{tc.wantCurrent}, byType[TypeCurrent]); diff != "" {
				t.Errorf("%s\nCurrent condition: -want, +got:\n%s", tc.reason, diff)
			}
			var wantAttached []condition
			if tc.wantAttached != nil {
				wantAttached = []condition{*tc.wantAttached}
			}
			if diff := cmp.Diff(wantAttached, byType[TypeAttached]); diff != "" {
				t.Errorf("%s\nAttached condition: -want, +got:\n%s", tc.reason, diff)
			}
			delete(byType, TypeCurrent)
			delete(byType, TypeAttached)
			if len(byType) > 0 {
				t.Errorf("%s\nunexpected conditions: %v", tc.reason, byType)
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
			if tc.wantFatal == "" {
				if diff := cmp.Diff(tc.wantTTL, rsp.GetMeta().GetTtl().AsDuration()); diff != "" {
					t.Errorf("%s\nTTL: -want, +got:\n%s", tc.reason, diff)
				}
			}
			var status map[string]any
			if s, ok := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any); ok {
				status = s
			}
			if diff := cmp.Diff(tc.wantStatus, status, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nIPAllowlist status: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
