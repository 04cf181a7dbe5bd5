package gcp

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

// emulatorClient is a Client over a fresh emulator, keeping project reads
// for ttl, and a plain compute client to change what it holds.
func emulatorClient(t *testing.T, ttl time.Duration) (*Client, *compute.Service, *emulator.Running) {
	t.Helper()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(svc, nil, nil, WithCallCounter(NewCallCounter()), WithProjectReadTTL(ttl), fastWait), svc, em
}

func TestTier(t *testing.T) {
	ctx := context.Background()
	c, _, em := emulatorClient(t, time.Hour)
	p := c.Projects()

	got, err := p.Tier(ctx, "p")
	if err != nil || got != TierStandard {
		t.Fatalf("Tier(): want %s, got %q, %v", TierStandard, got, err)
	}
	if _, err := p.Tier(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := c.calls.Count(MethodProjectGet); n != 1 {
		t.Errorf("two Tier() within the TTL: want 1 projects.get, got %d", n)
	}

	if err := p.SetTier(ctx, "p", TierEnterprisePaygo); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Tier(ctx, "p"); got != TierEnterprisePaygo {
		t.Errorf("Tier() after SetTier: want %s, got %s", TierEnterprisePaygo, got)
	}
	if n := c.calls.Count(MethodProjectGet); n != 1 {
		t.Errorf("SetTier keeps what it set: want 1 projects.get in all, got %d", n)
	}

	// Changed behind the Client's back: the kept tier stands until read
	// fresh.
	if err := em.SetTier("p", TierEnterpriseAnnual); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Tier(ctx, "p"); got != TierEnterprisePaygo {
		t.Errorf("Tier() within the TTL: want the kept %s, got %s", TierEnterprisePaygo, got)
	}
	if got, _ := p.FreshTier(ctx, "p"); got != TierEnterpriseAnnual {
		t.Errorf("FreshTier(): want %s, got %s", TierEnterpriseAnnual, got)
	}
	if got, _ := p.Tier(ctx, "p"); got != TierEnterpriseAnnual {
		t.Errorf("Tier() after FreshTier: want %s, got %s", TierEnterpriseAnnual, got)
	}
	if err := p.SetTier(ctx, "p", "CA_GOLD"); Kind(err) != KindInvalid {
		t.Errorf("SetTier(CA_GOLD): want an Invalid error, got %v", err)
	}
}

func TestTierExpires(t *testing.T) {
	ctx := context.Background()
	c, _, _ := emulatorClient(t, time.Hour)
	now := time.Now()
	c.reads = newReadCache(time.Minute, func() time.Time { return now })
	p := c.Projects()
	for range 3 {
		if _, err := p.Tier(ctx, "p"); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute)
	if _, err := p.Tier(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := c.calls.Count(MethodProjectGet); n != 2 {
		t.Errorf("three reads in a TTL, one after: want 2 projects.get, got %d", n)
	}
}

func TestUsers(t *testing.T) {
	ctx := context.Background()
	c, svc, em := emulatorClient(t, time.Hour)
	wait := func(op *compute.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := WaitForOperation(ctx, svc, "p", "", op, withPollInterval(time.Millisecond, 5*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	waitRegion := func(op *compute.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := WaitForOperation(ctx, svc, "p", "us-central1", op, withPollInterval(time.Millisecond, 5*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	wait(svc.SecurityPolicies.Insert("p", &compute.SecurityPolicy{Name: "armor"}).Do())
	wait(svc.SecurityPolicies.Insert("p", &compute.SecurityPolicy{Name: "edge", Type: "CLOUD_ARMOR_EDGE"}).Do())
	wait(svc.SecurityPolicies.Insert("p", &compute.SecurityPolicy{Name: "idle"}).Do())
	waitRegion(svc.RegionSecurityPolicies.Insert("p", "us-central1", &compute.SecurityPolicy{Name: "net", Type: "CLOUD_ARMOR_NETWORK"}).Do())
	waitRegion(svc.RegionSecurityPolicies.Insert("p", "us-central1", &compute.SecurityPolicy{Name: "regional"}).Do())
	wait(svc.BackendServices.Insert("p", &compute.BackendService{Name: "web"}).Do())
	wait(svc.BackendServices.Insert("p", &compute.BackendService{Name: "api"}).Do())
	waitRegion(svc.RegionBackendServices.Insert("p", "us-central1", &compute.BackendService{Name: "internal"}).Do())
	wait(svc.BackendServices.SetSecurityPolicy("p", "web", &compute.SecurityPolicyReference{SecurityPolicy: "armor"}).Do())
	wait(svc.BackendServices.SetSecurityPolicy("p", "api", &compute.SecurityPolicyReference{SecurityPolicy: "armor"}).Do())
	wait(svc.BackendServices.SetEdgeSecurityPolicy("p", "web", &compute.SecurityPolicyReference{SecurityPolicy: "edge"}).Do())
	waitRegion(svc.RegionBackendServices.SetSecurityPolicy("p", "us-central1", "internal",
		&compute.SecurityPolicyReference{SecurityPolicy: "projects/p/regions/us-central1/securityPolicies/regional"}).Do())
	if err := em.SetTier("p", TierEnterprisePaygo); err != nil {
		t.Fatal(err)
	}
	waitRegion(svc.NetworkEdgeSecurityServices.Insert("p", "us-central1", &compute.NetworkEdgeSecurityService{Name: "ness",
		SecurityPolicy: "projects/p/regions/us-central1/securityPolicies/net"}).Do())

	p := c.Projects()
	users, err := p.Users(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := map[PolicyKey][]PolicyUser{
		{Project: "p", Name: "armor"}: {{Name: "projects/p/global/backendServices/api", Field: "securityPolicy"},
			{Name: "projects/p/global/backendServices/web", Field: "securityPolicy"}},
		{Project: "p", Name: "edge"}:                            {{Name: "projects/p/global/backendServices/web", Field: "edgeSecurityPolicy"}},
		{Project: "p", Name: "idle"}:                            nil,
		{Project: "p", Region: "us-central1", Name: "regional"}: {{Name: "projects/p/regions/us-central1/backendServices/internal", Field: "securityPolicy"}},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, users.Of(k)); diff != "" {
			t.Errorf("Users().Of(%s): -want, +got:\n%s", k, diff)
		}
	}
	edges, err := p.EdgeServices(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	net := PolicyKey{Project: "p", Region: "us-central1", Name: "net"}
	if diff := cmp.Diff([]PolicyUser{{Name: "projects/p/regions/us-central1/networkEdgeSecurityServices/ness", Field: "securityPolicy"}}, edges.Of(net)); diff != "" {
		t.Errorf("EdgeServices().Of(%s): -want, +got:\n%s", net, diff)
	}

	// Every policy of the project is answered from one list of each.
	for range 5 {
		if _, err := p.Users(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.EdgeServices(ctx, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.calls.Count(MethodBackendAggregatedList); n != 1 {
		t.Errorf("six Users() within the TTL: want 1 backendServices.aggregatedList, got %d", n)
	}
	if err := c.EdgeServices().Patch(ctx, EdgeServiceKey{Project: "p", Region: "us-central1", Name: "ness"},
		&compute.NetworkEdgeSecurityService{Description: "changed"}, "description"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EdgeServices(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := c.calls.Count(MethodEdgeAggregatedList); n != 2 {
		t.Errorf("EdgeServices() after a write to an edge service: want 2 networkEdgeSecurityServices.aggregatedList in all, got %d", n)
	}
}

func TestRelativeName(t *testing.T) {
	cases := map[string]string{
		"https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/a": "projects/p/global/securityPolicies/a",
		"http://127.0.0.1:1/compute/v1/projects/p/regions/r/securityPolicies/b":      "projects/p/regions/r/securityPolicies/b",
		"projects/p/global/backendServices/web":                                      "projects/p/global/backendServices/web",
		"a":                                                                          "a",
	}
	for in, want := range cases {
		if got := RelativeName(in); got != want {
			t.Errorf("RelativeName(%q): want %q, got %q", in, want, got)
		}
	}
}
