package integration

import (
	"context"
	"fmt"
	"testing"

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

// testOrganizationPolicy runs the provider against the emulator with an
// organization policy and an association referencing it: both Ready, the
// policy's id its external name, one insert and one addAssociation; a rule
// change is one addRule; deleting both removes the association, then the
// policy (GCP refuses the other order).
func (e *env) testOrganizationPolicy(t *testing.T) {
	ctx := context.Background()
	const parent = "organizations/123"
	start := e.emu.Stats().Methods

	rule := func(prio int64, r v1beta1.IPRange) v1beta1.PolicyRule {
		return v1beta1.PolicyRule{Priority: prio, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)",
			Match: &v1beta1.RuleMatcher{VersionedExpr: armor.Ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: []v1beta1.IPRange{r}}}}}
	}
	sp := &v1alpha1.OrganizationSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "baseline"},
		Spec: v1alpha1.OrganizationSecurityPolicySpec{ForProvider: v1alpha1.OrganizationSecurityPolicyParameters{
			Parent: parent, Description: armor.Ptr("block known-bad"), Rules: []v1beta1.PolicyRule{rule(10, "192.0.2.0/24")}}}}
	sp.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"})
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	id := meta.GetExternalName(sp)
	path := "locations/global/securityPolicies/" + id
	if _, ok := e.emu.OrganizationSecurityPolicies()[path]; id == "" || !ok {
		t.Fatalf("want the policy's id as the external name and the policy in GCP, got id %q", id)
	}

	as := &v1alpha1.OrganizationSecurityPolicyAssociation{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "whole-org"},
		Spec: v1alpha1.OrganizationSecurityPolicyAssociationSpec{ForProvider: v1alpha1.OrganizationSecurityPolicyAssociationParameters{
			SecurityPolicyRef: &xpv2.NamespacedReference{Name: "baseline"}, AttachmentID: parent}}}
	as.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"})
	if err := e.kube.Create(ctx, as); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, as)
	if got := as.Status.AtProvider.SecurityPolicyID; got != id {
		t.Errorf("association status.atProvider.securityPolicyId: want %s, got %s", id, got)
	}

	// A new rule is one addRule.
	before := e.emu.Stats().Methods
	e.get(t, sp)
	sp.Spec.ForProvider.Rules = append(sp.Spec.ForProvider.Rules, rule(20, "198.51.100.0/24"))
	if err := e.kube.Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "rule 20 in GCP", func() error {
		rules, _ := e.emu.OrganizationSecurityPolicies()[path]["rules"].([]any)
		if len(rules) != 3 {
			return fmt.Errorf("want 3 rules, got %d", len(rules))
		}
		return nil
	})
	after := e.emu.Stats().Methods
	for m, want := range map[string]int64{"organizationSecurityPolicies.addRule": 1, "organizationSecurityPolicies.insert": 0,
		"organizationSecurityPolicies.addAssociation": 0, "organizationSecurityPolicies.removeRule": 0} {
		if got := after[m] - before[m]; got != want {
			t.Errorf("%s calls for one new rule: want %d, got %d", m, want, got)
		}
	}
	if n := after["organizationSecurityPolicies.addAssociation"] - start["organizationSecurityPolicies.addAssociation"]; n != 1 {
		t.Errorf("organizationSecurityPolicies.addAssociation calls in all: want 1, got %d", n)
	}

	for _, o := range []client.Object{sp, as} {
		if err := e.kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []resource.Managed{sp, as} {
		eventually(t, waitFor, o.GetName()+" to be deleted", func() error {
			if err := e.kube.Get(ctx, client.ObjectKeyFromObject(o), o); !kerrors.IsNotFound(err) {
				return fmt.Errorf("object still exists (err %v)", err)
			}
			return nil
		})
	}
	if _, ok := e.emu.OrganizationSecurityPolicies()[path]; ok {
		t.Errorf("policy %s left in GCP after its object was deleted", path)
	}
}
