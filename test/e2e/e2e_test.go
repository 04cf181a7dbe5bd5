package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestE2E runs every scenario against the shared node's provider pod and one
// emulator. Scenarios run in order and use distinct names.
func TestE2E(t *testing.T) {
	s := setup(t)
	for _, sc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"1-Examples", s.testExamples},
		{"2-EditAndDrift", s.testEditAndDrift},
		{"3-ImportObserveOnly", s.testImportObserveOnly},
		{"4-InlineAndRuleObjects", s.testInlineAndRuleObjects},
		{"5-DefaultRule", s.testDefaultRule},
		{"6-Regional", s.testRegional},
		{"7-Delete", s.testDelete},
		{"8-QuotaBackoff", s.testQuotaBackoff},
		{"9-Restart", s.testRestart},
		{"10-ObservedState", s.testObservedState},
		{"11-AddressGroup", s.testAddressGroup},
		{"12-APIDrift", s.testAPIDrift},
		{"13-NetworkEdgeSecurityService", s.testNetworkEdgeSecurityService},
	} {
		start := time.Now()
		ok := t.Run(sc.name, sc.fn)
		t.Logf("%s: %s in %s", sc.name, map[bool]string{true: "passed", false: "FAILED"}[ok], time.Since(start).Round(100*time.Millisecond))
	}
}

const defaultPriority = v1beta1.DefaultRulePriority

// 1. Every file under examples/ applies and every managed resource in them
// becomes Ready=True and Synced=True, with GCP holding what they describe.
func (s *suite) testExamples(t *testing.T) {
	// examples/import/observe-only.yaml imports a policy made elsewhere.
	const legacy = "legacy-console-policy"
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.SecurityPolicies.Insert(s.project, &compute.SecurityPolicy{Name: legacy, Description: "made in the console"}).Do()
	})
	legacyWrites := s.writes(policyPath(s.project, "", legacy))
	// examples/features/attachment.yaml attaches a policy to a backend
	// service made elsewhere, without one.
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.BackendServices.Insert(s.project, &compute.BackendService{Name: "web-frontend", LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	})

	objs := s.apply(t, readObjects(t, repo.Path("examples")))
	var mrs []*unstructuredObject
	for _, o := range objs {
		if o.GroupVersionKind().Group == v1beta1.Group {
			mrs = append(mrs, o)
		}
	}
	if len(mrs) == 0 {
		t.Fatal("examples/ holds no managed resources")
	}
	for _, o := range mrs {
		s.waitReady(t, o)
	}
	t.Logf("%d objects applied from examples/, %d managed resources Ready and Synced", len(objs), len(mrs))

	// GCP holds what each object describes.
	for _, o := range mrs {
		fp := func(f ...string) string {
			v, _, _ := unstructured.NestedString(o.Object, append([]string{"spec", "forProvider"}, f...)...)
			return v
		}
		project := s.project
		if p := fp("project"); p != "" {
			project = p
		}
		switch o.GetKind() {
		case v1beta1.SecurityPolicyKind:
			name := meta.GetExternalName(o)
			sp, err := s.gcpPolicy(project, fp("region"), name)
			if err != nil {
				t.Errorf("%s: GCP policy %s: %v", o.GetName(), name, err)
				continue
			}
			// The policy was Ready before its rule objects' rules reached
			// GCP; its status catches up within a second of the last one.
			s.eventually(t, 15*time.Second, o.GetName()+" status.atProvider.ruleCount", func() error {
				s.get(t, o)
				if count, _, _ := unstructured.NestedInt64(o.Object, "status", "atProvider", "ruleCount"); int(count) != len(sp.Rules) {
					return fmt.Errorf("ruleCount %d, GCP holds %d rules", count, len(sp.Rules))
				}
				return nil
			})
			t.Logf("%-22s %-24s rules in GCP: %v", o.GetKind(), o.GetName(), armor.RulesOf(sp))
			if mp, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "managementPolicies"); !slices.Equal(mp, []string{"Observe"}) {
				s.checkProvenance(t, o, sp.Labels)
			}
		case v1alpha1.SecurityPolicyAttachmentKind:
			// Its target names the policy.
			target, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "target", "name")
			b, err := s.gcp.BackendServices.Get(project, target).Do()
			if err != nil {
				t.Errorf("%s: GCP backend service %s: %v", o.GetName(), target, err)
			} else if !strings.HasSuffix(b.SecurityPolicy, "/global/securityPolicies/"+fp("securityPolicy")) {
				t.Errorf("%s: GCP backend service %s: securityPolicy %q, want policy %q", o.GetName(), target, b.SecurityPolicy, fp("securityPolicy"))
			}
		case v1beta1.SecurityPolicyRuleKind:
			sp, err := s.gcpPolicy(project, fp("region"), fp("securityPolicy"))
			if err != nil {
				t.Errorf("%s: GCP policy %q: %v", o.GetName(), fp("securityPolicy"), err)
				continue
			}
			prio, _, _ := unstructured.NestedInt64(o.Object, "spec", "forProvider", "priority")
			idx := slices.IndexFunc(sp.Rules, func(r *compute.SecurityPolicyRule) bool { return r.Priority == prio })
			if idx < 0 || sp.Rules[idx].Action != fp("action") {
				t.Errorf("%s: GCP policy %s has no %q rule at priority %d: %v", o.GetName(), sp.Name, fp("action"), prio, armor.RulesOf(sp))
			}
		}
	}
	if got := s.writes(policyPath(s.project, "", legacy)); got != legacyWrites {
		t.Errorf("observe-only example %s: %d writes to GCP, want 0", legacy, got-legacyWrites)
	}
}

