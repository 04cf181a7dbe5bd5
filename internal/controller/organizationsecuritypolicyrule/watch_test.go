package organizationsecuritypolicyrule

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

// indexer registers the indexes SetupOrgIndexes asks for with a fake
// client builder.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, o client.Object, field string, extract client.IndexerFunc) error {
	i.b.WithIndex(o, field, extract)
	return nil
}

// TestRelated checks which rule objects a policy object's change
// re-reconciles: those naming its id in any namespace, and those of its
// namespace whose reference or selector waits for it.
func TestRelated(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.OrganizationSecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "baseline", Labels: map[string]string{"tier": "org"}}}
	meta.SetExternalName(p, id)
	in := func(ns, name string, m ...ruleModifier) *v1alpha1.OrganizationSecurityPolicyRule {
		r := rule(m...)
		r.SetNamespace(ns)
		r.SetName(name)
		return r
	}
	selector := func(cr *v1alpha1.OrganizationSecurityPolicyRule) {
		cr.Spec.ForProvider.SecurityPolicySelector = &xpv2.NamespacedSelector{MatchLabels: map[string]string{"tier": "org"}}
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(p,
		in("team-a", "by-id"),
		in("team-b", "other-id", withPolicyID(new("99"))),
		in("platform", "by-ref", withPolicyID(nil), withRef("baseline")),
		in("platform", "ref-elsewhere", withPolicyID(nil), withRef("other")),
		in("platform", "by-selector", withPolicyID(nil), selector),
		in("team-a", "ref-other-namespace", withPolicyID(nil), withRef("baseline")))
	if err := ownership.SetupOrgIndexes(context.Background(), indexer{b}); err != nil {
		t.Fatal(err)
	}
	got, err := related(context.Background(), b.Build(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []types.NamespacedName{{Namespace: "team-a", Name: "by-id"}, {Namespace: "platform", Name: "by-ref"}, {Namespace: "platform", Name: "by-selector"}}
	sort := cmpopts.SortSlices(func(a, b types.NamespacedName) bool { return a.String() < b.String() })
	if diff := cmp.Diff(want, got, sort); diff != "" {
		t.Errorf("related(...): -want, +got:\n%s", diff)
	}
}
