package projectcloudarmortier

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	apisv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
)

var errBoom = &googleapi.Error{Code: http.StatusForbidden, Message: "boom"}

// object is a ProjectCloudArmorTier asking for tier.
func object(tier string, mod ...func(*v1alpha1.ProjectCloudArmorTier)) *v1alpha1.ProjectCloudArmorTier {
	cr := &v1alpha1.ProjectCloudArmorTier{ObjectMeta: metav1.ObjectMeta{Name: "tier", Namespace: "platform", UID: "me",
		CreationTimestamp: metav1.Unix(100, 0)}}
	cr.Spec.ForProvider.CloudArmorTier = tier
	cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: apisv1beta1.ProviderConfigKind, Name: "default"})
	for _, m := range mod {
		m(cr)
	}
	return cr
}

func policies(p ...xpv2.ManagementAction) func(*v1alpha1.ProjectCloudArmorTier) {
	return func(cr *v1alpha1.ProjectCloudArmorTier) { cr.SetManagementPolicies(p) }
}

func deleting(cr *v1alpha1.ProjectCloudArmorTier) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

func dryRunning(cr *v1alpha1.ProjectCloudArmorTier) {
	meta.AddAnnotations(cr, map[string]string{v1beta1.AnnotationDryRun: "true"})
}

// ownedBy answers that o owns every project.
type ownedBy struct {
	o   *v1alpha1.ProjectCloudArmorTier
	err error
}

func (f ownedBy) Owner(context.Context, string) (*v1alpha1.ProjectCloudArmorTier, error) {
	return f.o, f.err
}

func on(tier string) func(string) (string, error) {
	return func(string) (string, error) { return tier, nil }
}

