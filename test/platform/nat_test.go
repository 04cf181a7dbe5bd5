package platformsuite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// natPoll is the NAT source's poll in TestNATSource, the CRD's minimum.
const natPoll = 5 * time.Second

// TestNATSource is a Cloud NAT source on the real node, through Crossplane,
// the function and the provider pod: an address the NAT allocates reaches
// the policy within a poll and 5 s; one it releases stays while it drains and
// goes once GCP stops reporting it; while the router cannot be read its
// addresses stay and the IPAllowlist says why.
func TestNATSource(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	const region, router, nat = "us-central1", "egress", "egress-nat"
	if err := e.emu.SeedRouter(project, region, &compute.Router{Name: router, Network: "global/networks/default",
		Nats: []*compute.RouterNat{{Name: nat, NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"}}},
		map[string]int{nat: 2}); err != nil {
		t.Fatal(err)
	}
	xr := e.exampleXR(t)
	unstructured.RemoveNestedField(xr.Object, "spec", "nodeSources")
	if err := unstructured.SetNestedSlice(xr.Object, []any{map[string]any{
		"name": "egress", "region": region, "router": router, "nat": nat, "pollSeconds": int64(natPoll / time.Second),
	}}, "spec", "natSources"); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(xr), client.FieldOwner(controlplane.FieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	first, second := "34.127.0.1/32", "34.127.0.2/32"
	e.waitNAT(t, converge, "the NAT's two addresses", first, second)

	// The emulator's pool hands out 34.127.0.1, .2, .3… in order.
	if _, err := e.emu.AllocateNatIP(project, region, router, nat); err != nil {
		t.Fatal(err)
	}
	third := "34.127.0.3/32"
	began := time.Now()
	e.waitNAT(t, natPoll+5*time.Second, "the allocated address within a poll and 5 s", first, second, third)
	t.Logf("an allocated address reached the policy %.1fs after the NAT had it", time.Since(began).Seconds())

	if _, err := e.emu.ReleaseNatIP(project, region, router, nat, "34.127.0.1"); err != nil {
		t.Fatal(err)
	}
	// Two polls later the draining address is still allowed.
	time.Sleep(2*natPoll + time.Second)
	e.waitNAT(t, time.Second, "the draining address kept", first, second, third)
	if _, err := e.emu.FinishNatDrain(project, region, router, nat); err != nil {
		t.Fatal(err)
	}
	e.waitNAT(t, natPoll+5*time.Second, "the drained address gone", second, third)

	// An outage of the router's status: the addresses stay, the IPAllowlist says so.
	if err := e.emu.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"routers.getRouterStatus": {ErrorRate: 1, ErrorCodes: []int{503}}}}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, converge, "the IPAllowlist to say the NAT source is unreadable", func() error {
		if says := e.xrSays(t); !strings.Contains(says, "SourceUnreadable") {
			return fmt.Errorf("the IPAllowlist says %s", says)
		}
		return nil
	})
	e.waitNAT(t, time.Second, "the addresses held through the outage", second, third)
	if err := e.emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	e.waitNAT(t, converge, "the addresses after the outage", second, third)
}

// waitNAT waits until the policy's allow rules hold exactly the office ranges
// of the example and want.
func (e *env) waitNAT(t *testing.T, within time.Duration, what string, want ...string) {
	t.Helper()
	want = append(slices.Clone(want), "203.0.113.0/26", "2001:db8:10::/48", "198.51.100.32/28")
	slices.Sort(want)
	wait.Eventually(t, within, what, func() error {
		if err := e.plat.Err(); err != nil {
			t.Fatal(err)
		}
		if got := e.allowed(); !slices.Equal(got, want) {
			return fmt.Errorf("GCP allows %v, want %v; the IPAllowlist says %s", got, want, e.xrSays(t))
		}
		return nil
	})
}
