package securitypolicy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
)

type ruleModifier func(*v1beta1.SecurityPolicyRule)

func ruleCR(namespace, name string, priority int64, m ...ruleModifier) v1beta1.SecurityPolicyRule {
	r := v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	r.Spec.ForProvider.SecurityPolicy = ptr(policyName)
	r.Spec.ForProvider.Priority = priority
	for _, fn := range m {
		fn(&r)
	}
	return r
}

func withRuleProject(p string) ruleModifier {
	return func(r *v1beta1.SecurityPolicyRule) { r.Spec.ForProvider.Project = &p }
}

func withRuleRegion(region string) ruleModifier {
	return func(r *v1beta1.SecurityPolicyRule) { r.Spec.ForProvider.Region = &region }
}

func withRegion(region string) policyModifier {
	return func(cr *v1beta1.SecurityPolicy) { cr.Spec.ForProvider.Region = &region }
}

const project = "armor-prod"

func TestClaims(t *testing.T) {
	type args struct {
		cr *v1beta1.SecurityPolicy
	}
	type want struct {
		claims securitypolicy.Claims
		err    error
		key    string // the index key the List matched on
	}
	cases := map[string]struct {
		reason string
		items  []v1beta1.SecurityPolicyRule
		err    error
		args   args
		want   want
	}{
		"NoRules": {
			reason: "No rules target the policy: no claims.",
			args:   args{cr: policy()},
			want:   want{claims: securitypolicy.Claims{}, key: "/" + policyName},
		},
		"RulesInAnyNamespace": {
			reason: "Rules in any namespace claim their priority as namespace/name.",
			items:  []v1beta1.SecurityPolicyRule{ruleCR("team-a", "a", 1000), ruleCR("team-b", "b", 2000)},
			args:   args{cr: policy()},
			want:   want{claims: securitypolicy.Claims{1000: "team-a/a", 2000: "team-b/b"}, key: "/" + policyName},
		},
		"SameProject": {
			reason: "A rule naming the policy's project claims its priority.",
			items:  []v1beta1.SecurityPolicyRule{ruleCR("team-a", "a", 1000, withRuleProject(project))},
			args:   args{cr: policy()},
			want:   want{claims: securitypolicy.Claims{1000: "team-a/a"}, key: "/" + policyName},
		},
		"OtherProject": {
			reason: "A rule for a policy of the same name in another project claims nothing here.",
			items:  []v1beta1.SecurityPolicyRule{ruleCR("team-a", "a", 1000, withRuleProject("other"))},
			args:   args{cr: policy()},
			want:   want{claims: securitypolicy.Claims{}, key: "/" + policyName},
		},
		"Regional": {
			reason: "A regional policy looks up rules by region and name.",
			items:  []v1beta1.SecurityPolicyRule{ruleCR("team-a", "a", 1000, withRuleRegion("us-central1"))},
			args:   args{cr: policy(withRegion("us-central1"))},
			want:   want{claims: securitypolicy.Claims{1000: "team-a/a"}, key: "us-central1/" + policyName},
		},
		"ListError": {
			reason: "An error listing rules is returned.",
			err:    errBoom,
			args:   args{cr: policy()},
			want:   want{err: errBoom, key: "/" + policyName},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var key string
			kube := &test.MockClient{MockList: func(_ context.Context, l client.ObjectList, opts ...client.ListOption) error {
				lo := &client.ListOptions{}
				lo.ApplyOptions(opts)
				if lo.FieldSelector != nil {
					if v, ok := lo.FieldSelector.RequiresExactMatch(indexRulePolicy); ok {
						key = v
					}
				}
				if tc.err != nil {
					return tc.err
				}
				l.(*v1beta1.SecurityPolicyRuleList).Items = tc.items //nolint:forcetypeassert // Only rules are listed.
				return nil
			}}
			l := &claimLister{kube: kube, project: project}
			got, err := l.Claims(context.Background(), tc.args.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nClaims(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.claims, got); diff != "" {
				t.Errorf("\n%s\nClaims(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.key, key); diff != "" {
				t.Errorf("\n%s\nClaims(...): -want index key, +got index key:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPoliciesFor(t *testing.T) {
	p := func(name, externalName string, m ...policyModifier) v1beta1.SecurityPolicy {
		cr := policy(append(m, withExternalName(externalName))...)
		cr.SetName(name)
		return *cr
	}
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: name}}
	}
	policies := []v1beta1.SecurityPolicy{
		p("global", policyName),
		p("regional", policyName, withRegion("us-central1")),
		p("other", "other-policy"),
	}
	cases := map[string]struct {
		reason  string
		rule    client.Object
		listErr error
		want    []reconcile.Request
		wantKey string
	}{
		"Global": {
			reason:  "A rule of a global policy enqueues the policy with that external name and no region, looked up by index.",
			rule:    ptr(ruleCR("team-a", "r", 1000)),
			want:    []reconcile.Request{req("global")},
			wantKey: "/" + policyName,
		},
		"Regional": {
			reason:  "A rule of a regional policy enqueues the policy in that region, looked up by index.",
			rule:    ptr(ruleCR("team-a", "r", 1000, withRuleRegion("us-central1"))),
			want:    []reconcile.Request{req("regional")},
			wantKey: "us-central1/" + policyName,
		},
		"NoPolicy": {
			reason: "A rule without a policy name enqueues nothing.",
			rule:   &v1beta1.SecurityPolicyRule{},
		},
		"ListError": {
			reason:  "An error listing policies enqueues nothing; the poll catches up.",
			rule:    ptr(ruleCR("team-a", "r", 1000)),
			listErr: errBoom,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var key string
			kube := &test.MockClient{MockList: func(_ context.Context, l client.ObjectList, opts ...client.ListOption) error {
				lo := &client.ListOptions{}
				lo.ApplyOptions(opts)
				if lo.FieldSelector != nil {
					key, _ = lo.FieldSelector.RequiresExactMatch(indexPolicyKey)
				}
				if tc.listErr != nil {
					return tc.listErr
				}
				l.(*v1beta1.SecurityPolicyList).Items = policies //nolint:forcetypeassert // Only policies are listed.
				return nil
			}}
			got := policiesFor(context.Background(), kube, tc.rule)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\npoliciesFor(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantKey != "" && key != tc.wantKey {
				t.Errorf("\n%s\npoliciesFor(...): index key %q, want %q", tc.reason, key, tc.wantKey)
			}
		})
	}
}
