package routers_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/routers"
)

func addr(name string) string { return root + "projects/p/regions/us-central1/addresses/" + name }

// TestManualNAT: a MANUAL_ONLY NAT reports its natIps as user-allocated,
// how many more it needs when its VMs need more, and its drainNatIps as
// draining; getNatIpInfo tells used addresses from spare and drained ones.
func TestManualNAT(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	ips := reserve(t, svc, "a", "b", "c")
	ip := func(name string) string { return ips[name] }
	insert(t, svc, rtr("egress", manualNAT("nat", "a", "b")))
	three := 3
	if _, err := em.SetNatNeeds(project, region, "egress", "nat", routers.Needs{Addresses: &three}); err != nil {
		t.Fatal(err)
	}
	want := &compute.RouterStatusNatStatus{Name: "nat", UserAllocatedNatIps: []string{ip("a"), ip("b")},
		UserAllocatedNatIpResources: []string{addr("a"), addr("b")}, MinExtraNatIpsNeeded: 1, NumVmEndpointsWithNatMappings: 1}
	if diff := cmp.Diff([]*compute.RouterStatusNatStatus{want}, status(t, svc, "egress")); diff != "" {
		t.Errorf("two addresses, three needed: -want, +got:\n%s", diff)
	}
	// 3000 VMs at 64 ports need three addresses; two give ports to 2016.
	vms := 3000
	if _, err := em.SetNatNeeds(project, region, "egress", "nat", routers.Needs{VMs: &vms}); err != nil {
		t.Fatal(err)
	}
	want.NumVmEndpointsWithNatMappings = 2016
	if diff := cmp.Diff([]*compute.RouterStatusNatStatus{want}, status(t, svc, "egress")); diff != "" {
		t.Errorf("3000 VMs on two addresses: -want, +got:\n%s", diff)
	}
	// Drain b, add c: b still carries connections until the drain ends.
	drain := manualNAT("nat", "a", "c")
	drain.DrainNatIps = []string{"projects/p/regions/us-central1/addresses/b"}
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: []*compute.RouterNat{drain}}).Do(); err != nil {
		t.Fatal(err)
	}
	want = &compute.RouterStatusNatStatus{Name: "nat", UserAllocatedNatIps: []string{ip("a"), ip("c")},
		UserAllocatedNatIpResources: []string{addr("a"), addr("c")}, DrainUserAllocatedNatIps: []string{ip("b")},
		MinExtraNatIpsNeeded: 1, NumVmEndpointsWithNatMappings: 2016}
	if diff := cmp.Diff([]*compute.RouterStatusNatStatus{want}, status(t, svc, "egress")); diff != "" {
		t.Errorf("b draining: -want, +got:\n%s", diff)
	}
	one := 1
	if _, err := em.SetNatNeeds(project, region, "egress", "nat", routers.Needs{Addresses: &one}); err != nil {
		t.Fatal(err)
	}
	checkInfo(t, svc, "", []string{ip("a") + " MANUAL IN_USE", ip("c") + " MANUAL UNUSED", ip("b") + " MANUAL IN_USE"})
	if _, err := em.FinishNatDrain(project, region, "egress", "nat"); err != nil {
		t.Fatal(err)
	}
	checkInfo(t, svc, "nat", []string{ip("a") + " MANUAL IN_USE", ip("c") + " MANUAL UNUSED", ip("b") + " MANUAL UNUSED"})
	checkInfo(t, svc, "other", nil)
}

