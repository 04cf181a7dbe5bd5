package argocd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHealthOfOrganizationKinds checks the verdict on the organization-level
// kinds: Healthy once Ready, Degraded with why when the provider refuses
// their config or GCP refuses a write (an attached policy's delete) or
// another object owns a rule, and Progressing while an association or a rule
// waits for its policy.
func TestHealthOfOrganizationKinds(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	ready := cond("Ready", "True", "Available", "")
	synced := cond("Synced", "True", "ReconcileSuccess", "")
	refused := "cannot connect to GCP: an organization-level resource affects every project below its organization, folder or attachment point, " +
		"so it may only use a ClusterProviderConfig: providerConfigRef names ProviderConfig \"default\", which is refused. Ask your platform team for a ClusterProviderConfig"
	ruleRefused := "the rule at priority 100 of organization security policy 1234 is managed by OrganizationSecurityPolicyRule platform/block-scanners, the oldest object for it: " +
		"this object makes no change to GCP and leaves the rule in place when deleted"
	ruleWaiting := "waiting for GCP organization security policy 1234 to exist"
	cases := map[string]struct {
		reason string
		kind   string
		conds  []map[string]any
		want   health
	}{
		"PolicyReady": {reason: "A Ready organization policy is Healthy.",
			kind: "OrganizationSecurityPolicy", conds: []map[string]any{ready, synced}, want: health{Status: "Healthy", Message: "Available"}},
		"PolicyNamespacedConfig": {reason: "An organization policy on a namespaced ProviderConfig is Degraded, with why.",
			kind: "OrganizationSecurityPolicy", conds: []map[string]any{cond("Synced", "False", "ReconcileError", refused)},
			want: health{Status: "Degraded", Message: refused}},
		"AssociationReady": {reason: "A Ready association is Healthy.",
			kind: "OrganizationSecurityPolicyAssociation", conds: []map[string]any{ready, synced}, want: health{Status: "Healthy", Message: "Available"}},
		"AssociationWaiting": {reason: "An association whose policy is not created yet is not Ready: Progressing.",
			kind: "OrganizationSecurityPolicyAssociation", conds: []map[string]any{synced}, want: health{Status: "Progressing", Message: "Waiting for the provider to reconcile"}},
		"RuleReady": {reason: "A Ready organization policy rule is Healthy.",
			kind: "OrganizationSecurityPolicyRule", conds: []map[string]any{ready, synced}, want: health{Status: "Healthy", Message: "Available"}},
		"RuleRefused": {reason: "A rule object another owns is Degraded, naming the owner.",
			kind: "OrganizationSecurityPolicyRule", conds: []map[string]any{cond("Synced", "False", "ReconcileError", ruleRefused)},
			want: health{Status: "Degraded", Message: ruleRefused}},
		"RuleWaiting": {reason: "A rule whose policy is not in GCP yet is Progressing, saying which policy.",
			kind: "OrganizationSecurityPolicyRule", conds: []map[string]any{synced, cond("Ready", "False", "WaitingForOrganizationSecurityPolicy", ruleWaiting)},
			want: health{Status: "Progressing", Message: ruleWaiting}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := evalHealth(script, object(tc.kind, tc.conds...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nhealth: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
