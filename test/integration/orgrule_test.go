package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// testOrganizationPolicyRules runs the provider against the emulator with an
// organization policy whose rules are unset and OrganizationSecurityPolicyRule
// objects for its rules: each rule one addRule, an edit one patchRule, a
// delete one removeRule. A younger rule object at a taken priority, of
// another namespace, is refused with the owner's name and changes nothing;
// deleted, it leaves the rule in place. Once the policy's object sets its
// rules it owns them all, and the rule objects are refused too.
func (e *env) testOrganizationPolicyRules(t *testing.T) {
	ctx := context.Background()
	cpc := &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}
	match := func(r v1beta1.IPRange) *v1beta1.RuleMatcher {
		return &v1beta1.RuleMatcher{VersionedExpr: armor.Ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: []v1beta1.IPRange{r}}}
	}

	sp := &v1alpha1.OrganizationSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "shared"},
		Spec: v1alpha1.OrganizationSecurityPolicySpec{ForProvider: v1alpha1.OrganizationSecurityPolicyParameters{
			Parent: "organizations/123", Description: armor.Ptr("rules as objects")}}}
	sp.SetProviderConfigReference(cpc)
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	id := meta.GetExternalName(sp)
	path := "locations/global/securityPolicies/" + id

	newRule := func(ns, name string, prio int64, r v1beta1.IPRange, mod func(*v1alpha1.OrganizationSecurityPolicyRuleParameters)) *v1alpha1.OrganizationSecurityPolicyRule {
		o := &v1alpha1.OrganizationSecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.OrganizationSecurityPolicyRuleSpec{ForProvider: v1alpha1.OrganizationSecurityPolicyRuleParameters{
				Priority: prio, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)", Match: match(r)}}}}
		mod(&o.Spec.ForProvider)
		o.SetProviderConfigReference(cpc)
		return o
	}
	byRef := func(p *v1alpha1.OrganizationSecurityPolicyRuleParameters) {
		p.SecurityPolicyRef = &xpv2.NamespacedReference{Name: "shared"}
	}
	byID := func(p *v1alpha1.OrganizationSecurityPolicyRuleParameters) { p.SecurityPolicy = armor.Ptr(id) }

	before := e.emu.Stats().Methods
	r100 := newRule(armor.Namespace, "shared-100", 100, "192.0.2.0/24", byRef)
	r200 := newRule(armor.Namespace, "shared-200", 200, "198.51.100.0/24", byID)
	for _, o := range []client.Object{r100, r200} {
		if err := e.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	e.waitReady(t, r100)
	e.waitReady(t, r200)
	e.waitOrgRules(t, path, "100:deny(403)", "200:deny(403)", "2147483647:allow")
	if got := meta.GetExternalName(r100); got != id+"/100" {
		t.Errorf("external name of %s: want %s/100, got %q", r100.GetName(), id, got)
	}
	if got := ptrOr(r100.Spec.ForProvider.SecurityPolicy); got != id {
		t.Errorf("spec.forProvider.securityPolicy resolved from securityPolicyRef: want %s, got %q", id, got)
	}
	e.wantOrgRuleCalls(t, before, 2, 0, 0)

	// An edit is one patchRule.
	before = e.emu.Stats().Methods
	e.get(t, r100)
	r100.Spec.ForProvider.Action = "allow"
	if err := e.kube.Update(ctx, r100); err != nil {
		t.Fatal(err)
	}
	e.waitOrgRules(t, path, "100:allow", "200:deny(403)", "2147483647:allow")
	e.waitReady(t, r100)
	e.wantOrgRuleCalls(t, before, 0, 1, 0)

	// A younger object of another namespace at priority 100 is refused,
	// naming the owner, and GCP is left as it is.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org-rules-other"}}
	if err := e.kube.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	before = e.emu.Stats().Methods
	dup := newRule(other.Name, "also-100", 100, "203.0.113.0/24", byID)
	if err := e.kube.Create(ctx, dup); err != nil {
		t.Fatal(err)
	}
	e.waitRefused(t, dup, "is managed by OrganizationSecurityPolicyRule "+armor.Namespace+"/shared-100, the oldest object for it")

	// A delete is one removeRule.
	if err := e.kube.Delete(ctx, r200); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, r200)
	e.waitOrgRules(t, path, "100:allow", "2147483647:allow")

	// The refused object deleted leaves the rule it did not own.
	if err := e.kube.Delete(ctx, dup); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, dup)
	e.waitOrgRules(t, path, "100:allow", "2147483647:allow")
	e.wantOrgRuleCalls(t, before, 0, 0, 1)

	// The policy's object setting its rules owns every rule: the rule
	// object is refused, naming it, and deleted leaves the rule to it.
	e.get(t, sp)
	sp.Spec.ForProvider.Rules = []v1beta1.PolicyRule{{Priority: 100, RuleParameters: v1beta1.RuleParameters{Action: "allow", Match: match("192.0.2.0/24")}}}
	if err := e.kube.Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitRefused(t, r100, "are managed by OrganizationSecurityPolicy "+armor.Namespace+"/shared, whose spec.forProvider.rules is set")
	before = e.emu.Stats().Methods
	if err := e.kube.Delete(ctx, r100); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, r100)
	e.waitOrgRules(t, path, "100:allow", "2147483647:allow")
	e.wantOrgRuleCalls(t, before, 0, 0, 0)

	if err := e.kube.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, sp)
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// waitOrgRules waits until the organization policy at path holds exactly
// the rules want, as "priority:action", in priority order.
func (e *env) waitOrgRules(t *testing.T, path string, want ...string) {
	t.Helper()
	eventually(t, waitFor, "GCP rules of "+path, func() error {
		rules, _ := e.emu.OrganizationSecurityPolicies()[path]["rules"].([]any)
		got := make([]string, 0, len(rules))
		for _, r := range rules {
			m, _ := r.(map[string]any)
			got = append(got, fmt.Sprintf("%v:%v", m["priority"], m["action"]))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			return fmt.Errorf("rules: want %v, got %v", want, got)
		}
		return nil
	})
}

// wantOrgRuleCalls checks the organization rule writes made since before.
func (e *env) wantOrgRuleCalls(t *testing.T, before map[string]int64, add, patch, remove int64) {
	t.Helper()
	after := e.emu.Stats().Methods
	for m, want := range map[string]int64{"organizationSecurityPolicies.addRule": add,
		"organizationSecurityPolicies.patchRule": patch, "organizationSecurityPolicies.removeRule": remove} {
		if got := after[m] - before[m]; got != want {
			t.Errorf("%s calls: want %d, got %d", m, want, got)
		}
	}
}

// waitRefused waits until o is Synced=False with a message containing msg.
func (e *env) waitRefused(t *testing.T, o resource.Managed, msg string) {
	t.Helper()
	eventually(t, waitFor, o.GetName()+" to be refused", func() error {
		if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		if c := o.GetCondition(xpv2.TypeSynced); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("Synced=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// waitGone waits until o no longer exists.
func (e *env) waitGone(t *testing.T, o client.Object) {
	t.Helper()
	eventually(t, waitFor, o.GetName()+" to be deleted", func() error {
		if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); !kerrors.IsNotFound(err) {
			return fmt.Errorf("object still exists (err %v)", err)
		}
		return nil
	})
}
