package argocd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHealthOfOrganizationKinds checks the verdict on the organization-level
// kinds: Healthy once Ready, Degraded with why when the provider refuses
// their config or GCP refuses a write (an attached policy's delete), and
// Progressing while an association waits for its policy.
func TestHealthOfOrganizationKinds(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	ready := cond("Ready", "True", "Available", "")
	synced := cond("Synced", "True", "ReconcileSuccess", "")
	refused := "cannot connect to GCP: an organization-level resource affects every project below its organization, folder or attachment point, " +
		"so it may only use a ClusterProviderConfig: providerConfigRef names ProviderConfig \"default\", which is refused. Ask your platform team for a ClusterProviderConfig"
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
