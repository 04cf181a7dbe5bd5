package ownership

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// The project every object resolves to unless a case says otherwise: the
// default ClusterProviderConfig, which every world holds, sets it.
const (
	project      = "p1"
	otherProject = "p2"
	region       = "us-central1"
)

// key is the global GCP policy "edge" of project, which most cases ask about.
var key = gcp.PolicyKey{Project: project, Name: "edge"}

// epoch is the creationTimestamp at offset 0. Offsets are whole seconds: the
// API (and the fake client's serialisation) keeps no finer resolution.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(sec) * time.Second)) }

// indexCall is one IndexField call.
type indexCall struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// recordingIndexer records the IndexField calls made of it, so that a fake
// client can be built with exactly the extractors production registers.
type recordingIndexer struct {
	calls []indexCall
	err   error
}

func (r *recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.calls = append(r.calls, indexCall{obj: obj, field: field, extract: extract})
	return r.err
}

// world returns a client over objs, with the indexes SetupIndexes registers
// and the default ClusterProviderConfig (project p1).
func world(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rec := &recordingIndexer{}
	if err := SetupIndexes(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(clusterConfig("default", project)).WithObjects(objs...)
	for _, c := range rec.calls {
		b = b.WithIndex(c.obj, c.field, c.extract)
	}
	return b.Build()
}

// managedObject is what the object options need of a managed resource.
type managedObject interface {
	client.Object
	SetManagementPolicies(xpv2.ManagementPolicies)
	SetProviderConfigReference(*xpv2.ProviderConfigReference)
}

type option func(managedObject)

// policy returns the global SecurityPolicy ns/name, with external name name,
// created at offset 0 and using the default ClusterProviderConfig.
func policy(ns, name string, o ...option) *v1beta1.SecurityPolicy {
	p := &v1beta1.SecurityPolicy{}
	p.SetNamespace(ns)
	p.SetName(name)
	meta.SetExternalName(p, name)
	initialise(p, o)
	return p
}

// rule returns the SecurityPolicyRule ns/name at priority prio of the global
// policy "edge", created at offset 0 and using the default
// ClusterProviderConfig.
func rule(ns, name string, prio int64, o ...option) *v1beta1.SecurityPolicyRule {
	r := &v1beta1.SecurityPolicyRule{}
	r.SetNamespace(ns)
	r.SetName(name)
	r.Spec.ForProvider.SecurityPolicy = new("edge")
	r.Spec.ForProvider.Priority = prio
	initialise(r, o)
	return r
}

func initialise(mg managedObject, o []option) {
	mg.SetUID(types.UID(mg.GetNamespace() + "/" + mg.GetName()))
	mg.SetCreationTimestamp(at(0))
	mg.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: pcv1beta1.ClusterProviderConfigKind, Name: "default"})
	for _, fn := range o {
		fn(mg)
	}
}

func createdAt(sec int) option { return func(mg managedObject) { mg.SetCreationTimestamp(at(sec)) } }

// createSucceeded records that the object created its GCP object.
func createSucceeded() option {
	return func(mg managedObject) { meta.SetExternalCreateSucceeded(mg, epoch) }
}

func managing(a ...xpv2.ManagementAction) option {
	return func(mg managedObject) { mg.SetManagementPolicies(a) }
}

func observeOnly() option { return managing(xpv2.ManagementActionObserve) }

func usingConfig(kind, name string) option {
	return func(mg managedObject) {
		mg.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: kind, Name: name})
	}
}

func inProject(p string) option {
	return func(mg managedObject) {
		switch o := mg.(type) {
		case *v1beta1.SecurityPolicy:
			o.Spec.ForProvider.Project = new(p)
		case *v1beta1.SecurityPolicyRule:
			o.Spec.ForProvider.Project = new(p)
		}
	}
}

func inRegion(r string) option {
	return func(mg managedObject) {
		switch o := mg.(type) {
		case *v1beta1.SecurityPolicy:
			o.Spec.ForProvider.Region = new(r)
		case *v1beta1.SecurityPolicyRule:
			o.Spec.ForProvider.Region = new(r)
		}
	}
}

// externalName sets a SecurityPolicy's external name.
func externalName(n string) option {
	return func(mg managedObject) { meta.SetExternalName(mg, n) }
}

// naming sets the GCP policy a SecurityPolicyRule belongs to.
func naming(policy string) option {
	return func(mg managedObject) { mg.(*v1beta1.SecurityPolicyRule).Spec.ForProvider.SecurityPolicy = new(policy) }
}

// admitting sets a SecurityPolicy's spec.allowedRules.namespaces.
func admitting(from v1beta1.FromNamespaces, sel *metav1.LabelSelector) option {
	return func(mg managedObject) {
		mg.(*v1beta1.SecurityPolicy).Spec.AllowedRules = &v1beta1.AllowedRules{
			Namespaces: &v1beta1.RuleNamespaces{From: from, Selector: sel},
		}
	}
}

