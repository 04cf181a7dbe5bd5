package routers_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/routers"
)

const (
	project = "p"
	region  = "us-central1"
	root    = "https://www.googleapis.com/compute/v1/"
	network = root + "projects/p/global/networks/default"
)

// autoNAT and manualNAT are NAT bodies as a client sends them.
func autoNAT(name string) *compute.RouterNat {
	return &compute.RouterNat{Name: name, NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "LIST_OF_SUBNETWORKS"}
}

func manualNAT(name string, addresses ...string) *compute.RouterNat {
	n := &compute.RouterNat{Name: name, NatIpAllocateOption: "MANUAL_ONLY", SourceSubnetworkIpRangesToNat: "LIST_OF_SUBNETWORKS"}
	for _, a := range addresses {
		n.NatIps = append(n.NatIps, "projects/p/regions/us-central1/addresses/"+a)
	}
	return n
}

// reserve inserts static addresses of region, as a MANUAL_ONLY NAT needs
// them to exist, and returns their IPs by name, as GET answers them.
func reserve(t *testing.T, svc *compute.Service, names ...string) map[string]string {
	t.Helper()
	ips := map[string]string{}
	for _, name := range names {
		if _, err := svc.Addresses.Insert(project, region, &compute.Address{Name: name}).Do(); err != nil {
			t.Fatalf("insert address %s: %v", name, err)
		}
		a, err := svc.Addresses.Get(project, region, name).Do()
		if err != nil {
			t.Fatalf("get address %s: %v", name, err)
		}
		ips[name] = a.Address
	}
	return ips
}

func rtr(name string, nats ...*compute.RouterNat) *compute.Router {
	return &compute.Router{Name: name, Network: "global/networks/default", Nats: nats}
}

func insert(t *testing.T, svc *compute.Service, r *compute.Router) *compute.Operation {
	t.Helper()
	op, err := svc.Routers.Insert(project, region, r).Do()
	if err != nil {
		t.Fatalf("insert %s: %v", r.Name, err)
	}
	return op
}

func status(t *testing.T, svc *compute.Service, router string) []*compute.RouterStatusNatStatus {
	t.Helper()
	s, err := svc.Routers.GetRouterStatus(project, region, router).Do()
	if err != nil {
		t.Fatalf("getRouterStatus %s: %v", router, err)
	}
	return s.Result.NatStatus
}

