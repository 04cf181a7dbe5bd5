package addresses_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/addresses"
)

const (
	project   = "p"
	region    = "us-central1"
	root      = "https://www.googleapis.com/compute/v1/"
	regionURL = root + "projects/p/regions/us-central1"
)

func path(name string) string { return "projects/p/regions/us-central1/addresses/" + name }

// reserve inserts an address of region and returns it as GET answers it.
func reserve(t *testing.T, svc *compute.Service, in *compute.Address) *compute.Address {
	t.Helper()
	if _, err := svc.Addresses.Insert(project, region, in).Do(); err != nil {
		t.Fatalf("insert %s: %v", in.Name, err)
	}
	return get(t, svc, in.Name)
}

func get(t *testing.T, svc *compute.Service, name string) *compute.Address {
	t.Helper()
	a, err := svc.Addresses.Get(project, region, name).Do()
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return a
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

// stable is a as a test can know it in advance: without its id,
// creation time and label fingerprint, which it only checks are set.
func stable(t *testing.T, a *compute.Address) *compute.Address {
	t.Helper()
	if a.Id == 0 || a.CreationTimestamp == "" || a.LabelFingerprint == "" {
		t.Errorf("address %s: want an id, a creationTimestamp and a labelFingerprint, got %+v", a.Name, a)
	}
	c := *a
	c.ServerResponse, c.Id, c.CreationTimestamp, c.LabelFingerprint = googleapi.ServerResponse{}, 0, "", ""
	return &c
}

func TestInsertGetDelete(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	op, err := svc.Addresses.Insert(project, region, &compute.Address{Name: "nat-1", Description: "egress"}).Do()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"insert", "RUNNING", regionURL, root + path("nat-1")}
	if diff := cmp.Diff(want, []string{op.OperationType, op.Status, op.Region, op.TargetLink}); diff != "" {
		t.Errorf("insert: want a regional insert operation on the address, -want +got:\n%s", diff)
	}
	if done, err := svc.RegionOperations.Wait(project, region, op.Name).Do(); err != nil || done.Status != "DONE" {
		t.Fatalf("regionOperations.wait: want DONE, got %+v, %v", done, err)
	}
	cases := map[string]struct {
		in   *compute.Address // nil: nat-1, inserted above
		want *compute.Address
	}{
		"Pooled": {nil, &compute.Address{Kind: "compute#address", Name: "nat-1", Description: "egress",
			Address: addresses.PreferredIP(path("nat-1")), AddressType: "EXTERNAL", NetworkTier: "PREMIUM", Status: "RESERVED",
			Region: regionURL, SelfLink: root + path("nat-1")}},
		"Given": {&compute.Address{Name: "given", Address: "203.0.113.7", NetworkTier: "STANDARD", Labels: map[string]string{"team": "edge"}},
			&compute.Address{Kind: "compute#address", Name: "given", Address: "203.0.113.7", AddressType: "EXTERNAL",
				NetworkTier: "STANDARD", Status: "RESERVED", Labels: map[string]string{"team": "edge"},
				Region: regionURL, SelfLink: root + path("given")}},
		"Internal": {&compute.Address{Name: "internal", AddressType: "INTERNAL", Address: "10.128.0.9", Purpose: "GCE_ENDPOINT",
			Subnetwork: "regions/us-central1/subnetworks/default"},
			&compute.Address{Kind: "compute#address", Name: "internal", Address: "10.128.0.9", AddressType: "INTERNAL",
				Purpose: "GCE_ENDPOINT", Subnetwork: "regions/us-central1/subnetworks/default", Status: "RESERVED",
				Region: regionURL, SelfLink: root + path("internal")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got *compute.Address
			if tc.in == nil {
				got = get(t, svc, "nat-1")
			} else {
				got = reserve(t, svc, tc.in)
			}
			if diff := cmp.Diff(tc.want, stable(t, got)); diff != "" {
				t.Errorf("get: -want, +got:\n%s", diff)
			}
		})
	}
	del, err := svc.Addresses.Delete(project, region, "nat-1").Do()
	if err != nil || del.OperationType != "delete" || del.TargetLink != root+path("nat-1") {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	_, err = svc.Addresses.Get(project, region, "nat-1").Do()
	if diff := cmp.Diff([]any{404, "notFound", "The resource 'projects/p/regions/us-central1/addresses/nat-1' was not found"}, apiError(t, err)); diff != "" {
		t.Errorf("get after delete: -want, +got:\n%s", diff)
	}
}

func TestInsertRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	reserve(t, svc, &compute.Address{Name: "taken", Address: "203.0.113.7"})
	cases := map[string]struct {
		region string
		body   *compute.Address
		want   []any
	}{
		"UnknownRegion": {"mars-north1", &compute.Address{Name: "a"}, []any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}},
		"Duplicate": {region, &compute.Address{Name: "taken"}, []any{409, "alreadyExists",
			"The resource 'projects/p/regions/us-central1/addresses/taken' already exists"}},
		"NoName": {region, &compute.Address{}, []any{400, "required", "Required field 'resource.name' not specified"}},
		"BadName": {region, &compute.Address{Name: "Nat_1"}, []any{400, "invalid",
			"Invalid value for field 'resource.name': 'Nat_1'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"}},
		"OtherRegion": {region, &compute.Address{Name: "a", Region: "europe-west1"}, []any{400, "invalid",
			"Invalid value for field 'resource.region': 'europe-west1'. The region must match the region in the request URL."}},
		"BadType": {region, &compute.Address{Name: "a", AddressType: "PUBLIC"}, []any{400, "invalid",
			"Invalid value for field 'resource.addressType': 'PUBLIC'. Must be one of [EXTERNAL, INTERNAL]."}},
		"BadTier": {region, &compute.Address{Name: "a", NetworkTier: "GOLD"}, []any{400, "invalid",
			"Invalid value for field 'resource.networkTier': 'GOLD'. Must be one of [FIXED_STANDARD, PREMIUM, STANDARD, STANDARD_OVERRIDES_FIXED_STANDARD]."}},
		"BadIP": {region, &compute.Address{Name: "a", Address: "34.126.0.300"}, []any{400, "invalid",
			"Invalid value for field 'resource.address': '34.126.0.300'. Must be an IPv4 address."}},
		"IPTaken": {region, &compute.Address{Name: "a", Address: "203.0.113.7"}, []any{409, "conflict",
			"IP_IN_USE_BY_ANOTHER_RESOURCE - IP '203.0.113.7' is already being used by another resource."}},
		"InternalWithoutIP": {region, &compute.Address{Name: "a", AddressType: "INTERNAL"}, []any{400, "required",
			"Required field 'resource.address' not specified"}},
		"BadLabel": {region, &compute.Address{Name: "a", Labels: map[string]string{"Team": "x"}}, []any{400, "invalid",
			"Invalid value for field 'labels.Team': 'Team'. Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Addresses.Insert(project, tc.region, tc.body).Do()
			if diff := cmp.Diff(tc.want, apiError(t, err)); diff != "" {
				t.Errorf("insert: -want, +got:\n%s", diff)
			}
		})
	}
	if _, err := svc.Addresses.Get(project, region, "a").Do(); apiError(t, err)[0] != 404 {
		t.Errorf("a refused insert made an address")
	}
}

func TestReadsRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	notFound := []any{404, "notFound", "The resource 'projects/p/regions/us-central1/addresses/a' was not found"}
	unknownRegion := []any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}
	cases := map[string]struct {
		call func() error
		want []any
	}{
		"GetNotFound":         {func() error { _, err := svc.Addresses.Get(project, region, "a").Do(); return err }, notFound},
		"DeleteNotFound":      {func() error { _, err := svc.Addresses.Delete(project, region, "a").Do(); return err }, notFound},
		"GetUnknownRegion":    {func() error { _, err := svc.Addresses.Get(project, "mars-north1", "a").Do(); return err }, unknownRegion},
		"DeleteUnknownRegion": {func() error { _, err := svc.Addresses.Delete(project, "mars-north1", "a").Do(); return err }, unknownRegion},
		"ListUnknownRegion":   {func() error { _, err := svc.Addresses.List(project, "mars-north1").Do(); return err }, unknownRegion},
		"BadPageToken": {func() error { _, err := svc.Addresses.List(project, region).PageToken("x").Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'pageToken': 'x'. The page token is invalid."}},
		"BadMaxResults": {func() error { _, err := svc.Addresses.AggregatedList(project).MaxResults(501).Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'maxResults': '501'. Must be between 0 and 500."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apiError(t, tc.call())); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

// TestPool: an address without an IP gets its preferred one unless an
// address holds it, then the next free one; a deleted address frees its
// IP, and Reset frees them all.
func TestPool(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	preferred := addresses.PreferredIP(path("b"))
	reserve(t, svc, &compute.Address{Name: "a", Address: preferred})
	b := reserve(t, svc, &compute.Address{Name: "b"})
	if b.Address == preferred || b.Address == "" {
		t.Errorf("b's preferred IP %s is a's: want another one, got %q", preferred, b.Address)
	}
	if _, err := svc.Addresses.Delete(project, region, "a").Do(); err != nil {
		t.Fatal(err)
	}
	if got := reserve(t, svc, &compute.Address{Name: "c", Address: preferred}).Address; got != preferred {
		t.Errorf("after a's delete its IP is free: want %s, got %s", preferred, got)
	}
	em.Reset()
	if _, err := svc.Addresses.Get(project, region, "b").Do(); apiError(t, err)[0] != 404 {
		t.Errorf("after Reset: want 404, got %v", err)
	}
	if got := reserve(t, svc, &compute.Address{Name: "b"}).Address; got != preferred {
		t.Errorf("after Reset: want b's preferred IP %s, got %s", preferred, got)
	}
}
