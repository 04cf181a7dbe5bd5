package dryrun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// recorder keeps the reasons of the events recorded.
type recorder struct{ reasons []event.Reason }

func (r *recorder) Event(_ runtime.Object, e event.Event)    { r.reasons = append(r.reasons, e.Reason) }
func (r *recorder) WithAnnotations(...string) event.Recorder { return r }

func TestAsk(t *testing.T) {
	errBoom := errors.New("boom")
	answeredBefore := func() *v1beta1.SecurityPolicy {
		cr := &v1beta1.SecurityPolicy{}
		cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: "h1"}
		cr.SetConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "earlier"))
		return cr
	}
	type want struct {
		asked     bool
		err       error
		validated xpv2.Condition
		hash      string // "" for no status.dryRun
		events    []event.Reason
	}
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicy
		hash   string
		answer Answer
		askErr error
		want   want
	}{
		"AnsweredAlready": {
			reason: "Requests GCP answered already (the same hash and its Validated condition) are not asked again: no call per poll.",
			cr:     answeredBefore(),
			hash:   "h1",
			want:   want{validated: v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "earlier"), hash: "h1"},
		},
		"Changed": {
			reason: "Requests that hash otherwise are asked, and the new answer and hash recorded.",
			cr:     answeredBefore(),
			hash:   "h2",
			answer: Refused("GCP refuses addRule: bad"),
			want: want{asked: true, hash: "h2", events: []event.Reason{ReasonRefused},
				validated: v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses addRule: bad")},
		},
		"HashWithoutCondition": {
			reason: "A hash with no Validated condition (the status was reset) is asked again.",
			cr:     &v1beta1.SecurityPolicy{Status: v1beta1.SecurityPolicyStatus{DryRun: &v1beta1.DryRunStatus{RequestHash: "h1"}}},
			hash:   "h1",
			answer: Accepted("GCP accepts insert (validateOnly)"),
			want: want{asked: true, hash: "h1", events: []event.Reason{ReasonAccepted},
				validated: v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts insert (validateOnly)")},
		},
		"NotAsked": {
			reason: "An answer that no request could be asked is reported with no event.",
			cr:     &v1beta1.SecurityPolicy{},
			hash:   "h1",
			answer: NotAsked("not asked: patch"),
			want: want{asked: true, hash: "h1",
				validated: v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, "not asked: patch")},
		},
		"Error": {
			reason: "An error that is no answer (a 5xx, credentials) is Observe's error, and no hash is recorded, so it is asked again.",
			cr:     &v1beta1.SecurityPolicy{},
			hash:   "h1",
			askErr: errBoom,
			want:   want{asked: true, err: errors.Wrap(errBoom, "cannot validate")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			asked := false
			_, err := Ask(tc.cr, &tc.cr.Status.DryRun, rec, tc.hash, "cannot validate", func() (Answer, error) {
				asked = true
				return tc.answer, tc.askErr
			})
			got := want{asked: asked, err: err, validated: tc.cr.GetCondition(v1beta1.TypeValidated), events: rec.reasons}
			if tc.cr.Status.DryRun != nil {
				got.hash = tc.cr.Status.DryRun.RequestHash
			}
			if tc.want.validated.Type == "" {
				tc.want.validated = xpv2.Condition{Type: v1beta1.TypeValidated, Status: corev1.ConditionUnknown}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors(),
				cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s\nAsk(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestEnd(t *testing.T) {
	cr := &v1beta1.SecurityPolicy{}
	cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: "h1"}
	cr.SetConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "earlier"))
	End(&cr.Status.ConditionedStatus, &cr.Status.DryRun)
	want := []xpv2.Condition{xpv2.Available()}
	if diff := cmp.Diff(want, cr.Status.Conditions, cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" || cr.Status.DryRun != nil {
		t.Errorf("End: conditions -want, +got:\n%s\nstatus.dryRun: %v", diff, cr.Status.DryRun)
	}
}
