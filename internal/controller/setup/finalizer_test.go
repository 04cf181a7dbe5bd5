package setup

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// write is what one Update of the object carried that matters here.
type write struct {
	Finalizers []string
	Pending    bool
	Succeeded  bool
}

// The finalizer must reach the API server before the external resource is
// created, in the same write as external-create-pending, and must still be
// added by an Update of its own when no Create follows but an external
// resource exists.
func TestFinalizeWithCreate(t *testing.T) {
	s := k8sruntime.NewScheme()
	if err := v1beta1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	type args struct {
		exists   bool
		deleted  bool
		policies xpv2.ManagementPolicies
	}
	type want struct {
		writes  []write
		created bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Create": {
			reason: "The finalizer goes out with external-create-pending, before Create, and no write of its own.",
			args:   args{},
			want: want{created: true, writes: []write{
				{Finalizers: []string{managed.FinalizerName}, Pending: true},
				{Finalizers: []string{managed.FinalizerName}, Pending: true, Succeeded: true},
			}},
		},
		"ExistsAlready": {
			reason: "An object whose external resource exists (an import) gets its finalizer in a write of its own.",
			args:   args{exists: true},
			want:   want{writes: []write{{Finalizers: []string{managed.FinalizerName}}}},
		},
		"ObserveOnlyAndMissing": {
			reason: "An observed object with nothing outside to protect is not written at all.",
			args:   args{policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
			want:   want{},
		},
		"DeletedAndMissing": {
			reason: "A deleted object never gets the finalizer back.",
			args:   args{deleted: true},
			want:   want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var writes []write
			kube := &test.MockClient{
				MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
					cr := obj.(*v1beta1.SecurityPolicyRule)
					cr.SetName("rule")
					cr.SetNamespace("default")
					cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionAll})
					if tc.args.policies != nil {
						cr.SetManagementPolicies(tc.args.policies)
					}
					if tc.args.deleted {
						now := metav1.Now()
						cr.SetDeletionTimestamp(&now)
					}
					return nil
				},
				MockUpdate: func(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
					a := obj.GetAnnotations()
					writes = append(writes, write{Finalizers: obj.GetFinalizers(),
						Pending: a[meta.AnnotationKeyExternalCreatePending] != "", Succeeded: a[meta.AnnotationKeyExternalCreateSucceeded] != ""})
					return nil
				},
				MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil),
			}
			created := false
			ext := managed.TypedExternalConnectorFn[*v1beta1.SecurityPolicyRule](func(context.Context, *v1beta1.SecurityPolicyRule) (managed.TypedExternalClient[*v1beta1.SecurityPolicyRule], error) {
				return &managed.TypedExternalClientFns[*v1beta1.SecurityPolicyRule]{
					ObserveFn: func(context.Context, *v1beta1.SecurityPolicyRule) (managed.ExternalObservation, error) {
						return managed.ExternalObservation{ResourceExists: tc.args.exists, ResourceUpToDate: true}, nil
					},
					CreateFn: func(context.Context, *v1beta1.SecurityPolicyRule) (managed.ExternalCreation, error) {
						created = true
						return managed.ExternalCreation{}, nil
					},
					DisconnectFn: func(context.Context) error { return nil },
				}, nil
			})
			o := Options{}
			o.Logger = logging.NewNopLogger()
			opts := append(o.ReconcilerOptions(stubManager{client: kube, scheme: s}, "test"),
				managed.WithInitializers(),
				managed.WithManagementPolicies(),
				managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })),
				managed.WithTypedExternalConnector(FinalizeWithCreate[*v1beta1.SecurityPolicyRule](ext)),
			)
			r := managed.NewReconciler(stubManager{client: kube, scheme: s}, resource.ManagedKind(v1beta1.SecurityPolicyRuleGroupVersionKind), opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}}); err != nil {
				t.Fatalf("\n%s\nReconcile(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.writes, writes); diff != "" {
				t.Errorf("\n%s\nReconcile(...): Updates: -want, +got:\n%s", tc.reason, diff)
			}
			if created != tc.want.created {
				t.Errorf("\n%s\nReconcile(...): created: want %t, got %t", tc.reason, tc.want.created, created)
			}
		})
	}
}
