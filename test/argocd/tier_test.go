package argocd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object is a managed resource of kind with the given conditions, its
// spec reconciled (observedGeneration = generation).
func object(kind string, conds ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "o", "namespace": "default", "generation": int64(1)},
	}}
	if kind == "SecurityPolicy" {
		u.SetAPIVersion("cloudarmor.armorplane.io/v1beta1")
	}
	list := []any{}
	for _, c := range conds {
		c["observedGeneration"] = int64(1)
		list = append(list, c)
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
	return u
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

// TestHealthOfTierAndUsers checks the verdict on a ProjectCloudArmorTier,
// and that a policy's Tier and Attached conditions, which are information,
// do not change its health: an unattached policy, or one whose project is
// on Standard, is what Ready and Synced say it is (GCP's refusal of an
// Enterprise feature is in Synced).
func TestHealthOfTierAndUsers(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	ready := cond("Ready", "True", "Available", "")
	synced := cond("Synced", "True", "ReconcileSuccess", "")
	refused := "ClusterProviderConfig \"default\" does not let namespace \"default\" change project-wide settings such as the project's Cloud Armor tier"
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		want   health
	}{
		"TierReady": {reason: "A ProjectCloudArmorTier whose project is on its tier is Healthy.",
			obj: object("ProjectCloudArmorTier", ready, synced), want: health{Status: "Healthy", Message: "Available"}},
		"TierRefused": {reason: "A ProjectCloudArmorTier its config may not use is Degraded, with why.",
			obj:  object("ProjectCloudArmorTier", cond("Synced", "False", "ReconcileError", refused)),
			want: health{Status: "Degraded", Message: refused}},
		"PolicyUnattached": {reason: "A Ready policy nothing uses is Healthy: Attached=False is information.",
			obj:  object("SecurityPolicy", ready, synced, cond("Attached", "False", "Unattached", "No backend service uses this policy")),
			want: health{Status: "Healthy", Message: "Available"}},
		"PolicyNeedsEnterprise": {reason: "A policy GCP accepted whose project is on Standard is what Ready says: Tier=False is information.",
			obj:  object("SecurityPolicy", ready, synced, cond("Tier", "False", "NeedsEnterprise", "Project p is on CA_STANDARD")),
			want: health{Status: "Healthy", Message: "Available"}},
		"PolicyRefusedForTier": {reason: "A policy GCP refused is Degraded with GCP's message, whatever Tier says.",
			obj: object("SecurityPolicy", ready, cond("Synced", "False", "ReconcileError", "cannot create security policy: googleapi: Error 400: needs Cloud Armor Enterprise"),
				cond("Tier", "False", "NeedsEnterprise", "Project p is on CA_STANDARD")),
			want: health{Status: "Degraded", Message: "cannot create security policy: googleapi: Error 400: needs Cloud Armor Enterprise"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := evalHealth(script, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nhealth: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
