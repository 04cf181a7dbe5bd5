package securitypolicy

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

const (
	policyName = "edge-policy"
	selfLink   = "https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/edge-policy"
	rangeA     = "192.0.2.0/24"
	rangeB     = "198.51.100.0/24"
	deny403    = "deny(403)"
	srcIPsV1   = "SRC_IPS_V1"
	defPrio    = v1beta1.DefaultRulePriority
	claimant   = "team-a/block-bad"
)

// The errors ApplyPolicy wraps GCP's with; a change of wording shows here.
const (
	errPatchPolicy   = "cannot patch security policy"
	errFmtAddRule    = "cannot add inline rule at priority %d"
	errFmtPatchRule  = "cannot patch inline rule at priority %d"
	errFmtRemoveRule = "cannot remove rule at priority %d"
)

var (
	errBoom = errors.New("boom")

	errNotFound = &googleapi.Error{Code: http.StatusNotFound,
		Message: "The resource 'projects/p/global/securityPolicies/edge-policy' was not found",
		Errors:  []googleapi.ErrorItem{{Reason: "notFound"}}}
	errAlreadyExists = &googleapi.Error{Code: http.StatusConflict,
		Message: "The resource 'projects/p/global/securityPolicies/edge-policy' already exists",
		Errors:  []googleapi.ErrorItem{{Reason: "alreadyExists"}}}
	errQuota = &gcp.OperationError{Operation: "operation-1", Errors: []gcp.OperationErrorItem{{
		Code: "QUOTA_EXCEEDED", Message: "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."}}}
)

// fakePolicies is the controllers' shared fake GCP.
type fakePolicies = gcptest.Policies

// fakeOwners answers ownership questions with fixed answers: owner is the
// policy's owner (nil: none in the cluster, so the object may write).
type fakeOwners struct {
	owner   *v1beta1.SecurityPolicy
	claims  gcppolicy.Claims
	refused []ownership.Refusal
	err     error
	reads   *int // counts Claims calls when set
}

func (f fakeOwners) PolicyOwner(context.Context, gcp.PolicyKey) (*v1beta1.SecurityPolicy, error) {
	return f.owner, nil
}

func (f fakeOwners) Claims(context.Context, *v1beta1.SecurityPolicy, gcp.PolicyKey) (map[int64]string, []ownership.Refusal, error) {
	if f.reads != nil {
		*f.reads++
	}
	return f.claims, f.refused, f.err
}

func claimed(c gcppolicy.Claims, err error) fakeOwners {
	return fakeOwners{claims: c, err: err}
}

var noClaims = claimed(nil, nil)

// newExternal returns the external client Connect would build for cr's
// policy, with the owner label ownerLabel (nil: none).
func newExternal(cr *v1beta1.SecurityPolicy, policies gcp.PolicyClient, o owners, ownerLabel map[string]string) *external {
	return &external{policies: policies, owners: o, labels: ownerLabel, recorder: event.NewNopRecorder(),
		key: ownership.PolicyKey(cr, "p"), projects: unused()}
}

// ignoreUsers leaves what uses a policy (usedBy and the Attached
// condition, see TestReportUsers) out of a comparison of other concerns.
var ignoreUsers = cmp.Options{
	cmpopts.IgnoreFields(v1beta1.SecurityPolicyObservation{}, "UsedBy", "UsedByCount"),
	cmpopts.IgnoreSliceElements(func(c xpv2.Condition) bool { return c.Type == TypeAttached }),
}

// unused is a project that nothing uses, on the Standard tier.
func unused() *gcptest.Projects {
	none := func(string) (gcp.PolicyUsers, error) { return gcp.PolicyUsers{}, nil }
	return &gcptest.Projects{UsersFn: none, EdgeServicesFn: none, TierFn: func(string) (string, error) { return gcp.TierStandard, nil }}
}

// SecurityPolicy builders.

type policyModifier func(*v1beta1.SecurityPolicy)

func policy(m ...policyModifier) *v1beta1.SecurityPolicy {
	cr := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: policyName}}
	meta.SetExternalName(cr, policyName)
	for _, fn := range m {
		fn(cr)
	}
	return cr
}

func withExternalName(n string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { meta.SetExternalName(cr, n) }
}

func withDescription(d string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.Spec.ForProvider.Description = &d }
}

func withLabels(l map[string]string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.Spec.ForProvider.Labels = l }
}

func withDefaultRule(action string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) {
		cr.Spec.ForProvider.DefaultRule = &v1beta1.RuleParameters{Action: action}
	}
}

// withRules sets the inline rules; withRules() sets them to [] (own every
// unclaimed priority), which is not the same as leaving them unset.
func withRules(rs ...v1beta1.PolicyRule) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) {
		cr.Spec.ForProvider.Rules = append([]v1beta1.PolicyRule{}, rs...)
	}
}

func withDeletionTimestamp() policyModifier {
	return func(cr *v1beta1.SecurityPolicy) {
		t := metav1.Unix(1700000000, 0)
		cr.SetDeletionTimestamp(&t)
	}
}

func withConditions(c ...xpv2.Condition) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.SetConditions(c...) }
}

func withAtProvider(sp *compute.SecurityPolicy) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.Status.AtProvider = gcppolicy.GenerateObservation(sp) }
}