// 2. Editing a rule's ranges and action reaches GCP; a change made in GCP
// behind the provider's back is corrected within one poll.
func (s *suite) testEditAndDrift(t *testing.T) {
	const name = "e2e-edit"
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(1000, "10.0.0.0/8"), armor.AllowRule(2000, "192.0.2.0/24")}
	})
	s.create(t, sp)
	s.waitReady(t, sp)
	s.waitGCPRules(t, s.project, "", name, []string{"1000:allow:10.0.0.0/8", "2000:allow:192.0.2.0/24", "2147483647:deny(403):*"})

	s.update(t, sp, func() {
		sp.Spec.ForProvider.Rules[1] = armor.AllowRule(2000, "198.51.100.0/24", "203.0.113.7/32")
		sp.Spec.ForProvider.Rules[1].Action = "deny(404)"
	})
	want := []string{"1000:allow:10.0.0.0/8", "2000:deny(404):198.51.100.0/24,203.0.113.7/32", "2147483647:deny(403):*"}
	s.waitGCPRules(t, s.project, "", name, want)
	s.waitReady(t, sp)

	// Drift: someone opens the policy in the console. The provider sees it
	// at its next poll: within poll + jitter, plus a little for the reconcile.
	bound := poll + pollJitter + 3*time.Second
	start := time.Now()
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.SecurityPolicies.PatchRule(s.project, name, &compute.SecurityPolicyRule{Action: "allow",
			Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"0.0.0.0/0"}}}}).
			Priority(1000).Do()
	})
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.SecurityPolicies.AddRule(s.project, name, &compute.SecurityPolicyRule{Priority: 5, Action: "allow",
			Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}}}}).Do()
	})
	s.waitGCPRulesWithin(t, bound+time.Since(start), s.project, "", name, want)
	t.Logf("drift corrected %s after it was made (bound: poll %s + jitter %s + 3s)", time.Since(start).Round(100*time.Millisecond), poll, pollJitter)
}

// 3. Importing an existing policy by external name with
// managementPolicies ["Observe"]: status reports GCP's state and nothing is
// ever written, although the spec differs from GCP.
func (s *suite) testImportObserveOnly(t *testing.T) {
	const gcpName = "e2e-console-made"
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.SecurityPolicies.Insert(s.project, &compute.SecurityPolicy{Name: gcpName, Description: "made in the console",
			Rules: []*compute.SecurityPolicyRule{
				{Priority: 500, Action: "deny(403)", Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
					Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"10.0.0.0/8"}}}},
				{Priority: defaultPriority, Action: "allow", Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
					Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}}}},
			}}).Do()
	})
	path := policyPath(s.project, "", gcpName)
	before := s.writes(path)

	sp := armor.NewPolicy("e2e-imported", func(p *v1beta1.SecurityPolicyParameters) {
		// Were it managed, each of these would change GCP.
		p.Description = armor.Ptr("something else entirely")
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{}
	})
	meta.SetExternalName(sp, gcpName)
	sp.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	s.create(t, sp)
	s.waitReady(t, sp)
	if at := sp.Status.AtProvider; at.ID == "" || at.RuleCount != 2 {
		t.Errorf("status.atProvider: want GCP's id and 2 rules, got id %q and %d rules", at.ID, at.RuleCount)
	}

	time.Sleep(3 * (poll + pollJitter))
	calls := s.calls(path)
	if got := s.writes(path) - before; got != 0 {
		t.Errorf("Observe-only wrote to GCP: %d writes (calls: %v)", got, calls)
	}
	if calls["securityPolicies.get"] < 2 {
		t.Errorf("Observe-only did not keep observing: calls %v", calls)
	}
	s.waitGCPRules(t, s.project, "", gcpName, []string{"500:deny(403):10.0.0.0/8", "2147483647:allow:*"})
	if got, err := s.gcpPolicy(s.project, "", gcpName); err != nil || got.Description != "made in the console" {
		t.Errorf("imported policy changed: description %q, err %v", got.Description, err)
	}
	t.Logf("observe-only over %d polls: %v", 3, calls)
}

