package ownership

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// attachmentWorld returns a client over objs with the index
// SetupAttachmentIndexes registers and the default ClusterProviderConfig.
func attachmentWorld(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rec := &recordingIndexer{}
	if err := SetupAttachmentIndexes(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(grantAll(clusterConfig("default", project))).WithObjects(objs...)
	// Grants are decided by namespace labels: every attachment's namespace
	// exists, unlabelled unless objs has it.
	have := map[string]bool{}
	for _, o := range objs {
		if _, ok := o.(*corev1.Namespace); ok {
			have[o.GetName()] = true
		}
	}
	for _, o := range objs {
		if _, ok := o.(*v1alpha1.SecurityPolicyAttachment); ok && !have[o.GetNamespace()] {
			have[o.GetNamespace()] = true
			b = b.WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetNamespace()}})
		}
	}
	for _, c := range rec.calls {
		b = b.WithIndex(c.obj, c.field, c.extract)
	}
	return b.Build()
}

// attachment returns the attachment ns/name of the securityPolicy of the
// global backend service web, created at offset 0.
func attachment(ns, name string, o ...option) *v1alpha1.SecurityPolicyAttachment {
	a := &v1alpha1.SecurityPolicyAttachment{}
	a.SetNamespace(ns)
	a.SetName(name)
	a.Spec.ForProvider = v1alpha1.SecurityPolicyAttachmentParameters{SecurityPolicy: ptr.To("armor"),
		Target: v1alpha1.AttachmentTarget{Kind: v1alpha1.TargetBackendService, Name: "web"}, Field: v1alpha1.FieldSecurityPolicy}
	initialise(a, o)
	return a
}

func onField(f string) option {
	return func(mg managedObject) { mg.(*v1alpha1.SecurityPolicyAttachment).Spec.ForProvider.Field = f }
}

func TestAttachmentStanding(t *testing.T) {
	cases := map[string]struct {
		reason string
		others []client.Object
		cr     *v1alpha1.SecurityPolicyAttachment
		want   string // a substring of the refusal; "" for none
	}{
		"Alone": {
			reason: "The only attachment of a field owns it.",
			cr:     attachment("team-a", "web"),
		},
		"Older": {
			reason: "An older attachment of the same field, in another namespace, owns it.",
			others: []client.Object{attachment("team-b", "first")},
			cr:     attachment("team-a", "web", createdAt(5)),
			want:   "the securityPolicy of projects/" + project + "/global/backendServices/web is managed by SecurityPolicyAttachment team-b/first",
		},
		"Newer": {
			reason: "A newer attachment of the same field does not outrank this one.",
			others: []client.Object{attachment("team-b", "second", createdAt(5))},
			cr:     attachment("team-a", "web"),
		},
		"SameSecondWriterFirst": {
			reason: "Of two attachments created in the same second, the one the provider recorded writing the field owns it, whatever the names.",
			others: []client.Object{attachment("team-b", "wrote"), record("team-b/wrote")},
			cr:     attachment("team-a", "web"),
			want:   "is managed by SecurityPolicyAttachment team-b/wrote",
		},
		"WroteFirst": {
			reason: "An attachment the provider recorded writing the field is not outranked by an unwritten one that sorts first.",
			others: []client.Object{attachment("team-0", "never-wrote"), record("team-a/web")},
			cr:     attachment("team-a", "web"),
		},
		"ForgedStatusDoesNotRank": {
			reason: "A status claiming a write (a tenant may write its attachment's status) is not the provider's record: of two attachments created in the same second, the first by name owns.",
			others: []client.Object{attachment("team-b", "forged", func(mg managedObject) {
				now := metav1.Now()
				mg.(*v1alpha1.SecurityPolicyAttachment).Status.AtProvider.LastAppliedTime = &now
			})},
			cr: attachment("team-a", "web"),
		},
		"ForgedAnnotationDoesNotRank": {
			reason: "Nor does the annotation crossplane.io/external-create-succeeded: a younger annotated attachment is outranked by the older one.",
			others: []client.Object{attachment("team-b", "first")},
			cr:     attachment("team-a", "web", createdAt(5), createSucceeded()),
			want:   "is managed by SecurityPolicyAttachment team-b/first",
		},
		"NotGranted": {
			reason: "An older attachment whose namespace its config grants no such target cannot write, so it owns nothing: a tenant may not hold another's backend by naming it first.",
			others: []client.Object{clusterConfig("ungranted", project),
				attachment("team-b", "first", usingConfig("ClusterProviderConfig", "ungranted"))},
			cr: attachment("team-a", "web", createdAt(5)),
		},
		"OtherField": {
			reason: "An attachment of the other field of the same target is no rival.",
			others: []client.Object{attachment("team-b", "edge", onField(v1alpha1.FieldEdgeSecurityPolicy))},
			cr:     attachment("team-a", "web", createdAt(5)),
		},
		"ObserveOnly": {
			reason: "An attachment that only observes owns nothing.",
			others: []client.Object{attachment("team-b", "watcher", observeOnly())},
			cr:     attachment("team-a", "web", createdAt(5)),
		},
		"NotAdmitted": {
			reason: "An older attachment in a namespace its config does not admit cannot write, so it owns nothing.",
			others: []client.Object{restrictedConfig(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outsider"}},
				attachment("outsider", "first", usingConfig("ClusterProviderConfig", "restricted"))},
			cr: attachment("team-a", "web", createdAt(5)),
		},
		"Admitted": {
			reason: "An older attachment in a namespace its config admits owns the field.",
			others: []client.Object{restrictedConfig(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"tenant": "yes"}}},
				attachment("team-b", "first", usingConfig("ClusterProviderConfig", "restricted"))},
			cr:   attachment("team-a", "web", createdAt(5)),
			want: "is managed by SecurityPolicyAttachment team-b/first",
		},
		"OtherProject": {
			reason: "An attachment of the same field of another project's target is no rival.",
			others: []client.Object{attachment("team-b", "elsewhere", func(mg managedObject) {
				mg.(*v1alpha1.SecurityPolicyAttachment).Spec.ForProvider.Project = ptr.To("other-project")
			})},
			cr: attachment("team-a", "web", createdAt(5)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := attachmentWorld(t, append(tc.others, tc.cr)...)
			got, err := NewIndex(kube).AttachmentStanding(context.Background(), tc.cr, project)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("\n%s\nAttachmentStanding(...): want %q, got %q", tc.reason, tc.want, got)
			}
		})
	}
}

// restrictedConfig is the ClusterProviderConfig "restricted" (project p1),
// admitting only namespaces labelled tenant=yes.
func restrictedConfig() *pcv1beta1.ClusterProviderConfig {
	cpc := grantAll(clusterConfig("restricted", project))
	cpc.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}
	return cpc
}

// grantAll grants every namespace every backend service through cpc.
func grantAll(cpc *pcv1beta1.ClusterProviderConfig) *pcv1beta1.ClusterProviderConfig {
	cpc.Spec.AttachmentGrants = []pcv1beta1.AttachmentGrant{{Targets: []pcv1beta1.AttachmentGrantTarget{{Kind: v1alpha1.TargetBackendService, Names: []string{"*"}}}}}
	return cpc
}

// record is the provider's record that the attachment whose UID is uid
// wrote its field.
func record(uid string) *v1alpha1.AttachmentRecord {
	return &v1alpha1.AttachmentRecord{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AttachmentRecordName(uid)}}
}
