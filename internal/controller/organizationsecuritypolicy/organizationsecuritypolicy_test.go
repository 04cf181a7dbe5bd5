package organizationsecuritypolicy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const parent = "organizations/123"

// orgPolicies is an OrgPolicyClient of parent over a fresh emulator, and
// the emulator, to see what GCP holds.
func orgPolicies(t *testing.T) (gcp.OrgPolicyClient, *emulator.Running) {
	t.Helper()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := gcp.NewClient(svc, nil, nil).OrgPolicies(parent)
	if err != nil {
		t.Fatal(err)
	}
	return c, em
}

func object(mod ...func(*v1alpha1.OrganizationSecurityPolicy)) *v1alpha1.OrganizationSecurityPolicy {
	cr := &v1alpha1.OrganizationSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Name: "baseline", Namespace: "platform"}}
	cr.Spec.ForProvider = v1alpha1.OrganizationSecurityPolicyParameters{Parent: parent, Description: new("org baseline"),
		Rules: []v1beta1.PolicyRule{denyRule(10, "192.0.2.0/24")}}
	for _, m := range mod {
		m(cr)
	}
	return cr
}

func denyRule(prio int64, ranges ...v1beta1.IPRange) v1beta1.PolicyRule {
	return v1beta1.PolicyRule{Priority: prio, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)",
		Match: &v1beta1.RuleMatcher{VersionedExpr: new("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: ranges}}}}
}

func withRules(r ...v1beta1.PolicyRule) func(*v1alpha1.OrganizationSecurityPolicy) {
	return func(cr *v1alpha1.OrganizationSecurityPolicy) { cr.Spec.ForProvider.Rules = r }
}

func withID(id string) func(*v1alpha1.OrganizationSecurityPolicy) {
	return func(cr *v1alpha1.OrganizationSecurityPolicy) { meta.SetExternalName(cr, id) }
}

func dryRun(cr *v1alpha1.OrganizationSecurityPolicy) {
	meta.AddAnnotations(cr, map[string]string{v1beta1.AnnotationDryRun: "true"})
}

func observeOnly(cr *v1alpha1.OrganizationSecurityPolicy) {
	cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
}

// seed inserts the policy object() describes, as another writer would, and
// returns its id.
func seed(t *testing.T, c gcp.OrgPolicyClient) string {
	t.Helper()
	body := object().Spec.ForProvider
	sp := &compute.SecurityPolicy{ShortName: "baseline", Type: "CLOUD_ARMOR", Description: *body.Description}
	id, err := c.Create(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddRule(context.Background(), id, &compute.SecurityPolicyRule{Priority: 10, Action: "deny(403)",
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"192.0.2.0/24"}}}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestObserve(t *testing.T) {
	type want struct {
		exists, upToDate bool
		diff             string // a substring of the observation's Diff
		validated        string // the Validated condition's reason, "" for none
		err              string // a substring of the error
		lateInitialized  bool
		importedID       bool // the object's external name is the seeded policy's id
	}
	cases := map[string]struct {
		reason string
		seed   bool
		obj    func(id string) *v1alpha1.OrganizationSecurityPolicy
		want   want
	}{
		"NoID": {
			reason: "An object without an id has created nothing: Create, without reading GCP.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicy { return object() },
		},
		"Gone": {
			reason: "A recorded id GCP does not have: Create again.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicy { return object(withID("999")) },
		},
		"UpToDate": {
			reason: "The policy as the spec says: nothing to write.",
			seed:   true,
			obj:    func(id string) *v1alpha1.OrganizationSecurityPolicy { return object(withID(id)) },
			want:   want{exists: true, upToDate: true},
		},
		"RuleDiffers": {
			reason: "A rule the spec adds is a diff by priority.",
			seed:   true,
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicy {
				return object(withID(id), withRules(denyRule(10, "192.0.2.0/24"), denyRule(20, "198.51.100.0/24")))
			},
			want: want{exists: true, diff: "20"},
		},
		"RulesUnset": {
			reason: "Without rules the object leaves GCP's non-default rules alone.",
			seed:   true,
			obj:    func(id string) *v1alpha1.OrganizationSecurityPolicy { return object(withID(id), withRules()) },
			want:   want{exists: true, upToDate: true},
		},
		"OtherParent": {
			reason: "An id naming a policy of another parent is refused, not managed.",
			seed:   true,
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicy {
				return object(withID(id), func(cr *v1alpha1.OrganizationSecurityPolicy) { cr.Spec.ForProvider.Parent = "folders/9" })
			},
			want: want{err: "belongs to organizations/123, not to spec.forProvider.parent folders/9"},
		},
		"DryRunMissing": {
			reason: "In dry run nothing is created, and GCP cannot be asked: Validated says NotAsked.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicy { return object(dryRun) },
			want:   want{exists: true, upToDate: true, validated: string(v1beta1.ReasonNotAsked)},
		},
		"DryRunDiffers": {
			reason: "In dry run a diff is reported, not written, and not asked about.",
			seed:   true,
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicy {
				return object(withID(id), dryRun, withRules(denyRule(20, "198.51.100.0/24")))
			},
			want: want{exists: true, upToDate: true, validated: string(v1beta1.ReasonNotAsked)},
		},
		"ImportByShortName": {
			reason: "An observer without an id finds the policy of its shortName, records the id and asks the reconciler to save it.",
			seed:   true,
			obj: func(string) *v1alpha1.OrganizationSecurityPolicy {
				return object(observeOnly)
			},
			want: want{exists: true, upToDate: true, lateInitialized: true, importedID: true},
		},
		"ImportNotFound": {
			reason: "An observer without an id whose shortName GCP does not have: the resource does not exist.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicy { return object(observeOnly) },
		},
		"ObserveOnly": {
			reason: "An observer reports the diff; the reconciler does not update what it does not manage.",
			seed:   true,
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicy {
				return object(withID(id), observeOnly, withRules(denyRule(30, "203.0.113.0/24")))
			},
			want: want{exists: true, diff: "30"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := orgPolicies(t)
			id := ""
			if tc.seed {
				id = seed(t, c)
			}
			cr := tc.obj(id)
			got, err := (&external{policies: c}).Observe(context.Background(), cr)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if tc.want.err == "" && gotErr != "" || !strings.Contains(gotErr, tc.want.err) {
				t.Fatalf("\n%s\nObserve(...): want error %q, got %q", tc.reason, tc.want.err, gotErr)
			}
			if diff := cmp.Diff(managed.ExternalObservation{ResourceExists: tc.want.exists, ResourceUpToDate: tc.want.upToDate, ResourceLateInitialized: tc.want.lateInitialized},
				managed.ExternalObservation{ResourceExists: got.ResourceExists, ResourceUpToDate: got.ResourceUpToDate, ResourceLateInitialized: got.ResourceLateInitialized}); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.importedID {
				if got := meta.GetExternalName(cr); got != id || cr.Status.AtProvider.ID != id {
					t.Errorf("\n%s\nObserve(...): external name %q, status.atProvider.id %q, want both %q", tc.reason, got, cr.Status.AtProvider.ID, id)
				}
			}
			if !strings.Contains(got.Diff, tc.want.diff) {
				t.Errorf("\n%s\nObserve(...).Diff: want it to mention %q, got %q", tc.reason, tc.want.diff, got.Diff)
			}
			if r := cr.GetCondition(v1beta1.TypeValidated).Reason; string(r) != tc.want.validated {
				t.Errorf("\n%s\nObserve(...): want Validated reason %q, got %q", tc.reason, tc.want.validated, r)
			}
		})
	}
}

// TestLifecycle drives one object through create, update and delete against
// the emulator, checking what GCP holds after each step.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	c, em := orgPolicies(t)
	e := &external{policies: c}
	cr := object()

	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	id := meta.GetExternalName(cr)
	if id == "" {
		t.Fatal("Create(...): want the policy's id as the external name, got none")
	}
	obs, err := e.Observe(ctx, cr)
	if err != nil || !obs.ResourceExists || !obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after Create: want exists and up to date, got %+v, %v", obs, err)
	}
	if diff := cmp.Diff("baseline", cr.Status.AtProvider.ShortName); diff != "" {
		t.Errorf("status.atProvider.shortName: -want, +got:\n%s", diff)
	}

	// Renumber the rule: the new priority is added before the old one goes.
	withRules(denyRule(11, "192.0.2.0/24"))(cr)
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if got := priorities(em.OrganizationSecurityPolicies()["locations/global/securityPolicies/"+id]); !cmp.Equal(got, []float64{11, 2147483647}) {
		t.Errorf("GCP rules after Update: want [11 2147483647], got %v", got)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || !obs.ResourceUpToDate {
		t.Errorf("Observe(...) after Update: want up to date, got %+v, %v", obs, err)
	}

	// A second object with the same shortName is told the id, not handed it.
	_, err = (&external{policies: c}).Create(ctx, object())
	if err == nil || !strings.Contains(err.Error(), "set the annotation crossplane.io/external-name on this object to its id ("+id+")") {
		t.Errorf("Create(...) of a taken shortName: want the id in the error, got %v", err)
	}

	// GCP refuses to delete an attached policy; once detached it goes.
	if err := c.AddAssociation(ctx, id, &compute.SecurityPolicyAssociation{Name: "org", AttachmentId: parent}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(ctx, cr); err == nil {
		t.Error("Delete(...) of an attached policy: want GCP's refusal, got nil")
	}
	if err := c.RemoveAssociation(ctx, id, "org"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Errorf("Delete(...): %v", err)
	}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Errorf("Delete(...) of a policy already gone: want nil, got %v", err)
	}
}

// priorities are the rule priorities of a policy as the emulator renders it.
func priorities(p map[string]any) []float64 {
	var out []float64
	rules, _ := p["rules"].([]any)
	for _, r := range rules {
		m, _ := r.(map[string]any)
		switch v := m["priority"].(type) {
		case float64:
			out = append(out, v)
		case int64:
			out = append(out, float64(v))
		case int:
			out = append(out, float64(v))
		}
	}
	return out
}

// TestUpdateCannotClear checks that a change compute v1 cannot make in place
// (clearing a rule's field needs an updateMask, which an organization
// policy's patchRule lacks) is an error, not a patch that leaves the field
// set and a diff that never ends.
func TestUpdateCannotClear(t *testing.T) {
	ctx := context.Background()
	c, _ := orgPolicies(t)
	e := &external{policies: c}
	described := denyRule(10, "192.0.2.0/24")
	described.Description = new("known bad")
	cr := object(withRules(described))
	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	withRules(denyRule(10, "192.0.2.0/24"))(cr)
	_, err := e.Update(ctx, cr)
	if err == nil || !strings.Contains(err.Error(), "cannot clear fields in place") {
		t.Errorf("Update(...) clearing a rule's description: want the missing updateMask reported, got %v", err)
	}
}

// TestRulesUnsetLeavesRules checks that an object whose rules are unset
// never touches GCP's non-default rules, so OrganizationSecurityPolicyRule
// objects may own them: a rule it does not declare is neither a diff nor
// removed by an Update made for another change.
func TestRulesUnsetLeavesRules(t *testing.T) {
	ctx := context.Background()
	c, em := orgPolicies(t)
	id := seed(t, c)
	e := &external{policies: c}
	cr := object(withID(id), withRules(), func(cr *v1alpha1.OrganizationSecurityPolicy) { cr.Spec.ForProvider.Description = new("changed") })
	obs, err := e.Observe(ctx, cr)
	if err != nil || !obs.ResourceExists || obs.ResourceUpToDate || strings.Contains(obs.Diff, "priority") {
		t.Fatalf("Observe(...): want a description diff only, got %+v, %v", obs, err)
	}
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if got := priorities(em.OrganizationSecurityPolicies()["locations/global/securityPolicies/"+id]); !cmp.Equal(got, []float64{10, 2147483647}) {
		t.Errorf("GCP rules after Update with rules unset: want [10 2147483647], got %v", got)
	}
	if n := em.Stats().Methods["organizationSecurityPolicies.removeRule"]; n != 0 {
		t.Errorf("organizationSecurityPolicies.removeRule calls: want 0, got %d", n)
	}
}

// TestUpdatePatchesRule checks that a change to an inline rule that clears
// no field is one patchRule without an updateMask. Regression: every inline
// rule change was sent with an updateMask, which an organization policy's
// patchRule does not take, so no existing rule could ever be changed.
func TestUpdatePatchesRule(t *testing.T) {
	ctx := context.Background()
	c, em := orgPolicies(t)
	e := &external{policies: c}
	cr := object()
	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	r := denyRule(10, "192.0.2.0/24", "198.51.100.0/24")
	r.Action = "deny(404)"
	withRules(r)(cr)
	before := em.Stats().Methods["organizationSecurityPolicies.patchRule"]
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatalf("Update(...): %v", err)
	}
	if n := em.Stats().Methods["organizationSecurityPolicies.patchRule"] - before; n != 1 {
		t.Errorf("organizationSecurityPolicies.patchRule calls: want 1, got %d", n)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || !obs.ResourceUpToDate {
		t.Errorf("Observe(...) after Update: want up to date, got %+v, %v", obs, err)
	}
}
