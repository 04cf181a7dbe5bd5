package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	spcontroller "github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	spacontroller "github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyattachment"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// TestProvider runs the controllers against the API server and the emulator
// through the lifecycle a user drives: create, update, drift, import,
// observe-only, delete, regional, inline plus separate rules, and an
// attachment fought over by another writer.
func TestProvider(t *testing.T) {
	// The attachments' Fight is read once, when the controllers start.
	saved := spacontroller.DefaultFight
	spacontroller.DefaultFight.Backoff = attachmentBackoff
	t.Cleanup(func() { spacontroller.DefaultFight = saved })
	e := startProvider(t, emulator.Options{})
	t.Run("CreateUpdateDriftDelete", e.testLifecycle)
	t.Run("ImportObserveOnly", e.testObserveOnly)
	t.Run("Regional", e.testRegional)
	t.Run("InlineAndSeparateRules", e.testInlineAndSeparate)
	t.Run("DefaultRuleObject", e.testDefaultRuleObject)
	t.Run("ProjectReads", e.testProjectReads)
	t.Run("TierAndUsers", e.testTierAndUsers)
	t.Run("OrganizationPolicy", e.testOrganizationPolicy)
	t.Run("OrganizationPolicyRules", e.testOrganizationPolicyRules)
	t.Run("Attachment", e.testAttachment)
}

func (e *env) testLifecycle(t *testing.T) {
	ctx := context.Background()
	sp := armor.NewPolicy("lifecycle", func(p *v1beta1.SecurityPolicyParameters) {
		p.Description = armor.Ptr("office allowlist")
		p.Labels = map[string]string{"team": "web"}
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(0, "10.0.0.0/8"), armor.AllowRule(1000, "192.0.2.0/24", "198.51.100.1")}
	})
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	e.waitGCPRules(t, "", "lifecycle", []string{"0:allow:10.0.0.0/8", "1000:allow:192.0.2.0/24,198.51.100.1", "2147483647:deny(403):*"})
	if got := sp.Status.AtProvider.RuleCount; got != 3 {
		t.Errorf("status.atProvider.ruleCount: want 3, got %d", got)
	}

	// Edit ranges and action: GCP follows.
	e.get(t, sp)
	sp.Spec.ForProvider.Rules[1] = armor.AllowRule(1000, "203.0.113.0/24")
	sp.Spec.ForProvider.Rules[1].Action = "deny(404)"
	if err := e.kube.Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitGCPRules(t, "", "lifecycle", []string{"0:allow:10.0.0.0/8", "1000:deny(404):203.0.113.0/24", "2147483647:deny(403):*"})

	// Drift behind our back: a rule added in the console and the default
	// rule opened. Both are corrected within a poll.
	if _, err := e.gcp.SecurityPolicies.AddRule(project, "lifecycle", &compute.SecurityPolicyRule{Priority: 5, Action: "allow",
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"0.0.0.0/0"}}}}).Do(); err != nil {
		t.Fatal(err)
	}
	waitOpDone(t, e)
	if _, err := e.gcp.SecurityPolicies.PatchRule(project, "lifecycle", &compute.SecurityPolicyRule{Action: "allow",
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"*"}}}}).Priority(2147483647).Do(); err != nil {
		t.Fatal(err)
	}
	e.waitGCPRules(t, "", "lifecycle", []string{"0:allow:10.0.0.0/8", "1000:deny(404):203.0.113.0/24", "2147483647:deny(403):*"})

	// Delete: gone from GCP, finalizer removed.
	if err := e.kube.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the policy to be deleted", func() error {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(sp), sp); !kerrors.IsNotFound(err) {
			return fmt.Errorf("object still exists (err %v)", err)
		}
		if _, err := e.gcpPolicy("", "lifecycle"); err == nil {
			return fmt.Errorf("GCP policy still exists")
		}
		return nil
	})
}

// waitOpDone gives the emulator's operations time to finish so a second
// direct write does not hit resourceNotReady.
func waitOpDone(t *testing.T, _ *env) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
}