// apiError is the googleapi error of err: its code, reason and message.
func apiError(t *testing.T, err error) []any {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("want a googleapi error, got %v", err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	return []any{ge.Code, reason, ge.Message}
}

func TestInsertGetDelete(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	op := insert(t, svc, rtr("egress", autoNAT("nat")))
	want := []string{"insert", "RUNNING", root + "projects/p/regions/us-central1", root + "projects/p/regions/us-central1/routers/egress"}
	if diff := cmp.Diff(want, []string{op.OperationType, op.Status, op.Region, op.TargetLink}); diff != "" {
		t.Errorf("insert: want a regional insert operation on the router, -want +got:\n%s", diff)
	}
	if done, err := svc.RegionOperations.Wait(project, region, op.Name).Do(); err != nil || done.Status != "DONE" {
		t.Fatalf("regionOperations.wait: want DONE, got %+v, %v", done, err)
	}
	got, err := svc.Routers.Get(project, region, "egress").Do()
	if err != nil {
		t.Fatal(err)
	}
	got.ServerResponse, got.CreationTimestamp, got.Id = googleapi.ServerResponse{}, "", 0
	wantRouter := &compute.Router{Kind: "compute#router", Name: "egress", Network: network,
		Region: root + "projects/p/regions/us-central1", SelfLink: root + "projects/p/regions/us-central1/routers/egress",
		Nats: []*compute.RouterNat{{Name: "nat", NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "LIST_OF_SUBNETWORKS",
			Type: "PUBLIC", EndpointTypes: []string{"ENDPOINT_TYPE_VM"}}}}
	if diff := cmp.Diff(wantRouter, got); diff != "" {
		t.Errorf("get: -want, +got:\n%s", diff)
	}
	del, err := svc.Routers.Delete(project, region, "egress").Do()
	if err != nil || del.OperationType != "delete" {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	_, err = svc.Routers.Get(project, region, "egress").Do()
	if diff := cmp.Diff([]any{404, "notFound", "The resource 'projects/p/regions/us-central1/routers/egress' was not found"}, apiError(t, err)); diff != "" {
		t.Errorf("get after delete: -want, +got:\n%s", diff)
	}
}

func TestInsertRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, rtr("taken"))
	reserve(t, svc, "held")
	insert(t, svc, &compute.Router{Name: "holder", Network: "global/networks/other", Nats: []*compute.RouterNat{manualNAT("n", "held")}})
	if _, err := svc.Addresses.Insert(project, region, &compute.Address{Name: "internal", AddressType: "INTERNAL", Address: "10.0.0.9"}).Do(); err != nil {
		t.Fatal(err)
	}
	insert(t, svc, &compute.Router{Name: "all", Network: "global/networks/shared",
		Nats: []*compute.RouterNat{{Name: "all", NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"}}})
	noOption := autoNAT("n")
	noOption.NatIpAllocateOption = ""
	autoWithIPs := autoNAT("n")
	autoWithIPs.NatIps = []string{"projects/p/regions/us-central1/addresses/a"}
	drainOnInsert := manualNAT("n", "a")
	drainOnInsert.DrainNatIps = []string{"projects/p/regions/us-central1/addresses/b"}
	dpa := autoNAT("n")
	dpa.EnableDynamicPortAllocation, dpa.MinPortsPerVm = true, 50
	dpaEIM := autoNAT("n")
	dpaEIM.EnableDynamicPortAllocation, dpaEIM.EnableEndpointIndependentMapping = true, true
	cases := map[string]struct {
		region string
		body   *compute.Router
		want   []any
	}{
		"UnknownRegion": {"mars-north1", rtr("r"), []any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}},
		"Duplicate":     {region, rtr("taken"), []any{409, "alreadyExists", "The resource 'projects/p/regions/us-central1/routers/taken' already exists"}},
		"BadName": {region, rtr("Egress"), []any{400, "invalid",
			"Invalid value for field 'resource.name': 'Egress'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"}},
		"NoNetwork": {region, &compute.Router{Name: "r", Nats: []*compute.RouterNat{autoNAT("n")}},
			[]any{400, "required", "Required field 'resource.network' not specified"}},
		"BadNetwork": {region, &compute.Router{Name: "r", Network: "default"},
			[]any{400, "invalid", "Invalid value for field 'resource.network': 'default'. The URL is malformed."}},
		"ManualWithoutIPs": {region, rtr("r", manualNAT("n")), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].natIps': ''. A NAT whose natIpAllocateOption is MANUAL_ONLY needs at least one NAT IP."}},
		"AutoWithIPs": {region, rtr("r", autoWithIPs), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].natIps[0]': 'projects/p/regions/us-central1/addresses/a'. NAT IPs cannot be specified when natIpAllocateOption is AUTO_ONLY."}},
		"DuplicateNAT": {region, rtr("r", autoNAT("n"), manualNAT("n", "a")), []any{400, "invalid",
			"Invalid value for field 'resource.nats[1].name': 'n'. Duplicate NAT name."}},
		"NoOption": {region, rtr("r", noOption), []any{400, "required", "Required field 'resource.nats[0].natIpAllocateOption' not specified"}},
		"AddressElsewhere": {region, rtr("r", &compute.RouterNat{Name: "n", NatIpAllocateOption: "MANUAL_ONLY",
			NatIps: []string{"projects/p/regions/europe-west1/addresses/a"}}), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].natIps[0]': 'projects/p/regions/europe-west1/addresses/a'. The address must be in the router's region 'us-central1'."}},
		"AddressMalformed": {region, rtr("r", &compute.RouterNat{Name: "n", NatIpAllocateOption: "MANUAL_ONLY", NatIps: []string{"34.1.2.3"}}),
			[]any{400, "invalid", "Invalid value for field 'resource.nats[0].natIps[0]': '34.1.2.3'. The URL is malformed."}},
		"AddressMissing": {region, rtr("r", manualNAT("n", "a")), []any{404, "notFound",
			"The resource 'projects/p/regions/us-central1/addresses/a' was not found"}},
		"AddressInternal": {region, rtr("r", manualNAT("n", "internal")), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].natIps[0]': 'projects/p/regions/us-central1/addresses/internal'. A NAT IP must be an EXTERNAL address."}},
		"AddressOfAnotherRouter": {region, rtr("r", manualNAT("n", "held")), []any{400, "resourceInUseByAnotherResource",
			"The address resource 'projects/p/regions/us-central1/addresses/held' is already being used by 'projects/p/regions/us-central1/routers/holder'"}},
		"DrainOnInsert": {region, rtr("r", drainOnInsert), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].drainNatIps[0]': 'projects/p/regions/us-central1/addresses/b'. Only an address the NAT holds in natIps can be drained."}},
		"DynamicPortsMin": {region, rtr("r", dpa), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].minPortsPerVm': '50'. With dynamic port allocation it must be a power of two greater than or equal to 32."}},
		"DynamicPortsEIM": {region, rtr("r", dpaEIM), []any{400, "invalid",
			"Invalid value for field 'resource.nats[0].enableEndpointIndependentMapping': 'true'. Endpoint independent mapping cannot be enabled with dynamic port allocation."}},
		"BesideAllRanges": {region, &compute.Router{Name: "r", Network: "projects/p/global/networks/shared", Nats: []*compute.RouterNat{autoNAT("n")}},
			[]any{400, "invalid", "Invalid value for field 'resource.nats[0].sourceSubnetworkIpRangesToNat': 'LIST_OF_SUBNETWORKS'. Can not create new Nats since a Nat with option ALL_SUBNETWORKS_ALL_IP_RANGES exists."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Routers.Insert(project, tc.region, tc.body).Do()
			if diff := cmp.Diff(tc.want, apiError(t, err)); diff != "" {
				t.Errorf("insert: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestPatch(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	r := rtr("egress", autoNAT("auto"))
	r.Description = "first"
	insert(t, svc, r)
	reserve(t, svc, "a")
	// A merge patch: description is left out and kept, nats replaced.
	op, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: []*compute.RouterNat{autoNAT("auto"), manualNAT("manual", "a")}}).Do()
	if err != nil || op.OperationType != "patch" {
		t.Fatalf("patch: %+v, %v", op, err)
	}
	got, _ := svc.Routers.Get(project, region, "egress").Do()
	if got.Description != "first" || len(got.Nats) != 2 || got.Nats[1].NatIps[0] != root+"projects/p/regions/us-central1/addresses/a" {
		t.Errorf("after patch: want the description kept, two NATs, natIps as full URLs; got %q, %+v", got.Description, got.Nats)
	}
	cases := map[string]struct {
		router string
		body   *compute.Router
		want   []any
	}{
		"Network": {"egress", &compute.Router{Network: "global/networks/other"}, []any{400, "invalid",
			"Invalid value for field 'resource.network': 'global/networks/other'. The network of a router cannot be changed."}},
		"Name": {"egress", &compute.Router{Name: "other"}, []any{400, "invalid",
			"Invalid value for field 'resource.name': 'other'. The name of a router cannot be changed."}},
		"NotFound": {"missing", &compute.Router{Description: "x"}, []any{404, "notFound",
			"The resource 'projects/p/regions/us-central1/routers/missing' was not found"}},
		"DuplicateNAT": {"egress", &compute.Router{Nats: []*compute.RouterNat{autoNAT("x"), autoNAT("x")}}, []any{400, "invalid",
			"Invalid value for field 'resource.nats[1].name': 'x'. Duplicate NAT name."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Routers.Patch(project, region, tc.router, tc.body).Do()
			if diff := cmp.Diff(tc.want, apiError(t, err)); diff != "" {
				t.Errorf("patch: -want, +got:\n%s", diff)
			}
		})
	}
	// The same network, named another way, is no change.
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Network: network}).Do(); err != nil {
		t.Errorf("patch naming the router's own network: %v", err)
	}
	_, err = svc.Routers.Delete(project, region, "missing").Do()
	if diff := cmp.Diff([]any{404, "notFound", "The resource 'projects/p/regions/us-central1/routers/missing' was not found"}, apiError(t, err)); diff != "" {
		t.Errorf("delete of a missing router: -want, +got:\n%s", diff)
	}
}

// TestAutoAllocation: an AUTO_ONLY NAT starts with one address from the
// pool; a knob makes it take one more; a released one drains, then goes.
func TestAutoAllocation(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	insert(t, svc, rtr("egress", autoNAT("nat")))
	check := func(step string, want *compute.RouterStatusNatStatus) {
		t.Helper()
		if diff := cmp.Diff([]*compute.RouterStatusNatStatus{want}, status(t, svc, "egress")); diff != "" {
			t.Errorf("%s: natStatus -want, +got:\n%s", step, diff)
		}
	}
	check("insert", &compute.RouterStatusNatStatus{Name: "nat", AutoAllocatedNatIps: []string{"34.127.0.1"}, NumVmEndpointsWithNatMappings: 1})
	if _, err := em.AllocateNatIP(project, region, "egress", "nat"); err != nil {
		t.Fatal(err)
	}
	check("allocate", &compute.RouterStatusNatStatus{Name: "nat", AutoAllocatedNatIps: []string{"34.127.0.1", "34.127.0.2"}, NumVmEndpointsWithNatMappings: 1})
	if _, err := em.ReleaseNatIP(project, region, "egress", "nat", "34.127.0.1"); err != nil {
		t.Fatal(err)
	}
	check("release", &compute.RouterStatusNatStatus{Name: "nat", AutoAllocatedNatIps: []string{"34.127.0.2"},
		DrainAutoAllocatedNatIps: []string{"34.127.0.1"}, NumVmEndpointsWithNatMappings: 1})
	info, err := svc.Routers.GetNatIpInfo(project, region, "egress").Do()
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := []*compute.NatIpInfo{{NatName: "nat", NatIpInfoMappings: []*compute.NatIpInfoNatIpInfoMapping{
		{NatIp: "34.127.0.2", Mode: "AUTO", Usage: "IN_USE"}, {NatIp: "34.127.0.1", Mode: "AUTO", Usage: "IN_USE"}}}}
	if diff := cmp.Diff(wantInfo, info.Result); diff != "" {
		t.Errorf("getNatIpInfo while draining: -want, +got:\n%s", diff)
	}
	if _, err := em.FinishNatDrain(project, region, "egress", "nat"); err != nil {
		t.Fatal(err)
	}
	check("drained", &compute.RouterStatusNatStatus{Name: "nat", AutoAllocatedNatIps: []string{"34.127.0.2"}, NumVmEndpointsWithNatMappings: 1})
	// 2000 VMs at 64 ports need two addresses: a new one, not a drained one.
	vms := 2000
	if _, err := em.SetNatNeeds(project, region, "egress", "nat", routers.Needs{VMs: &vms}); err != nil {
		t.Fatal(err)
	}
	check("2000 VMs", &compute.RouterStatusNatStatus{Name: "nat", AutoAllocatedNatIps: []string{"34.127.0.2", "34.127.0.3"}, NumVmEndpointsWithNatMappings: 2000})
	_, err = em.ReleaseNatIP(project, region, "egress", "nat", "203.0.113.9")
	if !strings.Contains(err.Error(), "The NAT holds no such active address.") {
		t.Errorf("release of an address the NAT does not hold: got %v", err)
	}
}

// TestAutoToManual: switching a NAT to MANUAL_ONLY gives its auto
// addresses back at once, as GCP deletes them.
func TestAutoToManual(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, rtr("egress", autoNAT("nat")))
	ips := reserve(t, svc, "a")
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: []*compute.RouterNat{manualNAT("nat", "a")}}).Do(); err != nil {
		t.Fatal(err)
	}
	want := []*compute.RouterStatusNatStatus{{Name: "nat", UserAllocatedNatIps: []string{ips["a"]},
		UserAllocatedNatIpResources: []string{root + "projects/p/regions/us-central1/addresses/a"}, NumVmEndpointsWithNatMappings: 1}}
	if diff := cmp.Diff(want, status(t, svc, "egress")); diff != "" {
		t.Errorf("after the switch: -want, +got:\n%s", diff)
	}
}

// TestTierChange: a new autoNetworkTier gives an AUTO_ONLY NAT a new set
// of addresses; a patch that leaves the NAT alone keeps its own.
func TestTierChange(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, rtr("egress", autoNAT("nat")))
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Description: "kept"}).Do(); err != nil {
		t.Fatal(err)
	}
	if got := status(t, svc, "egress")[0].AutoAllocatedNatIps; !slices.Equal(got, []string{"34.127.0.1"}) {
		t.Errorf("after a patch of the description: want the NAT's address kept, got %v", got)
	}
	standard := autoNAT("nat")
	standard.AutoNetworkTier = "STANDARD"
	if _, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Nats: []*compute.RouterNat{standard}}).Do(); err != nil {
		t.Fatal(err)
	}
	if got := status(t, svc, "egress")[0].AutoAllocatedNatIps; !slices.Equal(got, []string{"34.127.0.2"}) {
		t.Errorf("after a new tier: want a new address, got %v", got)
	}
}