// checkInfo compares getNatIpInfo (of natName, if not "") with want, one
// "ip mode usage" per mapping.
func checkInfo(t *testing.T, svc *compute.Service, natName string, want []string) {
	t.Helper()
	call := svc.Routers.GetNatIpInfo(project, region, "egress")
	if natName != "" {
		call = call.NatName(natName)
	}
	info, err := call.Do()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range info.Result {
		for _, m := range r.NatIpInfoMappings {
			got = append(got, m.NatIp+" "+m.Mode+" "+m.Usage)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("getNatIpInfo natName=%q: -want, +got:\n%s", natName, diff)
	}
}

func TestManualRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	reserve(t, svc, "a", "b", "other")
	insert(t, svc, rtr("egress", manualNAT("nat", "a", "b")))
	insert(t, svc, &compute.Router{Name: "holder", Network: "global/networks/other", Nats: []*compute.RouterNat{manualNAT("nat", "other")}})
	twice := manualNAT("nat", "a")
	twice.DrainNatIps = []string{"projects/p/regions/us-central1/addresses/a"}
	notHeld := manualNAT("nat", "a")
	notHeld.DrainNatIps = []string{"projects/p/regions/us-central1/addresses/z"}
	cases := map[string]struct {
		nats []*compute.RouterNat
		want []any
	}{
		"DrainAndUse": {[]*compute.RouterNat{twice}, []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].drainNatIps[0]': 'projects/p/regions/us-central1/addresses/a'. The address is already named by resource.nats[0].natIps[0]."}},
		"DrainNotHeld": {[]*compute.RouterNat{notHeld}, []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].drainNatIps[0]': 'projects/p/regions/us-central1/addresses/z'. Only an address the NAT holds in natIps can be drained."}},
		"TwoNATsOneAddress": {[]*compute.RouterNat{manualNAT("nat", "a"), manualNAT("other", "a")}, []any{400, "invalid",
			"Invalid value for field 'resource.nats[1].natIps[0]': 'projects/p/regions/us-central1/addresses/a'. The address is already named by resource.nats[0].natIps[0]."}},
		"EmptyNatIps": {[]*compute.RouterNat{manualNAT("nat")}, []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].natIps': ''. A NAT whose natIpAllocateOption is MANUAL_ONLY needs at least one NAT IP."}},
		"AddressMissing": {[]*compute.RouterNat{manualNAT("nat", "a", "missing")}, []any{404, "notFound",
			"The resource 'projects/p/regions/us-central1/addresses/missing' was not found"}},
		"AddressOfAnotherRouter": {[]*compute.RouterNat{manualNAT("nat", "a", "other")}, []any{400, "resourceInUseByAnotherResource",
			"The address resource 'projects/p/regions/us-central1/addresses/other' is already being used by 'projects/p/regions/us-central1/routers/holder'"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: tc.nats}).Do()
			if diff := cmp.Diff(tc.want, apiError(t, err)); diff != "" {
				t.Errorf("patch: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestStaticAddresses: a MANUAL_ONLY NAT reports, in getRouterStatus and
// getNatIpInfo, the address field of the Address resources it names,
// pooled or given; a refused write leaves the router as it was.
func TestStaticAddresses(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	if _, err := svc.Addresses.Insert(project, region, &compute.Address{Name: "given", Address: "203.0.113.7"}).Do(); err != nil {
		t.Fatal(err)
	}
	ips := reserve(t, svc, "pooled")
	insert(t, svc, rtr("egress", manualNAT("nat", "given", "pooled")))
	want := []*compute.RouterStatusNatStatus{{Name: "nat", UserAllocatedNatIps: []string{"203.0.113.7", ips["pooled"]},
		UserAllocatedNatIpResources: []string{addr("given"), addr("pooled")}, NumVmEndpointsWithNatMappings: 1}}
	if diff := cmp.Diff(want, status(t, svc, "egress")); diff != "" {
		t.Errorf("getRouterStatus: -want, +got:\n%s", diff)
	}
	checkInfo(t, svc, "nat", []string{"203.0.113.7 MANUAL IN_USE", ips["pooled"] + " MANUAL UNUSED"})
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: []*compute.RouterNat{manualNAT("nat", "gone")}}).Do(); err == nil {
		t.Fatal("patch naming a missing address: want a refusal")
	}
	if diff := cmp.Diff(want, status(t, svc, "egress")); diff != "" {
		t.Errorf("after a refused patch: -want, +got:\n%s", diff)
	}
}
