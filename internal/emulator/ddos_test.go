package emulator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

// TestDdosProtectionConfig drives ddosProtectionConfig through the official
// client: a CLOUD_ARMOR_NETWORK policy stores and returns its three fields, a
// PATCH of one keeps the others (GCP merges a PATCH), an explicit 0 threshold
// is applied, and an empty config is accepted on any policy.
func TestDdosProtectionConfig(t *testing.T) {
	em := Start(t, Options{})
	api := regionalAPI{newService(t, em)}
	wait := waiter(t, api)

	type ddos = compute.SecurityPolicyDdosProtectionConfig
	get := func(name string) *ddos {
		t.Helper()
		p, err := api.Get(name)
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return p.DdosProtectionConfig
	}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".ForceSendFields" || n == ".NullFields"
	}, cmp.Ignore())

	steps := []struct {
		reason string
		call   func() (*compute.Operation, error)
		want   *ddos
	}{
		{
			reason: "Insert stores every field and GET returns them.",
			call: func() (*compute.Operation, error) {
				return api.Insert(&compute.SecurityPolicy{Name: "net", Type: "CLOUD_ARMOR_NETWORK",
					DdosProtectionConfig: &ddos{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED", DdosImpactedBaselineThreshold: 0.25}})
			},
			want: &ddos{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED", DdosImpactedBaselineThreshold: 0.25},
		},
		{
			reason: "A PATCH of ddosAdaptiveProtection alone keeps ddosProtection and the threshold.",
			call: func() (*compute.Operation, error) {
				return api.Patch("net", &compute.SecurityPolicy{DdosProtectionConfig: &ddos{DdosAdaptiveProtection: "PREVIEW"}})
			},
			want: &ddos{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "PREVIEW", DdosImpactedBaselineThreshold: 0.25},
		},
		{
			reason: "A threshold sent as an explicit 0 is applied.",
			call: func() (*compute.Operation, error) {
				return api.Patch("net", &compute.SecurityPolicy{DdosProtectionConfig: &ddos{ForceSendFields: []string{"DdosImpactedBaselineThreshold"}}})
			},
			want: &ddos{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "PREVIEW"},
		},
		{
			reason: "The threshold's bounds are accepted.",
			call: func() (*compute.Operation, error) {
				return api.Patch("net", &compute.SecurityPolicy{DdosProtectionConfig: &ddos{DdosProtection: "STANDARD", DdosImpactedBaselineThreshold: 1}})
			},
			want: &ddos{DdosProtection: "STANDARD", DdosAdaptiveProtection: "PREVIEW", DdosImpactedBaselineThreshold: 1},
		},
	}
	for _, st := range steps {
		wait(st.call())
		if diff := cmp.Diff(st.want, get("net"), ignore); diff != "" {
			t.Fatalf("\n%s\nddosProtectionConfig: -want, +got:\n%s", st.reason, diff)
		}
	}

	// Clients send {} as a default; it means nothing, so no policy refuses it.
	wait(api.Insert(&compute.SecurityPolicy{Name: "armor", DdosProtectionConfig: &ddos{}}))
	if got := get("armor"); got != nil && !cmp.Equal(got, &ddos{}, ignore) {
		t.Errorf("an empty ddosProtectionConfig on a CLOUD_ARMOR policy: want nothing stored, got %+v", got)
	}
}
