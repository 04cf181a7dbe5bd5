package securitypolicyrule

import (
	"context"
	"net/http"
	"slices"
	"strings"
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
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

const (
	policy   = "edge-policy"
	selfLink = "https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/edge-policy"
	kindRule = "compute#securityPolicyRule"
	rangeA   = "192.0.2.0/24"
	rangeB   = "198.51.100.0/24"
	deny403  = "deny(403)"
	srcIPsV1 = "SRC_IPS_V1"
	defPrio  = v1beta1.DefaultRulePriority
	gcpDescr = "Default rule, higher priority overrides it"
)

var (
	errBoom = errors.New("boom")

	errNotFound = &googleapi.Error{Code: http.StatusNotFound,
		Message: "The resource 'projects/p/global/securityPolicies/edge-policy' was not found",
		Errors:  []googleapi.ErrorItem{{Reason: "notFound"}}}
	errNoRuleAtPriority = &googleapi.Error{Code: http.StatusBadRequest,
		Message: "Invalid value for field 'priority': '1000'. The security policy does not contain a rule at priority 1000.",
		Errors:  []googleapi.ErrorItem{{Reason: "invalid"}}}
	errAlreadyExists = &googleapi.Error{Code: http.StatusConflict,
		Message: "The resource 'projects/p/global/securityPolicies/edge-policy' already has a rule at priority 1000",
		Errors:  []googleapi.ErrorItem{{Reason: "alreadyExists"}}}
	errRateLimited = &googleapi.Error{Code: http.StatusTooManyRequests, Message: "Rate Limit Exceeded",
		Errors: []googleapi.ErrorItem{{Reason: "rateLimitExceeded"}}}
	errQuota = &gcp.OperationError{Operation: "operation-1", Errors: []gcp.OperationErrorItem{{
		Code: "QUOTA_EXCEEDED", Message: "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."}}}
)

// call is one call the external client made to GCP.
type call = gcptest.Call

// fakePolicies is the controllers' shared fake GCP.
type fakePolicies = gcptest.Policies

// SecurityPolicyRule builders.

type ruleModifier func(*v1beta1.SecurityPolicyRule)

func rule(m ...ruleModifier) *v1beta1.SecurityPolicyRule {
	cr := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "block-bad"}}
	cr.Spec.ForProvider.SecurityPolicy = ptr(policy)
	cr.Spec.ForProvider.Priority = 1000
	cr.Spec.ForProvider.Action = deny403
	for _, fn := range m {
		fn(cr)
	}
	return cr
}

func withPolicy(p *string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.SecurityPolicy = p }
}

func withPriority(p int64) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Priority = p }
}

func withAction(a string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Action = a }
}

func withRanges(rs ...v1beta1.IPRange) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) {
		cr.Spec.ForProvider.Match = &v1beta1.RuleMatcher{VersionedExpr: ptr(srcIPsV1),
			Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: rs}}
	}
}

func withDescription(d string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Description = &d }
}

func withPreview(p bool) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Preview = &p }
}

func withExternalName(n string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { meta.SetExternalName(cr, n) }
}

func withAnnotation(k, v string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { meta.AddAnnotations(cr, map[string]string{k: v}) }
}

func withDeletionTimestamp() ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) {
		t := metav1.Unix(1700000000, 0)
		cr.SetDeletionTimestamp(&t)
	}
}

func withConditions(c ...xpv2.Condition) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.SetConditions(c...) }
}

// observedIPs is a basic match as status reports it.
func observedIPs(ranges ...string) *v1beta1.RuleMatcherObservation {
	return &v1beta1.RuleMatcherObservation{VersionedExpr: srcIPsV1, Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: ranges}}
}

func withObservedRule(o v1beta1.RuleObservation) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) {
		cr.Status.AtProvider = v1beta1.SecurityPolicyRuleObservation{SecurityPolicy: policy, PolicySelfLink: selfLink, Rule: &o}
	}
}

// GCP-side builders.

