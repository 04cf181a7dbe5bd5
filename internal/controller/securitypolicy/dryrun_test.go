package securitypolicy

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
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

const tooComplexMsg = "Invalid value for field 'resource.rules[0].match.expr.expression': 'x'. The expression has 6 subexpressions; the limit is 5."

var (
	errInvalid = &googleapi.Error{Code: http.StatusBadRequest, Message: tooComplexMsg, Errors: []googleapi.ErrorItem{{Reason: "invalid"}}}
	errBusy    = &googleapi.Error{Code: http.StatusServiceUnavailable, Message: "The service is currently unavailable."}
)

func withDryRun() policyModifier {
	return func(cr *v1beta1.SecurityPolicy) {
		cr.SetAnnotations(map[string]string{v1beta1.AnnotationDryRun: "true", "crossplane.io/external-name": policyName})
	}
}

func withDryRunHash(h string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: h} }
}

// hashOf is the hash of the requests a dry run of cr asks against sp (nil:
// GCP has no policy), with no claims and no owner label.
func hashOf(t *testing.T, cr *v1beta1.SecurityPolicy, sp *compute.SecurityPolicy) string {
	t.Helper()
	r, err := gcppolicy.Record(context.Background(), func(ctx context.Context, v gcp.PolicyValidator) error {
		_, err := gcppolicy.ValidatePolicyAgainst(ctx, v, policyName, sp, cr.Spec.ForProvider, gcppolicy.Ownership{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.Hash
}

func TestObserveDryRun(t *testing.T) {
	ok := func(*compute.SecurityPolicy) error { return nil }
	okRule := func(*compute.SecurityPolicyRule) error { return nil }
	dry := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}
	missing := "dry run: GCP has no policy projects/p/global/securityPolicies/edge-policy; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"
	differs := "dry run: GCP policy projects/p/global/securityPolicies/edge-policy differs from the spec; nothing is written while the annotation cloudarmor.armorplane.io/dry-run is set"
	withRule := []policyModifier{withDryRun(), withRules(inline(1000, deny403, rangeA))}
	have := gcpPolicy()
	haveRule := gcpPolicy(withGCPRules(gcpRule(1000, deny403, rangeA)))

	type fields struct {
		gcp       *compute.SecurityPolicy // nil: GCP has no policy
		validator *gcptest.Validator
		owners    fakeOwners
	}
	type want struct {
		o          managed.ExternalObservation
		err        error
		cr         *v1beta1.SecurityPolicy
		calls      []string // the policy client's: never a write
		validation []string // validateOnly requests sent
	}
	cases := map[string]struct {
		reason string
		fields fields
		cr     *v1beta1.SecurityPolicy
		want   want
	}{
		"MissingAccepted": {
			reason: "A policy GCP does not have is asked about with insert, not created; GCP's acceptance is Validated=True, and Ready says GCP has no policy.",
			fields: fields{validator: &gcptest.Validator{InsertFn: ok}, owners: noClaims},
			cr:     policy(withRule...),
			want: want{o: dry, calls: []string{"Get"}, validation: []string{"ValidateInsert"},
				cr: policy(append(withRule, withDryRunHash(hashOf(t, policy(withRule...), nil)), withConditions(
					v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts insert (validateOnly)")))...)},
		},
		"MissingRefused": {
			reason: "GCP's refusal is a condition with GCP's own message naming the field, not an error: no backoff, nothing written.",
			fields: fields{validator: &gcptest.Validator{InsertFn: func(*compute.SecurityPolicy) error { return errInvalid }}, owners: noClaims},
			cr:     policy(withRule...),
			want: want{o: dry, calls: []string{"Get"}, validation: []string{"ValidateInsert"},
				cr: policy(append(withRule, withDryRunHash(hashOf(t, policy(withRule...), nil)), withConditions(
					v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses insert: "+tooComplexMsg)))...)},
		},
		"MissingTransient": {
			reason: "An answer that says nothing about the request (a 503) is Observe's error, retried with backoff; no hash is recorded, so GCP is asked again.",
			fields: fields{validator: &gcptest.Validator{InsertFn: func(*compute.SecurityPolicy) error { return errBusy }}, owners: noClaims},
			cr:     policy(withRule...),
			want: want{err: errors.Wrap(errBusy, errValidate), calls: []string{"Get"}, validation: []string{"ValidateInsert"},
				cr: policy(append(withRule, withConditions(v1beta1.DryRunUnavailable(missing)))...)},
		},
		"AlreadyAnswered": {
			reason: "Requests GCP answered already (the same hash, and its Validated condition) are not asked again: no call per poll.",
			fields: fields{validator: &gcptest.Validator{}, owners: noClaims},
			cr: policy(append(withRule, withDryRunHash(hashOf(t, policy(withRule...), nil)),
				withConditions(v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses insert: "+tooComplexMsg)))...),
			want: want{o: dry, calls: []string{"Get"},
				cr: policy(append(withRule, withDryRunHash(hashOf(t, policy(withRule...), nil)), withConditions(
					v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses insert: "+tooComplexMsg)))...)},
		},
		"SpecChanged": {
			reason: "Requests that changed since GCP's last answer are asked again.",
			fields: fields{validator: &gcptest.Validator{InsertFn: ok}, owners: noClaims},
			cr: policy(append(withRule, withDryRunHash("stale"),
				withConditions(v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, "GCP refuses insert: "+tooComplexMsg)))...),
			want: want{o: dry, calls: []string{"Get"}, validation: []string{"ValidateInsert"},
				cr: policy(append(withRule, withDryRunHash(hashOf(t, policy(withRule...), nil)), withConditions(
					v1beta1.DryRunUnavailable(missing),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts insert (validateOnly)")))...)},
		},
		"PresentRuleDrift": {
			reason: "A policy GCP has is asked about with the rule writes of the plan; Ready says it differs from the spec.",
			fields: fields{gcp: have, validator: &gcptest.Validator{AddRuleFn: okRule}, owners: noClaims},
			cr:     policy(withRule...),
			want: want{o: dry, calls: []string{"Get"}, validation: []string{"AddRule 1000"},
				cr: policy(append(withRule, withAtProvider(have), withDryRunHash(hashOf(t, policy(withRule...), have)), withConditions(
					v1beta1.DryRunUnavailable(differs), noConflict(),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)")))...)},
		},
		"PresentUpToDate": {
			reason: "A policy GCP holds as the spec says is Available, and there is nothing to ask.",
			fields: fields{gcp: haveRule, validator: &gcptest.Validator{}, owners: noClaims},
			cr:     policy(withRule...),
			want: want{o: dry, calls: []string{"Get"},
				cr: policy(append(withRule, withAtProvider(haveRule), withConditions(xpv2.Available(), noConflict(),
					v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, dryrun.MsgUpToDate)))...)},
		},
		"PresentOwnFieldsOnly": {
			reason: "A change of the policy's own fields cannot be asked (securityPolicies.patch has no validateOnly): Validated=Unknown says so, and nothing is sent.",
			fields: fields{gcp: have, validator: &gcptest.Validator{}, owners: noClaims},
			cr:     policy(withDryRun(), withDescription("new")),
			want: want{o: dry, calls: []string{"Get"},
				cr: policy(withDryRun(), withDescription("new"), withAtProvider(have), withDryRunHash(hashOf(t, policy(withDescription("new")), have)), withConditions(
					v1beta1.DryRunUnavailable(differs), noConflict(),
					v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, "not asked: the change of the policy's own fields: securityPolicies.patch has no validateOnly")))},
		},
		"Outranked": {
			reason: "A dry run goes through ownership: an object another owns is refused, before any call to GCP.",
			fields: fields{validator: &gcptest.Validator{}, owners: fakeOwners{owner: policy(func(cr *v1beta1.SecurityPolicy) { cr.SetUID("older") })}},
			cr:     policy(withRule...),
			want: want{err: errors.New(ownership.PolicyRefusal(gcp.PolicyKey{Project: "p", Name: policyName}, policy())),
				cr: policy(withRule...)},
		},
		"Deleting": {
			reason: "Deleting an object in dry run never deletes its policy: it is reported gone, so Delete is never called.",
			fields: fields{gcp: haveRule, validator: &gcptest.Validator{}, owners: noClaims},
			cr:     policy(append(withRule, withDeletionTimestamp())...),
			want: want{o: managed.ExternalObservation{ResourceExists: false}, calls: []string{"Get"},
				cr: policy(append(withRule, withDeletionTimestamp(), withAtProvider(haveRule), withConditions(xpv2.Available(), noConflict()))...)},
		},
		"ObserveOnly": {
			reason: "An object that only observes writes nothing anyway: the annotation changes nothing and nothing is asked.",
			fields: fields{gcp: have, validator: &gcptest.Validator{}, owners: noClaims},
			cr:     policy(append(withRule, withManagementPolicies(xpv2.ManagementActionObserve))...),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, calls: []string{"Get"},
				cr: policy(append(withRule, withManagementPolicies(xpv2.ManagementActionObserve), withAtProvider(have), withConditions(xpv2.Available(), noConflict()))...)},
		},
		"Ended": {
			reason: "Without the annotation, what a dry run reported is removed and the object reconciles as usual: here, drift for Update to write.",
			fields: fields{gcp: have, validator: &gcptest.Validator{}, owners: noClaims},
			cr: policy(withRules(inline(1000, deny403, rangeA)), withDryRunHash("h"),
				withConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, "GCP accepts addRule priority 1000 (validateOnly)"))),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, calls: []string{"Get"},
				cr: policy(withRules(inline(1000, deny403, rangeA)), withAtProvider(have), withConditions(xpv2.Available(), noConflict()))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.fields.gcp == nil {
				err = errNotFound
			}
			f := &fakePolicies{GetFn: returns(tc.fields.gcp, err)}
			e := newExternal(tc.cr, f, tc.fields.owners, nil)
			e.validator = tc.fields.validator
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpIgnoreDiff); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.cr, test.EquateConditions(), ignoreUsers); diff != "" {
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

var cmpIgnoreDiff = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Diff" }, cmp.Ignore())
