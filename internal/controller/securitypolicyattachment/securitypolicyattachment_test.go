package securitypolicyattachment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const (
	project = "p"
	ours    = "projects/p/global/securityPolicies/armor"
	theirs  = "projects/p/global/securityPolicies/other"
)

// fixture is a fresh emulator holding policies armor and other and the
// backend services web (using held, if set) and k8s1-abc-team-web-80-def
// (made by GKE's Ingress), and the compute service behind the external's
// back.
func fixture(t *testing.T, held string) (*compute.Service, gcp.BackendClient) {
	t.Helper()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := gcp.NewClient(svc, nil, nil)
	ctx := context.Background()
	for _, n := range []string{"armor", "other"} {
		if err := c.Policies(project, "").Insert(ctx, &compute.SecurityPolicy{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []*compute.BackendService{
		{Name: "web", SecurityPolicy: held},
		{Name: "k8s1-abc-team-web-80-def", Description: `{"kubernetes.io/service-name":"team/web","kubernetes.io/service-port":"80"}`},
	} {
		op, err := svc.BackendServices.Insert(project, b).Do()
		if err == nil {
			err = gcp.WaitForOperation(ctx, svc, project, "", op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return svc, c.Backends()
}

func attachment(mod ...func(*v1alpha1.SecurityPolicyAttachment)) *v1alpha1.SecurityPolicyAttachment {
	cr := &v1alpha1.SecurityPolicyAttachment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Generation: 1}}
	cr.Spec.ForProvider = v1alpha1.SecurityPolicyAttachmentParameters{SecurityPolicy: ptr.To("armor"),
		Target: v1alpha1.AttachmentTarget{Kind: v1alpha1.TargetBackendService, Name: "web"}, Field: v1alpha1.FieldSecurityPolicy}
	for _, m := range mod {
		m(cr)
	}
	return cr
}

func target(name string) func(*v1alpha1.SecurityPolicyAttachment) {
	return func(cr *v1alpha1.SecurityPolicyAttachment) { cr.Spec.ForProvider.Target.Name = name }
}

func deleting(cr *v1alpha1.SecurityPolicyAttachment) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

func applied(at time.Time) func(*v1alpha1.SecurityPolicyAttachment) {
	return func(cr *v1alpha1.SecurityPolicyAttachment) {
		t := metav1.NewTime(at)
		cr.Status.AtProvider.AppliedPolicy, cr.Status.AtProvider.LastAppliedTime = ours, &t
	}
}

// noOthers is a cache holding no other attachment.
func noOthers() client.Reader {
	return &test.MockClient{MockList: test.NewMockListFn(nil)}
}

func newExternal(backends gcp.BackendClient, kube client.Reader, cr *v1alpha1.SecurityPolicyAttachment, now time.Time) *external {
	return &external{backends: backends, key: Key(cr, project), index: ownership.NewIndex(kube), kube: kube,
		fight: DefaultFight, now: func() time.Time { return now }, records: Records{kube: recordStore()}}
}

// recordStore is an empty store of AttachmentRecords.
func recordStore() client.Client {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return fake.NewClientBuilder().WithScheme(s).Build()
}

func TestObserve(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	type want struct {
		obs   managed.ExternalObservation
		err   string // a substring of the error
		ready corev1.ConditionStatus
		gke   xpv2.ConditionReason
	}
	cases := map[string]struct {
		reason string
		held   string // the policy web names in GCP
		wrote  bool   // the provider recorded writing ours over no policy
		obj    *v1alpha1.SecurityPolicyAttachment
		kube   client.Reader
		want   want
	}{
		"Unresolved": {
			reason: "A policy reference not resolved yet waits, without an error or a write.",
			obj:    attachment(func(cr *v1alpha1.SecurityPolicyAttachment) { cr.Spec.ForProvider.SecurityPolicy = nil }),
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"NoTarget": {
			reason: "A target GCP does not have waits for it, not Ready.",
			obj:    attachment(target("nope")),
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, ready: corev1.ConditionFalse},
		},
		"NoTargetDeleting": {
			reason: "Being deleted with its target gone, nothing is left to clear.",
			obj:    attachment(target("nope"), deleting),
			want:   want{obs: managed.ExternalObservation{}, ready: corev1.ConditionFalse},
		},
		"Unattached": {
			reason: "A field naming no policy is written: not up to date.",
			obj:    attachment(),
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: "securityPolicy: no policy, want " + ours},
				ready: corev1.ConditionFalse},
		},
		"Attached": {
			reason: "A field naming the policy is up to date.",
			held:   ours,
			obj:    attachment(applied(now.Add(-time.Minute))),
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, ready: corev1.ConditionTrue},
		},
		"Reversed": {
			reason: "Our write undone: an error saying who won and when this object writes again.",
			held:   theirs,
			obj:    attachment(applied(now.Add(-time.Minute))),
			want:   want{err: "another writer set securityPolicy of projects/p/global/backendServices/web back to " + theirs, ready: corev1.ConditionFalse},
		},
		"DeletingAttached": {
			reason: "Being deleted while the field names the policy the provider recorded it writing: Delete restores what it replaced.",
			held:   ours,
			wrote:  true,
			obj:    attachment(applied(now.Add(-time.Minute)), deleting),
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, ready: corev1.ConditionTrue},
		},
		"DeletingAdopted": {
			reason: "Being deleted while the field names the policy it found there (no record of a write, whatever the status says): nothing to restore, the finalizer may go.",
			held:   ours,
			obj:    attachment(applied(now.Add(-time.Minute)), deleting),
			want:   want{obs: managed.ExternalObservation{}, ready: corev1.ConditionTrue},
		},
		"DeletingSetElsewhere": {
			reason: "Being deleted while the field names another policy: nothing to clear, the finalizer may go.",
			held:   theirs,
			obj:    attachment(applied(now.Add(-time.Minute)), deleting),
			want:   want{obs: managed.ExternalObservation{}, ready: corev1.ConditionFalse},
		},
		"ObserveOnly": {
			reason: "An object that only observes reports the field and never fights.",
			held:   theirs,
			obj: attachment(applied(now.Add(-time.Minute)), func(cr *v1alpha1.SecurityPolicyAttachment) {
				cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
			}),
			want: want{obs: managed.ExternalObservation{ResourceExists: true}, ready: corev1.ConditionFalse},
		},
		"DryRun": {
			reason: "In dry run nothing is written: the field differs, Ready says so, and GCP cannot be asked.",
			held:   theirs,
			obj: attachment(func(cr *v1alpha1.SecurityPolicyAttachment) {
				cr.SetAnnotations(map[string]string{v1beta1.AnnotationDryRun: "true"})
			}),
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, ready: corev1.ConditionFalse},
		},
		"GKEManaged": {
			reason: "A backend service GKE's Ingress made is written, with a warning naming the BackendConfig to use.",
			obj:    attachment(target("k8s1-abc-team-web-80-def")),
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: "securityPolicy: no policy, want " + ours},
				ready: corev1.ConditionFalse, gke: ReasonGKEIngress},
		},
		"OtherProjectsPolicy": {
			reason: "A URL of another project's policy is attached as named: GCP decides whether it may be used.",
			obj: attachment(func(cr *v1alpha1.SecurityPolicyAttachment) {
				cr.Spec.ForProvider.SecurityPolicy = ptr.To("https://www.googleapis.com/compute/v1/projects/shared/global/securityPolicies/common")
			}),
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: "securityPolicy: no policy, want projects/shared/global/securityPolicies/common"},
				ready: corev1.ConditionFalse},
		},
		"Outranked": {
			reason: "An older attachment of the same field owns it: refused, nothing read or written.",
			obj:    attachment(),
			// Its config admits every namespace and grants it every
			// backend service; the provider recorded no write.
			kube: &test.MockClient{MockGet: grantingAll, MockList: test.NewMockListFn(nil, func(o client.ObjectList) error {
				older := attachment()
				older.SetName("first")
				older.SetUID("older")
				older.Spec.ForProvider.Project = ptr.To(project)
				older.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"})
				older.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour)))
				o.(*v1alpha1.SecurityPolicyAttachmentList).Items = []v1alpha1.SecurityPolicyAttachment{*older}
				return nil
			})},
			want: want{err: "is managed by SecurityPolicyAttachment team/first, the oldest object for it"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			held := ""
			if tc.held != "" {
				held = apiRoot + tc.held
			}
			_, backends := fixture(t, held)
			kube := tc.kube
			if kube == nil {
				kube = noOthers()
			}
			tc.obj.SetCreationTimestamp(metav1.NewTime(now))
			e := newExternal(backends, kube, tc.obj, now)
			if tc.wrote {
				if err := e.records.Written(context.Background(), tc.obj, "projects/p/global/backendServices/web", "", ours, metav1.NewTime(now)); err != nil {
					t.Fatal(err)
				}
			}
			obs, err := e.Observe(context.Background(), tc.obj)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Errorf("\n%s\nObserve(...): want error containing %q, got %v", tc.reason, tc.want.err, err)
				}
			} else if err != nil {
				t.Errorf("\n%s\nObserve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.obs, obs); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got := tc.obj.GetCondition(xpv2.TypeReady).Status; tc.want.ready != "" && got != tc.want.ready {
				t.Errorf("\n%s\nReady: want %s, got %s", tc.reason, tc.want.ready, got)
			}
			if got := tc.obj.GetCondition(TypeGKEManaged).Reason; got != tc.want.gke {
				t.Errorf("\n%s\nGKEManaged reason: want %q, got %q", tc.reason, tc.want.gke, got)
			}
		})
	}
}