func TestObserve(t *testing.T) {
	type want struct {
		o      managed.ExternalObservation
		err    string
		calls  []string
		atProv v1alpha1.ProjectCloudArmorTierObservation
		ready  corev1.ConditionStatus
		valid  xpv2.ConditionReason
	}
	other := object(v1alpha1.TierStandard, func(cr *v1alpha1.ProjectCloudArmorTier) { cr.SetUID("other"); cr.SetNamespace("team-a") })
	cases := map[string]struct {
		reason string
		tier   func(string) (string, error)
		owner  ownedBy
		cr     *v1alpha1.ProjectCloudArmorTier
		want   want
	}{
		"UpToDate": {
			reason: "The project on the tier the spec asks for is up to date and Ready, read from GCP.",
			tier:   on(v1alpha1.TierEnterprisePaygo),
			cr:     object(v1alpha1.TierEnterprisePaygo),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"FreshTier p"},
				atProv: v1alpha1.ProjectCloudArmorTierObservation{Project: "p", CloudArmorTier: v1alpha1.TierEnterprisePaygo}, ready: corev1.ConditionTrue},
		},
		"Differs": {
			reason: "Another tier needs an update, named in the diff; the tier always exists, so Create is never called.",
			tier:   on(v1alpha1.TierStandard),
			cr:     object(v1alpha1.TierEnterprisePaygo),
			want: want{o: managed.ExternalObservation{ResourceExists: true, Diff: "setCloudArmorTier CA_STANDARD -> CA_ENTERPRISE_PAYGO"}, calls: []string{"FreshTier p"},
				atProv: v1alpha1.ProjectCloudArmorTierObservation{Project: "p", CloudArmorTier: v1alpha1.TierStandard}, ready: corev1.ConditionTrue},
		},
		"ObserveOnly": {
			reason: "An observe-only object reports the tier and never asks who owns it.",
			tier:   on(v1alpha1.TierStandard),
			owner:  ownedBy{o: other},
			cr:     object(v1alpha1.TierEnterprisePaygo, policies(xpv2.ManagementActionObserve)),
			want: want{o: managed.ExternalObservation{ResourceExists: true, Diff: "setCloudArmorTier CA_STANDARD -> CA_ENTERPRISE_PAYGO"}, calls: []string{"FreshTier p"},
				atProv: v1alpha1.ProjectCloudArmorTierObservation{Project: "p", CloudArmorTier: v1alpha1.TierStandard}, ready: corev1.ConditionTrue},
		},
		"Outranked": {
			reason: "An older object writes the project's tier: this one is refused, naming it, and reads nothing from GCP.",
			owner:  ownedBy{o: other},
			cr:     object(v1alpha1.TierEnterprisePaygo),
			want: want{err: "ProjectCloudArmorTier team-a/tier, older than this object, sets the Cloud Armor tier of project p: a project has one tier, so this object makes no change to it. " +
				"Delete one of the two, or set managementPolicies [Observe] on this one to only report the tier"},
		},
		"Owner": {
			reason: "The object the index names is the owner.",
			tier:   on(v1alpha1.TierEnterprisePaygo),
			cr:     object(v1alpha1.TierEnterprisePaygo),
			owner:  ownedBy{o: object(v1alpha1.TierEnterprisePaygo)},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"FreshTier p"},
				atProv: v1alpha1.ProjectCloudArmorTierObservation{Project: "p", CloudArmorTier: v1alpha1.TierEnterprisePaygo}, ready: corev1.ConditionTrue},
		},
		"Deleting": {
			reason: "Deleting leaves the tier as it is: reported gone, so the finalizer goes, without a read.",
			cr:     object(v1alpha1.TierEnterprisePaygo, deleting),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"CannotRead": {
			reason: "GCP's refusal to read the project is the error.",
			tier:   func(string) (string, error) { return "", errBoom },
			cr:     object(v1alpha1.TierEnterprisePaygo),
			want:   want{err: errGetTier + ": googleapi: Error 403: boom", calls: []string{"FreshTier p"}},
		},
		"DryRunDiffers": {
			reason: "In dry run a change is reported, not made: setCloudArmorTier cannot be asked about.",
			tier:   on(v1alpha1.TierStandard),
			cr:     object(v1alpha1.TierEnterprisePaygo, dryRunning),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"FreshTier p"},
				atProv: v1alpha1.ProjectCloudArmorTierObservation{Project: "p", CloudArmorTier: v1alpha1.TierStandard}, ready: corev1.ConditionFalse, valid: v1beta1.ReasonNotAsked},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &gcptest.Projects{FreshTierFn: tc.tier}
			e := &external{projects: f, project: "p", owners: tc.owner, recorder: event.NewNopRecorder()}
			o, err := e.Observe(context.Background(), tc.cr)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.want.err, gotErr); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, o); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.Calls); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.atProv, tc.cr.Status.AtProvider); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want atProvider, +got:\n%s", tc.reason, diff)
			}
			if got := tc.cr.GetCondition(xpv2.TypeReady).Status; tc.want.ready != "" && got != tc.want.ready {
				t.Errorf("\n%s\nObserve(...): want Ready %s, got %s", tc.reason, tc.want.ready, got)
			}
			if got := tc.cr.GetCondition(v1beta1.TypeValidated).Reason; got != tc.want.valid {
				t.Errorf("\n%s\nObserve(...): want Validated reason %q, got %q", tc.reason, tc.want.valid, got)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		reason string
		set    error
		want   string
		calls  []string
	}{
		"Set": {
			reason: "Update makes one setCloudArmorTier with the spec's tier.",
			calls:  []string{"SetTier p CA_ENTERPRISE_ANNUAL"},
		},
		"Refused": {
			reason: "GCP's refusal is the error, wrapped.",
			set:    errBoom,
			want:   errSetTier + ": googleapi: Error 403: boom",
			calls:  []string{"SetTier p CA_ENTERPRISE_ANNUAL"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &gcptest.Projects{SetTierFn: func(string, string) error { return tc.set }}
			e := &external{projects: f, project: "p", recorder: event.NewNopRecorder()}
			_, err := e.Update(context.Background(), object(v1alpha1.TierEnterpriseAnnual))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.calls, f.Calls); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDeleteWritesNothing(t *testing.T) {
	f := &gcptest.Projects{}
	e := &external{projects: f, project: "p"}
	if _, err := e.Delete(context.Background(), object(v1alpha1.TierStandard)); err != nil {
		t.Fatal(err)
	}
	if len(f.Calls) != 0 {
		t.Errorf("Delete(...): want no call to GCP, got %v", f.Calls)
	}
}

func TestOwner(t *testing.T) {
	pc := func(ns, project string) *apisv1beta1.ProviderConfig {
		return &apisv1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
			Spec: apisv1beta1.ProviderConfigSpec{ProjectID: project}}
	}
	at := func(ns, name string, created int64, mod ...func(*v1alpha1.ProjectCloudArmorTier)) *v1alpha1.ProjectCloudArmorTier {
		return object(v1alpha1.TierStandard, append([]func(*v1alpha1.ProjectCloudArmorTier){func(cr *v1alpha1.ProjectCloudArmorTier) {
			cr.SetNamespace(ns)
			cr.SetName(name)
			cr.SetUID(types.UID(ns + "/" + name))
			cr.SetCreationTimestamp(metav1.Unix(created, 0))
		}}, mod...)...)
	}
	withProject := func(p string) func(*v1alpha1.ProjectCloudArmorTier) {
		return func(cr *v1alpha1.ProjectCloudArmorTier) { cr.Spec.ForProvider.Project = &p }
	}
	withFinalizer := func(cr *v1alpha1.ProjectCloudArmorTier) {
		cr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
		deleting(cr)
	}
	cases := map[string]struct {
		reason  string
		objects []*v1alpha1.ProjectCloudArmorTier
		want    string
	}{
		"Oldest": {
			reason:  "The oldest object naming the project owns its tier, whatever its namespace.",
			objects: []*v1alpha1.ProjectCloudArmorTier{at("b", "t", 2), at("a", "t", 3)},
			want:    "b/t",
		},
		"Tie": {
			reason:  "Objects of the same age are ordered by namespace, then name.",
			objects: []*v1alpha1.ProjectCloudArmorTier{at("b", "t", 2), at("a", "u", 2), at("a", "t", 2)},
			want:    "a/t",
		},
		"OtherProject": {
			reason:  "An older object naming another project, by spec or by its config, does not count.",
			objects: []*v1alpha1.ProjectCloudArmorTier{at("a", "t", 1, withProject("q")), at("c", "t", 1), at("b", "t", 2)},
			want:    "b/t",
		},
		"ObserverAndDeleting": {
			reason: "Objects that only observe, or are being deleted, own nothing.",
			objects: []*v1alpha1.ProjectCloudArmorTier{at("a", "t", 1, policies(xpv2.ManagementActionObserve)), at("a", "u", 1, withFinalizer),
				at("b", "t", 2)},
			want: "b/t",
		},
		"None": {
			reason: "No object naming the project: no owner.",
			want:   "",
		},
		"NotAdmitted": {
			reason:  "An older object whose config may not change the project does not outrank one whose config may.",
			objects: []*v1alpha1.ProjectCloudArmorTier{at("a", "refused", 1), at("b", "t", 2)},
			want:    "b/t",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = v1alpha1.SchemeBuilder.AddToScheme(s)
			_ = apisv1beta1.SchemeBuilder.AddToScheme(s)
			b := fake.NewClientBuilder().WithScheme(s).WithObjects(pc("a", "p"), pc("b", "p"), pc("c", "q"))
			for _, o := range tc.objects {
				b = b.WithObjects(o)
			}
			kube := b.Build()
			admit := func(_ context.Context, mg resource.ModernManaged) error {
				if mg.GetName() == "refused" {
					return errors.New("does not let namespace change project-wide settings")
				}
				return nil
			}
			o := &owners{kube: kube, projects: connector.NewProjects(kube), admit: admit}
			got, err := o.Owner(context.Background(), "p")
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.GetNamespace() + "/" + got.GetName()
			}
			if diff := cmp.Diff(tc.want, name); diff != "" {
				t.Errorf("\n%s\nOwner(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