// inlineRules sets a SecurityPolicy's spec.forProvider.rules: a nil prios
// leaves rules unset, an empty one sets [].
func inlineRules(prios ...int64) option {
	return func(mg managedObject) {
		p := mg.(*v1beta1.SecurityPolicy)
		if prios == nil {
			p.Spec.ForProvider.Rules = nil
			return
		}
		p.Spec.ForProvider.Rules = []v1beta1.PolicyRule{}
		for _, prio := range prios {
			p.Spec.ForProvider.Rules = append(p.Spec.ForProvider.Rules, v1beta1.PolicyRule{Priority: prio})
		}
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func providerConfig(ns, name, projectID string) *pcv1beta1.ProviderConfig {
	pc := &pcv1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	pc.Spec.ProjectID = projectID
	return pc
}

func clusterConfig(name, projectID string) *pcv1beta1.ClusterProviderConfig {
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cpc.Spec.ProjectID = projectID
	return cpc
}

func nameOrNil(p *v1beta1.SecurityPolicy) string {
	if p == nil {
		return "<nil>"
	}
	return p.GetNamespace() + "/" + p.GetName()
}

// prodSelector selects namespaces labelled env=prod.
var prodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}

func TestPolicyKey(t *testing.T) {
	cases := map[string]struct {
		reason string
		got    gcp.PolicyKey
		want   gcp.PolicyKey
	}{
		"GlobalPolicy": {
			reason: "A SecurityPolicy's key is its external name, not its metadata.name.",
			got:    PolicyKey(policy("team-a", "obj", externalName("edge")), project),
			want:   gcp.PolicyKey{Project: project, Name: "edge"},
		},
		"RegionalPolicy": {
			reason: "A regional SecurityPolicy's key carries its region.",
			got:    PolicyKey(policy("team-a", "edge", inRegion(region)), project),
			want:   gcp.PolicyKey{Project: project, Region: region, Name: "edge"},
		},
		"Rule": {
			reason: "A rule's key is the policy it names.",
			got:    RulePolicyKey(rule("team-a", "r", 100, inRegion(region), naming("waf")), project),
			want:   gcp.PolicyKey{Project: project, Region: region, Name: "waf"},
		},
		"UnresolvedRule": {
			reason: "A rule whose policy is unresolved has an empty name.",
			got: func() gcp.PolicyKey {
				r := rule("team-a", "r", 100)
				r.Spec.ForProvider.SecurityPolicy = nil
				return RulePolicyKey(r, project)
			}(),
			want: gcp.PolicyKey{Project: project},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPolicyOwner(t *testing.T) {
	cases := map[string]struct {
		reason string
		objs   []client.Object
		key    gcp.PolicyKey
		want   string
	}{
		"NoPolicies": {
			reason: "With no SecurityPolicy naming the GCP policy there is no owner.",
			key:    key,
			want:   "<nil>",
		},
		"OnlyObservers": {
			reason: "Observe-only objects never own: with only those there is no owner.",
			objs: []client.Object{
				policy("team-a", "edge", observeOnly()),
				policy("team-b", "edge", observeOnly(), createSucceeded()),
			},
			key:  key,
			want: "<nil>",
		},
		"OnlyOtherNames": {
			reason: "Objects whose external name differs name another GCP policy.",
			objs: []client.Object{
				policy("team-a", "edge", externalName("other")),
			},
			key:  key,
			want: "<nil>",
		},
		"OldestAcrossNamespaces": {
			reason: "The object created first owns the GCP policy, whatever its namespace.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(10)),
				policy("team-b", "edge", createdAt(5)),
				policy("team-c", "edge", createdAt(7)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"ExternalNameNotMetadataName": {
			reason: "Objects are matched by external name, not by metadata.name.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(10)),
				policy("team-b", "my-edge", externalName("edge"), createdAt(5)),
			},
			key:  key,
			want: "team-b/my-edge",
		},
		"CreateAnnotationDoesNotRank": {
			reason: "The annotation crossplane.io/external-create-succeeded, which any editor of an object can set, does not outrank an older object: a tenant cannot take a policy by annotating its own. The policy's creator keeps it by its GCP owner label, which the policy controller checks.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(10), createSucceeded()),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"AnnotatedOrNotOldest": {
			reason: "Annotated or not, the oldest owns.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(10), createSucceeded()),
				policy("team-b", "edge", createdAt(8), createSucceeded()),
				policy("team-c", "edge", createdAt(1)),
			},
			key:  key,
			want: "team-c/edge",
		},
		"SameTimestampByNamespaceThenName": {
			reason: "Objects created in the same second are ordered by namespace/name.",
			objs: []client.Object{
				policy("team-b", "a", externalName("edge"), createdAt(3)),
				policy("team-a", "z", externalName("edge"), createdAt(3)),
				policy("team-a", "y", externalName("edge"), createdAt(3)),
			},
			key:  key,
			want: "team-a/y",
		},
		"ObserverNeverOwns": {
			reason: "An Observe-only object does not own, however old and even with a recorded create.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1), observeOnly(), createSucceeded()),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"LateInitializerNeverOwns": {
			reason: "An object that may only observe and late-initialize does not write, so does not own.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1), managing(xpv2.ManagementActionObserve, xpv2.ManagementActionLateInitialize)),
				policy("team-b", "edge", createdAt(5), managing(xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"OtherProjectBySpec": {
			reason: "An object whose spec.forProvider.project differs names another GCP policy.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1), inProject(otherProject)),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"SpecProjectOverridesConfig": {
			reason: "spec.forProvider.project wins over the ProviderConfig's projectID.",
			objs: []client.Object{
				clusterConfig("other", otherProject),
				policy("team-a", "edge", createdAt(1), inProject(project), usingConfig(pcv1beta1.ClusterProviderConfigKind, "other")),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-a/edge",
		},
		"OtherProjectByProviderConfig": {
			reason: "The namespaced ProviderConfig is read from the object's own namespace: team-b's \"gcp\" is in another project.",
			objs: []client.Object{
				providerConfig("team-a", "gcp", project),
				providerConfig("team-b", "gcp", otherProject),
				policy("team-a", "edge", createdAt(10), usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
				policy("team-b", "edge", createdAt(5), usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
			},
			key:  key,
			want: "team-a/edge",
		},
		"SameProjectByProviderConfig": {
			reason: "An object whose namespaced ProviderConfig is in the key's project competes.",
			objs: []client.Object{
				providerConfig("team-a", "gcp", otherProject),
				providerConfig("team-b", "gcp", project),
				policy("team-a", "edge", createdAt(1), usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
				policy("team-b", "edge", createdAt(5), usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
				policy("team-c", "edge", createdAt(9)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"OtherProjectByClusterProviderConfig": {
			reason: "An object whose ClusterProviderConfig is in another project names another GCP policy.",
			objs: []client.Object{
				clusterConfig("other", otherProject),
				policy("team-a", "edge", createdAt(1), usingConfig(pcv1beta1.ClusterProviderConfigKind, "other")),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"KeyInOtherProject": {
			reason: "Asked about the other project, only the objects that resolve to it compete.",
			objs: []client.Object{
				clusterConfig("other", otherProject),
				policy("team-a", "edge", createdAt(1)),
				policy("team-b", "edge", createdAt(5), usingConfig(pcv1beta1.ClusterProviderConfigKind, "other")),
			},
			key:  gcp.PolicyKey{Project: otherProject, Name: "edge"},
			want: "team-b/edge",
		},
		"MissingConfig": {
			reason: "An object whose config cannot be read owns nothing.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1), usingConfig(pcv1beta1.ProviderConfigKind, "missing")),
				policy("team-b", "edge", createdAt(2), usingConfig(pcv1beta1.ClusterProviderConfigKind, "missing")),
				policy("team-c", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-c/edge",
		},
		"OtherRegion": {
			reason: "A regional object does not compete for the global policy of the same name.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1), inRegion(region)),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: "team-b/edge",
		},
		"Regional": {
			reason: "Asked about a regional policy, only the objects in that region compete.",
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1)),
				policy("team-b", "edge", createdAt(5), inRegion(region)),
				policy("team-c", "edge", createdAt(3), inRegion("europe-west1")),
			},
			key:  gcp.PolicyKey{Project: project, Region: region, Name: "edge"},
			want: "team-b/edge",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NewIndex(world(t, tc.objs...)).PolicyOwner(context.Background(), tc.key)
			if err != nil {
				t.Fatalf("\n%s\nPolicyOwner(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, nameOrNil(got)); diff != "" {
				t.Errorf("\n%s\nPolicyOwner(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	type want struct {
		claims  map[int64]string
		refused []Refusal // Message is checked to name the rule and its namespace.
	}
	cases := map[string]struct {
		reason string
		policy *v1beta1.SecurityPolicy
		objs   []client.Object
		key    gcp.PolicyKey
		want   want
	}{
		"NoRules": {
			reason: "With no rule objects nothing is claimed or refused.",
			policy: policy("team-a", "edge"),
			key:    key,
			want:   want{claims: map[int64]string{}},
		},
		"SameNamespace": {
			reason: "Rules in the policy's namespace claim their priorities.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "r1", 100),
				rule("team-a", "r2", 200),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-a/r1", 200: "team-a/r2"}},
		},
		"OtherPolicies": {
			reason: "Rules of another GCP policy, or of the same name in another region, are not considered.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "r1", 100, naming("other")),
				rule("team-a", "r2", 100, inRegion(region)),
				rule("team-b", "r3", 100, naming("other")),
			},
			key:  key,
			want: want{claims: map[int64]string{}},
		},
		"OtherNamespaceByDefault": {
			reason: "Without spec.allowedRules only the policy's own namespace is admitted.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "r1", 100),
				rule("team-b", "r2", 200),
			},
			key: key,
			want: want{
				claims:  map[int64]string{100: "team-a/r1"},
				refused: []Refusal{{Rule: "team-b/r2", Priority: 200}},
			},
		},
		"OtherNamespaceFromSame": {
			reason: "from: Same admits only the policy's own namespace.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromSame, nil)),
			objs: []client.Object{
				rule("team-b", "r2", 200),
			},
			key: key,
			want: want{
				claims:  map[int64]string{},
				refused: []Refusal{{Rule: "team-b/r2", Priority: 200}},
			},
		},
		"OtherNamespaceFromAll": {
			reason: "from: All admits every namespace.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromAll, nil)),
			objs: []client.Object{
				rule("team-a", "r1", 100),
				rule("team-b", "r2", 200),
				rule("team-c", "r3", 300),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-a/r1", 200: "team-b/r2", 300: "team-c/r3"}},
		},
		"FromSelector": {
			reason: "from: Selector admits the policy's namespace and those whose labels match, and refuses the others.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromSelector, prodSelector)),
			objs: []client.Object{
				namespace("team-a", nil),
				namespace("team-b", map[string]string{"env": "prod"}),
				namespace("team-c", map[string]string{"env": "dev"}),
				namespace("team-d", nil),
				rule("team-a", "r1", 100),
				rule("team-b", "r2", 200),
				rule("team-c", "r3", 300),
				rule("team-d", "r4", 400),
			},
			key: key,
			want: want{
				claims:  map[int64]string{100: "team-a/r1", 200: "team-b/r2"},
				refused: []Refusal{{Rule: "team-c/r3", Priority: 300}, {Rule: "team-d/r4", Priority: 400}},
			},
		},
		"RefusalsSorted": {
			reason: "Refusals are sorted by priority, then by namespace/name.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-c", "a", 300),
				rule("team-b", "z", 100),
				rule("team-c", "b", 100),
				rule("team-b", "y", 100),
				rule("team-b", "x", 200),
			},
			key: key,
			want: want{
				claims: map[int64]string{},
				refused: []Refusal{
					{Rule: "team-b/y", Priority: 100},
					{Rule: "team-b/z", Priority: 100},
					{Rule: "team-c/b", Priority: 100},
					{Rule: "team-b/x", Priority: 200},
					{Rule: "team-c/a", Priority: 300},
				},
			},
		},
		"OlderOwnsPriority": {
			reason: "Of two admitted rules at one priority, the older owns it.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromAll, nil)),
			objs: []client.Object{
				rule("team-a", "new", 100, createdAt(10)),
				rule("team-b", "old", 100, createdAt(5)),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-b/old"}},
		},
		"CreateAnnotationDoesNotRankPriority": {
			reason: "Of two admitted rules at one priority, the older owns it: the annotation crossplane.io/external-create-succeeded, which any editor can set, does not rank.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "new", 100, createdAt(10), createSucceeded()),
				rule("team-a", "old", 100, createdAt(5)),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-a/old"}},
		},
		"SameSecondByName": {
			reason: "Of two admitted rules created in the same second, the first by namespace/name owns.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "b", 100, createdAt(5)),
				rule("team-a", "a", 100, createdAt(5)),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-a/a"}},
		},
		"RefusedOlderDoesNotOwn": {
			reason: "A refused rule does not take the priority from a newer admitted one.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "new", 100, createdAt(10)),
				rule("team-b", "old", 100, createdAt(5)),
			},
			key: key,
			want: want{
				claims:  map[int64]string{100: "team-a/new"},
				refused: []Refusal{{Rule: "team-b/old", Priority: 100}},
			},
		},
		"ObserverNeverClaims": {
			reason: "Observe-only rules never claim a priority, and are never refused.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				rule("team-a", "observer", 100, observeOnly(), createdAt(1)),
				rule("team-a", "writer", 100, createdAt(5)),
				rule("team-a", "lonely", 200, observeOnly()),
				rule("team-b", "outsider", 300, observeOnly()),
			},
			key:  key,
			want: want{claims: map[int64]string{100: "team-a/writer"}},
		},
		"OtherProject": {
			reason: "A rule in another project, by spec or by its own config, names another GCP policy.",
			policy: policy("team-a", "edge"),
			objs: []client.Object{
				providerConfig("team-a", "gcp", otherProject),
				clusterConfig("other", otherProject),
				rule("team-a", "by-pc", 100, usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
				rule("team-a", "by-cpc", 200, usingConfig(pcv1beta1.ClusterProviderConfigKind, "other")),
				rule("team-a", "by-spec", 300, inProject(otherProject)),
				rule("team-a", "missing", 400, usingConfig(pcv1beta1.ProviderConfigKind, "missing")),
				rule("team-b", "outsider", 500, inProject(otherProject)),
				rule("team-a", "here", 600),
			},
			key:  key,
			want: want{claims: map[int64]string{600: "team-a/here"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claims, refused, err := NewIndex(world(t, tc.objs...)).Claims(context.Background(), tc.policy, tc.key)
			if err != nil {
				t.Fatalf("\n%s\nClaims(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.claims, claims); diff != "" {
				t.Errorf("\n%s\nClaims(...): -want claims, +got claims:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.refused, refused, cmpopts.IgnoreFields(Refusal{}, "Message")); diff != "" {
				t.Errorf("\n%s\nClaims(...): -want refusals, +got refusals:\n%s", tc.reason, diff)
			}
			for _, r := range refused {
				ns, _, _ := strings.Cut(r.Rule, "/")
				for _, s := range []string{r.Rule, `"` + ns + `"`} {
					if !strings.Contains(r.Message, s) {
						t.Errorf("\n%s\nClaims(...): refusal message %q does not name %s", tc.reason, r.Message, s)
					}
				}
			}
		})
	}
}

func TestClaimsErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		policy *v1beta1.SecurityPolicy
		objs   []client.Object
	}{
		"BadSelector": {
			reason: "An invalid selector is an error.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromSelector, &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}},
			})),
		},
		"MissingNamespace": {
			reason: "Under a selector, a namespace that cannot be read is an error.",
			policy: policy("team-a", "edge", admitting(v1beta1.NamespacesFromSelector, prodSelector)),
			objs:   []client.Object{rule("team-b", "r", 100)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := NewIndex(world(t, tc.objs...)).Claims(context.Background(), tc.policy, key); err == nil {
				t.Errorf("\n%s\nClaims(...): want error, got nil", tc.reason)
			}
		})
	}
}

func TestRuleStanding(t *testing.T) {
	type want struct {
		// refusedNaming, when not empty, is what the refusal must name;
		// empty means the rule may write.
		refusedNaming []string
		inline        bool
	}
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicyRule
		objs   []client.Object
		key    gcp.PolicyKey
		want   want
	}{
		"Alone": {
			reason: "A rule of a policy no SecurityPolicy in the cluster owns, with no competitor, may write.",
			cr:     rule("team-b", "r", 100),
			key:    key,
		},
		"NoOwnerOtherNamespace": {
			reason: "With no SecurityPolicy owning the GCP policy, a rule from any namespace may write.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", observeOnly()),
				policy("team-c", "edge", inRegion(region)),
				policy("team-d", "edge", inProject(otherProject)),
			},
			key: key,
		},
		"OwnerDoesNotAdmit": {
			reason: "A rule from a namespace the owning policy does not admit is refused, naming the policy.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1)),
				policy("team-b", "edge", createdAt(5)),
			},
			key:  key,
			want: want{refusedNaming: []string{"SecurityPolicy team-a/edge", `"team-b"`}},
		},
		"OwnerSelectorDoesNotMatch": {
			reason: "A rule from a namespace whose labels the owner's selector does not match is refused.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				namespace("team-b", map[string]string{"env": "dev"}),
				policy("team-a", "edge", admitting(v1beta1.NamespacesFromSelector, prodSelector)),
			},
			key:  key,
			want: want{refusedNaming: []string{"SecurityPolicy team-a/edge", `"team-b"`}},
		},
		"OwnerSelectorMatches": {
			reason: "A rule from a namespace whose labels the owner's selector matches may write.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				namespace("team-b", map[string]string{"env": "prod"}),
				policy("team-a", "edge", admitting(v1beta1.NamespacesFromSelector, prodSelector)),
			},
			key: key,
		},
		"OwnerAdmitsAll": {
			reason: "A rule from any namespace may write under from: All.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", admitting(v1beta1.NamespacesFromAll, nil)),
			},
			key: key,
		},
		"OlderDuplicate": {
			reason: "An older admitted rule object at the same priority owns it: the newer is refused, naming it.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				policy("team-a", "edge"),
				rule("team-a", "old", 100, createdAt(5)),
			},
			key:  key,
			want: want{refusedNaming: []string{"SecurityPolicyRule team-a/old", "priority 100"}},
		},
		"OlderDuplicateNoOwner": {
			reason: "Without an owning policy, any older rule object at the same priority owns it.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				rule("team-b", "old", 100, createdAt(5)),
			},
			key:  key,
			want: want{refusedNaming: []string{"SecurityPolicyRule team-b/old"}},
		},
		"CreateAnnotationDoesNotRankDuplicate": {
			reason: "A younger rule object annotated crossplane.io/external-create-succeeded (any editor can set it) does not outrank an older one.",
			cr:     rule("team-a", "old", 100, createdAt(5)),
			objs: []client.Object{
				rule("team-a", "new", 100, createdAt(10), createSucceeded()),
			},
			key:  key,
			want: want{},
		},
		"NewerDuplicate": {
			reason: "A newer rule object at the same priority does not refuse the older.",
			cr:     rule("team-a", "old", 100, createdAt(5)),
			objs: []client.Object{
				policy("team-a", "edge"),
				rule("team-a", "new", 100, createdAt(10)),
			},
			key: key,
		},
		"SameSecondLaterName": {
			reason: "Of rule objects created in the same second, the first by namespace/name owns.",
			cr:     rule("team-a", "b", 100, createdAt(5)),
			objs: []client.Object{
				rule("team-a", "a", 100, createdAt(5)),
			},
			key:  key,
			want: want{refusedNaming: []string{"SecurityPolicyRule team-a/a"}},
		},
		"SameSecondEarlierName": {
			reason: "Of rule objects created in the same second, the first by namespace/name owns.",
			cr:     rule("team-a", "a", 100, createdAt(5)),
			objs: []client.Object{
				rule("team-a", "b", 100, createdAt(5)),
			},
			key: key,
		},
		"ItselfInCache": {
			reason: "The rule object does not compete with its own cached copy.",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				rule("team-a", "r", 100),
			},
			key: key,
		},
		"ItselfInCacheDiffering": {
			reason: "The rule object does not compete with its own cached copy, even when the copies differ in what ranks them (here a create recorded since cr was read).",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				rule("team-a", "r", 100, createSucceeded()),
			},
			key: key,
		},
		"OlderDuplicateNotAdmitted": {
			reason: "An older rule object the owning policy does not admit does not refuse an admitted one.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				policy("team-a", "edge"),
				rule("team-b", "old", 100, createdAt(5)),
			},
			key: key,
		},
		"OlderDuplicateObserver": {
			reason: "An older Observe-only rule object does not refuse a writer.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				rule("team-a", "old", 100, createdAt(5), observeOnly(), createSucceeded()),
			},
			key: key,
		},
		"OlderDuplicateOtherProject": {
			reason: "An older rule object in another project names another GCP rule.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				providerConfig("team-b", "gcp", otherProject),
				rule("team-b", "old", 100, createdAt(5), usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
				rule("team-c", "old", 100, createdAt(5), inProject(otherProject)),
			},
			key: key,
		},
		"OlderDuplicateOtherPriority": {
			reason: "An older rule object at another priority does not compete.",
			cr:     rule("team-a", "new", 100, createdAt(10)),
			objs: []client.Object{
				rule("team-a", "old", 200, createdAt(5)),
				rule("team-a", "older", 100, createdAt(1), naming("other")),
				rule("team-a", "oldest", 100, createdAt(0), inRegion(region)),
			},
			key: key,
		},
		"Inline": {
			reason: "Inline is true when the owning policy declares an inline rule at the rule's priority.",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", inlineRules(50, 100)),
			},
			key:  key,
			want: want{inline: true},
		},
		"InlineRefused": {
			reason: "Inline is reported even when the rule is refused.",
			cr:     rule("team-b", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", inlineRules(100)),
			},
			key:  key,
			want: want{inline: true, refusedNaming: []string{"SecurityPolicy team-a/edge"}},
		},
		"NotInlineNilRules": {
			reason: "Inline is false when the owning policy leaves rules unset.",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", inlineRules()),
			},
			key: key,
		},
		"NotInlineEmptyRules": {
			reason: "Inline is false when the owning policy's rules are [].",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", inlineRules([]int64{}...)),
			},
			key: key,
		},
		"NotInlineOtherPriority": {
			reason: "Inline is false when the owning policy declares rules at other priorities only.",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", inlineRules(50, 200)),
			},
			key: key,
		},
		"NotInlineNotOwner": {
			reason: "Only the owning policy's inline rules count.",
			cr:     rule("team-a", "r", 100),
			objs: []client.Object{
				policy("team-a", "edge", createdAt(1)),
				policy("team-b", "edge", createdAt(5), inlineRules(100)),
				policy("team-c", "edge", observeOnly(), inlineRules(100)),
			},
			key: key,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NewIndex(world(t, tc.objs...)).RuleStanding(context.Background(), tc.cr, tc.key)
			if err != nil {
				t.Fatalf("\n%s\nRuleStanding(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.inline, got.Inline); diff != "" {
				t.Errorf("\n%s\nRuleStanding(...).Inline: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(len(tc.want.refusedNaming) > 0, got.Refused != ""); diff != "" {
				t.Errorf("\n%s\nRuleStanding(...): refused %q; -want refused, +got refused:\n%s", tc.reason, got.Refused, diff)
			}
			for _, s := range tc.want.refusedNaming {
				if got.Refused != "" && !strings.Contains(got.Refused, s) {
					t.Errorf("\n%s\nRuleStanding(...): refusal %q does not name %s", tc.reason, got.Refused, s)
				}
			}
		})
	}
}

