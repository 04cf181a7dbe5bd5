package grant

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

func TestGrants(t *testing.T) {
	bs := func(names ...string) v1beta1.AttachmentGrantTarget {
		return v1beta1.AttachmentGrantTarget{Kind: v1alpha1.TargetBackendService, Names: names}
	}
	cases := map[string]struct {
		reason string
		grant  v1beta1.AttachmentGrantTarget
		target Target
		want   bool
	}{
		"ExactName":         {reason: "A name grants that backend.", grant: bs("web-frontend"), target: Target{Kind: "BackendService", Name: "web-frontend"}, want: true},
		"OtherName":         {reason: "A name grants no other backend.", grant: bs("web-frontend"), target: Target{Kind: "BackendService", Name: "legacy-console"}},
		"Prefix":            {reason: "* matches any run of characters.", grant: bs("web-*"), target: Target{Kind: "BackendService", Name: "web-api"}, want: true},
		"PrefixNotSuffix":   {reason: "A pattern matches the whole name, not a part.", grant: bs("web-*"), target: Target{Kind: "BackendService", Name: "old-web-api"}},
		"AnyOfNames":        {reason: "Any of the names may match.", grant: bs("a", "b?"), target: Target{Kind: "BackendService", Name: "b1"}, want: true},
		"Everything":        {reason: "* grants every backend of the kind.", grant: bs("*"), target: Target{Kind: "BackendService", Name: "legacy-console"}, want: true},
		"OtherKind":         {reason: "A BackendService grant gives no backend bucket of that name.", grant: bs("*"), target: Target{Kind: "BackendBucket", Name: "web"}},
		"Regional":          {reason: "Without regions, regional backend services are granted too.", grant: bs("web"), target: Target{Kind: "BackendService", Name: "web", Region: "europe-west1"}, want: true},
		"RegionListed":      {reason: "A listed region grants its regional backend services.", grant: v1beta1.AttachmentGrantTarget{Kind: "BackendService", Names: []string{"web"}, Regions: []string{"europe-west1"}}, target: Target{Kind: "BackendService", Name: "web", Region: "europe-west1"}, want: true},
		"RegionNotListed":   {reason: "With regions, a global backend service needs global listed.", grant: v1beta1.AttachmentGrantTarget{Kind: "BackendService", Names: []string{"web"}, Regions: []string{"europe-west1"}}, target: Target{Kind: "BackendService", Name: "web"}},
		"GlobalListed":      {reason: "global names the global backend services.", grant: v1beta1.AttachmentGrantTarget{Kind: "BackendService", Names: []string{"web"}, Regions: []string{"global"}}, target: Target{Kind: "BackendService", Name: "web"}, want: true},
		"BadPatternDenies":  {reason: "A pattern path.Match cannot parse grants nothing.", grant: bs("web-["), target: Target{Kind: "BackendService", Name: "web-["}},
		"BucketGrantBucket": {reason: "A BackendBucket grant gives the bucket.", grant: v1beta1.AttachmentGrantTarget{Kind: "BackendBucket", Names: []string{"static"}}, target: Target{Kind: "BackendBucket", Name: "static"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Grants(tc.grant, tc.target)); diff != "" {
				t.Errorf("\n%s\nGrants(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGranted(t *testing.T) {
	web := Target{Kind: "BackendService", Name: "web-frontend"}
	grant := func(sel metav1.LabelSelector, names ...string) v1beta1.AttachmentGrant {
		return v1beta1.AttachmentGrant{NamespaceSelector: sel, Targets: []v1beta1.AttachmentGrantTarget{{Kind: "BackendService", Names: names}}}
	}
	teamA := metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	type want struct {
		ok  bool
		err bool
	}
	cases := map[string]struct {
		reason string
		grants []v1beta1.AttachmentGrant
		labels map[string]string
		want   want
	}{
		"NoGrants":      {reason: "Default deny: no grant gives nothing.", labels: map[string]string{"team": "a"}},
		"Selected":      {reason: "A grant that selects the namespace and names the target gives it.", grants: []v1beta1.AttachmentGrant{grant(teamA, "web-*")}, labels: map[string]string{"team": "a"}, want: want{ok: true}},
		"NotSelected":   {reason: "A grant for another namespace gives this one nothing.", grants: []v1beta1.AttachmentGrant{grant(teamA, "*")}, labels: map[string]string{"team": "b"}},
		"EmptySelector": {reason: "{} selects every namespace.", grants: []v1beta1.AttachmentGrant{grant(metav1.LabelSelector{}, "web-frontend")}, want: want{ok: true}},
		"SecondGrant":   {reason: "Any grant may give it.", grants: []v1beta1.AttachmentGrant{grant(teamA, "other"), grant(teamA, "web-frontend")}, labels: map[string]string{"team": "a"}, want: want{ok: true}},
		"NotNamed":      {reason: "A selected namespace gets only the targets named.", grants: []v1beta1.AttachmentGrant{grant(teamA, "legacy-*")}, labels: map[string]string{"team": "a"}},
		"BadSelector": {reason: "A selector that cannot be parsed is an error, not a grant.", grants: []v1beta1.AttachmentGrant{grant(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}, "*")},
			want: want{err: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok, err := Granted(tc.grants, tc.labels, web)
			if diff := cmp.Diff(tc.want, want{ok: ok, err: err != nil}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nGranted(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cpc := func(name string, grants ...v1beta1.AttachmentGrant) *v1beta1.ClusterProviderConfig {
		return &v1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.ClusterProviderConfigSpec{AttachmentGrants: grants}}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}}
	granted := cpc("granted", v1beta1.AttachmentGrant{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		Targets: []v1beta1.AttachmentGrantTarget{{Kind: "BackendService", Names: []string{"web-*"}}}})
	attachment := func(kind, config, target string) *v1alpha1.SecurityPolicyAttachment {
		a := &v1alpha1.SecurityPolicyAttachment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}}
		a.Spec.ForProvider.Target = v1alpha1.AttachmentTarget{Kind: "BackendService", Name: target}
		a.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: kind, Name: config})
		return a
	}
	type want struct {
		why string
		err bool
	}
	cases := map[string]struct {
		reason string
		cr     *v1alpha1.SecurityPolicyAttachment
		want   want
	}{
		"Granted": {reason: "A target a grant of the ClusterProviderConfig gives the namespace may be written.",
			cr: attachment(v1beta1.ClusterProviderConfigKind, "granted", "web-frontend")},
		"NotGranted": {reason: "Another team's backend is refused, naming the grant to ask for.",
			cr:   attachment(v1beta1.ClusterProviderConfigKind, "granted", "legacy-console"),
			want: want{why: Refusal("granted", "team-a", Target{Kind: "BackendService", Name: "legacy-console"})}},
		"NoGrants": {reason: "A ClusterProviderConfig without grants gives no namespace any backend.",
			cr:   attachment(v1beta1.ClusterProviderConfigKind, "bare", "web-frontend"),
			want: want{why: Refusal("bare", "team-a", Target{Kind: "BackendService", Name: "web-frontend"})}},
		"NamespacedConfig": {reason: "A namespaced ProviderConfig acts with the namespace's own credentials: GCP's IAM decides, no grant is needed.",
			cr: attachment(v1beta1.ProviderConfigKind, "own", "legacy-console")},
		"MissingConfig": {reason: "A config that cannot be read is an error.",
			cr:   attachment(v1beta1.ClusterProviderConfigKind, "missing", "web-frontend"),
			want: want{err: true}},
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects([]client.Object{ns, granted, cpc("bare")}...).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			why, err := NewChecker(kube).Check(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want, want{why: why, err: err != nil}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