func TestUpdateAndDelete(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	setTo := func(policy string) func(*testing.T, *compute.Service) {
		return func(t *testing.T, svc *compute.Service) {
			t.Helper()
			op, err := svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: policy}).Do()
			if err == nil {
				err = gcp.WaitForOperation(context.Background(), svc, project, "", op)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := map[string]struct {
		reason string
		held   string // what web names before the attachment
		obj    *v1alpha1.SecurityPolicyAttachment
		write  bool                               // Observe, then Update
		then   func(*testing.T, *compute.Service) // another writer, after the write
		want   string                             // what web names after Delete
	}{
		"WroteOverNothing": {reason: "An attachment that set an empty field clears it on delete.",
			obj: attachment(), write: true, want: ""},
		"WroteOverOther": {reason: "An attachment that replaced policy other puts other back on delete.",
			held: theirs, obj: attachment(), write: true, want: theirs},
		"ChangedSince": {reason: "A field another writer set after the attachment's write is theirs: delete leaves it.",
			obj: attachment(), write: true, then: setTo("other"), want: theirs},
		"NeverWrote": {reason: "An attachment that found its policy already there (set outside Kubernetes) never wrote: delete clears nothing.",
			held: ours, obj: attachment(), want: ours},
		"ForgedStatus": {reason: "A status claiming a write (a tenant may write its status) is not the provider's record: delete clears nothing.",
			held: ours, obj: attachment(applied(now.Add(-time.Hour))), want: ours},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			held := ""
			if tc.held != "" {
				held = apiRoot + tc.held
			}
			svc, backends := fixture(t, held)
			ctx := context.Background()
			cr := tc.obj
			cr.SetUID("uid-web")
			e := newExternal(backends, noOthers(), cr, now)
			if tc.write {
				if _, err := e.Observe(ctx, cr); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Update(ctx, cr); err != nil {
					t.Fatal(err)
				}
				want := v1alpha1.SecurityPolicyAttachmentObservation{Value: ours, AppliedPolicy: ours, LastAppliedTime: &metav1.Time{Time: now}}
				if diff := cmp.Diff(want, cr.Status.AtProvider, cmpopts.IgnoreFields(v1alpha1.SecurityPolicyAttachmentObservation{}, "Target")); diff != "" {
					t.Errorf("\n%s\nafter Update: status -want, +got:\n%s", tc.reason, diff)
				}
			}
			if tc.then != nil {
				tc.then(t, svc)
			}
			if _, err := e.Delete(ctx, cr); err != nil {
				t.Fatal(err)
			}
			b, err := svc.BackendServices.Get(project, "web").Do()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, gcp.RelativeName(b.SecurityPolicy)); diff != "" {
				t.Errorf("\n%s\nsecurityPolicy after Delete: -want, +got:\n%s", tc.reason, diff)
			}
			if rec, err := e.records.Get(ctx, cr); err != nil || rec != nil {
				t.Errorf("\n%s\nafter Delete: record %v, err %v; want it forgotten", tc.reason, rec, err)
			}
		})
	}
}

