package gcp

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

// TestBackendSetPolicy sets and clears the policy fields of a global and a
// regional backend service and a backend bucket through the BackendClient,
// and checks that each write drops the project's kept users (a Client
// keeping them for an hour sees the change at once).
func TestBackendSetPolicy(t *testing.T) {
	ctx := context.Background()
	c, svc, _ := emulatorClient(t, time.Hour)
	const region = "us-central1"
	wait := func(region string) func(op *compute.Operation, err error) {
		return func(op *compute.Operation, err error) {
			t.Helper()
			if err == nil {
				err = WaitForOperation(ctx, svc, "p", region, op, withPollInterval(time.Millisecond, 5*time.Millisecond))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wait("")(svc.SecurityPolicies.Insert("p", &compute.SecurityPolicy{Name: "armor"}).Do())
	wait("")(svc.SecurityPolicies.Insert("p", &compute.SecurityPolicy{Name: "edge", Type: "CLOUD_ARMOR_EDGE"}).Do())
	wait(region)(svc.RegionSecurityPolicies.Insert("p", region, &compute.SecurityPolicy{Name: "regional"}).Do())
	wait("")(svc.BackendServices.Insert("p", &compute.BackendService{Name: "web"}).Do())
	wait(region)(svc.RegionBackendServices.Insert("p", region, &compute.BackendService{Name: "api"}).Do())
	wait("")(svc.BackendBuckets.Insert("p", &compute.BackendBucket{Name: "static", BucketName: "b"}).Do())

	b := c.Backends()
	p := c.Projects()
	armor := PolicyKey{Project: "p", Name: "armor"}
	edge := PolicyKey{Project: "p", Name: "edge"}
	// Read once, so the Client keeps the (empty) lists.
	if u, err := p.Users(ctx, "p"); err != nil || len(u.Of(armor)) != 0 {
		t.Fatalf("Users before: %v, %v", u, err)
	}
	if u, err := p.Buckets(ctx, "p"); err != nil || len(u.Of(edge)) != 0 {
		t.Fatalf("Buckets before: %v, %v", u, err)
	}

	web := TargetKey{Project: "p", Name: "web"}
	api := TargetKey{Project: "p", Region: region, Name: "api"}
	static := TargetKey{Project: "p", Name: "static", Bucket: true}
	for _, s := range []struct {
		key          TargetKey
		field, value string
	}{
		{web, "securityPolicy", "https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/armor"},
		{web, "edgeSecurityPolicy", "projects/p/global/securityPolicies/edge"},
		{api, "securityPolicy", "projects/p/regions/" + region + "/securityPolicies/regional"},
		{static, "edgeSecurityPolicy", "edge"},
	} {
		if err := b.SetPolicy(ctx, s.key, s.field, s.value); err != nil {
			t.Fatalf("SetPolicy(%s, %s): %v", s.key, s.field, err)
		}
	}
	got := map[string]string{}
	for _, k := range []TargetKey{web, api, static} {
		tg, err := b.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		got[k.String()+" securityPolicy"] = RelativeName(tg.Field("securityPolicy"))
		got[k.String()+" edgeSecurityPolicy"] = RelativeName(tg.Field("edgeSecurityPolicy"))
	}
	want := map[string]string{
		"projects/p/global/backendServices/web securityPolicy":                  "projects/p/global/securityPolicies/armor",
		"projects/p/global/backendServices/web edgeSecurityPolicy":              "projects/p/global/securityPolicies/edge",
		"projects/p/regions/us-central1/backendServices/api securityPolicy":     "projects/p/regions/us-central1/securityPolicies/regional",
		"projects/p/regions/us-central1/backendServices/api edgeSecurityPolicy": "",
		"projects/p/global/backendBuckets/static securityPolicy":                "",
		"projects/p/global/backendBuckets/static edgeSecurityPolicy":            "projects/p/global/securityPolicies/edge",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields: -want, +got:\n%s", diff)
	}
	if u, err := p.Users(ctx, "p"); err != nil || len(u.Of(armor)) != 1 {
		t.Errorf("Users after SetPolicy: want web, got %v, %v", u, err)
	}
	if u, err := p.Buckets(ctx, "p"); err != nil || !cmp.Equal(u.Of(edge), []PolicyUser{{Name: "projects/p/global/backendBuckets/static", Field: "edgeSecurityPolicy"}}) {
		t.Errorf("Buckets after SetPolicy: %v, %v", u, err)
	}

	if err := b.SetPolicy(ctx, static, "edgeSecurityPolicy", ""); err != nil {
		t.Fatal(err)
	}
	if tg, err := b.Get(ctx, static); err != nil || tg.EdgeSecurityPolicy != "" {
		t.Errorf("after clearing: %+v, %v", tg, err)
	}
	if _, err := b.Get(ctx, TargetKey{Project: "p", Name: "nope"}); !IsNotFound(err) {
		t.Errorf("Get of a missing backend: want not found, got %v", err)
	}
}