func TestLabeler(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	l := NewLabeler("cluster-uid")
	v := l.Value(policy("team-a", "edge"))

	cases := map[string]struct {
		reason string
		got    string
		same   bool
	}{
		"Stable": {
			reason: "The value is the same for the same cluster, namespace and name, whatever the UID or spec.",
			got: l.Value(policy("team-a", "edge", inProject(otherProject), func(mg managedObject) {
				mg.SetUID("another-uid")
			})),
			same: true,
		},
		"AnotherCluster": {
			reason: "The value differs for another cluster.",
			got:    NewLabeler("other-cluster").Value(policy("team-a", "edge")),
		},
		"AnotherNamespace": {
			reason: "The value differs for another namespace.",
			got:    l.Value(policy("team-b", "edge")),
		},
		"AnotherName": {
			reason: "The value differs for another name.",
			got:    l.Value(policy("team-a", "edge2")),
		},
		"NoConcatenationCollision": {
			reason: "Moving characters between namespace and name changes the value.",
			got:    l.Value(policy("team-ae", "dge")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !hex32.MatchString(tc.got) {
				t.Errorf("\n%s\nValue(...) = %q, want 32 lowercase hex characters", tc.reason, tc.got)
			}
			if diff := cmp.Diff(tc.same, tc.got == v); diff != "" {
				t.Errorf("\n%s\nValue(...) = %q, team-a/edge's is %q; -want same, +got same:\n%s", tc.reason, tc.got, v, diff)
			}
		})
	}

	t.Run("Labels", func(t *testing.T) {
		want := map[string]string{LabelKey: v}
		if diff := cmp.Diff(want, l.Labels(policy("team-a", "edge"))); diff != "" {
			t.Errorf("Labels(...): -want, +got:\n%s", diff)
		}
	})
}