func gcpPolicy(rules ...*compute.SecurityPolicyRule) *compute.SecurityPolicy {
	return &compute.SecurityPolicy{Kind: "compute#securityPolicy", Name: policy, SelfLink: selfLink,
		Fingerprint: "fp-1", Rules: append(rules, gcpDefaultRule())}
}

// gcpDefaultRule is the default rule GCP adds to a new policy.
func gcpDefaultRule() *compute.SecurityPolicyRule {
	return gcpRule(defPrio, "allow", "*", func(r *compute.SecurityPolicyRule) { r.Description = gcpDescr })
}

// gcpRule is a rule as GCP returns it: with kind set, an empty description
// and preview false left out.
func gcpRule(priority int64, action string, ranges ...any) *compute.SecurityPolicyRule {
	r := &compute.SecurityPolicyRule{Kind: kindRule, Priority: priority, Action: action,
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{}}}
	for _, x := range ranges {
		switch v := x.(type) {
		case string:
			r.Match.Config.SrcIpRanges = append(r.Match.Config.SrcIpRanges, v)
		case func(*compute.SecurityPolicyRule):
			v(r)
		}
	}
	return r
}

func getReturns(sp *compute.SecurityPolicy, err error) func(string) (*compute.SecurityPolicy, error) {
	return func(string) (*compute.SecurityPolicy, error) { return sp, err }
}

func returns(err error) func(*compute.SecurityPolicyRule) error {
	return func(*compute.SecurityPolicyRule) error { return err }
}

func patchReturns(err error) func(int64, *compute.SecurityPolicyRule, []string) error {
	return func(int64, *compute.SecurityPolicyRule, []string) error { return err }
}

func ptr[T any](v T) *T { return &v }

// matchRanges is the match GenerateRule sends for a basic source-IP match.
func matchRanges(rs ...string) *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: rs}}
}

var cmpCalls = []cmp.Option{cmpopts.EquateEmpty()}

