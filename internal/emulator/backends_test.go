package emulator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

func TestBackendServiceLifecycle(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	armor := newProjectPolicy(t, svc, "", "armor", "CLOUD_ARMOR")
	edge := newProjectPolicy(t, svc, "", "edge", "CLOUD_ARMOR_EDGE")
	regional := newProjectPolicy(t, svc, region, "armor", "CLOUD_ARMOR")

	op, err := svc.BackendServices.Insert(project, &compute.BackendService{Name: "web", Protocol: "HTTPS",
		LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	if err != nil || op.OperationType != "insert" || op.TargetLink != apiRoot+"projects/"+project+"/global/backendServices/web" {
		t.Fatalf("insert: %+v, %v", op, err)
	}
	wait(op, nil)
	wait(svc.RegionBackendServices.Insert(project, region, &compute.BackendService{Name: "api",
		LoadBalancingScheme: "INTERNAL_MANAGED", SecurityPolicy: "regions/" + region + "/securityPolicies/armor"}).Do())

	op = wait(svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: "armor"}).Do())
	if op.OperationType != "setSecurityPolicy" {
		t.Errorf("setSecurityPolicy operationType %q", op.OperationType)
	}
	op = wait(svc.BackendServices.SetEdgeSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: edge}).Do())
	if op.OperationType != "setEdgeSecurityPolicy" {
		t.Errorf("setEdgeSecurityPolicy operationType %q", op.OperationType)
	}

	got, err := svc.BackendServices.Get(project, "web").Do()
	if err != nil {
		t.Fatal(err)
	}
	want := &compute.BackendService{Kind: "compute#backendService", Name: "web", Id: got.Id, Protocol: "HTTPS",
		LoadBalancingScheme: "EXTERNAL_MANAGED", SecurityPolicy: armor, EdgeSecurityPolicy: edge,
		SelfLink: apiRoot + "projects/" + project + "/global/backendServices/web", Fingerprint: got.Fingerprint,
		CreationTimestamp: got.CreationTimestamp}
	if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
		t.Errorf("get: -want, +got:\n%s", diff)
	}

	// One aggregated read tells which backend uses which policy.
	agg, err := svc.BackendServices.AggregatedList(project).Do()
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string][2]string{}
	for scope, l := range agg.Items {
		for _, b := range l.BackendServices {
			uses[scope+"/"+b.Name] = [2]string{b.SecurityPolicy, b.EdgeSecurityPolicy}
		}
	}
	wantUses := map[string][2]string{"global/web": {armor, edge}, "regions/" + region + "/api": {regional, ""}}
	if diff := cmp.Diff(wantUses, uses); diff != "" || agg.Kind != "compute#backendServiceAggregatedList" {
		t.Errorf("aggregatedList (kind %q): -want, +got:\n%s", agg.Kind, diff)
	}
	if list, err := svc.RegionBackendServices.List(project, region).Do(); err != nil || len(list.Items) != 1 ||
		list.Items[0].Region != apiRoot+"projects/"+project+"/regions/"+region {
		t.Errorf("regional list: %+v, %v", list, err)
	}

	// Detach, then the policies can go.
	wait(svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{}).Do())
	wait(svc.BackendServices.SetEdgeSecurityPolicy(project, "web", &compute.SecurityPolicyReference{}).Do())
	wait(svc.SecurityPolicies.Delete(project, "armor").Do())
	wait(svc.SecurityPolicies.Delete(project, "edge").Do())
	wait(svc.RegionBackendServices.Delete(project, region, "api").Do())
	wait(svc.RegionSecurityPolicies.Delete(project, region, "armor").Do())
	wait(svc.BackendServices.Delete(project, "web").Do())
	if _, err := svc.BackendServices.Get(project, "web").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("get after delete: want 404, got %v", err)
	}
}