// 4. Inline rules and SecurityPolicyRule objects share a policy: a
// priority claimed by both is reported in the RuleConflict condition and
// never fought over.
func (s *suite) testInlineAndRuleObjects(t *testing.T) {
	const name = "e2e-shared"
	path := policyPath(s.project, "", name)
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8"), armor.AllowRule(200, "10.1.0.0/16")}
	})
	claimed := armor.NewRule("e2e-shared-200", name, armor.AllowRule(200, "172.16.0.0/12"))
	extra := armor.NewRule("e2e-shared-300", name, armor.AllowRule(300, "192.168.0.0/16"))
	s.create(t, sp, claimed, extra)
	for _, o := range []client.Object{sp, claimed, extra} {
		s.waitReady(t, o)
	}
	s.waitGCPRules(t, s.project, "", name, []string{"100:allow:10.0.0.0/8", "200:allow:172.16.0.0/12", "300:allow:192.168.0.0/16", "2147483647:allow:*"})
	s.waitCondition(t, sp, "to report the claimed priority 200 in RuleConflict", func(c map[string]condition) error {
		if rc := c["RuleConflict"]; rc.Status != "True" || !strings.Contains(rc.Message, "200") {
			return fmt.Errorf("RuleConflict=%s", rc)
		}
		return nil
	})

	before := s.writes(path)
	time.Sleep(3 * (poll + pollJitter))
	if got := s.writes(path) - before; got != 0 {
		t.Errorf("inline rules and rule objects fight: %d writes over 3 polls (calls %v)", got, s.calls(path))
	}
	s.waitGCPRules(t, s.project, "", name, []string{"100:allow:10.0.0.0/8", "200:allow:172.16.0.0/12", "300:allow:192.168.0.0/16", "2147483647:allow:*"})

	// Deleting the rule object releases 200: the inline rule takes it back.
	s.delete(t, claimed)
	s.waitGone(t, claimed)
	s.waitGCPRules(t, s.project, "", name, []string{"100:allow:10.0.0.0/8", "200:allow:10.1.0.0/16", "300:allow:192.168.0.0/16", "2147483647:allow:*"})
	s.waitCondition(t, sp, "to clear RuleConflict", func(c map[string]condition) error {
		if rc := c["RuleConflict"]; rc.Status != "False" {
			return fmt.Errorf("RuleConflict=%s", rc)
		}
		return nil
	})
}

// 5. The default rule is switched to deny(403) and back to allow.
func (s *suite) testDefaultRule(t *testing.T) {
	const name = "e2e-default"
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "allow"}
	})
	s.create(t, sp)
	s.waitReady(t, sp)
	s.waitGCPRules(t, s.project, "", name, []string{"2147483647:allow:*"})

	for _, action := range []string{"deny(403)", "allow"} {
		s.update(t, sp, func() { sp.Spec.ForProvider.DefaultRule.Action = action })
		s.waitGCPRules(t, s.project, "", name, []string{"2147483647:" + action + ":*"})
		s.waitReady(t, sp)
	}
}

// 6. A regional policy and a regional rule object: create, update, delete.
func (s *suite) testRegional(t *testing.T) {
	const name, region = "e2e-regional", "europe-west1"
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.Region = armor.Ptr(region)
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(1000, "10.0.0.0/8")}
	})
	rule := armor.NewRule("e2e-regional-2000", name, armor.AllowRule(2000, "192.0.2.0/24"))
	rule.Spec.ForProvider.Region = armor.Ptr(region)
	s.create(t, sp, rule)
	s.waitReady(t, sp)
	s.waitReady(t, rule)
	s.waitGCPRules(t, s.project, region, name, []string{"1000:allow:10.0.0.0/8", "2000:allow:192.0.2.0/24", "2147483647:deny(403):*"})
	if want := "https://www.googleapis.com/compute/v1/projects/" + s.project + "/regions/" + region; sp.Status.AtProvider.Region != want {
		t.Errorf("status.atProvider.region: want %q, got %q", want, sp.Status.AtProvider.Region)
	}
	if _, err := s.gcpPolicy(s.project, "", name); err == nil {
		t.Errorf("a regional policy also exists as a global one")
	}

	s.update(t, sp, func() { sp.Spec.ForProvider.Rules[0] = armor.AllowRule(1000, "10.0.0.0/8", "172.16.0.0/12") })
	s.waitGCPRules(t, s.project, region, name, []string{"1000:allow:10.0.0.0/8,172.16.0.0/12", "2000:allow:192.0.2.0/24", "2147483647:deny(403):*"})

	s.delete(t, rule)
	s.waitGone(t, rule)
	s.waitGCPRules(t, s.project, region, name, []string{"1000:allow:10.0.0.0/8,172.16.0.0/12", "2147483647:deny(403):*"})
	s.delete(t, sp)
	s.waitGone(t, sp)
	s.waitGCPGone(t, s.project, region, name)
}