func TestRestoreOnDelete(t *testing.T) {
	rec := func(written, replaced string) *v1alpha1.AttachmentRecord {
		return &v1alpha1.AttachmentRecord{Spec: v1alpha1.AttachmentRecordSpec{Written: written, Replaced: replaced}}
	}
	cases := map[string]struct {
		reason string
		rec    *v1alpha1.AttachmentRecord
		held   string
		want   Restore
	}{
		"NeverWrote":     {reason: "No record: the attachment never wrote, so it clears nothing.", held: ours},
		"ClearsItsOwn":   {reason: "It replaced no policy: delete clears the field.", rec: rec(ours, ""), held: ours, want: Restore{Write: true}},
		"RestoresOther":  {reason: "It replaced other: delete puts other back.", rec: rec(ours, theirs), held: ours, want: Restore{Write: true, Value: theirs}},
		"ChangedSince":   {reason: "The field no longer names what it wrote: left as it is.", rec: rec(ours, ""), held: theirs},
		"AlreadyCleared": {reason: "The field is empty: left as it is.", rec: rec(ours, theirs), held: ""},
		"SameAsReplaced": {reason: "It wrote what was already there: nothing to restore.", rec: rec(ours, ours), held: ours},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RestoreOnDelete(tc.rec, tc.held)); diff != "" {
				t.Errorf("\n%s\nRestoreOnDelete(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPolicyName(t *testing.T) {
	cases := map[string]struct {
		policy string
		key    gcp.TargetKey
		want   string
		err    bool
	}{
		"GlobalName":   {policy: "armor", key: gcp.TargetKey{Project: "p", Name: "web"}, want: "projects/p/global/securityPolicies/armor"},
		"RegionalName": {policy: "armor", key: gcp.TargetKey{Project: "p", Region: "r", Name: "web"}, want: "projects/p/regions/r/securityPolicies/armor"},
		"URL": {policy: "https://www.googleapis.com/compute/v1/projects/q/global/securityPolicies/shared",
			key: gcp.TargetKey{Project: "p", Name: "web"}, want: "projects/q/global/securityPolicies/shared"},
		"NotAPolicy": {policy: "projects/p/global/backendServices/web", key: gcp.TargetKey{Project: "p"}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := attachment(func(cr *v1alpha1.SecurityPolicyAttachment) { cr.Spec.ForProvider.SecurityPolicy = &tc.policy })
			got, _, err := PolicyName(cr, tc.key)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("PolicyName(%q): got %q, %v; want %q (error %t)", tc.policy, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestGKECondition(t *testing.T) {
	cases := map[string]struct {
		target gcp.Target
		bucket bool
		want   xpv2.ConditionReason
		names  string // a substring of the message
	}{
		"Ingress":        {target: gcp.Target{Name: "k8s1-abc-team-web-80-def"}, want: ReasonGKEIngress, names: "BackendConfig"},
		"InstanceGroups": {target: gcp.Target{Name: "k8s-be-31000--abc"}, want: ReasonGKEIngress, names: "BackendConfig"},
		"Gateway": {target: gcp.Target{Name: "gkegw1-abc-team-web-80-def", Description: `{"kubernetes.io/service-name":"team/web","kubernetes.io/service-port":"80"}`},
			want: ReasonGKEGateway, names: "GCPBackendPolicy of Service team/web port 80"},
		"Description": {target: gcp.Target{Name: "web", Description: `{"kubernetes.io/service-name":"team/web"}`}, want: ReasonGKE, names: "Service team/web"},
		"Plain":       {target: gcp.Target{Name: "web", Description: "the web tier"}},
		"Bucket":      {target: gcp.Target{Name: "k8s1-looks-like-gke"}, bucket: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := gkeCondition("securityPolicy", gcp.TargetKey{Project: "p", Name: tc.target.Name, Bucket: tc.bucket}, &tc.target)
			if c.Reason != tc.want || ok != (tc.want != "") || !strings.Contains(c.Message, tc.names) {
				t.Errorf("gkeCondition: %v %+v; want reason %q naming %q", ok, c, tc.want, tc.names)
			}
		})
	}
}

// grantingAll reads every ClusterProviderConfig as one that admits every
// namespace and grants every backend service, and finds no AttachmentRecord.
func grantingAll(_ context.Context, key client.ObjectKey, o client.Object) error {
	switch o := o.(type) {
	case *pcv1beta1.ClusterProviderConfig:
		o.Spec.ProjectID = project
		o.Spec.AttachmentGrants = []pcv1beta1.AttachmentGrant{{Targets: []pcv1beta1.AttachmentGrantTarget{{Kind: v1alpha1.TargetBackendService, Names: []string{"*"}}}}}
	case *v1alpha1.AttachmentRecord:
		return kerrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	return nil
}

func TestRefused(t *testing.T) {
	const why = "not granted"
	type want struct {
		obs    managed.ExternalObservation
		err    string
		forgot bool
	}
	cases := map[string]struct {
		reason string
		obj    *v1alpha1.SecurityPolicyAttachment
		want   want
	}{
		"Refused": {reason: "An attachment whose target is not granted reports why and makes no call to GCP (refused holds no GCP client).",
			obj: attachment(), want: want{err: why}},
		"Deleting": {reason: "Being deleted, it leaves the field as it is (Released: no Delete call) and forgets any record of earlier writes.",
			obj: attachment(deleting), want: want{obs: managed.ExternalObservation{ResourceExists: false}, forgot: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tc.obj.SetUID("uid-web")
			records := Records{kube: recordStore()}
			if err := records.Written(ctx, tc.obj, "projects/p/global/backendServices/web", "", ours, metav1.Now()); err != nil {
				t.Fatal(err)
			}
			r := &refused{why: why, records: records}
			obs, err := r.Observe(ctx, tc.obj)
			got := want{obs: obs}
			if err != nil {
				got.err = err.Error()
			}
			rec, gerr := records.Get(ctx, tc.obj)
			if gerr != nil {
				t.Fatal(gerr)
			}
			got.forgot = rec == nil
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestForget(t *testing.T) {
	gr := schema.GroupResource{Group: "cloudarmor.armorplane.io", Resource: "attachmentrecords"}
	errBoom := errors.New("boom")
	cases := map[string]struct {
		reason string
		delete error
		want   error
	}{
		"Deleted":   {reason: "A record deleted is forgotten."},
		"NotFound":  {reason: "A record that is not there is forgotten already.", delete: kerrors.NewNotFound(gr, "spa-1")},
		"Forbidden": {reason: "A record the provider may no longer delete (its grant went first) must not keep the attachment from being deleted.", delete: kerrors.NewForbidden(gr, "spa-1", errBoom)},
		"Other":     {reason: "Any other error is retried.", delete: errBoom, want: errors.Wrap(errBoom, errDeleteRecord)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := Records{kube: &test.MockClient{MockDelete: test.NewMockDeleteFn(tc.delete)}}
			cr := &v1alpha1.SecurityPolicyAttachment{ObjectMeta: metav1.ObjectMeta{UID: "1"}}
			if diff := cmp.Diff(tc.want, r.Forget(context.Background(), cr), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nForget(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}
