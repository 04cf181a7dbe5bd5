package setup

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestKeepStatus(t *testing.T) {
	errBoom := errors.New("boom")
	observed := func() *v1beta1.SecurityPolicy {
		sp := &v1beta1.SecurityPolicy{}
		sp.SetName("legacy")
		sp.SetConditions(xpv2.Available())
		sp.Status.AtProvider.RuleCount = 3
		return sp
	}
	cases := map[string]struct {
		reason    string
		cr        *v1beta1.SecurityPolicy
		update    error
		updates   int
		finalizer bool
		err       error
	}{
		"AddsAndKeeps": {
			reason:    "The finalizer is added and the status Observe set survives the update, whose answer holds the stored (empty) status.",
			cr:        observed(),
			updates:   1,
			finalizer: true,
		},
		"UpdateFails": {
			reason:    "A failed update is returned, and the status is kept for the reconciler to report it.",
			cr:        observed(),
			update:    errBoom,
			updates:   1,
			finalizer: true,
			err:       errBoom,
		},
		"AlreadyThere": {
			reason: "An object that has the finalizer is not written.",
			cr: func() *v1beta1.SecurityPolicy {
				sp := observed()
				meta.AddFinalizer(sp, managed.FinalizerName)
				return sp
			}(),
			finalizer: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := tc.cr.Status.DeepCopy()
			updates := 0
			kube := &test.MockClient{MockUpdate: func(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
				updates++
				obj.(*v1beta1.SecurityPolicy).Status = v1beta1.SecurityPolicyStatus{} //nolint:forcetypeassert // only policies here
				return tc.update
			}}
			f := keepStatus(kube, StatusOf(func(cr *v1beta1.SecurityPolicy) *v1beta1.SecurityPolicyStatus { return &cr.Status }))
			err := f.AddFinalizer(context.Background(), tc.cr)
			if !errors.Is(err, tc.err) {
				t.Errorf("\n%s\nAddFinalizer(...): want error %v, got %v", tc.reason, tc.err, err)
			}
			if diff := cmp.Diff(want, &tc.cr.Status, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nAddFinalizer(...): -want status, +got:\n%s", tc.reason, diff)
			}
			if updates != tc.updates {
				t.Errorf("\n%s\nAddFinalizer(...): %d updates, want %d", tc.reason, updates, tc.updates)
			}
			if got := meta.FinalizerExists(tc.cr, managed.FinalizerName); got != tc.finalizer {
				t.Errorf("\n%s\nAddFinalizer(...): finalizer present %t, want %t", tc.reason, got, tc.finalizer)
			}
		})
	}
}

func TestKeepConditions(t *testing.T) {
	errBoom := errors.New("boom")
	warning := xpv2.Condition{Type: "Warning", Status: corev1.ConditionTrue, Reason: "UnknownValue", Message: "m"}
	cases := map[string]struct {
		reason string
		before []xpv2.Condition
		stored []xpv2.Condition // what the API server answers the update with
		update error
		want   []xpv2.Condition
	}{
		"Kept": {
			reason: "The Warning condition Create set survives the update, whose answer holds the stored status without it.",
			before: []xpv2.Condition{warning, xpv2.Creating()},
			stored: []xpv2.Condition{xpv2.Creating()},
			want:   []xpv2.Condition{xpv2.Creating(), warning},
		},
		"KeptOnError": {
			reason: "A failed update keeps the condition for the status the reconciler writes next.",
			before: []xpv2.Condition{warning},
			update: errBoom,
			want:   []xpv2.Condition{warning},
		},
		"OnlyItsTypes": {
			reason: "Other conditions are left as the API server answered.",
			before: []xpv2.Condition{xpv2.Available()},
			stored: []xpv2.Condition{xpv2.Creating()},
			want:   []xpv2.Condition{xpv2.Creating()},
		},
		"NoneToKeep": {
			reason: "An object without the condition does not get one.",
			stored: []xpv2.Condition{xpv2.Creating()},
			want:   []xpv2.Condition{xpv2.Creating()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1beta1.SecurityPolicy{}
			cr.SetConditions(tc.before...)
			u := managed.CriticalAnnotationUpdateFn(func(_ context.Context, o client.Object) error {
				o.(*v1beta1.SecurityPolicy).Status.Conditions = tc.stored //nolint:forcetypeassert // only policies here
				return tc.update
			})
			err := keepConditions(u, "Warning").UpdateCriticalAnnotations(context.Background(), cr)
			if !errors.Is(err, tc.update) {
				t.Errorf("\n%s\nUpdateCriticalAnnotations(...): want error %v, got %v", tc.reason, tc.update, err)
			}
			if diff := cmp.Diff(tc.want, cr.Status.Conditions, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nUpdateCriticalAnnotations(...): -want conditions, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