// 7. Deleting removes rules and the policy from GCP and then the
// finalizers; without Delete in managementPolicies GCP keeps everything.
func (s *suite) testDelete(t *testing.T) {
	t.Run("Delete", func(t *testing.T) {
		const name = "e2e-delete"
		sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
			p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8")}
		})
		rule := armor.NewRule("e2e-delete-200", name, armor.AllowRule(200, "192.0.2.0/24"))
		s.create(t, sp, rule)
		s.waitReady(t, sp)
		s.waitReady(t, rule)
		s.waitGCPRules(t, s.project, "", name, []string{"100:allow:10.0.0.0/8", "200:allow:192.0.2.0/24", "2147483647:allow:*"})

		// Seconds after their create: nothing may wait for a grace period.
		const bound = 10 * time.Second
		start := time.Now()
		s.delete(t, rule)
		s.waitGone(t, rule)
		s.waitGCPRules(t, s.project, "", name, []string{"100:allow:10.0.0.0/8", "2147483647:allow:*"})
		s.delete(t, sp)
		s.waitGone(t, sp)
		s.waitGCPGone(t, s.project, "", name)
		took := time.Since(start)
		t.Logf("rule and policy deleted in %s", took.Round(100*time.Millisecond))
		if took > bound {
			t.Errorf("deleting a rule and its policy right after their create took %s, want under %s", took, bound)
		}
	})
	t.Run("Orphan", func(t *testing.T) {
		const name = "e2e-orphan"
		path := policyPath(s.project, "", name)
		noDelete := xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate,
			xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
		sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
			p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8")}
		})
		sp.Spec.ManagementPolicies = noDelete
		rule := armor.NewRule("e2e-orphan-200", name, armor.AllowRule(200, "192.0.2.0/24"))
		rule.Spec.ManagementPolicies = noDelete
		s.create(t, sp, rule)
		s.waitReady(t, sp)
		s.waitReady(t, rule)
		want := []string{"100:allow:10.0.0.0/8", "200:allow:192.0.2.0/24", "2147483647:allow:*"}
		s.waitGCPRules(t, s.project, "", name, want)

		// The policy goes first: while it exists with inline rules it owns
		// every priority no SecurityPolicyRule claims, so a released rule
		// object's priority would be cleaned up by the policy (by design).
		before := s.calls(path)
		s.delete(t, sp)
		s.waitGone(t, sp)
		s.delete(t, rule)
		s.waitGone(t, rule)
		after := s.calls(path)
		for _, m := range []string{"securityPolicies.removeRule", "securityPolicies.delete"} {
			if after[m] != before[m] {
				t.Errorf("%s called %d times for an object without the Delete policy", m, after[m]-before[m])
			}
		}
		s.waitGCPRules(t, s.project, "", name, want)
	})
}

