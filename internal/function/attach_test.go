package function

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAttachmentResource(t *testing.T) {
	cases := map[string]struct {
		reason string
		policy Policy
		pc     *ProviderConfigRef
		target AttachTarget
		want   map[string]any
	}{
		"GlobalBackendService": {
			reason: "A global policy goes into a global backend service's securityPolicy, by name; no providerConfigRef leaves the default.",
			policy: Policy{Name: "web-allowlist", Create: true},
			target: AttachTarget{BackendService: "web"},
			want: map[string]any{"forProvider": map[string]any{"securityPolicy": "web-allowlist", "field": "securityPolicy",
				"target": map[string]any{"kind": "BackendService", "name": "web"}}},
		},
		"RegionalBackendService": {
			reason: "A regional policy goes into the backend service of its region and project.",
			policy: Policy{Name: "web-allowlist", Project: "team-proj", Region: "europe-west1"},
			pc:     &ProviderConfigRef{Kind: "ProviderConfig", Name: "team"},
			target: AttachTarget{BackendService: "web"},
			want: map[string]any{
				"forProvider": map[string]any{"securityPolicy": "web-allowlist", "field": "securityPolicy", "project": "team-proj",
					"target": map[string]any{"kind": "BackendService", "name": "web", "region": "europe-west1"}},
				"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "team"},
			},
		},
		"BackendBucket": {
			reason: "A backend bucket takes the policy in its edgeSecurityPolicy.",
			policy: Policy{Name: "static-edge"},
			target: AttachTarget{BackendBucket: "static"},
			want: map[string]any{"forProvider": map[string]any{"securityPolicy": "static-edge", "field": "edgeSecurityPolicy",
				"target": map[string]any{"kind": "BackendBucket", "name": "static"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := AttachmentResource(Spec{Policy: tc.policy, ProviderConfigRef: tc.pc}, tc.target)
			if u.GetKind() != "SecurityPolicyAttachment" || u.GetAPIVersion() != "cloudarmor.armorplane.io/v1alpha1" || u.GetName() != "" {
				t.Errorf("%s\ngot %s %s named %q, want a SecurityPolicyAttachment Crossplane names", tc.reason, u.GetAPIVersion(), u.GetKind(), u.GetName())
			}
			if diff := cmp.Diff(tc.want, u.Object["spec"]); diff != "" {
				t.Errorf("%s\nspec: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