func TestNetworkEdgeSecurityServiceLifecycle(t *testing.T) {
	em := Start(t, Options{DefaultTier: TierEnterpriseAnnual})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	network := newProjectPolicy(t, svc, region, "net", "CLOUD_ARMOR_NETWORK")
	newProjectPolicy(t, svc, region, "net2", "CLOUD_ARMOR_NETWORK")

	op := wait(svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge",
		Description: "d", SecurityPolicy: network}).Do())
	if op.OperationType != "insert" || op.Region != apiRoot+"projects/"+project+"/regions/"+region {
		t.Errorf("insert operation: %+v", op)
	}
	got, err := svc.NetworkEdgeSecurityServices.Get(project, region, "edge").Do()
	if err != nil {
		t.Fatal(err)
	}
	path := "projects/" + project + "/regions/" + region + "/networkEdgeSecurityServices/edge"
	want := &compute.NetworkEdgeSecurityService{Kind: "compute#networkEdgeSecurityService", Name: "edge", Id: got.Id,
		Description: "d", SecurityPolicy: network, Region: apiRoot + "projects/" + project + "/regions/" + region,
		SelfLink: apiRoot + path, SelfLinkWithId: apiRoot + "projects/" + project + "/regions/" + region +
			"/networkEdgeSecurityServices/" + itoa(got.Id), Fingerprint: got.Fingerprint, CreationTimestamp: got.CreationTimestamp}
	if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
		t.Errorf("get: -want, +got:\n%s", diff)
	}

	// updateMask=description changes only the description.
	wait(svc.NetworkEdgeSecurityServices.Patch(project, region, "edge", &compute.NetworkEdgeSecurityService{
		Description: "new", Fingerprint: got.Fingerprint}).UpdateMask("description").Do())
	got2, _ := svc.NetworkEdgeSecurityServices.Get(project, region, "edge").Do()
	if got2.Description != "new" || got2.SecurityPolicy != network || got2.Fingerprint == got.Fingerprint {
		t.Errorf("after patch of description: %+v", got2)
	}
	// updateMask=securityPolicy with another policy, then with none: cleared.
	wait(svc.NetworkEdgeSecurityServices.Patch(project, region, "edge", &compute.NetworkEdgeSecurityService{
		SecurityPolicy: "net2"}).UpdateMask("securityPolicy").Do())
	if g, _ := svc.NetworkEdgeSecurityServices.Get(project, region, "edge").Do(); g.SecurityPolicy !=
		apiRoot+"projects/"+project+"/regions/"+region+"/securityPolicies/net2" {
		t.Errorf("after patch of securityPolicy: %q", g.SecurityPolicy)
	}
	wait(svc.NetworkEdgeSecurityServices.Patch(project, region, "edge", &compute.NetworkEdgeSecurityService{}).
		UpdateMask("securityPolicy").Do())
	if g, _ := svc.NetworkEdgeSecurityServices.Get(project, region, "edge").Do(); g.SecurityPolicy != "" || g.Description != "new" {
		t.Errorf("after clearing securityPolicy: %+v", g)
	}

	// validateOnly: a DONE operation, nothing created.
	dry, err := svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "dry"}).ValidateOnly(true).Do()
	if err != nil || dry.Status != "DONE" {
		t.Errorf("validateOnly insert: %+v, %v", dry, err)
	}
	if _, err := svc.NetworkEdgeSecurityServices.Get(project, region, "dry").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("validateOnly created the service: %v", err)
	}

	agg, err := svc.NetworkEdgeSecurityServices.AggregatedList(project).Do()
	if err != nil || len(agg.Items["regions/"+region].NetworkEdgeSecurityServices) != 1 || agg.Kind != "compute#networkEdgeSecurityServiceAggregatedList" {
		t.Errorf("aggregatedList: %+v, %v", agg, err)
	}
	wait(svc.NetworkEdgeSecurityServices.Delete(project, region, "edge").Do())
	if _, err := svc.NetworkEdgeSecurityServices.Get(project, region, "edge").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("get after delete: want 404, got %v", err)
	}
}