// 8. GCP refuses a rule (SECURITY_POLICY_RULES quota): Synced=False carries
// GCP's message and the object retries with exponential backoff, not in a
// hot loop; once the quota allows, it converges on its own.
func (s *suite) testQuotaBackoff(t *testing.T) {
	// A project of its own, so the quota counts only this policy's rules.
	const project, name = "e2e-quota-project", "e2e-quota"
	path := policyPath(project, "", name)
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) { p.Project = armor.Ptr(project) })
	s.create(t, sp)
	s.waitReady(t, sp)
	s.waitGCPRules(t, project, "", name, []string{"2147483647:allow:*"})

	// The default rule fills the quota of one rule.
	if err := s.emu.SetFaults(emulator.Faults{Quota: emulator.Quota{Rules: 1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.emu.SetFaults(emulator.Faults{}) })
	rule := armor.NewRule("e2e-quota-100", name, armor.AllowRule(100, "10.0.0.0/8"))
	rule.Spec.ForProvider.Project = armor.Ptr(project)
	s.create(t, rule)
	s.waitCondition(t, rule, "to report GCP's quota error in Synced=False", func(c map[string]condition) error {
		if sc := c["Synced"]; sc.Status != "False" || !strings.Contains(sc.Message, "QUOTA_EXCEEDED") ||
			!strings.Contains(sc.Message, "Quota 'SECURITY_POLICY_RULES' exceeded") {
			return fmt.Errorf("Synced=%s", sc)
		}
		return nil
	})
	conds, err := s.conditions(t, rule)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Synced=%s", conds["Synced"])

	// Exponential per-object backoff starting at 1s and doubling (to 60s)
	// allows about 5 attempts in 20s (t = 0, 1, 3, 7, 15). Allow 8 for
	// timing slack; a hot loop makes hundreds.
	const window, maxAddRule = 20 * time.Second, 8
	first := s.calls(path)["securityPolicies.addRule"]
	time.Sleep(window)
	n := s.calls(path)["securityPolicies.addRule"] - first
	t.Logf("during backoff: %d addRule calls in %s (bound %d); all calls for the policy: %v", n, window, maxAddRule, s.calls(path))
	if n > maxAddRule {
		t.Errorf("hot loop: %d addRule calls in %s, want at most %d", n, window, maxAddRule)
	}
	if n < 1 {
		t.Errorf("no retry at all in %s", window)
	}

	// Quota raised: a later retry succeeds without anyone touching the
	// object. After six failures the backoff is at its 60 s cap, and a
	// status write that conflicts right after the create (the informer has
	// not seen the create's own status write yet) costs one more capped
	// backoff before Ready=True shows: allow two caps.
	if err := s.emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	s.waitReadyWithin(t, 2*time.Minute+poll, rule)
	s.waitGCPRules(t, project, "", name, []string{"100:allow:10.0.0.0/8", "2147483647:allow:*"})
	t.Logf("converged %s after the quota was raised", time.Since(lifted).Round(100*time.Millisecond))
}

// 9. The provider is killed (SIGKILL, its pod then deleted) while objects
// are being created, and the Deployment starts another pod: everything
// converges and GCP holds exactly what is desired, with no duplicates and
// nothing left over.
func (s *suite) testRestart(t *testing.T) {
	const prefix, policies = "e2e-restart-", 6
	want := map[string][]string{}
	var objs []client.Object
	for i := range policies {
		name := fmt.Sprintf("%s%d", prefix, i)
		objs = append(objs,
			armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
				p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
				p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8"), armor.AllowRule(200, "10.1.0.0/16")}
			}),
			armor.NewRule(name+"-300", name, armor.AllowRule(300, "192.0.2.0/24")),
			armor.NewRule(name+"-400", name, armor.AllowRule(400, "198.51.100.0/24")))
		want[policyPath(s.project, "", name)] = []string{"100:allow:10.0.0.0/8", "200:allow:10.1.0.0/16",
			"300:allow:192.0.2.0/24", "400:allow:198.51.100.0/24", "2147483647:deny(403):*"}
	}
	inGCP := func() int {
		n := 0
		for p := range s.emu.Snapshot() {
			if _, ok := want[p]; ok {
				n++
			}
		}
		return n
	}
	s.create(t, objs...)
	s.eventually(t, waitFor, "the provider to start creating policies", func() error {
		if inGCP() < 2 {
			return fmt.Errorf("%d policies in GCP", inGCP())
		}
		return nil
	})
	killed := time.Now()
	n, writes := inGCP(), s.emu.Stats().Mutations
	pod, err := s.plat.RestartProvider(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("provider killed with %d of %d policies in GCP (%d writes so far); pod %s ready %s later",
		n, policies, writes, pod, time.Since(killed).Round(100*time.Millisecond))

	for _, o := range objs {
		s.waitReady(t, o)
	}
	// Exactly the desired policies and rules: nothing duplicated, nothing
	// half-made left behind.
	s.eventually(t, waitFor, "GCP to hold exactly the desired policies", func() error {
		got := map[string][]string{}
		for p := range s.emu.Snapshot() {
			if strings.Contains(p, "/securityPolicies/"+prefix) {
				name := p[strings.LastIndex(p, "/")+1:]
				sp, err := s.gcpPolicy(s.project, "", name)
				if err != nil {
					return err
				}
				got[p] = armor.RulesOf(sp)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("want policies %v, got %v", keys(want), keys(got))
		}
		for p, w := range want {
			if !slices.Equal(got[p], w) {
				return fmt.Errorf("%s: want rules %v, got %v", p, w, got[p])
			}
		}
		return nil
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
