package setup

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
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
			f := KeepStatus(kube, func(cr *v1beta1.SecurityPolicy) *v1beta1.SecurityPolicyStatus { return &cr.Status })
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
