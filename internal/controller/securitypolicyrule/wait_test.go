package securitypolicyrule

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

// sp returns the global SecurityPolicy ns/name with GCP name edge, using the
// default ClusterProviderConfig (project p1).
func sp(ns, name string, m ...func(*v1beta1.SecurityPolicy)) *v1beta1.SecurityPolicy {
	p := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
		CreationTimestamp: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))}}
	meta.SetExternalName(p, "edge")
	p.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: pcv1beta1.ClusterProviderConfigKind, Name: "default"})
	for _, fn := range m {
		fn(p)
	}
	return p
}

func spExternalName(n string) func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) { meta.SetExternalName(p, n) }
}

func spCreated(at string) func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) {
		meta.AddAnnotations(p, map[string]string{meta.AnnotationKeyExternalCreateSucceeded: at})
	}
}

func spConditions(c ...xpv2.Condition) func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) { p.SetConditions(c...) }
}

func spLabels(l map[string]string) func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) { p.SetLabels(l) }
}

func spAllowAll() func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) {
		p.Spec.AllowedRules = &v1beta1.AllowedRules{Namespaces: &v1beta1.RuleNamespaces{From: v1beta1.NamespacesFromAll}}
	}
}

func spCreatedAt(sec int) func(*v1beta1.SecurityPolicy) {
	return func(p *v1beta1.SecurityPolicy) {
		p.SetCreationTimestamp(metav1.NewTime(p.GetCreationTimestamp().Add(time.Duration(sec) * time.Second)))
	}
}

func TestArrived(t *testing.T) {
	readyTrue, readyFalse := spConditions(xpv2.Available()), spConditions(xpv2.Creating())
	cases := map[string]struct {
		reason   string
		old, new *v1beta1.SecurityPolicy
		want     bool
	}{
		"GotItsName": {
			reason: "A SecurityPolicy that gets its GCP name lets references to it resolve.",
			old:    sp("a", "edge", spExternalName("")),
			new:    sp("a", "edge"),
			want:   true,
		},
		"Created": {
			reason: "A SecurityPolicy that records creating its GCP policy ends its rules' wait.",
			old:    sp("a", "edge", readyFalse),
			new:    sp("a", "edge", readyFalse, spCreated("t1")),
			want:   true,
		},
		"CreatedAgain": {
			reason: "A GCP policy created again (it was deleted behind our back) ends the wait of rules that lost it.",
			old:    sp("a", "edge", spCreated("t1")),
			new:    sp("a", "edge", spCreated("t2")),
			want:   true,
		},
		"BecameReady": {
			reason: "A SecurityPolicy that observes or adopts an existing GCP policy becomes Ready without creating it.",
			old:    sp("a", "edge", readyFalse),
			new:    sp("a", "edge", readyTrue),
			want:   true,
		},
		"StaysReady": {
			reason: "A status update of a Ready policy (ruleCount, say) ends no wait: it would re-reconcile its rules on every recount.",
			old:    sp("a", "edge", readyTrue, spCreated("t1")),
			new:    sp("a", "edge", readyTrue, spCreated("t1"), spLabels(map[string]string{"x": "y"})),
			want:   false,
		},
		"BecameUnready": {
			reason: "Losing Ready ends no wait.",
			old:    sp("a", "edge", readyTrue),
			new:    sp("a", "edge", readyFalse),
			want:   false,
		},
		"NoName": {
			reason: "A policy without a GCP name cannot be waited for yet.",
			old:    sp("a", "edge", spExternalName(""), readyFalse),
			new:    sp("a", "edge", spExternalName(""), readyTrue),
			want:   false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := arrived(tc.old, tc.new); got != tc.want {
				t.Errorf("\n%s\narrived(...): want %t, got %t", tc.reason, tc.want, got)
			}
			e := event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}
			if got := arrivals().Update(e); got != tc.want {
				t.Errorf("\n%s\narrivals().Update(...): want %t, got %t", tc.reason, tc.want, got)
			}
		})
	}
	if arrivals().Create(event.CreateEvent{Object: sp("a", "edge", readyTrue)}) {
		t.Error("arrivals().Create(...): a new SecurityPolicy has no GCP policy to wait for; want false")
	}
}

// recordingIndexer records IndexField calls, so that a fake client can be
// built with exactly the extractors production registers.
type recordingIndexer struct {
	b *fake.ClientBuilder
}

func (r recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.b.WithIndex(obj, field, extract)
	return nil
}

// world returns a client over objs with the production indexes and the
// default ClusterProviderConfig (project p1).
func world(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	cpc.Spec.ProjectID = "p1"
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc).WithObjects(objs...)
	idx := recordingIndexer{b: b}
	if err := ownership.SetupIndexes(context.Background(), idx); err != nil {
		t.Fatal(err)
	}
	_ = idx.IndexField(context.Background(), &v1beta1.SecurityPolicyRule{}, indexUnresolved, indexUnresolvedRule)
	return b.Build()
}