func inline(priority int64, action string, ranges ...v1beta1.IPRange) v1beta1.PolicyRule {
	return v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: action,
		Match: &v1beta1.RuleMatcher{VersionedExpr: ptr(srcIPsV1), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: ranges}}}}
}

// GCP-side builders.

type gcpModifier func(*compute.SecurityPolicy)

// gcpPolicy is a policy as GCP returns it, with GCP's default rule.
func gcpPolicy(m ...gcpModifier) *compute.SecurityPolicy {
	sp := &compute.SecurityPolicy{Kind: "compute#securityPolicy", Id: 42, Name: policyName, SelfLink: selfLink,
		Type: "CLOUD_ARMOR", Fingerprint: "fp-1", LabelFingerprint: "lfp-1",
		Rules: []*compute.SecurityPolicyRule{gcpRule(defPrio, "allow", "*")}}
	for _, fn := range m {
		fn(sp)
	}
	return sp
}

func withGCPDescription(d string) gcpModifier {
	return func(sp *compute.SecurityPolicy) { sp.Description = d }
}

func withGCPLabels(l map[string]string) gcpModifier {
	return func(sp *compute.SecurityPolicy) { sp.Labels = l }
}

func withGCPLabelFingerprint(fp string) gcpModifier {
	return func(sp *compute.SecurityPolicy) { sp.LabelFingerprint = fp }
}

func withGCPRules(rs ...*compute.SecurityPolicyRule) gcpModifier {
	return func(sp *compute.SecurityPolicy) { sp.Rules = append(rs, sp.Rules...) }
}

func withGCPDefaultRule(action string) gcpModifier {
	return func(sp *compute.SecurityPolicy) {
		for i, r := range sp.Rules {
			if r.Priority == defPrio {
				sp.Rules[i] = gcpRule(defPrio, action, "*")
			}
		}
	}
}

func gcpRule(priority int64, action string, ranges ...string) *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Kind: "compute#securityPolicyRule", Priority: priority, Action: action,
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1,
			Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: ranges}}}
}

func returns(sp *compute.SecurityPolicy, err error) func(string) (*compute.SecurityPolicy, error) {
	return func(string) (*compute.SecurityPolicy, error) { return sp, err }
}

// sequence returns each policy in turn, then the last one again.
func sequence(sps ...*compute.SecurityPolicy) func(string) (*compute.SecurityPolicy, error) {
	i := 0
	return func(string) (*compute.SecurityPolicy, error) {
		sp := sps[min(i, len(sps)-1)]
		i++
		return sp, nil
	}
}

func ptr[T any](v T) *T { return &v }

func noConflict() xpv2.Condition {
	return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionFalse, Reason: ReasonNoConflict}
}

func conflicting(msg string) xpv2.Condition {
	return xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionTrue, Reason: ReasonPriorityClaimed, Message: msg}
}

func claimMsg(priority int64) string {
	return fmt.Sprintf("inline rule at priority %d is ignored: SecurityPolicyRule %s claims it", priority, claimant)
}

