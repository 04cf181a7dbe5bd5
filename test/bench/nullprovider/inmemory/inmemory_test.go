package inmemory

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/internal/controller/addressgroup"
	"github.com/armorplane/provider-cloudarmor/internal/controller/networkedgesecurityservice"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicyassociation"
	"github.com/armorplane/provider-cloudarmor/internal/controller/organizationsecuritypolicyrule"
	"github.com/armorplane/provider-cloudarmor/internal/controller/projectcloudarmortier"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyattachment"
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
// the provider's in anything but the external system, or that it has not
// swapped the external system.
func wiringDiff[T resource.Managed](k setup.Kind[T]) string {
	var none resource.ModernTrackerFn = func(context.Context, resource.ModernManaged) error { return nil }
	null := setup.WithExternal(k, External(NewStore(), none))
	if reflect.ValueOf(null.Connector).Pointer() == reflect.ValueOf(k.Connector).Pointer() {
		return "the connector is the provider's own"
	}
	return cmp.Diff(k, null, sameFunc, cmpopts.IgnoreFields(setup.Kind[T]{}, "Connector"))
}

// The benchmark divides the provider's figures by the null provider's: the
// two must share every option, gate and watch, or the floor is not the same
// machinery. setup.Add gives every kind the null provider's external system
// by setup.WithExternal.
func TestExternalChangesOnlyTheConnector(t *testing.T) {
	cases := map[string]struct {
		reason string
		diff   string
	}{
		"SecurityPolicy":                        {reason: "Only the connector differs.", diff: wiringDiff(securitypolicy.Kind)},
		"SecurityPolicyRule":                    {reason: "Only the connector differs.", diff: wiringDiff(securitypolicyrule.Kind)},
		"AddressGroup":                          {reason: "Only the connector differs.", diff: wiringDiff(addressgroup.Kind)},
		"NetworkEdgeSecurityService":            {reason: "Only the connector differs.", diff: wiringDiff(networkedgesecurityservice.Kind)},
		"ProjectCloudArmorTier":                 {reason: "Only the connector differs.", diff: wiringDiff(projectcloudarmortier.Kind)},
		"SecurityPolicyAttachment":              {reason: "Only the connector differs.", diff: wiringDiff(securitypolicyattachment.Kind)},
		"OrganizationSecurityPolicy":            {reason: "Only the connector differs.", diff: wiringDiff(organizationsecuritypolicy.Kind)},
		"OrganizationSecurityPolicyAssociation": {reason: "Only the connector differs.", diff: wiringDiff(organizationsecuritypolicyassociation.Kind)},
		"OrganizationSecurityPolicyRule":        {reason: "Only the connector differs.", diff: wiringDiff(organizationsecuritypolicyrule.Kind)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.diff != "" {
				t.Errorf("\n%s\nWithExternal(...): -provider, +null provider:\n%s", tc.reason, tc.diff)
			}
		})
	}
}

// A kind wired with the null provider's external system keeps what it
// creates and observes it up to date, through setup.WithExternal's typed
// connector.
func TestExternalKeepsWhatItCreates(t *testing.T) {
	var tracked int
	var count resource.ModernTrackerFn = func(context.Context, resource.ModernManaged) error { tracked++; return nil }
	k := setup.WithExternal(securitypolicy.Kind, External(NewStore(), count))
	cr := securitypolicy.Kind.New()
	cr.SetName("p")
	ctx := context.Background()
	c, err := k.Connector(setup.Env{}).Connect(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := c.Observe(ctx, cr); err != nil || o.ResourceExists {
		t.Fatalf("Observe before Create: %+v, %v; want none", o, err)
	}
	if _, err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if o, err := c.Observe(ctx, cr); err != nil || !o.ResourceExists || !o.ResourceUpToDate {
		t.Fatalf("Observe after Create: %+v, %v; want it existing and up to date", o, err)
	}
	if tracked != 1 {
		t.Errorf("ProviderConfig usage tracked %d times; want once per connect", tracked)
	}
}