// waiter returns a rule object ns/name, not yet reconciled, that names the
// global GCP policy edge and uses the default ClusterProviderConfig.
func waiter(ns, name string, m ...ruleModifier) *v1beta1.SecurityPolicyRule {
	cr := &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	cr.Spec.ForProvider.SecurityPolicy = ptr("edge")
	cr.Spec.ForProvider.Priority = 1000
	cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: pcv1beta1.ClusterProviderConfigKind, Name: "default"})
	for _, fn := range m {
		fn(cr)
	}
	return cr
}

func withProject(p string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Project = &p }
}

func withRegion(r string) ruleModifier {
	return func(cr *v1beta1.SecurityPolicyRule) { cr.Spec.ForProvider.Region = &r }
}

func TestWaiters(t *testing.T) {
	// The rule objects every case holds, besides its own objects.
	tenants := []client.Object{
		waiter("a", "named"),
		waiter("a", "ready", withConditions(xpv2.Available())),
		waiter("a", "waiting", withConditions(waiting("waiting for GCP security policy projects/p1/global/securityPolicies/edge to exist"))),
		waiter("a", "by-ref", withPolicy(nil), withRef("edge")),
		waiter("a", "by-ref-elsewhere", withPolicy(nil), withRef("other")),
		waiter("a", "by-selector", withPolicy(nil), withSelector(map[string]string{"app": "edge"})),
		waiter("a", "by-other-selector", withPolicy(nil), withSelector(map[string]string{"app": "other"})),
		waiter("a", "other-project", withProject("p2")),
		waiter("a", "regional", withRegion("us-central1")),
		waiter("a", "other-policy", withPolicy(ptr("other"))),
		waiter("b", "named"),
		waiter("b", "by-ref", withPolicy(nil), withRef("edge")),
	}
	sameNamespace := []types.NamespacedName{{Namespace: "a", Name: "by-ref"}, {Namespace: "a", Name: "by-selector"}, {Namespace: "a", Name: "named"}, {Namespace: "a", Name: "waiting"}}
	cases := map[string]struct {
		reason string
		policy *v1beta1.SecurityPolicy
		others []client.Object
		want   []types.NamespacedName
	}{
		"SameNamespace": {
			reason: "A policy that admits only its own namespace wakes its namespace's rules that are not Ready and name it, by name, reference or selector, in its project and region; never another tenant's.",
			policy: sp("a", "edge", spLabels(map[string]string{"app": "edge"})),
			want:   sameNamespace,
		},
		"AllNamespaces": {
			reason: "A policy open to every namespace also wakes other namespaces' rules that name it by GCP name (a reference only looks in its own namespace).",
			policy: sp("a", "edge", spLabels(map[string]string{"app": "edge"}), spAllowAll()),
			want:   append(slices.Clone(sameNamespace), types.NamespacedName{Namespace: "b", Name: "named"}),
		},
		"OwnedElsewhere": {
			reason: "Admission is the owner's: an older SecurityPolicy in namespace b owns GCP policy edge and admits only b, so namespace a's rules stay asleep, and b's rule that names it wakes.",
			policy: sp("a", "edge", spCreatedAt(10)),
			others: []client.Object{sp("b", "edge")},
			want:   []types.NamespacedName{{Namespace: "b", Name: "named"}},
		},
		"ObserveOnlyPolicy": {
			reason: "A policy no SecurityPolicy of this cluster may write is claimable from any namespace, as ownership decides.",
			policy: sp("a", "edge", func(p *v1beta1.SecurityPolicy) {
				p.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
			}),
			want: []types.NamespacedName{{Namespace: "a", Name: "by-ref"}, {Namespace: "a", Name: "named"}, {Namespace: "a", Name: "waiting"}, {Namespace: "b", Name: "named"}},
		},
		"NoName": {
			reason: "A policy without a GCP name wakes nothing: no reference to it can resolve yet.",
			policy: sp("a", "edge", spExternalName("")),
			want:   nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := world(t, append(append([]client.Object{tc.policy}, tc.others...), cloneAll(tenants)...)...)
			got, err := waiters(context.Background(), kube, tc.policy)
			if err != nil {
				t.Fatalf("\n%s\nwaiters(...): %v", tc.reason, err)
			}
			slices.SortFunc(got, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nwaiters(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func cloneAll(objs []client.Object) []client.Object {
	out := make([]client.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject().(client.Object) //nolint:forcetypeassert // every object is one
	}
	return out
}
