package setup

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// stubManager is the part of a manager ReconcilerOptions and NewReconciler use.
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
			opts := append(o.ReconcilerOptions(mgr, "test"),
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
			want:   BaseRequeueDelay,
		},
		"Capped": {
			reason:   "Repeated failures back off to the maximum, so an error never hot-loops.",
			failures: 30,
			want:     MaxRequeueDelay,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rl := NewControllerRateLimiter()
			for range tc.failures {
				rl.When(req)
			}
			if got := rl.When(req); got != tc.want {
				t.Errorf("\n%s\nWhen(...): want %s, got %s", tc.reason, tc.want, got)
			}
		})
	}
}

// listOptionsClient records the options of each List.
type listOptionsClient struct {
	client.Client
	lists []client.ListOptions
}

func (c *listOptionsClient) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	c.lists = append(c.lists, lo)
	return nil
}

// The state metrics recorder lists every managed resource every few
// seconds only to count conditions; a deep copy of each made megabytes of
// garbage every time.
func TestNoCopyListerListsWithoutDeepCopy(t *testing.T) {
	c := &listOptionsClient{}
	l := NoCopyLister{c}
	if err := l.List(context.Background(), &v1beta1.SecurityPolicyRuleList{}, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(c.lists) != 1 {
		t.Fatalf("lists: got %d, want 1", len(c.lists))
	}
	got := c.lists[0]
	if got.UnsafeDisableDeepCopy == nil || !*got.UnsafeDisableDeepCopy {
		t.Errorf("UnsafeDisableDeepCopy: got %v, want true", got.UnsafeDisableDeepCopy)
	}
	if got.Namespace != "ns" {
		t.Errorf("namespace: got %q, want the caller's option kept", got.Namespace)
	}
}

func TestDesiredStateChanged(t *testing.T) {
	const (
		pending   = meta.AnnotationKeyExternalCreatePending
		succeeded = meta.AnnotationKeyExternalCreateSucceeded
		failed    = meta.AnnotationKeyExternalCreateFailed
		name      = meta.AnnotationKeyExternalName
	)
	obj := func(generation int64, labels, annotations map[string]string) client.Object {
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Generation: generation, Labels: labels, Annotations: annotations}}
	}
	type args struct {
		old, new client.Object
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool
	}{
		"CreatePending": {
			reason: "The reconciler writes external-create-pending before it creates; it goes on by itself.",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{pending: "t1"})},
			want:   false,
		},
		"CreateSucceededWithExternalName": {
			reason: "The reconciler records a create and the external name it chose in one write, then requeues.",
			args: args{old: obj(1, nil, map[string]string{pending: "t1"}),
				new: obj(1, nil, map[string]string{pending: "t1", succeeded: "t2", name: "policy/1000"})},
			want: false,
		},
		"CreateFailed": {
			reason: "A failed create requeues by itself.",
			args:   args{old: obj(1, nil, map[string]string{pending: "t1"}), new: obj(1, nil, map[string]string{pending: "t1", failed: "t2"})},
			want:   false,
		},
		"StatusOnly": {
			reason: "A status update changes neither generation, labels nor annotations.",
			args:   args{old: obj(1, nil, map[string]string{name: "p"}), new: obj(1, nil, map[string]string{name: "p"})},
			want:   false,
		},
		"ExternalNameChangedByUser": {
			reason: "Changing the external name of an object that has one is the user's doing.",
			args:   args{old: obj(1, nil, map[string]string{name: "a"}), new: obj(1, nil, map[string]string{name: "b"})},
			want:   true,
		},
		"ExternalNameSetWithoutCreate": {
			reason: "Setting an external name outside a create is the user's doing (say, to import).",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{name: "b"})},
			want:   true,
		},
		"ExternalNameRemoved": {
			reason: "Removing an annotation is a change.",
			args:   args{old: obj(1, nil, map[string]string{name: "a", succeeded: "t"}), new: obj(1, nil, map[string]string{succeeded: "t"})},
			want:   true,
		},
		"UserAnnotation": {
			reason: "Any other annotation may change what the reconciler does (say, pausing it).",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{"crossplane.io/paused": "true"})},
			want:   true,
		},
		"Spec": {
			reason: "A spec change bumps the generation.",
			args:   args{old: obj(1, nil, nil), new: obj(2, nil, nil)},
			want:   true,
		},
		"Labels": {
			reason: "A label change passes, as in crossplane-runtime.",
			args:   args{old: obj(1, nil, nil), new: obj(1, map[string]string{"team": "a"}, nil)},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := DesiredStateChanged().Update(ctrlevent.UpdateEvent{ObjectOld: tc.args.old, ObjectNew: tc.args.new})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
