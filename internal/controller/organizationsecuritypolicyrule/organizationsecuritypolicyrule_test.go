package organizationsecuritypolicyrule

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const (
	id       = "1234"
	selfLink = "https://www.googleapis.com/compute/v1/locations/global/securityPolicies/1234"
	kindRule = "compute#securityPolicyRule"
	rangeA   = "192.0.2.0/24"
	rangeB   = "198.51.100.0/24"
	deny403  = "deny(403)"
	srcIPsV1 = "SRC_IPS_V1"
	defPrio  = v1beta1.DefaultRulePriority
)

var (
	errBoom     = errors.New("boom")
	errNotFound = &googleapi.Error{Code: http.StatusNotFound,
		Message: "The resource 'locations/global/securityPolicies/1234' was not found",
		Errors:  []googleapi.ErrorItem{{Reason: "notFound"}}}
	errNoRuleAtPriority = &googleapi.Error{Code: http.StatusBadRequest,
		Message: "Invalid value for field 'priority': '100'. The security policy does not contain a rule at priority 100.",
		Errors:  []googleapi.ErrorItem{{Reason: "invalid"}}}
)

// call is one call the external client made to GCP.
type call = gcptest.Call

// fakePolicies is the controllers' shared fake GCP.
type fakePolicies = gcptest.Policies

// fakeOwners answers OrgRuleStanding with a fixed standing.
type fakeOwners struct {
	standing ownership.Standing
	err      error
}

func (f fakeOwners) OrgRuleStanding(context.Context, *v1alpha1.OrganizationSecurityPolicyRule, string) (ownership.Standing, error) {
	return f.standing, f.err
}

type ruleModifier func(*v1alpha1.OrganizationSecurityPolicyRule)

// rule is the object most cases use: deny rangeA at priority 100 of id.
func rule(m ...ruleModifier) *v1alpha1.OrganizationSecurityPolicyRule {
	cr := &v1alpha1.OrganizationSecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "block-bad"}}
	cr.Spec.ForProvider.SecurityPolicy = new(id)
	cr.Spec.ForProvider.Priority = 100
	cr.Spec.ForProvider.Action = deny403
	cr.Spec.ForProvider.Match = &v1beta1.RuleMatcher{VersionedExpr: new(srcIPsV1), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: []v1beta1.IPRange{rangeA}}}
	for _, fn := range m {
		fn(cr)
	}
	return cr
}

func withPolicyID(p *string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { cr.Spec.ForProvider.SecurityPolicy = p }
}

func withRef(name string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) {
		cr.Spec.ForProvider.SecurityPolicyRef = &xpv2.NamespacedReference{Name: name}
	}
}

func withAction(a string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { cr.Spec.ForProvider.Action = a }
}

func withDescription(d string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { cr.Spec.ForProvider.Description = &d }
}

func withExternalName(n string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { meta.SetExternalName(cr, n) }
}

func withDeletionTimestamp() ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) {
		t := metav1.Unix(1700000000, 0)
		cr.SetDeletionTimestamp(&t)
	}
}

func withDryRun() ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) {
		meta.AddAnnotations(cr, map[string]string{v1beta1.AnnotationDryRun: "true"})
	}
}

func withManagementPolicies(p ...xpv2.ManagementAction) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { cr.SetManagementPolicies(p) }
}

func withConditions(c ...xpv2.Condition) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) { cr.SetConditions(c...) }
}

// withObserved is status.atProvider for a deny rule of action over ranges
// at priority 100.
func withObserved(action string, ranges ...string) ruleModifier {
	return func(cr *v1alpha1.OrganizationSecurityPolicyRule) {
		cr.Status.AtProvider = v1alpha1.OrganizationSecurityPolicyRuleObservation{SecurityPolicyID: id, SecurityPolicySelfLink: selfLink,
			Rule: &v1beta1.RuleObservation{Priority: 100, Action: action,
				Match: &v1beta1.RuleMatcherObservation{VersionedExpr: srcIPsV1, Config: &v1beta1.RuleMatcherConfigObservation{SrcIpRanges: ranges}}}}
	}
}

func waitingFor(msg string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonWaitingForPolicy, Message: msg}
}

