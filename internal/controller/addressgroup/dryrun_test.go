package addressgroup

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/networksecurity/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
)

func TestObserveDryRun(t *testing.T) {
	dryRunObject := func(items ...string) *v1alpha1.AddressGroup {
		cr := object(items...)
		cr.SetAnnotations(map[string]string{v1beta1.AnnotationDryRun: "true", "crossplane.io/external-name": "office"})
		return cr
	}
	deleting := dryRunObject("10.0.0.1")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	ended := object("10.0.0.1")
	ended.SetConditions(v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, msgNotAsked))
	notAsked := v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, msgNotAsked)
	dry := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}

	type want struct {
		o     managed.ExternalObservation
		conds []xpv2.Condition
	}
	cases := map[string]struct {
		reason string
		group  *networksecurity.AddressGroup
		cr     *v1alpha1.AddressGroup
		want   want
	}{
		"Missing": {
			reason: "A group GCP does not have is not created; GCP cannot be asked (no validateOnly), and Validated says so.",
			cr:     dryRunObject("10.0.0.1"),
			want: want{o: dry, conds: []xpv2.Condition{
				v1beta1.DryRunUnavailable("dry run: GCP has no address group projects/p/locations/global/addressGroups/office; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"),
				notAsked}},
		},
		"Differs": {
			reason: "A group lacking an item is not updated.",
			group:  group("10.0.0.1/32"),
			cr:     dryRunObject("10.0.0.1", "10.0.0.2"),
			want: want{o: dry, conds: []xpv2.Condition{
				v1beta1.DryRunUnavailable("dry run: GCP address group projects/p/locations/global/addressGroups/office differs from the spec; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"),
				notAsked}},
		},
		"UpToDate": {
			reason: "A group GCP holds as the spec says is Available, with nothing to ask.",
			group:  group("10.0.0.1/32"),
			cr:     dryRunObject("10.0.0.1"),
			want:   want{o: dry, conds: []xpv2.Condition{xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, dryrun.MsgUpToDate)}},
		},
		"Deleting": {
			reason: "Deleting an object in dry run leaves its group in GCP: reported gone, so Delete is never called.",
			group:  group("10.0.0.1/32"),
			cr:     deleting,
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, conds: []xpv2.Condition{xpv2.Available()}},
		},
		"Ended": {
			reason: "Without the annotation, the Validated condition goes and the group is reconciled as usual.",
			cr:     ended,
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeGroups{group: tc.group}
			e := &external{groups: f, key: gcp.GroupKey{Parent: "projects/p", Location: "global", Name: "office"}, labels: map[string]string{"armorplane-owner": ours}}
			got, err := e.Observe(context.Background(), tc.cr)
			if err != nil {
				t.Fatalf("%s\nObserve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.conds, tc.cr.Status.Conditions, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s\nObserve(...): -want conditions, +got:\n%s", tc.reason, diff)
			}
			if len(f.calls) > 0 {
				t.Errorf("%s\nObserve wrote to GCP: %v", tc.reason, f.calls)
			}
		})
	}
}
