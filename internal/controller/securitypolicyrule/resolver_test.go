package securitypolicyrule

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func withRef(name string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) {
		cr.Spec.ForProvider.SecurityPolicyRef = &xpv2.NamespacedReference{Name: name}
	}
}

func withSelector(matchLabels map[string]string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) {
		cr.Spec.ForProvider.SecurityPolicySelector = &xpv2.NamespacedSelector{MatchLabels: matchLabels}
	}
}

func TestResolveReferences(t *testing.T) {
	// getPolicy answers a Get of the SecurityPolicy named "edge" with one
	// whose GCP name (external name) is ext.
	getPolicy := func(ext string) test.MockGetFn {
		return func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
			sp, ok := obj.(*v1beta1.SecurityPolicy)
			if !ok {
				return errors.New("not a SecurityPolicy")
			}
			sp.SetName("edge")
			meta.SetExternalName(sp, ext)
			return nil
		}
	}
	type want struct {
		err     bool
		updated bool
		policy  *string
	}
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicyRule
		get    test.MockGetFn
		list   test.MockListFn
		want   want
	}{
		"NoReference": {
			reason: "A rule naming its policy directly is not read or written.",
			cr:     rule(),
			want:   want{policy: ptr(policy)},
		},
		"Unchanged": {
			reason: "A reference that resolves to the name already set does not write the object.",
			cr:     rule(withRef("edge")),
			get:    getPolicy(policy),
			want:   want{policy: ptr(policy)},
		},
		"Resolved": {
			reason: "A reference that resolves to a new name is written back.",
			cr:     rule(withPolicy(nil), withRef("edge")),
			get:    getPolicy("edge-gcp"),
			want:   want{updated: true, policy: ptr("edge-gcp")},
		},
		"GetError": {
			reason: "A reference that cannot be resolved returns an error and writes nothing.",
			cr:     rule(withPolicy(nil), withRef("edge")),
			get:    test.NewMockGetFn(errBoom),
			want:   want{err: true},
		},
		"PolicyNotThereYet": {
			reason: "A reference to a SecurityPolicy that does not exist yet is left unresolved without an error: the rule waits for it.",
			cr:     rule(withPolicy(nil), withRef("edge")),
			get:    test.NewMockGetFn(kerrors.NewNotFound(schema.GroupResource{Group: v1beta1.Group, Resource: "securitypolicies"}, "edge")),
			want:   want{},
		},
		"PolicyWithoutName": {
			reason: "A reference to a SecurityPolicy that has no GCP name yet (it has not been reconciled) is left unresolved without an error.",
			cr:     rule(withPolicy(nil), withRef("edge")),
			get:    getPolicy(""),
			want:   want{},
		},
		"SelectorMatchesNothingYet": {
			reason: "A selector no SecurityPolicy matches yet is left unresolved without an error: the rule waits for one.",
			cr:     rule(withPolicy(nil), withSelector(map[string]string{"app": "edge"})),
			list:   test.NewMockListFn(nil),
			want:   want{},
		},
		"SelectorListError": {
			reason: "A selector that cannot be listed returns an error and writes nothing.",
			cr:     rule(withPolicy(nil), withSelector(map[string]string{"app": "edge"})),
			list:   test.NewMockListFn(errBoom),
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := false
			kube := &test.MockClient{
				MockGet:  tc.get,
				MockList: tc.list,
				MockUpdate: func(context.Context, client.Object, ...client.UpdateOption) error {
					updated = true
					return nil
				},
			}
			err := (&resolver{kube: kube}).ResolveReferences(context.Background(), tc.cr)
			if tc.want.err {
				if !errors.Is(err, errBoom) {
					t.Errorf("\n%s\nResolveReferences(...): want error wrapping %v, got %v", tc.reason, errBoom, err)
				}
			} else if err != nil {
				t.Errorf("\n%s\nResolveReferences(...): %v", tc.reason, err)
			}
			if updated != tc.want.updated {
				t.Errorf("\n%s\nResolveReferences(...): updated: want %t, got %t", tc.reason, tc.want.updated, updated)
			}
			if !tc.want.err {
				if diff := cmp.Diff(tc.want.policy, tc.cr.Spec.ForProvider.SecurityPolicy); diff != "" {
					t.Errorf("\n%s\nResolveReferences(...): -want policy, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