func (e *env) testObserveOnly(t *testing.T) {
	ctx := context.Background()
	if _, err := e.gcp.SecurityPolicies.Insert(project, &compute.SecurityPolicy{Name: "imported", Description: "made in the console"}).Do(); err != nil {
		t.Fatal(err)
	}
	waitOpDone(t, e)
	before := e.mutations()
	sp := armor.NewPolicy("imported-object", func(p *v1beta1.SecurityPolicyParameters) {
		p.Description = armor.Ptr("something else entirely")
		p.Rules = []v1beta1.PolicyRule{}
	})
	meta.SetExternalName(sp, "imported")
	sp.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	if sp.Status.AtProvider.ID == "" || sp.Status.AtProvider.RuleCount != 1 {
		t.Errorf("status.atProvider: want id and 1 rule, got %+v", sp.Status.AtProvider)
	}
	time.Sleep(2 * poll)
	if got := e.mutations(); got != before {
		t.Errorf("Observe-only wrote to GCP: %d mutations", got-before)
	}
	got, err := e.gcpPolicy("", "imported")
	if err != nil || got.Description != "made in the console" {
		t.Errorf("imported policy changed: %v %v", got, err)
	}
}

func (e *env) testRegional(t *testing.T) {
	ctx := context.Background()
	sp := armor.NewPolicy("regional", func(p *v1beta1.SecurityPolicyParameters) {
		p.Region = armor.Ptr("us-central1")
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(10, "10.0.0.0/8")}
	})
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	e.waitGCPRules(t, "us-central1", "regional", []string{"10:allow:10.0.0.0/8", "2147483647:deny(403):*"})
	if want := "https://www.googleapis.com/compute/v1/projects/" + project + "/regions/us-central1"; sp.Status.AtProvider.Region != want {
		t.Errorf("status.atProvider.region: want %q, got %q", want, sp.Status.AtProvider.Region)
	}
	if err := e.kube.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the regional policy to go", func() error {
		if _, err := e.gcpPolicy("us-central1", "regional"); err == nil {
			return fmt.Errorf("still in GCP")
		}
		return nil
	})
}

func (e *env) testInlineAndSeparate(t *testing.T) {
	ctx := context.Background()
	sp := armor.NewPolicy("shared", func(p *v1beta1.SecurityPolicyParameters) {
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8"), armor.AllowRule(200, "10.1.0.0/16")}
	})
	rule := armor.NewRule("shared-200", "shared", armor.AllowRule(200, "172.16.0.0/12"))
	extra := armor.NewRule("shared-300", "shared", armor.AllowRule(300, "192.168.0.0/16"))
	for _, o := range []client.Object{sp, rule, extra} {
		if err := e.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	e.waitReady(t, sp)
	e.waitReady(t, rule)
	e.waitReady(t, extra)
	e.waitGCPRules(t, "", "shared", []string{"100:allow:10.0.0.0/8", "200:allow:172.16.0.0/12", "300:allow:192.168.0.0/16", "2147483647:allow:*"})

	// The inline rule at 200 is reported, never fought over.
	eventually(t, waitFor, "a RuleConflict condition", func() error {
		e.get(t, sp)
		c := sp.GetCondition(spcontroller.TypeRuleConflict)
		if c.Status != corev1.ConditionTrue {
			return fmt.Errorf("RuleConflict=%s", c.Status)
		}
		return nil
	})
	before := e.mutations()
	time.Sleep(3 * poll)
	if got := e.mutations() - before; got != 0 {
		t.Errorf("inline and separate rules fight: %d mutations in 3 polls", got)
	}

	// Deleting the rule object releases 200: the inline rule takes it back.
	if err := e.kube.Delete(ctx, rule); err != nil {
		t.Fatal(err)
	}
	e.waitGCPRules(t, "", "shared", []string{"100:allow:10.0.0.0/8", "200:allow:10.1.0.0/16", "300:allow:192.168.0.0/16", "2147483647:allow:*"})
}

func (e *env) testDefaultRuleObject(t *testing.T) {
	ctx := context.Background()
	sp := armor.NewPolicy("default-rule", func(*v1beta1.SecurityPolicyParameters) {})
	def := armor.NewRule("default-rule-deny", "default-rule", v1beta1.PolicyRule{Priority: v1beta1.DefaultRulePriority,
		RuleParameters: v1beta1.RuleParameters{Action: "deny(403)"}})
	def.SetAnnotations(map[string]string{"cloudarmor.armorplane.io/reset-default-rule-on-delete": "true"})
	for _, o := range []client.Object{sp, def} {
		if err := e.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	e.waitReady(t, def)
	e.waitGCPRules(t, "", "default-rule", []string{"2147483647:deny(403):*"})

	// Deleting it resets the default rule to allow, as its annotation asks;
	// the rule itself is never removed.
	if err := e.kube.Delete(ctx, def); err != nil {
		t.Fatal(err)
	}
	e.waitGCPRules(t, "", "default-rule", []string{"2147483647:allow:*"})
	eventually(t, waitFor, "the rule object to go", func() error {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(def), def); !kerrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}
