package inmemory

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/internal/controller/addressgroup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// sameFunc compares functions by their code: a Kind's functions must be the
// provider's own, not copies that could drift.
var sameFunc = cmp.FilterValues(func(x, y any) bool {
	return reflect.ValueOf(x).Kind() == reflect.Func && reflect.ValueOf(y).Kind() == reflect.Func
}, cmp.Comparer(func(x, y any) bool {
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	return vx.IsNil() == vy.IsNil() && (vx.IsNil() || vx.Pointer() == vy.Pointer())
}))

// wiringDiff returns how the null provider's wiring of a kind differs from
// the provider's in anything but the external system.
func wiringDiff[T resource.Managed](k setup.Kind[T]) string {
	var none resource.ModernTrackerFn = func(context.Context, resource.ModernManaged) error { return nil }
	return cmp.Diff(k, Kind(k, NewStore(), none), sameFunc, cmpopts.IgnoreFields(setup.Kind[T]{}, "Connector"))
}

// The benchmark divides the provider's figures by the null provider's: the
// two must share every option, gate and watch, or the floor is not the same
// machinery.
func TestKindChangesOnlyTheExternalSystem(t *testing.T) {
	cases := map[string]struct {
		reason string
		diff   string
	}{
		"SecurityPolicy":     {reason: "Only the connector differs.", diff: wiringDiff(securitypolicy.Kind)},
		"SecurityPolicyRule": {reason: "Only the connector differs.", diff: wiringDiff(securitypolicyrule.Kind)},
		"AddressGroup":       {reason: "Only the connector differs.", diff: wiringDiff(addressgroup.Kind)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.diff != "" {
				t.Errorf("\n%s\nKind(...): -provider, +null provider:\n%s", tc.reason, tc.diff)
			}
		})
	}
}