func TestObserve(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicyRule
	}
	type want struct {
		o     managed.ExternalObservation
		diff  bool // o.Diff is not empty
		err   error
		cr    *v1beta1.SecurityPolicyRule
		calls []call
	}
	getPolicy := []call{{Method: "Get", Policy: policy}}
	available := withConditions(xpv2.Available())
	observed := func(action string, ranges ...string) ruleModifier {
		// Status reports ranges normalised: sorted, as they are compared.
		return withObservedRule(v1beta1.RuleObservation{Priority: 1000, Action: action, Match: observedIPs(slices.Sorted(slices.Values(ranges))...)})
	}

	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		args     args
		want     want
	}{
		"NoPolicyName": {
			reason:   "A rule whose policy reference is not resolved cannot be observed, and GCP is not called.",
			policies: &fakePolicies{},
			args:     args{cr: rule(withPolicy(nil))},
			want:     want{err: errors.New(errNoPolicy), cr: rule(withPolicy(nil))},
		},
		"PolicyNotFound": {
			reason:   "A rule of a policy that does not exist (yet) waits for it without an error, reported as up to date so the reconciler neither creates (AddRule would only get a 404) nor backs off.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA), withConditions(waiting("waiting for GCP security policy projects/p/global/securityPolicies/edge-policy to exist"))),
				calls: getPolicy},
		},
		"ReferencedPolicyNotFound": {
			reason:   "A rule whose resolved reference names a GCP policy that does not exist yet names the SecurityPolicy it waits for, as it did before the reference resolved.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			args:     args{cr: rule(withRanges(rangeA), withRef("edge"))},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA), withRef("edge"), withConditions(waiting("waiting for SecurityPolicy team-a/edge and its GCP security policy to exist"))),
				calls: getPolicy},
		},
		"UnresolvedReference": {
			reason:   "A rule whose reference is not resolved yet waits for the SecurityPolicy, and GCP is not called.",
			policies: &fakePolicies{},
			args:     args{cr: rule(withPolicy(nil), withRef("edge"))},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withPolicy(nil), withRef("edge"), withConditions(waiting("waiting for SecurityPolicy team-a/edge and its GCP security policy to exist")))},
		},
		"UnresolvedSelector": {
			reason:   "A rule whose selector matches no SecurityPolicy yet waits, naming the selector.",
			policies: &fakePolicies{},
			args:     args{cr: rule(withPolicy(nil), withSelector(map[string]string{"app": "edge"}))},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withPolicy(nil), withSelector(map[string]string{"app": "edge"}), withConditions(waiting(
					"waiting for a SecurityPolicy in namespace team-a matching spec.forProvider.securityPolicySelector (app=edge) and its GCP security policy to exist")))},
		},
		"UnresolvedWhileDeleting": {
			reason:   "A rule deleted before its reference resolved has nothing in GCP, so the finalizer can go.",
			policies: &fakePolicies{},
			args:     args{cr: rule(withPolicy(nil), withRef("edge"), withDeletionTimestamp())},
			want: want{o: managed.ExternalObservation{ResourceExists: false},
				cr: rule(withPolicy(nil), withRef("edge"), withDeletionTimestamp())},
		},
		"PolicyNotFoundWhileDeleting": {
			reason:   "A rule being deleted whose policy is gone does not exist, so the finalizer can go.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want: want{o: managed.ExternalObservation{ResourceExists: false},
				cr: rule(withRanges(rangeA), withDeletionTimestamp()), calls: getPolicy},
		},
		"GetError": {
			reason:   "Any other error reading the policy is returned, wrapped.",
			policies: &fakePolicies{GetFn: getReturns(nil, errBoom)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{err: errors.Wrap(errBoom, errGetPolicy), cr: rule(withRanges(rangeA)), calls: getPolicy},
		},
		"RateLimited": {
			reason:   "A 429 reading the policy is returned, wrapped, so the reconciler backs off.",
			policies: &fakePolicies{GetFn: getReturns(nil, errRateLimited)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{err: errors.Wrap(errRateLimited, errGetPolicy), cr: rule(withRanges(rangeA)), calls: getPolicy},
		},
		"RuleMissing": {
			reason:   "A policy without a rule at the priority means the rule does not exist.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(2000, deny403, rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{o: managed.ExternalObservation{ResourceExists: false}, cr: rule(withRanges(rangeA)), calls: getPolicy},
		},
		"UpToDateWithGCPFillIns": {
			reason:   "GCP's kind, empty description and omitted preview are not drift.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeA, rangeB)), nil)},
			args:     args{cr: rule(withRanges(rangeA, rangeB))},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA, rangeB), observed(deny403, rangeA, rangeB), available),
				calls: getPolicy,
			},
		},
		"UpToDateWithExplicitZeroValues": {
			reason:   "An explicit description \"\" and preview false equal what GCP returns for them.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA), withDescription(""), withPreview(false))},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA), withDescription(""), withPreview(false), observed(deny403, rangeA), available),
				calls: getPolicy,
			},
		},
		"RangeOrderIsNotDrift": {
			reason:   "A rule matches any of its ranges, so GCP holding them in another order is not drift.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeB, rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA, rangeB))},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA, rangeB), observed(deny403, rangeB, rangeA), available),
				calls: getPolicy,
			},
		},
		"ActionDrift": {
			reason:   "A different action is drift, with a diff for the log.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, "allow", rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
				diff:  true,
				cr:    rule(withRanges(rangeA), observed("allow", rangeA), available),
				calls: getPolicy,
			},
		},
		"RangesDrift": {
			reason:   "A changed set of ranges is drift.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA, rangeB))},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
				diff:  true,
				cr:    rule(withRanges(rangeA, rangeB), observed(deny403, rangeA), available),
				calls: getPolicy,
			},
		},
		"ExistsWhileDeleting": {
			reason:   "A rule being deleted that GCP still holds exists, so the reconciler calls Delete instead of leaking it.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeA)), nil)},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRanges(rangeA), withDeletionTimestamp(), observed(deny403, rangeA), available),
				calls: getPolicy,
			},
		},
		"DefaultRuleUpToDate": {
			reason:   "A rule at the default priority without a match is compared with match \"*\".",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(), nil)},
			args:     args{cr: rule(withPriority(defPrio), withAction("allow"), withDescription(gcpDescr))},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withPriority(defPrio), withAction("allow"), withDescription(gcpDescr), available,
					withObservedRule(v1beta1.RuleObservation{Priority: defPrio, Action: "allow", Description: gcpDescr, Match: observedIPs("*")})),
				calls: getPolicy,
			},
		},
		"DeletedDefaultRuleWithoutReset": {
			reason:   "A deleted default-rule object without the reset annotation has nothing to do: it reports gone and GCP keeps the rule.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(defPrio, deny403, "*")), nil)},
			args:     args{cr: rule(withPriority(defPrio), withDeletionTimestamp())},
			want: want{o: managed.ExternalObservation{ResourceExists: false},
				cr: rule(withPriority(defPrio), withDeletionTimestamp()), calls: getPolicy},
		},
		"DeletedDefaultRuleResetPending": {
			reason:   "A deleted default-rule object that asked for a reset exists until the default rule allows everything.",
			policies: &fakePolicies{GetFn: getReturns(&compute.SecurityPolicy{Name: policy, SelfLink: selfLink, Rules: []*compute.SecurityPolicyRule{gcpRule(defPrio, deny403, "*")}}, nil)},
			args:     args{cr: rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "true"), withDeletionTimestamp())},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "true"), withDeletionTimestamp(), available,
					withObservedRule(v1beta1.RuleObservation{Priority: defPrio, Action: deny403, Match: observedIPs("*")})),
				calls: getPolicy,
			},
		},
		"DeletedDefaultRuleResetDone": {
			reason:   "A deleted default-rule object whose reset is done reports gone, so the finalizer can go.",
			policies: &fakePolicies{GetFn: getReturns(&compute.SecurityPolicy{Name: policy, Rules: []*compute.SecurityPolicyRule{gcpRule(defPrio, "allow", "*")}}, nil)},
			args:     args{cr: rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "true"), withDeletionTimestamp())},
			want: want{o: managed.ExternalObservation{ResourceExists: false},
				cr:    rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "true"), withDeletionTimestamp()),
				calls: getPolicy},
		},
		"DeletedDefaultRuleAnnotationNotTrue": {
			reason:   "Only the exact value \"true\" asks for a reset.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(defPrio, deny403, "*")), nil)},
			args:     args{cr: rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "yes"), withDeletionTimestamp())},
			want: want{o: managed.ExternalObservation{ResourceExists: false},
				cr:    rule(withPriority(defPrio), withAnnotation(AnnotationResetDefaultRule, "yes"), withDeletionTimestamp()),
				calls: getPolicy},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}, key: gcp.PolicyKey{Project: "p", Name: policy}}
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
			if diff := cmp.Diff(tc.want.cr, tc.args.cr, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicyRule
	}
	type want struct {
		err   error
		cr    *v1beta1.SecurityPolicyRule
		calls []call
	}
	deny1000 := &compute.SecurityPolicyRule{Priority: 1000, Action: deny403, Match: matchRanges(rangeA)}
	deny0 := &compute.SecurityPolicyRule{Priority: 0, Action: deny403, Match: matchRanges(rangeA), ForceSendFields: []string{"Priority"}}
	defaultDeny := &compute.SecurityPolicyRule{Priority: defPrio, Action: deny403, Match: matchRanges("*")}

	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		args     args
		want     want
	}{
		"AddRule": {
			reason:   "Create adds the rule and sets the external name to <policy>/<priority>.",
			policies: &fakePolicies{AddRuleFn: returns(nil)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{
				cr:    rule(withRanges(rangeA), withExternalName(policy+"/1000")),
				calls: []call{{Method: "AddRule", Policy: policy, Priority: 1000, Rule: deny1000}},
			},
		},
		"AddRulePriorityZero": {
			reason:   "Priority 0 is a real priority: it is added (and force-sent, the Go client would drop it).",
			policies: &fakePolicies{AddRuleFn: returns(nil)},
			args:     args{cr: rule(withPriority(0), withRanges(rangeA))},
			want: want{
				cr:    rule(withPriority(0), withRanges(rangeA), withExternalName(policy+"/0")),
				calls: []call{{Method: "AddRule", Policy: policy, Priority: 0, Rule: deny0}},
			},
		},
		"DefaultRuleIsPatched": {
			reason:   "The default rule can only be patched, never added; fields GCP holds that the spec drops are cleared.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(), nil), PatchRuleFn: patchReturns(nil)},
			args:     args{cr: rule(withPriority(defPrio))},
			want: want{
				cr: rule(withPriority(defPrio), withExternalName(policy+"/2147483647")),
				calls: []call{
					{Method: "Get", Policy: policy},
					{Method: "PatchRule", Policy: policy, Priority: defPrio, Rule: defaultDeny, Mask: []string{"action", "description", "match"}},
				},
			},
		},
		"PolicyMissing": {
			reason:   "Adding a rule to a missing policy says that the policy does not exist.",
			policies: &fakePolicies{AddRuleFn: returns(errNotFound)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{
				err:   errors.Wrap(errors.Wrap(errNotFound, errAddRule), errPolicyNotFound),
				cr:    rule(withRanges(rangeA)),
				calls: []call{{Method: "AddRule", Policy: policy, Priority: 1000, Rule: deny1000}},
			},
		},
		"DefaultRulePolicyMissing": {
			reason:   "Patching the default rule of a missing policy says that the policy does not exist.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			args:     args{cr: rule(withPriority(defPrio))},
			want: want{
				err:   errors.Wrap(errors.Wrap(errNotFound, errGetPolicy), errPolicyNotFound),
				cr:    rule(withPriority(defPrio)),
				calls: []call{{Method: "Get", Policy: policy}},
			},
		},
		"OperationError": {
			reason:   "A failed operation is an error carrying GCP's code and message verbatim, and no external name is set.",
			policies: &fakePolicies{AddRuleFn: returns(errQuota)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{
				err:   errors.Wrap(errQuota, errAddRule),
				cr:    rule(withRanges(rangeA)),
				calls: []call{{Method: "AddRule", Policy: policy, Priority: 1000, Rule: deny1000}},
			},
		},
		"RateLimited": {
			reason:   "A 429 is returned so that the reconciler backs off.",
			policies: &fakePolicies{AddRuleFn: returns(errRateLimited)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{
				err:   errors.Wrap(errRateLimited, errAddRule),
				cr:    rule(withRanges(rangeA)),
				calls: []call{{Method: "AddRule", Policy: policy, Priority: 1000, Rule: deny1000}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Create(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalCreation{}, got); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.args.cr); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreateOperationErrorVerbatim(t *testing.T) {
	e := &external{policies: &fakePolicies{AddRuleFn: returns(errQuota)}, owners: fakeOwners{}}
	_, err := e.Create(context.Background(), rule(withRanges(rangeA)))
	const verbatim = "QUOTA_EXCEEDED: Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."
	if err == nil || !strings.Contains(err.Error(), verbatim) {
		t.Errorf("Create(...): want an error containing %q, got %v", verbatim, err)
	}
	if gcp.Kind(err) != gcp.KindQuotaExceeded {
		t.Errorf("Create(...): want an error that is still classified QuotaExceeded, got %v", gcp.Kind(err))
	}
}

func TestUpdate(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicyRule
	}
	type want struct {
		err   error
		calls []call
	}
	throttle := gcpRule(1000, "throttle", rangeA, func(r *compute.SecurityPolicyRule) {
		r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{
			ConformAction: "allow", ExceedAction: deny403, EnforceOnKey: "IP",
			RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 100, IntervalSec: 60},
		}
	})
	deny1000 := &compute.SecurityPolicyRule{Priority: 1000, Action: deny403, Match: matchRanges(rangeA)}
	patch := call{Method: "PatchRule", Policy: policy, Priority: 1000, Rule: deny1000, Mask: []string{"action", "match", "rate_limit_options"}}
	get := call{Method: "Get", Policy: policy}

	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		args     args
		want     want
	}{
		"ThrottleToDeny": {
			reason:   "Switching throttle to deny(403) patches the rule with a mask that clears the rateLimitOptions GCP still holds.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(throttle), nil), PatchRuleFn: patchReturns(nil)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{calls: []call{get, patch}},
		},
		"DescriptionRemoved": {
			reason:   "A description GCP holds that the spec no longer sets is named in the mask, so it is cleared.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(1000, deny403, rangeA, func(r *compute.SecurityPolicyRule) { r.Description = "old" })), nil), PatchRuleFn: patchReturns(nil)},
			args:     args{cr: rule(withRanges(rangeA))},
			want: want{calls: []call{get,
				{Method: "PatchRule", Policy: policy, Priority: 1000, Rule: deny1000, Mask: []string{"action", "description", "match"}}}},
		},
		"GetError": {
			reason:   "An error reading the policy is returned, wrapped, and nothing is written.",
			policies: &fakePolicies{GetFn: getReturns(nil, errBoom)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{err: errors.Wrap(errBoom, errGetPolicy), calls: []call{get}},
		},
		"OperationError": {
			reason:   "A failed patch operation surfaces GCP's error verbatim.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(throttle), nil), PatchRuleFn: patchReturns(errQuota)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{err: errors.Wrap(errQuota, errPatchRule), calls: []call{get, patch}},
		},
		"RateLimited": {
			reason:   "A 429 on patch is returned.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(throttle), nil), PatchRuleFn: patchReturns(errRateLimited)},
			args:     args{cr: rule(withRanges(rangeA))},
			want:     want{err: errors.Wrap(errRateLimited, errPatchRule), calls: []call{get, patch}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Update(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalUpdate{}, got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicyRule
	}
	type want struct {
		err   error
		calls []call
	}
	remove := call{Method: "RemoveRule", Policy: policy, Priority: 1000}
	allowAll := &compute.SecurityPolicyRule{Priority: defPrio, Action: "allow", Match: matchRanges("*")}
	reset := withAnnotation(AnnotationResetDefaultRule, "true")

	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		args     args
		want     want
	}{
		"RemoveRule": {
			reason:   "Delete removes the rule at the priority.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return nil }},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want:     want{calls: []call{remove}},
		},
		"NotFound": {
			reason:   "A rule (or policy) already gone is deleted.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errNotFound }},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want:     want{calls: []call{remove}},
		},
		"NoRuleAtPriority": {
			reason:   "GCP's 400 \"does not contain a rule at priority\" also means already gone.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errNoRuleAtPriority }},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want:     want{calls: []call{remove}},
		},
		"RemoveError": {
			reason:   "Any other error is returned, wrapped.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errQuota }},
			args:     args{cr: rule(withRanges(rangeA), withDeletionTimestamp())},
			want:     want{err: errors.Wrap(errQuota, errRemoveRule), calls: []call{remove}},
		},
		"DefaultRuleLeftAlone": {
			reason:   "Deleting a default-rule object without the reset annotation never touches GCP: the default rule cannot be removed and opening it would be worse.",
			policies: &fakePolicies{},
			args:     args{cr: rule(withPriority(defPrio), withDeletionTimestamp())},
			want:     want{},
		},
		"DefaultRuleReset": {
			reason:   "With the reset annotation the default rule is patched to allow *, clearing everything else.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(defPrio, deny403, "*", func(r *compute.SecurityPolicyRule) { r.Description = "closed" })), nil), PatchRuleFn: patchReturns(nil)},
			args:     args{cr: rule(withPriority(defPrio), reset, withDeletionTimestamp())},
			want: want{calls: []call{{Method: "Get", Policy: policy},
				{Method: "PatchRule", Policy: policy, Priority: defPrio, Rule: allowAll, Mask: []string{"action", "description", "match"}}}},
		},
		"DefaultRuleResetError": {
			reason:   "A failed reset is returned, wrapped.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(defPrio, deny403, "*")), nil), PatchRuleFn: patchReturns(errBoom)},
			args:     args{cr: rule(withPriority(defPrio), reset, withDeletionTimestamp())},
			want: want{err: errors.Wrap(errors.Wrap(errBoom, errPatchRule), errResetDefault),
				calls: []call{{Method: "Get", Policy: policy},
					{Method: "PatchRule", Policy: policy, Priority: defPrio, Rule: allowAll, Mask: []string{"action", "match"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Delete(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalDelete{}, got); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

// fakeOwners answers RuleStanding with a fixed standing.
type fakeOwners struct {
	standing ownership.Standing
	err      error
}

func (f fakeOwners) RuleStanding(context.Context, *v1beta1.SecurityPolicyRule, gcp.PolicyKey) (ownership.Standing, error) {
	return f.standing, f.err
}

func withRuleManagementPolicies(p ...xpv2.ManagementAction) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.SetManagementPolicies(p) }
}

func TestObserveOwnership(t *testing.T) {
	refusal := "the rule at priority 1000 of GCP policy projects/p/global/securityPolicies/edge-policy is managed by SecurityPolicyRule team-a/older, the oldest object for it"
	gcpWithRule := gcpPolicy(gcpRule(1000, deny403, rangeA), gcpRule(defPrio, "allow", "*"))
	cases := map[string]struct {
		reason   string
		standing ownership.Standing
		cr       *v1beta1.SecurityPolicyRule
		want     managed.ExternalObservation
		err      error
		calls    int
	}{
		"Refused": {
			reason:   "A rule object that may not claim its priority is Synced=False with the owner's name and makes no call to GCP.",
			standing: ownership.Standing{Refused: refusal},
			cr:       rule(withRanges(rangeA)),
			err:      errors.New(refusal),
		},
		"RefusedDeleting": {
			reason:   "Deleting a rule object that does not own its rule leaves the GCP rule alone.",
			standing: ownership.Standing{Refused: refusal},
			cr:       rule(withRanges(rangeA), withDeletionTimestamp()),
			want:     managed.ExternalObservation{ResourceExists: false},
		},
		"ObserveOnlyIsNeverRefused": {
			reason:   "An Observe-only rule object writes nothing and is not asked whether it may.",
			standing: ownership.Standing{Refused: refusal},
			cr:       rule(withRanges(rangeA), withRuleManagementPolicies(xpv2.ManagementActionObserve)),
			want:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			calls:    1,
		},
		"DeletingHandsInlinePriorityBack": {
			reason:   "Regression: deleting a rule object whose priority the owning policy declares inline removed the GCP rule and the policy added it back a second later, a gap in an allowlist. The rule stays for the policy to take over.",
			standing: ownership.Standing{Inline: true},
			cr:       rule(withRanges(rangeA), withDeletionTimestamp()),
			want:     managed.ExternalObservation{ResourceExists: false},
		},
		"InlineWhileLiving": {
			reason:   "While the rule object lives, a policy that declares the same priority inline does not stop it.",
			standing: ownership.Standing{Inline: true},
			cr:       rule(withRanges(rangeA)),
			want:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			calls:    1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakePolicies{GetFn: getReturns(gcpWithRule, nil)}
			e := &external{policies: f, owners: fakeOwners{standing: tc.standing}}
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(f.Calls) != tc.calls {
				t.Errorf("\n%s\nObserve(...): %d calls to GCP, want %d: %v", tc.reason, len(f.Calls), tc.calls, f.Calls)
			}
		})
	}
}

func TestCreateAlreadyExists(t *testing.T) {
	// A rule that appeared at our priority since Observe read the policy was
	// written outside this cluster: reported, not silently taken over. The
	// next Observe, reading afresh, sees it and adopts it.
	e := &external{policies: &fakePolicies{AddRuleFn: returns(errAlreadyExists)}, owners: fakeOwners{}}
	cr := rule(withRanges(rangeA))
	_, err := e.Create(context.Background(), cr)
	if diff := cmp.Diff(errors.Wrap(errAlreadyExists, errAddRule), err, test.EquateErrors()); diff != "" {
		t.Errorf("Create(...): -want error, +got error:\n%s", diff)
	}
	if got := meta.GetExternalName(cr); got != "" {
		t.Errorf("Create(...): a failed create must not record an external name, got %q", got)
	}
}

// eventCount counts the events recorded.
type eventCount struct{ n int }

func (r *eventCount) Event(runtime.Object, event.Event)        { r.n++ }
func (r *eventCount) WithAnnotations(...string) event.Recorder { return r }

// TestObserveWarnsUnknownValue: a rate-limit key the provider does not know
// is observed and written like any other, with a Warning condition and one
// event; GCP decides whether it takes it.
func TestObserveWarnsUnknownValue(t *testing.T) {
	cr := rule(withRanges(rangeA), func(cr *v1beta1.SecurityPolicyRule) {
		cr.Spec.ForProvider.Action = v1beta1.ActionThrottle
		cr.Spec.ForProvider.RateLimitOptions = &v1beta1.RateLimitOptions{EnforceOnKey: ptr("TLS_JA5_FINGERPRINT"),
			RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 10, IntervalSec: 60}}
	})
	rec := &eventCount{}
	e := &external{policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(defPrio, "allow", "*")), nil)},
		owners: fakeOwners{}, key: gcp.PolicyKey{Project: "p", Name: policy}, recorder: rec}
	for range 2 { // the second poll records no second event
		got, err := e.Observe(context.Background(), cr)
		if err != nil {
			t.Fatalf("Observe(...): %v; an unknown value must not stop the provider", err)
		}
		if diff := cmp.Diff(managed.ExternalObservation{ResourceExists: false}, got); diff != "" {
			t.Errorf("Observe(...): the rule is not in GCP yet, so Create sends it: -want, +got:\n%s", diff)
		}
	}
	want := xpv2.Condition{Type: apivalues.TypeWarning, Status: corev1.ConditionTrue, Reason: apivalues.ReasonUnknownValue,
		Message: `spec.forProvider.rateLimitOptions.enforceOnKey "TLS_JA5_FINGERPRINT" is not a value this provider knows: it is sent to GCP as written, and GCP's refusal, if any, is reported in Synced`}
	if diff := cmp.Diff(want, cr.GetCondition(apivalues.TypeWarning), test.EquateConditions()); diff != "" {
		t.Errorf("Observe(...): Warning condition -want, +got:\n%s", diff)
	}
	if rec.n != 1 {
		t.Errorf("Observe(...) twice: %d events, want 1", rec.n)
	}

	// The reconciler writes the object before Create, which drops the
	// condition Observe set; Create sets it again, so that GCP's refusal
	// and the warning are reported together.
	fresh := cr.DeepCopy()
	fresh.Status.Conditions = nil
	e.policies = &fakePolicies{AddRuleFn: returns(errBoom)}
	if _, err := e.Create(context.Background(), fresh); err == nil {
		t.Fatal("Create(...): want GCP's error")
	}
	if diff := cmp.Diff(want, fresh.GetCondition(apivalues.TypeWarning), test.EquateConditions()); diff != "" {
		t.Errorf("Create(...): Warning condition -want, +got:\n%s", diff)
	}
	if rec.n != 1 {
		t.Errorf("Create(...) recorded an event: %d, want Observe's one", rec.n)
	}
}