// gcpPolicy is the organization policy id as GCP returns it: the rules
// given and its default rule.
func gcpPolicy(rules ...*compute.SecurityPolicyRule) *compute.SecurityPolicy {
	return &compute.SecurityPolicy{Kind: "compute#securityPolicy", Name: id, SelfLink: selfLink, Type: "CLOUD_ARMOR",
		Rules: append(rules, gcpRule(defPrio, "allow", "*"))}
}

// gcpRule is a rule as GCP returns it, with its kind set.
func gcpRule(priority int64, action string, ranges ...string) *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Kind: kindRule, Priority: priority, Action: action,
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: ranges}}}
}

// sent is the rule rule() makes GCP hold, as GenerateRule sends it.
func sent(action string) *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Priority: 100, Action: action,
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: srcIPsV1, Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{rangeA}}}}
}

func getReturns(sp *compute.SecurityPolicy, err error) func(string) (*compute.SecurityPolicy, error) {
	return func(string) (*compute.SecurityPolicy, error) { return sp, err }
}

var cmpCalls = []cmp.Option{cmpopts.EquateEmpty()}

func TestObserve(t *testing.T) {
	type want struct {
		o     managed.ExternalObservation
		diff  bool // o.Diff is not empty
		err   error
		cr    *v1alpha1.OrganizationSecurityPolicyRule
		calls []call
	}
	get := []call{{Method: "Get", Policy: id}}
	available := withConditions(xpv2.Available())
	refusal := "the rule at priority 100 of organization security policy 1234 is managed by OrganizationSecurityPolicyRule team-b/older, the oldest object for it"
	byPolicy := "the rules of organization security policy 1234 are managed by OrganizationSecurityPolicy platform/baseline, whose spec.forProvider.rules is set"
	notAsked := xpv2.Condition{Type: v1beta1.TypeValidated, Status: corev1.ConditionUnknown, Reason: v1beta1.ReasonNotAsked, Message: msgNotAsked}

	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		owners   fakeOwners
		cr       *v1alpha1.OrganizationSecurityPolicyRule
		want     want
	}{
		"NoPolicyID": {
			reason:   "A rule that names no policy at all is an error, and GCP is not called.",
			policies: &fakePolicies{},
			cr:       rule(withPolicyID(nil)),
			want:     want{err: errors.New(errNoPolicy), cr: rule(withPolicyID(nil))},
		},
		"UnresolvedReference": {
			reason:   "A rule whose reference is not resolved yet waits for the policy object, and GCP is not called.",
			policies: &fakePolicies{},
			cr:       rule(withPolicyID(nil), withRef("baseline")),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withPolicyID(nil), withRef("baseline"), withConditions(waitingFor("waiting for OrganizationSecurityPolicy team-a/baseline and its GCP organization security policy to exist")))},
		},
		"PolicyMissing": {
			reason:   "A rule of a policy GCP does not have waits for it without an error, saying which id, reported as existing and up to date so the reconciler neither creates nor backs off.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			cr:       rule(),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withConditions(waitingFor("waiting for GCP organization security policy 1234 to exist"))), calls: get},
		},
		"ReferencedPolicyMissing": {
			reason:   "A resolved reference is named with the id it resolved to.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			cr:       rule(withRef("baseline")),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr:    rule(withRef("baseline"), withConditions(waitingFor("waiting for GCP organization security policy 1234 (OrganizationSecurityPolicy team-a/baseline) to exist"))),
				calls: get},
		},
		"PolicyMissingWhileDeleting": {
			reason:   "A rule being deleted whose policy is gone has nothing left in GCP: the finalizer can go.",
			policies: &fakePolicies{GetFn: getReturns(nil, errNotFound)},
			cr:       rule(withDeletionTimestamp()),
			want:     want{o: managed.ExternalObservation{ResourceExists: false}, cr: rule(withDeletionTimestamp()), calls: get},
		},
		"GetError": {
			reason:   "Any other error reading the policy is returned, wrapped.",
			policies: &fakePolicies{GetFn: getReturns(nil, errBoom)},
			cr:       rule(),
			want:     want{err: errors.Wrap(errBoom, errGetPolicy), cr: rule(), calls: get},
		},
		"StandingError": {
			reason:   "A cluster that cannot be asked who owns the rule is an error, and GCP is not called.",
			policies: &fakePolicies{},
			owners:   fakeOwners{err: errBoom},
			cr:       rule(),
			want:     want{err: errBoom, cr: rule()},
		},
		"RuleMissing": {
			reason:   "A policy without a rule at the priority: Create adds it.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(200, deny403, rangeA)), nil)},
			cr:       rule(),
			want:     want{o: managed.ExternalObservation{ResourceExists: false}, cr: rule(), calls: get},
		},
		"UpToDate": {
			reason:   "The rule as the spec says it, compared as a project rule is: nothing to write.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, deny403, rangeA)), nil)},
			cr:       rule(),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withObserved(deny403, rangeA), available), calls: get},
		},
		"Drift": {
			reason:   "Another action is drift, with a diff for the log.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, "allow", rangeA)), nil)},
			cr:       rule(),
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true,
				cr: rule(withObserved("allow", rangeA), available), calls: get},
		},
		"ExistsWhileDeleting": {
			reason:   "A rule being deleted that GCP still holds exists: the reconciler calls Delete.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, deny403, rangeA)), nil)},
			cr:       rule(withDeletionTimestamp()),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withDeletionTimestamp(), withObserved(deny403, rangeA), available), calls: get},
		},
		"RefusedOlderRule": {
			reason:   "A rule object an older one outranks is Synced=False with the owner's name and makes no call to GCP.",
			policies: &fakePolicies{},
			owners:   fakeOwners{standing: ownership.Standing{Refused: refusal}},
			cr:       rule(),
			want:     want{err: errors.New(refusal), cr: rule()},
		},
		"RefusedPolicyOwnsRules": {
			reason:   "A rule object whose policy's object declares every rule is refused, naming that object, and makes no call to GCP.",
			policies: &fakePolicies{},
			owners:   fakeOwners{standing: ownership.Standing{Refused: byPolicy}},
			cr:       rule(),
			want:     want{err: errors.New(byPolicy), cr: rule()},
		},
		"RefusedDeleting": {
			reason:   "Deleting a refused rule object leaves the GCP rule in place: reported gone, no call to GCP.",
			policies: &fakePolicies{},
			owners:   fakeOwners{standing: ownership.Standing{Refused: refusal}},
			cr:       rule(withDeletionTimestamp()),
			want:     want{o: managed.ExternalObservation{ResourceExists: false}, cr: rule(withDeletionTimestamp())},
		},
		"ObserveOnlyIsNeverRefused": {
			reason:   "An observe-only rule object writes nothing, is not asked whether it may, and reports the diff.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, "allow", rangeA)), nil)},
			owners:   fakeOwners{standing: ownership.Standing{Refused: refusal}},
			cr:       rule(withManagementPolicies(xpv2.ManagementActionObserve)),
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true,
				cr: rule(withManagementPolicies(xpv2.ManagementActionObserve), withObserved("allow", rangeA), available), calls: get},
		},
		"DryRunMissing": {
			reason:   "In dry run a missing rule is not added, and GCP cannot be asked: Validated says NotAsked.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(), nil)},
			cr:       rule(withDryRun()),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withDryRun(), withConditions(notAsked, v1beta1.DryRunUnavailable(
					"dry run: GCP organization security policy 1234 has no rule at priority 100; nothing is written while the annotation "+v1beta1.AnnotationDryRun+" is set"))),
				calls: get},
		},
		"DryRunDiffers": {
			reason:   "In dry run a diff is reported, not written, and not asked about.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, "allow", rangeA)), nil)},
			cr:       rule(withDryRun()),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				cr: rule(withDryRun(), withObserved("allow", rangeA), withConditions(notAsked, v1beta1.DryRunUnavailable(
					"dry run: the rule at priority 100 of GCP organization security policy 1234 differs from the spec; nothing is written while the annotation "+v1beta1.AnnotationDryRun+" is set"))),
				calls: get},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: tc.owners}
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.diff != (got.Diff != "") {
				t.Errorf("\n%s\nObserve(...): want a diff: %t, got %q", tc.reason, tc.want.diff, got.Diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.cr, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	type want struct {
		err   error
		cr    *v1alpha1.OrganizationSecurityPolicyRule
		calls []call
	}
	add := call{Method: "AddRule", Policy: id, Priority: 100, Rule: sent(deny403)}
	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		cr       *v1alpha1.OrganizationSecurityPolicyRule
		want     want
	}{
		"AddRule": {
			reason:   "Create adds the rule in one call and records <policy id>/<priority>.",
			policies: &fakePolicies{AddRuleFn: func(*compute.SecurityPolicyRule) error { return nil }},
			cr:       rule(),
			want:     want{cr: rule(withExternalName(id + "/100")), calls: []call{add}},
		},
		"PolicyMissing": {
			reason:   "Adding a rule to a missing policy says that the policy does not exist, and records nothing.",
			policies: &fakePolicies{AddRuleFn: func(*compute.SecurityPolicyRule) error { return errNotFound }},
			cr:       rule(),
			want:     want{err: errors.Wrap(errors.Wrap(errNotFound, errAddRule), errPolicyNotFound), cr: rule(), calls: []call{add}},
		},
		"Error": {
			reason:   "Any other error is returned, wrapped, and records nothing.",
			policies: &fakePolicies{AddRuleFn: func(*compute.SecurityPolicyRule) error { return errBoom }},
			cr:       rule(),
			want:     want{err: errors.Wrap(errBoom, errAddRule), cr: rule(), calls: []call{add}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Create(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalCreation{}, got); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.cr, tc.cr); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want cr, +got cr:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, tc.policies.Calls, cmpCalls...); diff != "" {
				t.Errorf("\n%s\nCreate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	type want struct {
		err   error
		calls []call
	}
	get := call{Method: "Get", Policy: id}
	patchReturns := func(err error) func(int64, *compute.SecurityPolicyRule, []string) error {
		return func(int64, *compute.SecurityPolicyRule, []string) error { return err }
	}
	described := gcpRule(100, "allow", rangeA)
	described.Description = "old"
	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		cr       *v1alpha1.OrganizationSecurityPolicyRule
		want     want
	}{
		"Patch": {
			reason:   "A changed action is one patchRule, without an updateMask (an organization policy's has none).",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, "allow", rangeA)), nil), PatchRuleFn: patchReturns(nil)},
			cr:       rule(),
			want:     want{calls: []call{get, {Method: "PatchRule", Policy: id, Priority: 100, Rule: sent(deny403)}}},
		},
		"CannotClear": {
			reason: "A field GCP holds that the spec dropped cannot be cleared without an updateMask: reported, nothing sent, " +
				"rather than a patch that leaves it and a diff that never ends.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(described), nil)},
			cr:       rule(),
			want: want{err: errors.Errorf(errFmtClear, 100, id, "description"),
				calls: []call{get}},
		},
		"SetAgain": {
			reason:   "The same rule with the field set is a plain patch.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(described), nil), PatchRuleFn: patchReturns(nil)},
			cr:       rule(withDescription("new")),
			want: want{calls: []call{get, {Method: "PatchRule", Policy: id, Priority: 100,
				Rule: func() *compute.SecurityPolicyRule { r := sent(deny403); r.Description = "new"; return r }()}}},
		},
		"GetError": {
			reason:   "An error reading the policy is returned, wrapped, and nothing is written.",
			policies: &fakePolicies{GetFn: getReturns(nil, errBoom)},
			cr:       rule(),
			want:     want{err: errors.Wrap(errBoom, errGetPolicy), calls: []call{get}},
		},
		"PatchError": {
			reason:   "A failed patch is returned, wrapped.",
			policies: &fakePolicies{GetFn: getReturns(gcpPolicy(gcpRule(100, "allow", rangeA)), nil), PatchRuleFn: patchReturns(errBoom)},
			cr:       rule(),
			want: want{err: errors.Wrap(errBoom, errPatchRule),
				calls: []call{get, {Method: "PatchRule", Policy: id, Priority: 100, Rule: sent(deny403)}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Update(context.Background(), tc.cr)
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
	type want struct {
		err   error
		calls []call
	}
	remove := call{Method: "RemoveRule", Policy: id, Priority: 100}
	cases := map[string]struct {
		reason   string
		policies *fakePolicies
		want     want
	}{
		"RemoveRule": {
			reason:   "Delete removes the rule at the priority in one call.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return nil }},
			want:     want{calls: []call{remove}},
		},
		"NotFound": {
			reason:   "A rule or policy already gone is deleted.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errNotFound }},
			want:     want{calls: []call{remove}},
		},
		"NoRuleAtPriority": {
			reason:   "GCP's 400 \"does not contain a rule at priority\" also means already gone.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errNoRuleAtPriority }},
			want:     want{calls: []call{remove}},
		},
		"Error": {
			reason:   "Any other error is returned, wrapped.",
			policies: &fakePolicies{RemoveRuleFn: func(int64) error { return errBoom }},
			want:     want{err: errors.Wrap(errBoom, errRemoveRule), calls: []call{remove}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{policies: tc.policies, owners: fakeOwners{}}
			got, err := e.Delete(context.Background(), rule(withDeletionTimestamp()))
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

func TestConnect(t *testing.T) {
	const refused = "may only use a ClusterProviderConfig: providerConfigRef names ProviderConfig \"default\", which is refused"
	cases := map[string]struct {
		reason string
		ref    *xpv2.ProviderConfigReference
		want   string // a substring of the error
	}{
		"ProviderConfig": {
			reason: "A namespaced ProviderConfig is refused before it is read: a rule of an organization policy acts on the whole organization.",
			ref:    &xpv2.ProviderConfigReference{Kind: pcv1beta1.ProviderConfigKind, Name: "default"},
			want:   refused,
		},
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig is read, as for any kind (here it does not exist).",
			ref:    &xpv2.ProviderConfigReference{Kind: pcv1beta1.ClusterProviderConfigKind, Name: "default"},
			want:   "cannot connect to GCP",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := apis.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			kube := fake.NewClientBuilder().WithScheme(s).Build()
			conn := connector.New(kube, kube, resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil }),
				gcp.NewClientCache(0), func(context.Context, gcp.Credentials) (*gcp.Client, error) { return &gcp.Client{}, nil })
			cr := rule()
			cr.SetProviderConfigReference(tc.ref)
			_, err := newConnector(setup.Env{Options: setup.Options{Connector: conn}, Client: kube}).Connect(context.Background(), cr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("\n%s\nConnect(...): want an error containing %q, got %v", tc.reason, tc.want, err)
			}
			if tc.want == refused && err != nil && strings.Contains(err.Error(), "cannot get") {
				t.Errorf("\n%s\nConnect(...): the config was read: %v", tc.reason, err)
			}
		})
	}
}

// TestLifecycle drives one rule object through create, update and delete
// against the emulator with the organization policy client the controller
// builds (by id, no parent), counting GCP's calls: one per change.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := gcp.NewClient(svc, nil, nil)
	withParent, err := c.OrgPolicies("organizations/123")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := withParent.Create(ctx, &compute.SecurityPolicy{ShortName: "baseline", Type: "CLOUD_ARMOR"})
	if err != nil {
		t.Fatal(err)
	}
	byID, err := c.OrgPolicies("")
	if err != nil {
		t.Fatal(err)
	}
	e := &external{policies: byID, owners: fakeOwners{}}
	cr := rule(withPolicyID(new(pid)))
	calls := func() map[string]int64 {
		out := map[string]int64{}
		for m, n := range em.Stats().Methods {
			if strings.Contains(m, "Rule") {
				out[m] = n
			}
		}
		return out
	}

	if obs, err := e.Observe(ctx, cr); err != nil || obs.ResourceExists {
		t.Fatalf("Observe(...) before Create: want not exists, got %+v, %v", obs, err)
	}
	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || !obs.ResourceExists || !obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after Create: want exists and up to date, got %+v, %v", obs, err)
	}

	withAction("allow")(cr)
	if obs, err := e.Observe(ctx, cr); err != nil || obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after an edit: want not up to date, got %+v, %v", obs, err)
	}
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || !obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after Update: want up to date, got %+v, %v", obs, err)
	}

	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatalf("Delete(...): %v", err)
	}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Errorf("Delete(...) of a rule already gone: want nil, got %v", err)
	}
	want := map[string]int64{"organizationSecurityPolicies.addRule": 1, "organizationSecurityPolicies.patchRule": 1, "organizationSecurityPolicies.removeRule": 2}
	if diff := cmp.Diff(want, calls()); diff != "" {
		t.Errorf("GCP rule calls: -want, +got:\n%s", diff)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || obs.ResourceExists {
		t.Errorf("Observe(...) after Delete: want not exists, got %+v, %v", obs, err)
	}
}
