package ownership

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// orgID is the organization policy most cases ask about.
const orgID = "1234"

// orgWorld returns a client over objs with the indexes SetupOrgIndexes
// registers.
func orgWorld(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rec := &recordingIndexer{}
	if err := SetupOrgIndexes(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	for _, c := range rec.calls {
		b = b.WithIndex(c.obj, c.field, c.extract)
	}
	return b.Build()
}

// orgPolicy returns the OrganizationSecurityPolicy ns/name with id orgID,
// rules unset, created at offset 0.
func orgPolicy(ns, name string, o ...option) *v1alpha1.OrganizationSecurityPolicy {
	p := &v1alpha1.OrganizationSecurityPolicy{}
	p.SetNamespace(ns)
	p.SetName(name)
	meta.SetExternalName(p, orgID)
	initialise(p, o)
	return p
}

func withOrgRules(r ...v1beta1.PolicyRule) option {
	return func(mg managedObject) {
		p := mg.(*v1alpha1.OrganizationSecurityPolicy)
		p.Spec.ForProvider.Rules = append([]v1beta1.PolicyRule{}, r...)
	}
}

// orgRule returns the OrganizationSecurityPolicyRule ns/name at priority
// prio of orgID, created at offset 0.
func orgRule(ns, name string, prio int64, o ...option) *v1alpha1.OrganizationSecurityPolicyRule {
	r := &v1alpha1.OrganizationSecurityPolicyRule{}
	r.SetNamespace(ns)
	r.SetName(name)
	r.Spec.ForProvider.SecurityPolicy = new(orgID)
	r.Spec.ForProvider.Priority = prio
	initialise(r, o)
	return r
}

func TestOrgRuleStanding(t *testing.T) {
	const (
		byPolicy = "the rules of organization security policy 1234 are managed by OrganizationSecurityPolicy platform/baseline, whose spec.forProvider.rules is set " +
			"and so owns every priority but the default rule's: this object makes no change to GCP and leaves the rule at priority 100 in place when deleted. " +
			"Declare the rule in platform/baseline's spec.forProvider.rules, or unset them there to manage rules with OrganizationSecurityPolicyRule objects"
		byOlder = "the rule at priority 100 of organization security policy 1234 is managed by OrganizationSecurityPolicyRule team-a/first, the oldest object for it: " +
			"this object makes no change to GCP and leaves the rule in place when deleted"
	)
	cases := map[string]struct {
		reason string
		objs   []client.Object
		cr     *v1alpha1.OrganizationSecurityPolicyRule
		want   Standing
	}{
		"Alone": {
			reason: "A rule object alone at its priority, its policy's object without rules, may write.",
			objs:   []client.Object{orgPolicy("platform", "baseline")},
			cr:     orgRule("team-a", "mine", 100),
		},
		"NoPolicyObject": {
			reason: "A policy no object of this cluster manages leaves its rules to the rule objects.",
			cr:     orgRule("team-a", "mine", 100),
		},
		"PolicyOwnsRules": {
			reason: "A policy object whose rules are set owns every non-default priority, even one it does not declare: the rule object is refused, naming it.",
			objs:   []client.Object{orgPolicy("platform", "baseline", withOrgRules(v1beta1.PolicyRule{Priority: 10}))},
			cr:     orgRule("team-a", "mine", 100),
			want:   Standing{Refused: byPolicy},
		},
		"PolicyOwnsEmptyRules": {
			reason: "rules: [] is set: the policy owns every rule, none declared.",
			objs:   []client.Object{orgPolicy("platform", "baseline", withOrgRules())},
			cr:     orgRule("team-a", "mine", 100),
			want:   Standing{Refused: byPolicy},
		},
		"ObservingPolicyOwnsNothing": {
			reason: "An observe-only policy object writes nothing, whatever its rules say.",
			objs:   []client.Object{orgPolicy("platform", "baseline", withOrgRules(), managing(xpv2.ManagementActionObserve))},
			cr:     orgRule("team-a", "mine", 100),
		},
		"OlderRuleInOtherNamespace": {
			reason: "An organization policy is the organization's: an older rule object of another namespace at the same priority owns it.",
			objs:   []client.Object{orgRule("team-a", "first", 100)},
			cr:     orgRule("team-b", "second", 100, createdAt(1)),
			want:   Standing{Refused: byOlder},
		},
		"OldestWins": {
			reason: "The oldest rule object at a priority may write; the younger ones do not refuse it.",
			objs:   []client.Object{orgRule("team-b", "second", 100, createdAt(1))},
			cr:     orgRule("team-a", "first", 100),
		},
		"CreateAnnotationDoesNotRank": {
			reason: "A younger rule object annotated crossplane.io/external-create-succeeded (any editor can set it) is still outranked by the older one.",
			objs:   []client.Object{orgRule("team-a", "first", 100)},
			cr:     orgRule("team-b", "second", 100, createdAt(1), createSucceeded()),
			want:   Standing{Refused: byOlder},
		},
		"OtherPriority": {
			reason: "Rule objects at other priorities do not compete.",
			objs:   []client.Object{orgRule("team-a", "first", 200)},
			cr:     orgRule("team-b", "second", 100, createdAt(1)),
		},
		"OlderObserverDoesNotOwn": {
			reason: "An observe-only rule object never owns its priority.",
			objs:   []client.Object{orgRule("team-a", "first", 100, managing(xpv2.ManagementActionObserve))},
			cr:     orgRule("team-b", "second", 100, createdAt(1)),
		},
		"ProjectPolicyOfSameName": {
			reason: "A project SecurityPolicy whose name is the id, and a project rule at the priority, are another GCP policy.",
			objs: []client.Object{func() client.Object {
				p := policy("platform", orgID)
				p.Spec.ForProvider.Rules = []v1beta1.PolicyRule{}
				return p
			}(),
				func() client.Object {
					r := rule("team-a", "first", 100)
					r.Spec.ForProvider.SecurityPolicy = new(orgID)
					return r
				}()},
			cr: orgRule("team-b", "second", 100, createdAt(1)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := append([]client.Object{tc.cr}, tc.objs...)
			got, err := NewIndex(orgWorld(t, objs...)).OrgRuleStanding(context.Background(), tc.cr, orgID)
			if err != nil {
				t.Fatalf("\n%s\nOrgRuleStanding(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nOrgRuleStanding(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOrgRulesNaming(t *testing.T) {
	p := orgPolicy("platform", "baseline")
	kube := orgWorld(t, p, orgRule("team-a", "a", 100), orgRule("team-b", "b", 200),
		func() client.Object {
			r := orgRule("team-c", "other", 100)
			r.Spec.ForProvider.SecurityPolicy = new("99")
			return r
		}())
	got, err := OrgRulesNaming(context.Background(), kube, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []types.NamespacedName{{Namespace: "team-a", Name: "a"}, {Namespace: "team-b", Name: "b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OrgRulesNaming(...): -want, +got:\n%s", diff)
	}
}