// TestMoreFieldsAndFaults: fields= selects from the new objects' answers,
// and an operation failed by fault injection changes nothing.
func TestMoreFieldsAndFaults(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	armor := newProjectPolicy(t, svc, "", "armor", "CLOUD_ARMOR")
	id := newOrgPolicy(t, svc, org, "corp")
	wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: "web", Protocol: "HTTP"}).Do())

	b, err := svc.BackendServices.Get(project, "web").Fields("name,securityPolicy").Do()
	if err != nil || b.Name != "web" || b.Protocol != "" {
		t.Errorf("backend get with fields: %+v, %v", b, err)
	}
	o, err := svc.OrganizationSecurityPolicies.Get(id).Fields("shortName,parent").Do()
	if err != nil || o.ShortName != "corp" || o.Parent != org || o.Name != "" {
		t.Errorf("organization policy get with fields: %+v, %v", o, err)
	}
	if _, err := svc.BackendServices.Get(project, "web").Fields("nope").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 400 {
		t.Errorf("unknown field: want 400, got %v", err)
	}

	if err := em.SetFaults(Faults{Methods: map[string]FaultRule{"backendServices.setSecurityPolicy": {OpErrorRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	op, err := svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: armor}).Do()
	if err != nil {
		t.Fatal(err)
	}
	op, _ = svc.GlobalOperations.Get(project, op.Name).Do()
	if op.Status != "DONE" || op.Error == nil || op.Error.Errors[0].Code != "INTERNAL_ERROR" {
		t.Errorf("failed operation: %+v", op)
	}
	if b, _ := svc.BackendServices.Get(project, "web").Do(); b.SecurityPolicy != "" {
		t.Errorf("a failed operation set the policy: %q", b.SecurityPolicy)
	}
}

// TestBackendBucketLifecycle: a backend bucket takes a global
// CLOUD_ARMOR_EDGE policy by setEdgeSecurityPolicy, keeps the rest of its
// body, and holds the policy until it is detached.
func TestBackendBucketLifecycle(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	edge := newProjectPolicy(t, svc, "", "edge", "CLOUD_ARMOR_EDGE")

	op := wait(svc.BackendBuckets.Insert(project, &compute.BackendBucket{Name: "static", BucketName: "assets", EnableCdn: true}).Do())
	if op.OperationType != "insert" || op.TargetLink != apiRoot+"projects/"+project+"/global/backendBuckets/static" {
		t.Errorf("insert operation: %+v", op)
	}
	op = wait(svc.BackendBuckets.SetEdgeSecurityPolicy(project, "static", &compute.SecurityPolicyReference{SecurityPolicy: "edge"}).Do())
	if op.OperationType != "setEdgeSecurityPolicy" {
		t.Errorf("setEdgeSecurityPolicy operationType %q", op.OperationType)
	}
	got, err := svc.BackendBuckets.Get(project, "static").Do()
	if err != nil {
		t.Fatal(err)
	}
	want := &compute.BackendBucket{Kind: "compute#backendBucket", Name: "static", Id: got.Id, BucketName: "assets",
		EnableCdn: true, EdgeSecurityPolicy: edge, SelfLink: apiRoot + "projects/" + project + "/global/backendBuckets/static",
		CreationTimestamp: got.CreationTimestamp}
	if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
		t.Errorf("get: -want, +got:\n%s", diff)
	}
	if l, err := svc.BackendBuckets.List(project).Do(); err != nil || len(l.Items) != 1 || l.Items[0].EdgeSecurityPolicy != edge {
		t.Errorf("list: %+v, %v", l, err)
	}
	if _, err := svc.SecurityPolicies.Delete(project, "edge").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 400 {
		t.Errorf("delete of a policy a bucket uses: want 400, got %v", err)
	}

	wait(svc.BackendBuckets.SetEdgeSecurityPolicy(project, "static", &compute.SecurityPolicyReference{}).Do())
	if b, _ := svc.BackendBuckets.Get(project, "static").Do(); b.EdgeSecurityPolicy != "" {
		t.Errorf("after detach: %q", b.EdgeSecurityPolicy)
	}
	wait(svc.SecurityPolicies.Delete(project, "edge").Do())
	wait(svc.BackendBuckets.Delete(project, "static").Do())
	if _, err := svc.BackendBuckets.Get(project, "static").Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("get after delete: want 404, got %v", err)
	}
}
