package setup

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// stubManager is the part of a manager NewReconciler uses.
type stubManager struct {
	ctrl.Manager
	client client.Client
	scheme *k8sruntime.Scheme
}

func (m stubManager) GetClient() client.Client      { return m.client }
func (m stubManager) GetScheme() *k8sruntime.Scheme { return m.scheme }
func (m stubManager) GetEventRecorderFor(string) record.EventRecorder {
	return record.NewFakeRecorder(100)
}

// A rule deleted seconds after it was created must not wait for
// crossplane-runtime's 30 s creation grace period: the e2e suite saw every
// such delete take 30 s, and a rule removed behind our back shortly after
// its create was not re-added for as long.
func TestReconcilerTrustsNotFoundRightAfterCreate(t *testing.T) {
	s := k8sruntime.NewScheme()
	if err := v1beta1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	type want struct {
		finalizerRemoved bool
		// requeue: the reconciler asks to come back (with backoff)
		// instead of finishing.
		requeue bool
	}
	cases := map[string]struct {
		reason  string
		deleted bool
		want    want
	}{
		"DeletedJustAfterCreate": {
			reason:  "A deleted object whose external resource is gone loses its finalizer at once.",
			deleted: true,
			want:    want{finalizerRemoved: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := &test.MockClient{
				MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
					cr := obj.(*v1beta1.SecurityPolicyRule)
					cr.SetName("rule")
					cr.SetNamespace("default")
					cr.SetFinalizers([]string{managed.FinalizerName})
					meta.SetExternalName(cr, "policy/100")
					meta.SetExternalCreateSucceeded(cr, time.Now().Add(-time.Second))
					if tc.deleted {
						now := metav1.Now()
						cr.SetDeletionTimestamp(&now)
					}
					return nil
				},
				MockUpdate:       test.NewMockUpdateFn(nil),
				MockPatch:        test.NewMockPatchFn(nil),
				MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil),
				MockStatusPatch:  test.NewMockSubResourcePatchFn(nil),
			}
			mgr := stubManager{client: kube, scheme: s}
			removed := false
			o := Options{}
			o.Logger = logging.NewNopLogger()
			opts := append(o.sharedReconcilerOptions("test", event.NewNopRecorder(), func(resource.Managed) string { return "" }),
				managed.WithInitializers(),
				managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })),
				managed.WithFinalizer(resource.FinalizerFns{
					AddFinalizerFn:    func(context.Context, resource.Object) error { return nil },
					RemoveFinalizerFn: func(context.Context, resource.Object) error { removed = true; return nil },
				}),
				managed.WithExternalConnector(managed.ExternalConnectorFn(func(context.Context, resource.Managed) (managed.ExternalClient, error) {
					return &managed.ExternalClientFns{
						ObserveFn: func(context.Context, resource.Managed) (managed.ExternalObservation, error) {
							return managed.ExternalObservation{ResourceExists: false}, nil
						},
						DisconnectFn: func(context.Context) error { return nil },
					}, nil
				})),
			)
			r := managed.NewReconciler(mgr, resource.ManagedKind(v1beta1.SecurityPolicyRuleGroupVersionKind), opts...)
			got, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}})
			if err != nil {
				t.Fatalf("\n%s\nReconcile(...): %v", tc.reason, err)
			}
			if removed != tc.want.finalizerRemoved {
				t.Errorf("\n%s\nReconcile(...): finalizer removed: want %t, got %t", tc.reason, tc.want.finalizerRemoved, removed)
			}
			if requeue := !got.IsZero(); requeue != tc.want.requeue {
				t.Errorf("\n%s\nReconcile(...): requeue: want %t, got %+v", tc.reason, tc.want.requeue, got)
			}
		})
	}
}

func TestControllerRateLimiter(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}}
	cases := map[string]struct {
		reason   string
		failures int
		want     time.Duration
	}{
		"First": {
			reason: "The requeue after a create comes back after the base delay, not crossplane-runtime's 1 s.",
			want:   baseRequeueDelay,
		},
		"Capped": {
			reason:   "Repeated failures back off to the maximum, so an error never hot-loops.",
			failures: 30,
			want:     maxRequeueDelay,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rl := newControllerRateLimiter()
			for range tc.failures {
				rl.When(req)
			}
			if got := rl.When(req); got != tc.want {
				t.Errorf("\n%s\nWhen(...): want %s, got %s", tc.reason, tc.want, got)
			}
		})
	}
}

