package securitypolicyrule

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

const tooComplexMsg = "Invalid value for field 'resource.match.expr.expression': 'x'. The expression has 6 subexpressions; the limit is 5."

func withDryRun() ruleModifier { return withAnnotation(v1beta1.AnnotationDryRun, "true") }

func withDryRunHash(h string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: h} }
}

// hashOf is the hash of the request a dry run of cr asks against sp.
func hashOf(t *testing.T, cr *v1beta1.SecurityPolicyRule, sp *compute.SecurityPolicy) string {
	t.Helper()
	p := cr.Spec.ForProvider
	r, err := gcppolicy.Record(context.Background(), func(ctx context.Context, v gcp.PolicyValidator) error {
		return gcppolicy.ValidateRuleAgainst(ctx, v, policy, sp, p.Priority, p.RuleParameters)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.Hash
}

func TestObserveDryRun(t *testing.T) {
	errInvalid := &googleapi.Error{Code: http.StatusBadRequest, Message: tooComplexMsg, Errors: []googleapi.ErrorItem{{Reason: "invalid"}}}
	dry := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}
	missing := "dry run: GCP policy projects/p/global/securityPolicies/edge-policy has no rule at priority 1000; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"
	differs := "dry run: the rule at priority 1000 of GCP policy projects/p/global/securityPolicies/edge-policy differs from the spec; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"
	empty := gcpPolicy()
	same := gcpPolicy(gcpRule(1000, deny403, rangeA))
	other := gcpPolicy(gcpRule(1000, deny403, rangeB))
	observed := func(ranges ...string) ruleModifier {
		return withObservedRule(v1beta1.RuleObservation{Priority: 1000, Action: deny403, Match: observedIPs(slices.Sorted(slices.Values(ranges))...)})
	}
	base := []ruleModifier{withRanges(rangeA), withDryRun()}
	with := func(m ...ruleModifier) []ruleModifier { return append(slices.Clone(base), m...) }
	getPolicy := []string{"Get"}

	type fields struct {
		gcp       *compute.SecurityPolicy
		getErr    error
		validator *gcptest.Validator
		standing  ownership.Standing
	}
	type want struct {
		o          managed.ExternalObservation
		err        error
		cr         *v1beta1.SecurityPolicyRule
		calls      []string
		validation []string
	}
	cases := map[string]struct {
		reason string
		fields fields
		cr     *v1beta1.SecurityPolicyRule
		want   want
	}{
		"MissingAccepted": {
			reason: "A rule GCP's policy does not have is asked about with addRule, not added; GCP's acceptance is Validated=True, Ready says it is missing.",
			fields: fields{gcp: empty, validator: &gcptest.Validator{AddRuleFn: returns(nil)}},
			cr:     rule(base...),
			want: want{o: dry, calls: getPolicy, validation: []string{"AddRule 1000"},
				cr: rule(with(withDryRunHash(hashOf(t, rule(base...), empty)), withConditions(v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)")))...)},
		},
		"MissingRefused": {
			reason: "GCP's refusal is the Validated condition with GCP's message, not an error: no backoff, nothing written.",
			fields: fields{gcp: empty, validator: &gcptest.Validator{AddRuleFn: returns(errInvalid)}},
			cr:     rule(base...),
			want: want{o: dry, calls: getPolicy, validation: []string{"AddRule 1000"},
				cr: rule(with(withDryRunHash(hashOf(t, rule(base...), empty)), withConditions(v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses addRule priority 1000: "+tooComplexMsg)))...)},
		},
		"RateLimited": {
			reason: "A 429 says nothing about the request: Observe's error, retried with backoff, no hash recorded.",
			fields: fields{gcp: empty, validator: &gcptest.Validator{AddRuleFn: returns(errRateLimited)}},
			cr:     rule(base...),
			want: want{err: errors.Wrap(errRateLimited, errValidate), calls: getPolicy, validation: []string{"AddRule 1000"},
				cr: rule(with(withConditions(v1beta1.DryRunUnavailable(missing)))...)},
		},
		"AlreadyAnswered": {
			reason: "A request GCP answered already is not asked again.",
			fields: fields{gcp: empty, validator: &gcptest.Validator{}},
			cr: rule(with(withDryRunHash(hashOf(t, rule(base...), empty)),
				withConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)")))...),
			want: want{o: dry, calls: getPolicy,
				cr: rule(with(withDryRunHash(hashOf(t, rule(base...), empty)), withConditions(v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)")))...)},
		},
		"Differs": {
			reason: "A rule that differs is asked about with patchRule; Ready says it differs.",
			fields: fields{gcp: other, validator: &gcptest.Validator{PatchRuleFn: patchReturns(nil)}},
			cr:     rule(base...),
			want: want{o: dry, calls: getPolicy, validation: []string{"PatchRule 1000"},
				cr: rule(with(observed(rangeB), withDryRunHash(hashOf(t, rule(base...), other)), withConditions(v1beta1.DryRunUnavailable(differs),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts patchRule priority 1000 (validateOnly)")))...)},
		},
		"UpToDate": {
			reason: "A rule GCP holds as the spec says is Available, with nothing to ask.",
			fields: fields{gcp: same, validator: &gcptest.Validator{}},
			cr:     rule(base...),
			want: want{o: dry, calls: getPolicy,
				cr: rule(with(observed(rangeA), withConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, dryrun.MsgUpToDate)))...)},
		},
		"NoPolicy": {
			reason: "A rule whose policy GCP does not have waits, unasked: addRule needs the policy.",
			fields: fields{getErr: errNotFound, validator: &gcptest.Validator{}},
			cr:     rule(base...),
			want: want{o: dry, calls: getPolicy,
				cr: rule(with(withConditions(waiting("waiting for GCP security policy projects/p/global/securityPolicies/edge-policy to exist")))...)},
		},
		"Refused": {
			reason: "A dry run goes through ownership: a rule another object owns is refused before any call to GCP.",
			fields: fields{validator: &gcptest.Validator{}, standing: ownership.Standing{Refused: "owned by team-a/older"}},
			cr:     rule(base...),
			want:   want{err: errors.New("owned by team-a/older"), cr: rule(base...)},
		},
		"Deleting": {
			reason: "Deleting a rule in dry run never removes it from GCP: it is reported gone, so Delete is never called.",
			fields: fields{gcp: same, validator: &gcptest.Validator{}},
			cr:     rule(with(withDeletionTimestamp())...),
			want: want{o: managed.ExternalObservation{ResourceExists: false}, calls: getPolicy,
				cr: rule(with(withDeletionTimestamp(), observed(rangeA), withConditions(xpv2.Available()))...)},
		},
		"Ended": {
			reason: "Without the annotation, what a dry run reported is removed and the rule reconciles as usual: missing, so Create adds it.",
			fields: fields{gcp: empty, validator: &gcptest.Validator{}},
			cr: rule(withRanges(rangeA), withDryRunHash("h"),
				withConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)"))),
			want: want{o: managed.ExternalObservation{ResourceExists: false}, calls: getPolicy, cr: rule(withRanges(rangeA))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakePolicies{GetFn: getReturns(tc.fields.gcp, tc.fields.getErr)}
			e := &external{policies: f, owners: fakeOwners{standing: tc.fields.standing}, key: gcp.PolicyKey{Project: "p", Name: policy},
				validator: tc.fields.validator, recorder: event.NewNopRecorder()}
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.cr, test.EquateConditions(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.Methods()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.validation, tc.fields.validator.Methods()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want validateOnly calls, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
