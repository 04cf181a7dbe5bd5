package argocd

import (
	"context"
	"fmt"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

func allowRule(priority int64, cidr string) map[string]any {
	return map[string]any{"priority": priority, "action": "allow",
		"match": map[string]any{"versionedExpr": "SRC_IPS_V1", "config": map[string]any{"srcIpRanges": []any{cidr}}}}
}

func policy(name string, forProvider map[string]any, pcRef map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"forProvider": forProvider}
	if pcRef != nil {
		spec["providerConfigRef"] = pcRef
	}
	return obj(group, "SecurityPolicy", name, map[string]any{"spec": spec})
}

func named(kind, name string, and func(*unstructured.Unstructured) bool) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool { return u.GetKind() == kind && u.GetName() == name && and(u) }
}

func readyReason(reason string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool { _, r, _ := condition(u, "Ready"); return r == reason }
}

func syncedReason(reason string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool { _, r, _ := condition(u, "Synced"); return r == reason }
}

// syncedGeneration is the generation the Synced condition was written for.
func syncedGeneration(u *unstructured.Unstructured) int64 {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Synced" {
			g, _ := m["observedGeneration"].(int64)
			return g
		}
	}
	return 0
}

func users(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "users")
	return n
}

// TestHealthOfLiveObjects runs the provider binary against a real API server
// and the emulator, records objects in each state a user meets (as the
// provider wrote them) and checks docs/argocd/health.lua's verdict on each.
func TestHealthOfLiveObjects(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	e := start(t)
	rec := newRecorder(map[string]func(*unstructured.Unstructured) bool{
		"new":      named("SecurityPolicy", "creating", func(u *unstructured.Unstructured) bool { return u.Object["status"] == nil }),
		"creating": named("SecurityPolicy", "creating", readyReason("Creating")),
		"ready": named("SecurityPolicy", "ready", func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Ready")
			y, _, _ := condition(u, "Synced")
			return s == "True" && y == "True"
		}),
		"rule-ready":   named("SecurityPolicyRule", "conflict-claim", func(u *unstructured.Unstructured) bool { s, _, _ := condition(u, "Ready"); return s == "True" }),
		"rule-claimed": named("SecurityPolicy", "conflict", func(u *unstructured.Unstructured) bool { s, _, _ := condition(u, "RuleConflict"); return s == "True" }),
		"failing":      named("SecurityPolicy", "over-quota", func(u *unstructured.Unstructured) bool { s, _, _ := condition(u, "Synced"); return s == "False" }),
		"deleting": named("SecurityPolicy", "creating", func(u *unstructured.Unstructured) bool {
			return u.GetDeletionTimestamp() != nil && readyReason("Deleting")(u)
		}),
		"pc-new":     named("ProviderConfig", "team-a", func(u *unstructured.Unstructured) bool { return u.Object["status"] == nil }),
		"pc-in-use":  named("ProviderConfig", "team-a", func(u *unstructured.Unstructured) bool { return users(u) == 1 }),
		"cpc-in-use": named("ClusterProviderConfig", "default", func(u *unstructured.Unstructured) bool { return users(u) >= 1 }),
		"pc-deleting-in-use": named("ProviderConfig", "team-a", func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Terminating")
			return u.GetDeletionTimestamp() != nil && s == "True"
		}),
		// The write of an edit, before the provider has seen it: the
		// conditions still carry the previous generation.
		"stale": named("SecurityPolicy", "ready", func(u *unstructured.Unstructured) bool {
			return u.GetGeneration() > 1 && syncedGeneration(u) == 1
		}),
		"edited-ready": named("SecurityPolicy", "ready", func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Ready")
			return u.GetGeneration() > 1 && syncedGeneration(u) == u.GetGeneration() && s == "True"
		}),
		"paused":        named("SecurityPolicy", "paused", syncedReason("ReconcilePaused")),
		"paused-edited": named("SecurityPolicy", "paused", func(u *unstructured.Unstructured) bool { return u.GetGeneration() > 1 }),
		"observe-only": named("SecurityPolicy", "observed", func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Ready")
			return s == "True"
		}),
		"observe-only-missing": named("SecurityPolicy", "observed-missing", func(u *unstructured.Unstructured) bool {
			s, _, _ := condition(u, "Synced")
			return s == "False"
		}),
	})
	rec.watch(t, e.kube, group, "SecurityPolicy")
	rec.watch(t, e.kube, group, "SecurityPolicyRule")
	rec.watch(t, e.kube, pcGroup, "ProviderConfig")
	rec.watch(t, e.kube, pcGroup, "ClusterProviderConfig")

	e.credentials(t)
	e.create(t,
		policy("ready", map[string]any{"defaultRule": map[string]any{"action": "deny(403)"},
			"rules": []any{allowRule(1000, "203.0.113.0/24")}}, nil),
		policy("creating", map[string]any{"description": "uses the namespaced ProviderConfig"},
			map[string]any{"kind": "ProviderConfig", "name": "team-a"}),
		// An inline rule at a priority a SecurityPolicyRule claims: never
		// written, reported in RuleConflict.
		policy("conflict", map[string]any{"rules": []any{allowRule(1000, "198.51.100.0/24")}}, nil),
		obj(group, "SecurityPolicyRule", "conflict-claim", map[string]any{"spec": map[string]any{"forProvider": func() map[string]any {
			r := allowRule(1000, "192.0.2.0/28")
			r["securityPolicyRef"] = map[string]any{"name": "conflict"}
			return r
		}()}}),
	)
	for _, s := range []string{"new", "creating", "ready", "rule-ready", "rule-claimed", "pc-new", "pc-in-use", "cpc-in-use"} {
		rec.wait(t, s, readyLimit)
	}

	// An edit to a Ready policy: stale at once, Ready again once observed.
	ctx := context.Background()
	e.patch(t, policy("ready", nil, nil), `{"spec":{"forProvider":{"description":"edited"}}}`)
	rec.wait(t, "stale", readyLimit)
	rec.wait(t, "edited-ready", readyLimit)

	// Paused by annotation, then edited while paused.
	e.create(t, func() *unstructured.Unstructured {
		p := policy("paused", map[string]any{"description": "paused"}, nil)
		p.SetAnnotations(map[string]string{"crossplane.io/paused": "true"})
		return p
	}())
	rec.wait(t, "paused", readyLimit)
	e.patch(t, policy("paused", nil, nil), `{"spec":{"forProvider":{"description":"edited while paused"}}}`)
	rec.wait(t, "paused-edited", readyLimit)

	// Observe only: a policy made outside Crossplane, and one that does not exist.
	svc, err := e.emu.NewService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SecurityPolicies.Insert("argocd-project", &compute.SecurityPolicy{Name: "console-made"}).Do(); err != nil {
		t.Fatal(err)
	}
	observe := func(name, external string) *unstructured.Unstructured {
		p := policy(name, map[string]any{}, nil)
		p.SetAnnotations(map[string]string{"crossplane.io/external-name": external})
		_ = unstructured.SetNestedStringSlice(p.Object, []string{"Observe"}, "spec", "managementPolicies")
		return p
	}
	e.create(t, observe("observed", "console-made"), observe("observed-missing", "never-made"))
	rec.wait(t, "observe-only", readyLimit)
	rec.wait(t, "observe-only-missing", readyLimit)

	// GCP refuses one more policy: quota, a realistic failure.
	if err := e.emu.SetFaults(emulator.Faults{Quota: emulator.Quota{Policies: len(e.emu.Snapshot())}}); err != nil {
		t.Fatal(err)
	}
	e.create(t, policy("over-quota", map[string]any{}, nil))
	rec.wait(t, "failing", readyLimit)

	// Deleting a ProviderConfig in use is blocked; then delete its user.
	if err := e.kube.Delete(ctx, obj(pcGroup, "ProviderConfig", "team-a", nil)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "pc-deleting-in-use", readyLimit)
	if err := e.kube.Delete(ctx, policy("creating", nil, nil)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "deleting", readyLimit)
	t.Logf("captured %d objects from the live provider in %s", len(rec.got), time.Since(begin).Round(100*time.Millisecond))

	cpcUsers := users(rec.got["cpc-in-use"])
	cases := map[string]capturedCase{
		"NoStatusYet":        {reason: "A managed resource the provider has not reconciled yet is Progressing, never Healthy.", capture: "new", want: health{Status: "Progressing", Message: "Waiting for the provider to reconcile"}},
		"Creating":           {reason: "A policy being created is Progressing.", capture: "creating", want: health{Status: "Progressing", Message: "Creating"}},
		"Ready":              {reason: "A policy that exists and matches its spec is Healthy.", capture: "ready", want: health{Status: "Healthy", Message: "Available"}},
		"RuleReady":          {reason: "A SecurityPolicyRule that exists is Healthy.", capture: "rule-ready", want: health{Status: "Healthy", Message: "Available"}},
		"RuleConflict":       {reason: "An inline rule that is not applied because a SecurityPolicyRule claims its priority is Degraded, with the conflict.", capture: "rule-claimed", want: health{Status: "Degraded", Message: "priority 1000"}},
		"Failing":            {reason: "A policy GCP refuses (Synced=False) is Degraded, with GCP's message.", capture: "failing", want: health{Status: "Degraded", Message: "QUOTA_EXCEEDED"}},
		"Deleting":           {reason: "A policy being deleted is Progressing.", capture: "deleting", want: health{Status: "Progressing", Message: "Deleting"}},
		"ProviderConfigNew":  {reason: "A ProviderConfig has no conditions, only status.users: Healthy before its first status.", capture: "pc-new", want: health{Status: "Healthy", Message: "Used by 0 managed resource(s)"}},
		"ProviderConfigUsed": {reason: "A ProviderConfig in use is Healthy and says by how many.", capture: "pc-in-use", want: health{Status: "Healthy", Message: "Used by 1 managed resource(s)"}},
		"ClusterProviderConfigUsed": {reason: "A ClusterProviderConfig in use is Healthy and says by how many.", capture: "cpc-in-use",
			want: health{Status: "Healthy", Message: fmt.Sprintf("Used by %d managed resource(s)", cpcUsers)}},
		"StaleAfterEdit": {reason: "Right after an edit the conditions describe the previous generation: Progressing, never the old Healthy.", capture: "stale",
			want: health{Status: "Progressing", Message: "Waiting for generation 2 to be reconciled (conditions are of generation 1)"}},
		"ReadyAfterEdit": {reason: "Once the provider has observed the edit, Healthy again.", capture: "edited-ready", want: health{Status: "Healthy", Message: "Available"}},
		"Paused":         {reason: "A paused resource (Synced=False, ReconcilePaused) is Suspended, not Degraded.", capture: "paused", want: health{Status: "Suspended", Message: `Reconciliation is paused (crossplane.io/paused: "true")`}},
		"PausedAndEdited": {reason: "An edit to a paused resource is never observed: Suspended, not Progressing forever.", capture: "paused-edited",
			want: health{Status: "Suspended", Message: `Reconciliation is paused (crossplane.io/paused: "true")`}},
		"ObserveOnly":        {reason: "An observe-only policy that exists is Healthy, and says it is only observed.", capture: "observe-only", want: health{Status: "Healthy", Message: "Observe only: Available"}},
		"ObserveOnlyMissing": {reason: "An observe-only policy GCP does not have is Degraded, with why.", capture: "observe-only-missing", want: health{Status: "Degraded", Message: "does not exist"}},
		"ProviderConfigDeletionBlocked": {reason: "A ProviderConfig whose deletion waits for its users is Progressing, with why.", capture: "pc-deleting-in-use",
			want: health{Status: "Progressing", Message: "Blocking deletion while usages still exist"}},
	}
	checkCaptured(t, script, rec.got, cases)
}

// patch merge-patches o with a JSON merge patch, as `kubectl patch --type merge` does.
func (e *env) patch(t *testing.T, o *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := e.kube.Patch(context.Background(), o, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patch %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