// sortNames orders NamespacedNames for comparison.
var sortNames = cmpopts.SortSlices(func(a, b types.NamespacedName) bool { return a.String() < b.String() })

func TestPoliciesNamedBy(t *testing.T) {
	objs := []client.Object{
		policy("team-a", "edge"),
		policy("team-b", "my-edge", externalName("edge")),
		policy("team-c", "edge", inProject(otherProject), observeOnly()), // Projects and management policies are not compared.
		policy("team-d", "edge", inRegion(region)),
		policy("team-e", "edge", externalName("other")),
		policy("team-f", "waf", inRegion(region)),
	}
	cases := map[string]struct {
		reason string
		r      *v1beta1.SecurityPolicyRule
		want   []types.NamespacedName
	}{
		"Global": {
			reason: "Every SecurityPolicy whose external name and region match, in every namespace.",
			r:      rule("team-z", "r", 100),
			want: []types.NamespacedName{
				{Namespace: "team-a", Name: "edge"},
				{Namespace: "team-b", Name: "my-edge"},
				{Namespace: "team-c", Name: "edge"},
			},
		},
		"Regional": {
			reason: "A regional rule names only the policies in its region.",
			r:      rule("team-z", "r", 100, inRegion(region)),
			want:   []types.NamespacedName{{Namespace: "team-d", Name: "edge"}},
		},
		"ByExternalName": {
			reason: "Policies are found by external name.",
			r:      rule("team-z", "r", 100, naming("other")),
			want:   []types.NamespacedName{{Namespace: "team-e", Name: "edge"}},
		},
		"None": {
			reason: "A rule naming a policy no object names finds nothing.",
			r:      rule("team-z", "r", 100, naming("waf")),
			want:   []types.NamespacedName{},
		},
		"Unresolved": {
			reason: "A rule whose policy is unresolved finds nothing.",
			r: func() *v1beta1.SecurityPolicyRule {
				r := rule("team-z", "r", 100)
				r.Spec.ForProvider.SecurityPolicy = nil
				return r
			}(),
		},
	}
	kube := world(t, objs...)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PoliciesNamedBy(context.Background(), kube, tc.r)
			if err != nil {
				t.Fatalf("\n%s\nPoliciesNamedBy(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, sortNames); diff != "" {
				t.Errorf("\n%s\nPoliciesNamedBy(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRulesNaming(t *testing.T) {
	objs := []client.Object{
		rule("team-a", "r1", 100),
		rule("team-b", "r2", 200, inProject(otherProject), observeOnly()), // Projects and management policies are not compared.
		rule("team-c", "r3", 100, inRegion(region)),
		rule("team-d", "r4", 100, naming("other")),
		func() client.Object {
			r := rule("team-e", "unresolved", 100)
			r.Spec.ForProvider.SecurityPolicy = nil
			return r
		}(),
	}
	cases := map[string]struct {
		reason string
		p      *v1beta1.SecurityPolicy
		want   []types.NamespacedName
	}{
		"Global": {
			reason: "Every rule naming the policy's external name and region, in every namespace.",
			p:      policy("team-z", "edge"),
			want: []types.NamespacedName{
				{Namespace: "team-a", Name: "r1"},
				{Namespace: "team-b", Name: "r2"},
			},
		},
		"ByExternalName": {
			reason: "Rules name the policy's external name, not its metadata.name.",
			p:      policy("team-z", "edge", externalName("other")),
			want:   []types.NamespacedName{{Namespace: "team-d", Name: "r4"}},
		},
		"Regional": {
			reason: "A regional policy is named only by rules in its region.",
			p:      policy("team-z", "edge", inRegion(region)),
			want:   []types.NamespacedName{{Namespace: "team-c", Name: "r3"}},
		},
		"None": {
			reason: "A policy no rule names finds nothing.",
			p:      policy("team-z", "waf"),
			want:   []types.NamespacedName{},
		},
		"NoExternalName": {
			reason: "A policy without an external name finds nothing.",
			p: func() *v1beta1.SecurityPolicy {
				p := policy("team-z", "edge")
				p.SetAnnotations(nil)
				return p
			}(),
		},
	}
	kube := world(t, objs...)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RulesNaming(context.Background(), kube, tc.p)
			if err != nil {
				t.Fatalf("\n%s\nRulesNaming(...): unexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, sortNames); diff != "" {
				t.Errorf("\n%s\nRulesNaming(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestProjectOf(t *testing.T) {
	configs := []client.Object{
		providerConfig("team-a", "gcp", "pa"),
		providerConfig("team-b", "gcp", "pb"),
		clusterConfig("shared", "ps"),
	}
	type want struct {
		project string
		err     bool
	}
	cases := map[string]struct {
		reason  string
		mg      ManagedResource
		project *string
		want    want
	}{
		"SpecProjectWins": {
			reason:  "spec.forProvider.project wins, and the config is not read.",
			mg:      policy("team-a", "edge", usingConfig(pcv1beta1.ProviderConfigKind, "missing")),
			project: new("spec"),
			want:    want{project: "spec"},
		},
		"ProviderConfigOwnNamespace": {
			reason: "A ProviderConfig is read from the resource's own namespace.",
			mg:     policy("team-b", "edge", usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
			want:   want{project: "pb"},
		},
		"ProviderConfigOfRule": {
			reason: "A rule's ProviderConfig is read from its own namespace too.",
			mg:     rule("team-a", "r", 100, usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
			want:   want{project: "pa"},
		},
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig is read by name.",
			mg:     policy("team-b", "edge", usingConfig(pcv1beta1.ClusterProviderConfigKind, "shared")),
			want:   want{project: "ps"},
		},
		"MissingProviderConfig": {
			reason: "A ProviderConfig that exists only in another namespace is missing.",
			mg:     policy("team-c", "edge", usingConfig(pcv1beta1.ProviderConfigKind, "gcp")),
			want:   want{err: true},
		},
		"MissingClusterProviderConfig": {
			reason: "A missing ClusterProviderConfig is an error.",
			mg:     policy("team-a", "edge", usingConfig(pcv1beta1.ClusterProviderConfigKind, "gcp")),
			want:   want{err: true},
		},
		"UnknownKind": {
			reason: "An unsupported providerConfigRef kind is an error.",
			mg:     policy("team-a", "edge", usingConfig("SomethingElse", "gcp")),
			want:   want{err: true},
		},
		"NoReference": {
			reason: "A resource without a providerConfigRef and without a project is an error.",
			mg: policy("team-a", "edge", func(mg managedObject) {
				mg.SetProviderConfigReference(nil)
			}),
			want: want{err: true},
		},
	}
	i := NewIndex(world(t, configs...))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := i.ProjectOf(context.Background(), tc.mg, tc.project)
			if diff := cmp.Diff(tc.want, want{project: got, err: err != nil}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nProjectOf(...): -want, +got (error %v):\n%s", tc.reason, err, diff)
			}
		})
	}
}

func TestIndexesSetup(t *testing.T) {
	errBoom := errors.New("boom")
	cases := map[string]struct {
		reason    string
		err       error
		wantCalls int
		wantErr   error
	}{
		"RegistersOnce": {
			reason:    "The indexes are registered on the first call only.",
			wantCalls: 3,
		},
		"ErrorEveryCall": {
			reason:    "The first call's error is returned on every call, and registration is not retried.",
			err:       errBoom,
			wantCalls: 1,
			wantErr:   errBoom,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recordingIndexer{err: tc.err}
			var idx Indexes
			for range 3 {
				if diff := cmp.Diff(tc.wantErr, idx.Setup(context.Background(), rec), cmpopts.EquateErrors()); diff != "" {
					t.Errorf("\n%s\nSetup(...): -want error, +got error:\n%s", tc.reason, diff)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, len(rec.calls)); diff != "" {
				t.Errorf("\n%s\nIndexField calls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestExternalLabels(t *testing.T) {
	l := NewLabeler("cluster-uid")
	typed := func(p *v1beta1.SecurityPolicy) *v1beta1.SecurityPolicy {
		p.SetGroupVersionKind(v1beta1.SecurityPolicyGroupVersionKind)
		return p
	}
	cases := map[string]struct {
		reason string
		mg     *v1beta1.SecurityPolicy
		want   map[string]string
	}{
		"ReadWithoutTypeMeta": {
			reason: "An object read from the cache may lack its kind: the kind given is used, made a GCP label.",
			mg:     policy("team-a", "edge", usingConfig("ProviderConfig", "default")),
			want: map[string]string{
				"crossplane-kind":                "securitypolicy_cloudarmor_armorplane_io",
				"crossplane-name":                "edge",
				"crossplane-namespace":           "team-a",
				"crossplane-providerconfig":      "default",
				"crossplane-providerconfig-kind": "providerconfig",
				LabelKey:                         l.Value(policy("team-a", "edge")),
			},
		},
		"TypedClusterProviderConfig": {
			reason: "Names with dots and a ClusterProviderConfig are sanitised the same way.",
			mg:     typed(policy("team-b", "edge.v2", usingConfig("ClusterProviderConfig", "shared.prod"))),
			want: map[string]string{
				"crossplane-kind":                "securitypolicy_cloudarmor_armorplane_io",
				"crossplane-name":                "edge_v2",
				"crossplane-namespace":           "team-b",
				"crossplane-providerconfig":      "shared_prod",
				"crossplane-providerconfig-kind": "clusterproviderconfig",
				LabelKey:                         l.Value(policy("team-b", "edge.v2")),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := l.ExternalLabels(tc.mg, schema.GroupKind{Group: v1beta1.Group, Kind: v1beta1.SecurityPolicyKind})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nExternalLabels(...): -want, +got:\n%s", tc.reason, diff)
			}
			for k := range got {
				if !slices.Contains(ProvidedLabelKeys, k) {
					t.Errorf("ExternalLabels(...) sets %q, which ProvidedLabelKeys lacks: admission would let users set it too", k)
				}
			}
		})
	}
}

func TestByOwnerLabel(t *testing.T) {
	const ours = "11111111111111111111111111111111"
	type want struct {
		role  verdict.Role
		other string
	}
	cases := map[string]struct {
		reason string
		labels map[string]string
		want   want
	}{
		"Ours": {
			reason: "Our own owner label: we own it.",
			labels: map[string]string{LabelKey: ours, "env": "prod"},
			want:   want{role: verdict.Owner},
		},
		"Unlabelled": {
			reason: "No owner label: adopted.",
			labels: map[string]string{"env": "prod"},
			want:   want{role: verdict.Adopter},
		},
		"NoLabels": {
			reason: "No labels at all: adopted.",
			want:   want{role: verdict.Adopter},
		},
		"Theirs": {
			reason: "Another's owner label: outranked, naming the other.",
			labels: map[string]string{LabelKey: "22222222222222222222222222222222"},
			want:   want{role: verdict.Outranked, other: "22222222222222222222222222222222"},
		},
		"Empty": {
			reason: "An owner label with an empty value is another's, not none.",
			labels: map[string]string{LabelKey: ""},
			want:   want{role: verdict.Outranked},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			role, other := ByOwnerLabel(tc.labels, ours)
			if diff := cmp.Diff(tc.want, want{role: role, other: other}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nByOwnerLabel(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
