package argocd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

	// GCP refuses a fourth policy: quota, a realistic failure.
	if err := e.emu.SetFaults(emulator.Faults{Quota: emulator.Quota{Policies: 3}}); err != nil {
		t.Fatal(err)
	}
	e.create(t, policy("over-quota", map[string]any{}, nil))
	rec.wait(t, "failing", readyLimit)

	// Deleting a ProviderConfig in use is blocked; then delete its user.
	ctx := context.Background()
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
	cases := map[string]struct {
		reason  string
		capture string
		want    health
	}{
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
		"ProviderConfigDeletionBlocked": {reason: "A ProviderConfig whose deletion waits for its users is Progressing, with why.", capture: "pc-deleting-in-use",
			want: health{Status: "Progressing", Message: "Blocking deletion while usages still exist"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := evalHealth(script, rec.got[tc.capture])
			if err != nil {
				t.Fatalf("health.lua: %v", err)
			}
			t.Logf("%s: %s", got.Status, got.Message)
			// The message is GCP's or the provider's: compare the part we rely on.
			if strings.Contains(got.Message, tc.want.Message) {
				got.Message = tc.want.Message
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nhealth of %s: -want +got:\n%s", tc.reason, tc.capture, diff)
			}
		})
	}
}