// changeEntry is what recordingChangeLogger keeps of one Log call.
type changeEntry struct {
	Name      string
	Operation v1alpha1.OperationType
	Error     string
}

// recordingChangeLogger keeps every entry it is asked to log.
type recordingChangeLogger struct{ entries []changeEntry }

func (r *recordingChangeLogger) Log(_ context.Context, mg resource.Managed, op v1alpha1.OperationType, err error, _ managed.AdditionalDetails) error {
	e := changeEntry{Name: mg.GetName(), Operation: op}
	if err != nil {
		e.Error = err.Error()
	}
	r.entries = append(r.entries, e)
	return nil
}

// --enable-changelogs turns on the feature flag and sets the change logger
// in controller.Options; every kind's reconciler then logs each write it
// asks of GCP, and none when the flag is off.
func TestReconcilerLogsChanges(t *testing.T) {
	errQuota := errors.New("quota exceeded")
	s := k8sruntime.NewScheme()
	if err := v1beta1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason    string
		enabled   bool
		logger    bool
		createErr error
		want      []changeEntry
	}{
		"Create": {
			reason:  "With the feature on, a create is logged once.",
			enabled: true,
			logger:  true,
			want:    []changeEntry{{Name: "rule", Operation: v1alpha1.OperationType_OPERATION_TYPE_CREATE}},
		},
		"FailedCreate": {
			reason:    "A create GCP refused is logged with its error.",
			enabled:   true,
			logger:    true,
			createErr: errQuota,
			want:      []changeEntry{{Name: "rule", Operation: v1alpha1.OperationType_OPERATION_TYPE_CREATE, Error: errQuota.Error()}},
		},
		"FeatureOff": {
			reason: "A logger without the feature flag logs nothing.",
			logger: true,
		},
		"NoLogger": {
			reason:  "The feature flag without a logger must not panic, and logs nothing.",
			enabled: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := &test.MockClient{
				MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
					cr := obj.(*v1beta1.SecurityPolicyRule)
					cr.SetName("rule")
					cr.SetNamespace("default")
					cr.SetFinalizers([]string{managed.FinalizerName})
					meta.SetExternalName(cr, "policy/100")
					return nil
				},
				MockUpdate:       test.NewMockUpdateFn(nil),
				MockPatch:        test.NewMockPatchFn(nil),
				MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil),
				MockStatusPatch:  test.NewMockSubResourcePatchFn(nil),
			}
			mgr := stubManager{client: kube, scheme: s}
			rec := &recordingChangeLogger{}
			o := Options{}
			o.Logger = logging.NewNopLogger()
			o.Features = &feature.Flags{}
			if tc.enabled {
				o.Features.Enable(feature.EnableAlphaChangeLogs)
			}
			if tc.logger {
				o.ChangeLogOptions = &controller.ChangeLogOptions{ChangeLogger: rec}
			}
			opts := append(o.sharedReconcilerOptions("test", event.NewNopRecorder(), func(resource.Managed) string { return "" }),
				managed.WithInitializers(),
				managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })),
				managed.WithFinalizer(resource.FinalizerFns{
					AddFinalizerFn:    func(context.Context, resource.Object) error { return nil },
					RemoveFinalizerFn: func(context.Context, resource.Object) error { return nil },
				}),
				managed.WithExternalConnector(managed.ExternalConnectorFn(func(context.Context, resource.Managed) (managed.ExternalClient, error) {
					return &managed.ExternalClientFns{
						ObserveFn: func(context.Context, resource.Managed) (managed.ExternalObservation, error) {
							return managed.ExternalObservation{ResourceExists: false}, nil
						},
						CreateFn: func(context.Context, resource.Managed) (managed.ExternalCreation, error) {
							return managed.ExternalCreation{}, tc.createErr
						},
						DisconnectFn: func(context.Context) error { return nil },
					}, nil
				})),
			)
			r := managed.NewReconciler(mgr, resource.ManagedKind(v1beta1.SecurityPolicyRuleGroupVersionKind), opts...)
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "rule"}}); err != nil {
				t.Fatalf("\n%s\nReconcile(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, rec.entries); diff != "" {
				t.Errorf("\n%s\nchange log entries: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