func TestObserve(t *testing.T) {
	type fields struct {
		policies *fakePolicies
		claims   owners
	}
	type args struct {
		cr *v1beta1.SecurityPolicy
	}
	type want struct {
		o     managed.ExternalObservation
		diff  bool // o.Diff is not empty
		err   error
		cr    *v1beta1.SecurityPolicy
		calls []string
	}
	exists := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}
	drift := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}
	get := []string{"Get"}

	labelled := gcpPolicy(withGCPDescription("edge"), withGCPLabels(map[string]string{"env": "prod"}),
		withGCPRules(gcpRule(1000, deny403, rangeA)))
	extra := gcpPolicy(withGCPRules(gcpRule(1000, deny403, rangeA), gcpRule(2000, deny403, rangeB)))
	atClaimed := gcpPolicy(withGCPRules(gcpRule(2000, deny403, rangeB)))
	denyDefault := gcpPolicy(withGCPDefaultRule(deny403))

	cases := map[string]struct {
		reason string
		fields fields
		args   args
		want   want
	}{
		"NotFound": {
			reason: "A policy GCP does not have does not exist.",
			fields: fields{policies: &fakePolicies{GetFn: returns(nil, errNotFound)}, claims: noClaims},
			args:   args{cr: policy(withDescription("edge"))},
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, cr: policy(withDescription("edge")), calls: get},
		},
		"NotFoundWhileDeleting": {
			reason: "A policy being deleted that GCP no longer has is gone, so the finalizer can go.",
			fields: fields{policies: &fakePolicies{GetFn: returns(nil, errNotFound)}, claims: noClaims},
			args:   args{cr: policy(withDeletionTimestamp())},
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, cr: policy(withDeletionTimestamp()), calls: get},
		},
		"ExistsWhileDeleting": {
			reason: "A policy being deleted that GCP still has exists: reporting it gone would leak it (provider-template's bug).",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: noClaims},
			args:   args{cr: policy(withDeletionTimestamp())},
			want: want{o: exists, calls: get,
				cr: policy(withDeletionTimestamp(), withAtProvider(labelled), withConditions(xpv2.Available(), noConflict()))},
		},
		"GetError": {
			reason: "An error reading the policy is returned, wrapped.",
			fields: fields{policies: &fakePolicies{GetFn: returns(nil, errBoom)}, claims: noClaims},
			args:   args{cr: policy()},
			want:   want{err: errors.Wrap(errBoom, errGetPolicy), cr: policy(), calls: get},
		},
		"ClaimsError": {
			reason: "An error listing the claims is returned, wrapped; GCP's state is still reported.",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: claimed(nil, errBoom)},
			args:   args{cr: policy()},
			want: want{err: errors.Wrap(errBoom, errClaims), calls: get,
				cr: policy(withAtProvider(labelled), withConditions(xpv2.Available()))},
		},
		"UpToDate": {
			reason: "A policy whose set fields match is up to date; unset labels and rules are don't care.",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: noClaims},
			args:   args{cr: policy(withDescription("edge"))},
			want: want{o: exists, calls: get,
				cr: policy(withDescription("edge"), withAtProvider(labelled), withConditions(xpv2.Available(), noConflict()))},
		},
		"DescriptionDrift": {
			reason: "A different description is drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: noClaims},
			args:   args{cr: policy(withDescription("new"))},
			want: want{o: drift, diff: true, calls: get,
				cr: policy(withDescription("new"), withAtProvider(labelled), withConditions(xpv2.Available(), noConflict()))},
		},
		"EmptyLabelsDrift": {
			reason: "labels: {} means no labels, so GCP's labels are drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: noClaims},
			args:   args{cr: policy(withLabels(map[string]string{}))},
			want: want{o: drift, diff: true, calls: get,
				cr: policy(withLabels(map[string]string{}), withAtProvider(labelled), withConditions(xpv2.Available(), noConflict()))},
		},
		"LabelsUpToDate": {
			reason: "Equal labels are up to date.",
			fields: fields{policies: &fakePolicies{GetFn: returns(labelled, nil)}, claims: noClaims},
			args:   args{cr: policy(withLabels(map[string]string{"env": "prod"}))},
			want: want{o: exists, calls: get,
				cr: policy(withLabels(map[string]string{"env": "prod"}), withAtProvider(labelled), withConditions(xpv2.Available(), noConflict()))},
		},
		"DefaultRuleDrift": {
			reason: "A default rule that differs from spec.defaultRule is drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(gcpPolicy(), nil)}, claims: noClaims},
			args:   args{cr: policy(withDefaultRule(deny403))},
			want: want{o: drift, diff: true, calls: get,
				cr: policy(withDefaultRule(deny403), withAtProvider(gcpPolicy()), withConditions(xpv2.Available(), noConflict()))},
		},
		"DefaultRuleUpToDate": {
			reason: "A default rule that matches spec.defaultRule is up to date.",
			fields: fields{policies: &fakePolicies{GetFn: returns(denyDefault, nil)}, claims: noClaims},
			args:   args{cr: policy(withDefaultRule(deny403))},
			want: want{o: exists, calls: get,
				cr: policy(withDefaultRule(deny403), withAtProvider(denyDefault), withConditions(xpv2.Available(), noConflict()))},
		},
		"RulesAbsentLeavesExtraRules": {
			reason: "With rules unset the policy leaves every non-default rule alone.",
			fields: fields{policies: &fakePolicies{GetFn: returns(extra, nil)}, claims: noClaims},
			args:   args{cr: policy()},
			want: want{o: exists, calls: get,
				cr: policy(withAtProvider(extra), withConditions(xpv2.Available(), noConflict()))},
		},
		"RulesEmptyRemovesUnclaimed": {
			reason: "With rules: [] every unclaimed non-default rule is the policy's, so GCP's extra rules are drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(extra, nil)}, claims: claimed(gcppolicy.Claims{2000: claimant}, nil)},
			args:   args{cr: policy(withRules())},
			want: want{o: drift, diff: true, calls: get,
				cr: policy(withRules(), withAtProvider(extra), withConditions(xpv2.Available(), noConflict()))},
		},
		"ClaimedPrioritiesUntouched": {
			reason: "With rules: [] a rule at a priority a SecurityPolicyRule claims is not the policy's: no drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(atClaimed, nil)}, claims: claimed(gcppolicy.Claims{2000: claimant}, nil)},
			args:   args{cr: policy(withRules())},
			want: want{o: exists, calls: get,
				cr: policy(withRules(), withAtProvider(atClaimed), withConditions(xpv2.Available(), noConflict()))},
		},
		"InlineRuleAtClaimedPriority": {
			reason: "An inline rule at a claimed priority is a conflict: reported as a condition, never written, so no drift.",
			fields: fields{policies: &fakePolicies{GetFn: returns(atClaimed, nil)}, claims: claimed(gcppolicy.Claims{2000: claimant}, nil)},
			args:   args{cr: policy(withRules(inline(2000, "allow", rangeA)))},
			want: want{o: exists, diff: true, calls: get,
				cr: policy(withRules(inline(2000, "allow", rangeA)), withAtProvider(atClaimed),
					withConditions(xpv2.Available(), conflicting(claimMsg(2000))))},
		},
		"DefaultRuleClaimed": {
			reason: "spec.defaultRule is ignored, and reported, when a SecurityPolicyRule claims the default priority.",
			fields: fields{policies: &fakePolicies{GetFn: returns(gcpPolicy(), nil)}, claims: claimed(gcppolicy.Claims{defPrio: claimant}, nil)},
			args:   args{cr: policy(withDefaultRule(deny403))},
			want: want{o: exists, calls: get,
				cr: policy(withDefaultRule(deny403), withAtProvider(gcpPolicy()), withConditions(xpv2.Available(),
					conflicting("defaultRule is ignored: SecurityPolicyRule "+claimant+" claims priority 2147483647")))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(tc.args.cr, tc.fields.policies, tc.fields.claims, nil)
			got, err := e.Observe(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.diff != (got.Diff != "") {
				t.Errorf("\n%s\nObserve(...): want a diff: %t, got %q", tc.reason, tc.want.diff, got.Diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.args.cr, test.EquateConditions(), ignoreUsers); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.fields.policies.Methods()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestObserveAtProvider(t *testing.T) {
	// One explicit status, so that Observe's status is checked by more than
	// GenerateObservation agreeing with itself.
	sp := gcpPolicy(withGCPRules(gcpRule(1000, deny403, rangeA)))
	cr := policy()
	e := newExternal(cr, &fakePolicies{GetFn: returns(sp, nil)}, noClaims, nil)
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatalf("Observe(...): %v", err)
	}
	want := v1beta1.SecurityPolicyObservation{ID: "42", SelfLink: selfLink, Fingerprint: "fp-1", LabelFingerprint: "lfp-1",
		Type: "CLOUD_ARMOR", RuleCount: 2, Rules: []v1beta1.RuleObservation{
			{Priority: 1000, Action: deny403, Match: &v1beta1.RuleMatcherObservation{VersionedExpr: srcIPsV1,
				Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{rangeA}}}},
			{Priority: defPrio, Action: "allow", Match: &v1beta1.RuleMatcherObservation{VersionedExpr: srcIPsV1,
				Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: []string{"*"}}}},
		}}
	if diff := cmp.Diff(want, cr.Status.AtProvider, ignoreUsers); diff != "" {
		t.Errorf("Observe(...): -want atProvider, +got atProvider:\n%s", diff)
	}
}

func TestCreate(t *testing.T) {
	type fields struct {
		policies *fakePolicies
		claims   owners
	}
	type args struct {
		cr *v1beta1.SecurityPolicy
	}
	type want struct {
		err      error
		inserted *compute.SecurityPolicy
		calls    []string
	}
	var inserted *compute.SecurityPolicy
	insert := func(err error) func(*compute.SecurityPolicy) error {
		return func(p *compute.SecurityPolicy) error { inserted = p; return err }
	}
	denyRule := func(priority int64, rs ...string) *compute.SecurityPolicyRule {
		return &compute.SecurityPolicyRule{Priority: priority, Action: deny403,
			Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: rs}}}
	}
	spec := policy(withDescription("edge"), withDefaultRule(deny403),
		withRules(inline(500, deny403, rangeA), inline(2000, deny403, rangeB)))

	cases := map[string]struct {
		reason string
		fields fields
		args   args
		want   want
	}{
		"Insert": {
			reason: "Create inserts the policy with its inline rules and default rule.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(nil)}, claims: noClaims},
			args:   args{cr: spec},
			want: want{calls: []string{"Insert"}, inserted: &compute.SecurityPolicy{Name: policyName, Description: "edge",
				Rules: []*compute.SecurityPolicyRule{denyRule(500, rangeA), denyRule(2000, rangeB), denyRule(defPrio, "*")}}},
		},
		"InsertWithoutClaimedRules": {
			reason: "Inline rules at priorities SecurityPolicyRules claim are left out of the insert.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(nil)},
				claims: claimed(gcppolicy.Claims{2000: claimant}, nil)},
			args: args{cr: spec},
			want: want{calls: []string{"Insert"}, inserted: &compute.SecurityPolicy{Name: policyName, Description: "edge",
				Rules: []*compute.SecurityPolicyRule{denyRule(500, rangeA), denyRule(defPrio, "*")}}},
		},
		"InsertWithoutClaimedDefaultRule": {
			reason: "spec.defaultRule is left out of the insert when a SecurityPolicyRule claims the default priority.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(nil)},
				claims: claimed(gcppolicy.Claims{defPrio: claimant}, nil)},
			args: args{cr: policy(withDescription("edge"), withDefaultRule(deny403))},
			want: want{calls: []string{"Insert"}, inserted: &compute.SecurityPolicy{Name: policyName, Description: "edge"}},
		},
		"InsertUsesExternalName": {
			reason: "The GCP name is the external name, not metadata.name.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(nil)}, claims: noClaims},
			args:   args{cr: policy(withExternalName("imported"))},
			want:   want{calls: []string{"Insert"}, inserted: &compute.SecurityPolicy{Name: "imported"}},
		},
		"AlreadyExists": {
			reason: "A policy that appeared since Observe is not silently taken over: the 409 is reported, and the next Observe decides by its owner label.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(errAlreadyExists)}, claims: noClaims},
			args:   args{cr: policy()},
			want: want{err: errors.Wrap(errAlreadyExists, errInsertPolicy), calls: []string{"Insert"},
				inserted: &compute.SecurityPolicy{Name: policyName}},
		},
		"InsertError": {
			reason: "A failed insert operation is returned with GCP's message verbatim.",
			fields: fields{policies: &fakePolicies{InsertFn: insert(errQuota)}, claims: noClaims},
			args:   args{cr: policy()},
			want: want{err: errors.Wrap(errQuota, errInsertPolicy), calls: []string{"Insert"},
				inserted: &compute.SecurityPolicy{Name: policyName}},
		},
		"ClaimsError": {
			reason: "Without the claims the policy cannot know what to insert: nothing is written.",
			fields: fields{policies: &fakePolicies{}, claims: claimed(nil, errBoom)},
			args:   args{cr: spec},
			want:   want{err: errors.Wrap(errBoom, errClaims)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inserted = nil
			e := newExternal(tc.args.cr, tc.fields.policies, tc.fields.claims, nil)
			got, err := e.Create(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalCreation{}, got); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.inserted, inserted); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want inserted, +got inserted:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.fields.policies.Methods()); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	type fields struct {
		policies *fakePolicies
		claims   owners
	}
	type args struct {
		cr *v1beta1.SecurityPolicy
	}
	type want struct {
		err   error
		calls []string
	}
	ok := func(*compute.SecurityPolicy) error { return nil }
	okRule := func(*compute.SecurityPolicyRule) error { return nil }
	okPatchRule := func(int64, *compute.SecurityPolicyRule, []string) error { return nil }
	okRemove := func(int64) error { return nil }
	okLabels := func(map[string]string, string) error { return nil }

	// GCP holds rules at 1000 (to patch) and 3000 (to remove); the spec
	// adds 500.
	before := gcpPolicy(withGCPDescription("old"), withGCPLabels(map[string]string{"env": "dev"}),
		withGCPRules(gcpRule(1000, "allow", rangeA), gcpRule(3000, deny403, rangeB)))
	everything := policy(withDescription("new"), withLabels(map[string]string{"env": "prod"}), withDefaultRule(deny403),
		withRules(inline(500, deny403, rangeA), inline(1000, deny403, rangeA)))
	rulesOnly := policy(withRules(inline(500, deny403, rangeA), inline(1000, deny403, rangeA)))

	cases := map[string]struct {
		reason string
		fields fields
		args   args
		want   want
	}{
		"Order": {
			reason: "Update patches the policy and sets labels, adds and patches rules, then patches the default rule (so a deny finds the allows in place), then removes rules.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), PatchFn: ok, SetLabelsFn: okLabels,
				PatchRuleFn: okPatchRule, AddRuleFn: okRule, RemoveRuleFn: okRemove}, claims: noClaims},
			args: args{cr: everything},
			want: want{calls: []string{"GetFresh", "Patch", "GetFresh", "SetLabels",
				"AddRule 500", "PatchRule 1000", "PatchRule 2147483647", "RemoveRule 3000"}},
		},
		"UpToDateWritesNothing": {
			reason: "A policy already up to date gets no write.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(gcpPolicy(withGCPRules(gcpRule(500, deny403, rangeA))), nil)}, claims: noClaims},
			args:   args{cr: policy(withRules(inline(500, deny403, rangeA)))},
			want:   want{calls: []string{"GetFresh"}},
		},
		"StopsAtFirstError": {
			reason: "The first failed step stops the update; the next reconcile plans again.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil),
				AddRuleFn: func(*compute.SecurityPolicyRule) error { return errQuota }}, claims: noClaims},
			args: args{cr: rulesOnly},
			want: want{err: errors.Wrapf(errQuota, errFmtAddRule, 500), calls: []string{"GetFresh", "AddRule 500"}},
		},
		"PatchError": {
			reason: "A failed policy patch stops the update before labels or rules.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil),
				PatchFn: func(*compute.SecurityPolicy) error { return errBoom }}, claims: noClaims},
			args: args{cr: everything},
			want: want{err: errors.Wrap(errBoom, errPatchPolicy), calls: []string{"GetFresh", "Patch"}},
		},
		"PatchRuleError": {
			reason: "A failed rule patch stops the update before removals.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), AddRuleFn: okRule,
				PatchRuleFn: func(int64, *compute.SecurityPolicyRule, []string) error { return errBoom }}, claims: noClaims},
			args: args{cr: rulesOnly},
			want: want{err: errors.Wrapf(errBoom, errFmtPatchRule, 1000), calls: []string{"GetFresh", "AddRule 500", "PatchRule 1000"}},
		},
		"RemoveRuleError": {
			reason: "A failed removal is returned, wrapped with its priority.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), AddRuleFn: okRule, PatchRuleFn: okPatchRule,
				RemoveRuleFn: func(int64) error { return errBoom }}, claims: noClaims},
			args: args{cr: rulesOnly},
			want: want{err: errors.Wrapf(errBoom, errFmtRemoveRule, 3000),
				calls: []string{"GetFresh", "AddRule 500", "PatchRule 1000", "RemoveRule 3000"}},
		},
		"AddRuleAlreadyExists": {
			reason: "A rule that already exists (a previous update got that far) is not an error.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil),
				AddRuleFn: func(*compute.SecurityPolicyRule) error { return errAlreadyExists }, PatchRuleFn: okPatchRule, RemoveRuleFn: okRemove}, claims: noClaims},
			args: args{cr: rulesOnly},
			want: want{calls: []string{"GetFresh", "AddRule 500", "PatchRule 1000", "RemoveRule 3000"}},
		},
		"RemoveRuleNotFound": {
			reason: "A rule already gone counts as removed.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), AddRuleFn: okRule, PatchRuleFn: okPatchRule,
				RemoveRuleFn: func(int64) error { return errNotFound }}, claims: noClaims},
			args: args{cr: rulesOnly},
			want: want{calls: []string{"GetFresh", "AddRule 500", "PatchRule 1000", "RemoveRule 3000"}},
		},
		"ClaimedPrioritiesUntouched": {
			reason: "Rules at claimed priorities are neither patched nor removed, and inline rules for them are not written.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), AddRuleFn: okRule},
				claims: claimed(gcppolicy.Claims{1000: claimant, 3000: claimant}, nil)},
			args: args{cr: rulesOnly},
			want: want{calls: []string{"GetFresh", "AddRule 500"}},
		},
		"RulesAbsentWritesNoRules": {
			reason: "With rules unset only the top-level fields are written.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(before, nil), PatchFn: ok}, claims: noClaims},
			args:   args{cr: policy(withDescription("new"))},
			want:   want{calls: []string{"GetFresh", "Patch"}},
		},
		"GetFreshError": {
			reason: "An error reading the policy is returned, wrapped, and nothing is written.",
			fields: fields{policies: &fakePolicies{GetFreshFn: returns(nil, errBoom)}, claims: noClaims},
			args:   args{cr: everything},
			want:   want{err: errors.Wrap(errBoom, errGetPolicy), calls: []string{"GetFresh"}},
		},
		"ClaimsError": {
			reason: "Without the claims nothing is written.",
			fields: fields{policies: &fakePolicies{}, claims: claimed(nil, errBoom)},
			args:   args{cr: everything},
			want:   want{err: errors.Wrap(errBoom, errClaims)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(tc.args.cr, tc.fields.policies, tc.fields.claims, nil)
			got, err := e.Update(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalUpdate{}, got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.fields.policies.Methods()); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdateWrites(t *testing.T) {
	// What each write carries: the fingerprints GCP holds at the time, and
	// masks that clear what the spec dropped.
	before := gcpPolicy(withGCPDescription("old"), withGCPLabels(map[string]string{"env": "dev"}),
		withGCPRules(gcpRule(1000, "allow", rangeA)))
	afterPatch := gcpPolicy(withGCPLabelFingerprint("lfp-2"))
	type patchRule struct {
		Priority int64
		Rule     *compute.SecurityPolicyRule
		Mask     []string
	}
	var (
		patched     *compute.SecurityPolicy
		labels      map[string]string
		fingerprint string
		rules       []patchRule
	)
	f := &fakePolicies{
		GetFreshFn:  sequence(before, afterPatch),
		PatchFn:     func(p *compute.SecurityPolicy) error { patched = p; return nil },
		SetLabelsFn: func(l map[string]string, fp string) error { labels, fingerprint = l, fp; return nil },
		PatchRuleFn: func(p int64, r *compute.SecurityPolicyRule, m []string) error {
			rules = append(rules, patchRule{Priority: p, Rule: r, Mask: m})
			return nil
		},
	}
	cr := policy(withDescription("new"), withLabels(map[string]string{}), withDefaultRule(deny403),
		withRules(inline(1000, deny403, rangeA)))
	e := newExternal(cr, f, noClaims, nil)
	if _, err := e.Update(context.Background(), cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if diff := cmp.Diff(&compute.SecurityPolicy{Description: "new", Fingerprint: "fp-1"}, patched); diff != "" {
		t.Errorf("Update(...): -want patch, +got patch:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{}, labels); diff != "" || fingerprint != "lfp-2" {
		t.Errorf("Update(...): want labels {} with the label fingerprint read after the patch (lfp-2), got %v with %q", labels, fingerprint)
	}
	match := func(rs ...string) *compute.SecurityPolicyRuleMatcher {
		return &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: rs}}
	}
	want := []patchRule{
		{Priority: 1000, Rule: &compute.SecurityPolicyRule{Priority: 1000, Action: deny403, Match: match(rangeA)}, Mask: []string{"action", "match"}},
		{Priority: defPrio, Rule: &compute.SecurityPolicyRule{Priority: defPrio, Action: deny403, Match: match("*")}, Mask: []string{"action", "match"}},
	}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("Update(...): -want rule patches, +got rule patches:\n%s", diff)
	}
}

func TestDelete(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicy
	}
	type want struct {
		err   error
		calls []string
	}
	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		args     args
		want     want
	}{
		"Delete": {
			reason:   "Delete deletes the policy.",
			policies: &fakePolicies{DeleteFn: func() error { return nil }},
			args:     args{cr: policy(withDeletionTimestamp())},
			want:     want{calls: []string{"Delete"}},
		},
		"NotFound": {
			reason:   "A policy already gone is deleted.",
			policies: &fakePolicies{DeleteFn: func() error { return errNotFound }},
			args:     args{cr: policy(withDeletionTimestamp())},
			want:     want{calls: []string{"Delete"}},
		},
		"Error": {
			reason:   "Any other error is returned, wrapped.",
			policies: &fakePolicies{DeleteFn: func() error { return errBoom }},
			args:     args{cr: policy(withDeletionTimestamp())},
			want:     want{err: errors.Wrap(errBoom, errDeletePolicy), calls: []string{"Delete"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(tc.args.cr, tc.policies, noClaims, nil)
			got, err := e.Delete(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalDelete{}, got); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Methods()); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

// recorder records the reasons of the events it is given.
type recorder struct{ reasons []event.Reason }

func (r *recorder) Event(_ runtime.Object, e event.Event) { r.reasons = append(r.reasons, e.Reason) }

func (r *recorder) WithAnnotations(...string) event.Recorder { return r }

func withManagementPolicies(p ...xpv2.ManagementAction) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.SetManagementPolicies(p) }
}

func TestObserveOwnership(t *testing.T) {
	mine := map[string]string{ownership.LabelKey: "11111111111111111111111111111111"}
	theirs := map[string]string{ownership.LabelKey: "22222222222222222222222222222222"}
	older := policy(func(cr *v1beta1.SecurityPolicy) { cr.SetNamespace("team-a"); cr.SetUID("older") })
	key := gcp.PolicyKey{Project: "p", Name: policyName}

	type want struct {
		o        managed.ExternalObservation
		err      error
		calls    []string
		adopting bool
		ready    bool
	}
	cases := map[string]struct {
		reason string
		owners fakeOwners
		gcp    *compute.SecurityPolicy
		cr     *v1beta1.SecurityPolicy
		want   want
	}{
		"NotTheOwner": {
			reason: "An object that does not own its GCP policy is refused before any call to GCP, naming the owner.",
			owners: fakeOwners{owner: older},
			cr:     policy(),
			want:   want{err: errors.New(ownership.PolicyRefusal(key, older))},
		},
		"NotTheOwnerDeleting": {
			reason: "Deleting an object that does not own its GCP policy leaves the policy alone: it is reported gone, so Delete is never called.",
			owners: fakeOwners{owner: older},
			cr:     policy(withDeletionTimestamp()),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"ObserveOnlyIsNeverRefused": {
			reason: "An Observe-only object writes nothing, so it competes with no one and is not refused.",
			owners: fakeOwners{owner: older},
			gcp:    gcpPolicy(withGCPLabels(theirs)),
			cr:     policy(withManagementPolicies(xpv2.ManagementActionObserve)),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"}, ready: true},
		},
		"LabelledForAnotherOwner": {
			reason: "A policy whose owner label names another object is refused, and nothing is written.",
			gcp:    gcpPolicy(withGCPLabels(theirs)),
			cr:     policy(),
			want: want{err: errors.Errorf(errFmtLabelledForOther, key, ownership.LabelKey, theirs[ownership.LabelKey]),
				calls: []string{"Get"}},
		},
		"LabelledForAnotherOwnerDeleting": {
			reason: "Deleting an object whose policy is labelled for another owner leaves the policy alone.",
			gcp:    gcpPolicy(withGCPLabels(theirs)),
			cr:     policy(withDeletionTimestamp()),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, calls: []string{"Get"}},
		},
		"LabelledForUs": {
			reason: "Our own label is no drift.",
			gcp:    gcpPolicy(withGCPLabels(mine)),
			cr:     policy(),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"}, ready: true},
		},
		"Unlabelled": {
			reason: "An unlabelled policy is adopted: it is not up to date until it carries our label.",
			gcp:    gcpPolicy(),
			cr:     policy(),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, calls: []string{"Get"}, adopting: true, ready: true},
		},
		"TypeMismatch": {
			reason: "Regression: a policy of another type was reported Ready. Type is immutable in GCP, so it is an error and nothing is written.",
			gcp:    gcpPolicy(withGCPLabels(mine)),
			cr:     policy(func(cr *v1beta1.SecurityPolicy) { cr.Spec.ForProvider.Type = ptr("CLOUD_ARMOR_EDGE") }),
			want: want{err: errors.New(`spec.forProvider.type is "CLOUD_ARMOR_EDGE" but GCP policy "edge-policy" has type "CLOUD_ARMOR"; type is immutable in GCP: delete the policy to recreate it with the new type, or set type to "CLOUD_ARMOR"`),
				calls: []string{"Get"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakePolicies{GetFn: returns(tc.gcp, nil)}
			e := newExternal(tc.cr, f, tc.owners, mine)
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.Methods()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if adopting := e.reconcile.verdict == verdict.Adopt; adopting != tc.want.adopting {
				t.Errorf("\n%s\nObserve(...): adopting = %t, want %t", tc.reason, adopting, tc.want.adopting)
			}
			if ready := tc.cr.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue; ready != tc.want.ready {
				t.Errorf("\n%s\nObserve(...): Ready = %t, want %t", tc.reason, ready, tc.want.ready)
			}
		})
	}
}

func TestObserveRefusedClaims(t *testing.T) {
	refused := ownership.Refusal{Rule: "team-b/sneaky", Priority: 100, Message: "SecurityPolicyRule team-b/sneaky may not claim priority 100"}
	cr := policy(withRules(inline(100, deny403, rangeA)))
	f := &fakePolicies{GetFn: returns(gcpPolicy(withGCPRules(gcpRule(100, deny403, rangeA))), nil)}
	e := newExternal(cr, f, fakeOwners{refused: []ownership.Refusal{refused}}, nil)
	got, err := e.Observe(context.Background(), cr)
	if err != nil {
		t.Fatalf("Observe(...): %v", err)
	}
	if !got.ResourceUpToDate {
		t.Errorf("Observe(...): a refused claim leaves the policy's own inline rule in place and up to date; diff: %s", got.Diff)
	}
	want := xpv2.Condition{Type: TypeRuleConflict, Status: corev1.ConditionTrue, Reason: ReasonClaimRefused, Message: refused.Message}
	if diff := cmp.Diff(want, cr.GetCondition(TypeRuleConflict), test.EquateConditions()); diff != "" {
		t.Errorf("Observe(...): -want RuleConflict, +got RuleConflict:\n%s", diff)
	}
}

func TestUpdateAdoption(t *testing.T) {
	mine := map[string]string{ownership.LabelKey: "11111111111111111111111111111111"}
	cases := map[string]struct {
		reason       string
		adopting     bool
		setLabelsErr error
		events       []event.Reason
	}{
		"Adopting":    {reason: "Labelling an unlabelled policy is announced with an event.", adopting: true, events: []event.Reason{reasonAdopted}},
		"NotAdopting": {reason: "An update of a policy already ours is no adoption."},
		"AdoptionFailed": {reason: "An adoption whose labels could not be written is not announced: the retry will be.",
			adopting: true, setLabelsErr: errBoom},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var labels map[string]string
			f := &fakePolicies{
				GetFreshFn:  returns(gcpPolicy(withGCPLabels(map[string]string{"env": "prod"})), nil),
				SetLabelsFn: func(l map[string]string, _ string) error { labels = l; return tc.setLabelsErr },
			}
			cr := policy()
			e := newExternal(cr, f, noClaims, mine)
			rec := &recorder{}
			e.recorder = rec
			if tc.adopting {
				e.reconcile.verdict = verdict.Adopt
			}
			if _, err := e.Update(context.Background(), cr); (err != nil) != (tc.setLabelsErr != nil) {
				t.Fatalf("Update(...): %v", err)
			}
			if diff := cmp.Diff(tc.events, rec.reasons); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want events, +got events:\n%s", tc.reason, diff)
			}
			// A label-only update reads the policy once: no patch ran that
			// could have changed its labelFingerprint.
			if diff := cmp.Diff([]string{"GetFresh", "SetLabels"}, f.Methods()); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			// With spec.labels unset, GCP's labels are kept and ours added.
			want := map[string]string{"env": "prod", ownership.LabelKey: mine[ownership.LabelKey]}
			if diff := cmp.Diff(want, labels); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want labels, +got labels:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClaimsReadOncePerReconcile(t *testing.T) {
	// Observe and the Update that follows it plan with the same claims: the
	// policy's rules are listed once per reconcile, not twice.
	reads := 0
	cr := policy(withDescription("new"))
	f := &fakePolicies{
		GetFn:      returns(gcpPolicy(withGCPDescription("old")), nil),
		GetFreshFn: returns(gcpPolicy(withGCPDescription("old")), nil),
		PatchFn:    func(*compute.SecurityPolicy) error { return nil },
	}
	e := newExternal(cr, f, fakeOwners{claims: gcppolicy.Claims{500: claimant}, reads: &reads}, nil)
	o, err := e.Observe(context.Background(), cr)
	if err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe(...): want drift and no error, got %+v, %v", o, err)
	}
	if _, err := e.Update(context.Background(), cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if reads != 1 {
		t.Errorf("Observe then Update read the claims %d times, want 1", reads)
	}
}

// TestObserveWarning: a writing object is told which of its values GCP may
// refuse; an object that only observes sends nothing and is told nothing.
func TestObserveWarning(t *testing.T) {
	preview := func(cr *v1beta1.SecurityPolicy) { cr.Spec.ForProvider.Type = ptr("CLOUD_ARMOR_INTERNAL_SERVICE") }
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicy
		want   xpv2.Condition
	}{
		"Writes": {
			reason: "A preview-only type is reported, and Observe goes on.",
			cr:     policy(preview),
			want: xpv2.Condition{Type: apivalues.TypeWarning, Status: corev1.ConditionTrue, Reason: apivalues.ReasonPreviewValue,
				Message: `spec.forProvider.type "CLOUD_ARMOR_INTERNAL_SERVICE" is preview only in GCP: GCP may refuse it or change what it does without notice`},
		},
		"ObserveOnly": {
			reason: "An object that only observes gets no Warning condition.",
			cr:     policy(preview, withManagementPolicies(xpv2.ManagementActionObserve)),
			want:   xpv2.Condition{Type: apivalues.TypeWarning, Status: corev1.ConditionUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newExternal(tc.cr, &fakePolicies{GetFn: returns(nil, errNotFound)}, noClaims, nil)
			if _, err := e.Observe(context.Background(), tc.cr); err != nil {
				t.Fatalf("\n%s\nObserve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, tc.cr.GetCondition(apivalues.TypeWarning), test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nObserve(...): Warning condition -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
