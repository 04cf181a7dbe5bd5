package networkedgesecurityservice

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
)

// TestObserveTier checks that a service naming a policy reports whether its
// project is on Cloud Armor Enterprise, which applying the policy needs,
// and that one naming none reads no tier.
func TestObserveTier(t *testing.T) {
	noPolicy := func(cr *v1alpha1.NetworkEdgeSecurityService) { cr.Spec.ForProvider.SecurityPolicy = nil }
	cases := map[string]struct {
		reason string
		cr     *v1alpha1.NetworkEdgeSecurityService
		tier   string
		calls  []string
		want   corev1.ConditionStatus
	}{
		"Standard": {
			reason: "A service applying a policy in a Standard project: Tier=False.",
			cr:     object(true), tier: gcp.TierStandard, calls: []string{"Tier p"}, want: corev1.ConditionFalse,
		},
		"Enterprise": {
			reason: "In an Enterprise project: Tier=True.",
			cr:     object(true), tier: gcp.TierEnterpriseAnnual, calls: []string{"Tier p"}, want: corev1.ConditionTrue,
		},
		"NoPolicy": {
			reason: "A service that names no policy reads no tier and has no Tier condition.",
			cr:     object(true, noPolicy), want: corev1.ConditionUnknown,
		},
		"ObserveOnly": {
			reason: "An object that writes nothing sends no policy: no tier read.",
			cr:     object(true, policies("Observe")), want: corev1.ConditionUnknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &gcptest.Projects{TierFn: func(string) (string, error) { return tc.tier, nil }}
			e := &external{services: &gcptest.EdgeServices{GetFn: holding(service())}, projects: p, key: key, recorder: event.NewNopRecorder()}
			if _, err := e.Observe(context.Background(), tc.cr); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.calls, p.Calls); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if got := tc.cr.GetCondition(apivalues.TypeTier).Status; got != tc.want {
				t.Errorf("\n%s\nObserve(...): want Tier %s, got %s", tc.reason, tc.want, got)
			}
		})
	}
}
