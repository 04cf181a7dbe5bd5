package emulator

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

func TestOrgPolicyLifecycle(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	op, err := svc.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: "corp", Description: "d",
		Rules: []*compute.SecurityPolicyRule{ipRule(defaultPriority, "deny(403)", "*"), ipRule(1000, "allow", "10.0.0.0/8")}}).
		ParentId(org).Do()
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(op.TargetId)
	wantOp := &compute.Operation{Kind: "compute#operation", Name: op.Name, Id: op.Id, OperationType: "insert",
		Status: "RUNNING", SelfLink: apiRoot + "locations/global/operations/" + op.Name,
		TargetLink: apiRoot + "locations/global/securityPolicies/" + id, TargetId: op.TargetId,
		User: "emulator@cloudarmor.local", InsertTime: op.InsertTime, StartTime: op.StartTime}
	if diff := cmp.Diff(wantOp, op, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
		t.Errorf("insert operation: -want, +got:\n%s", diff)
	}
	if !strings.HasPrefix(op.Name, "org-123-operation-") {
		t.Errorf("operation name %q: want org-123-operation-…", op.Name)
	}
	done := wait(op, nil)
	if done.Progress != 100 || done.EndTime == "" || done.Region != "" {
		t.Errorf("done operation: %+v", done)
	}

	got, err := svc.OrganizationSecurityPolicies.Get(id).Do()
	if err != nil {
		t.Fatal(err)
	}
	want := &compute.SecurityPolicy{Kind: "compute#securityPolicy", Id: op.TargetId, Name: id, ShortName: "corp",
		Parent: org, Type: "CLOUD_ARMOR", Description: "d", SelfLink: apiRoot + "locations/global/securityPolicies/" + id,
		LabelFingerprint: emptyLabelFingerprint, CreationTimestamp: got.CreationTimestamp, Fingerprint: got.Fingerprint,
		Rules: []*compute.SecurityPolicyRule{
			{Kind: "compute#securityPolicyRule", Priority: 1000, Action: "allow", Match: ipRule(0, "", "10.0.0.0/8").Match},
			{Kind: "compute#securityPolicyRule", Priority: defaultPriority, Action: "deny(403)", Match: ipRule(0, "", "*").Match},
		}}
	if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
		t.Errorf("get: -want, +got:\n%s", diff)
	}
	if other, err := svc.OrganizationSecurityPolicies.Get("securityPolicies/" + id).Do(); err != nil || other.Name != id {
		t.Errorf("get by securityPolicies/<id>: %v", err)
	}

	steps := []struct {
		opType string
		call   func() (*compute.Operation, error)
	}{
		{"AddRule", do(svc.OrganizationSecurityPolicies.AddRule(id, ipRule(10, "deny(404)", "1.2.3.4")))},
		{"PatchRule", do(svc.OrganizationSecurityPolicies.PatchRule(id, &compute.SecurityPolicyRule{Description: "x"}).Priority(10))},
		{"RemoveRule", do(svc.OrganizationSecurityPolicies.RemoveRule(id).Priority(1000))},
		{"patch", do(svc.OrganizationSecurityPolicies.Patch(id, &compute.SecurityPolicy{Description: "changed"}))},
	}
	for _, s := range steps {
		if op := wait(s.call()); op.OperationType != s.opType {
			t.Errorf("operationType: want %s, got %s", s.opType, op.OperationType)
		}
	}
	r, err := svc.OrganizationSecurityPolicies.GetRule(id).Priority(10).Do()
	if err != nil || r.Action != "deny(404)" || r.Description != "x" {
		t.Errorf("getRule 10: %+v, %v", r, err)
	}
	got, _ = svc.OrganizationSecurityPolicies.Get(id).Do()
	if got.Description != "changed" || len(got.Rules) != 2 {
		t.Errorf("after the changes: description %q, %d rules", got.Description, len(got.Rules))
	}

	newOrgPolicy(t, svc, folder, "other")
	list, err := svc.OrganizationSecurityPolicies.List().ParentId(org).Do()
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != id || list.Kind != "compute#securityPolicyList" {
		t.Errorf("list of %s: %+v, %v", org, list, err)
	}
	ops, err := svc.GlobalOrganizationOperations.List().ParentId(org).Do()
	if err != nil || len(ops.Items) != 5 {
		t.Fatalf("operations of %s: %d, %v", org, len(ops.Items), err)
	}
	if err := svc.GlobalOrganizationOperations.Delete(ops.Items[0].Name).Do(); err != nil {
		t.Errorf("delete operation: %v", err)
	}
	if _, err := svc.GlobalOrganizationOperations.Get(ops.Items[0].Name).Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("get of a deleted operation: want 404, got %v", err)
	}
	if fops, _ := svc.GlobalOrganizationOperations.List().ParentId(folder).Do(); len(fops.Items) != 1 ||
		!strings.HasPrefix(fops.Items[0].Name, "folder-456-operation-") {
		t.Errorf("operations of %s: %+v", folder, fops)
	}

	wait(svc.OrganizationSecurityPolicies.Delete(id).Do())
	if _, err := svc.OrganizationSecurityPolicies.Get(id).Do(); asAPIErr(err) == nil || asAPIErr(err).Code != 404 {
		t.Errorf("get after delete: want 404, got %v", err)
	}
}

func TestOrgPolicyAssociations(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	a := newOrgPolicy(t, svc, org, "a")
	b := newOrgPolicy(t, svc, org, "b")
	wait(svc.OrganizationSecurityPolicies.AddAssociation(a, &compute.SecurityPolicyAssociation{
		AttachmentId: folder, ExcludedProjects: []string{"projects/skip"}}).Do())
	wait(svc.OrganizationSecurityPolicies.AddAssociation(a, &compute.SecurityPolicyAssociation{
		Name: "whole-org", AttachmentId: org}).Do())

	got, err := svc.OrganizationSecurityPolicies.GetAssociation(a).Name("folder-456").Do()
	want := &compute.SecurityPolicyAssociation{Name: "folder-456", AttachmentId: folder, SecurityPolicyId: a,
		ShortName: "a", DisplayName: "a", ExcludedProjects: []string{"projects/skip"}}
	if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); err != nil || diff != "" {
		t.Errorf("getAssociation (%v): -want, +got:\n%s", err, diff)
	}
	p, _ := svc.OrganizationSecurityPolicies.Get(a).Do()
	if len(p.Associations) != 2 {
		t.Errorf("policy associations: %+v", p.Associations)
	}

	// replaceExistingAssociation moves the folder's association to b.
	wait(svc.OrganizationSecurityPolicies.AddAssociation(b, &compute.SecurityPolicyAssociation{
		AttachmentId: folder}).ReplaceExistingAssociation(true).Do())
	list, err := svc.OrganizationSecurityPolicies.ListAssociations().TargetResource(folder).Do()
	wantList := &compute.OrganizationSecurityPoliciesListAssociationsResponse{
		Kind: "compute#organizationSecurityPoliciesListAssociationsResponse",
		Associations: []*compute.SecurityPolicyAssociation{{Name: "folder-456", AttachmentId: folder,
			SecurityPolicyId: b, ShortName: "b", DisplayName: "b"}}}
	if diff := cmp.Diff(wantList, list, cmp.FilterPath(isServerResponse, cmp.Ignore())); err != nil || diff != "" {
		t.Errorf("listAssociations after the replacement (%v): -want, +got:\n%s", err, diff)
	}
	if p, _ := svc.OrganizationSecurityPolicies.Get(a).Do(); len(p.Associations) != 1 || p.Associations[0].Name != "whole-org" {
		t.Errorf("policy a keeps only whole-org: %+v", p.Associations)
	}

	// An association with a project enrolls it in Cloud Armor Enterprise.
	wait(svc.OrganizationSecurityPolicies.AddAssociation(b, &compute.SecurityPolicyAssociation{
		AttachmentId: "projects/" + project}).Do())
	if pr, _ := svc.Projects.Get(project).Do(); pr.CloudArmorTier != TierEnterprisePaygo {
		t.Errorf("tier of the attached project: %q", pr.CloudArmorTier)
	}

	wait(svc.OrganizationSecurityPolicies.RemoveAssociation(a).Name("whole-org").Do())
	wait(svc.OrganizationSecurityPolicies.Delete(a).Do())

	// move
	op := wait(svc.OrganizationSecurityPolicies.Move(b).ParentId(folder).Do())
	if op.OperationType != "move" || !strings.HasPrefix(op.Name, "folder-456-") {
		t.Errorf("move operation: %s %s", op.OperationType, op.Name)
	}
	if p, _ := svc.OrganizationSecurityPolicies.Get(b).Do(); p.Parent != folder {
		t.Errorf("parent after move: %q", p.Parent)
	}
}

// TestOneOperationPerObject: while an operation on an object runs, other
// mutations of that object get resourceNotReady; other objects are free.
func TestOneOperationPerObject(t *testing.T) {
	// Set things up without latency, then serve the same state with
	// operations that run for an hour.
	file := filepath.Join(t.TempDir(), "state.json")
	setup := Start(t, Options{StateFile: file})
	svc := newService(t, setup)
	wait := opWaiter(t, svc)
	_ = setup.SetTier(project, TierEnterprisePaygo)
	a := newOrgPolicy(t, svc, org, "a")
	b := newOrgPolicy(t, svc, org, "b")
	c := newOrgPolicy(t, svc, org, "c")
	d := newOrgPolicy(t, svc, org, "d")
	wait(svc.OrganizationSecurityPolicies.AddAssociation(b, &compute.SecurityPolicyAssociation{AttachmentId: folder}).Do())
	armor := newProjectPolicy(t, svc, "", "armor", "CLOUD_ARMOR")
	network := newProjectPolicy(t, svc, region, "net", "CLOUD_ARMOR_NETWORK")
	for _, name := range []string{"web", "api"} {
		wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: name}).Do())
		wait(svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: name}).Do())
	}
	em := Start(t, Options{StateFile: file, OpLatency: time.Hour})
	svc = newService(t, em)

	notReady := func(path string) *apiErr {
		return &apiErr{Code: 400, Reason: "resourceNotReady", Message: "The resource '" + path + "' is not ready"}
	}
	cases := map[string]struct {
		first, second, other func() (*compute.Operation, error)
		busy                 string
	}{
		"OrganizationPolicy": {
			first:  do(svc.OrganizationSecurityPolicies.AddRule(a, ipRule(1, "allow", "1.1.1.1"))),
			second: do(svc.OrganizationSecurityPolicies.Patch(a, &compute.SecurityPolicy{Description: "x"})),
			other:  do(svc.OrganizationSecurityPolicies.AddRule(c, ipRule(1, "allow", "1.1.1.1"))),
			busy:   "locations/global/securityPolicies/" + a,
		},
		"ReplacedAssociationHoldsBoth": {
			first:  do(svc.OrganizationSecurityPolicies.AddAssociation(d, &compute.SecurityPolicyAssociation{AttachmentId: folder}).ReplaceExistingAssociation(true)),
			second: do(svc.OrganizationSecurityPolicies.RemoveRule(b).Priority(1)),
			other: func() (*compute.Operation, error) {
				return svc.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: "e"}).ParentId(org).Do()
			},
			busy: "locations/global/securityPolicies/" + b,
		},
		"BackendService": {
			first:  do(svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: armor})),
			second: do(svc.BackendServices.Delete(project, "web")),
			other:  do(svc.BackendServices.SetSecurityPolicy(project, "api", &compute.SecurityPolicyReference{SecurityPolicy: armor})),
			busy:   "projects/" + project + "/global/backendServices/web",
		},
		"NetworkEdgeSecurityService": {
			first:  do(svc.NetworkEdgeSecurityServices.Patch(project, region, "web", &compute.NetworkEdgeSecurityService{SecurityPolicy: network}).UpdateMask("securityPolicy")),
			second: do(svc.NetworkEdgeSecurityServices.Delete(project, region, "web")),
			other:  do(svc.NetworkEdgeSecurityServices.Patch(project, region, "api", &compute.NetworkEdgeSecurityService{Description: "x"})),
			busy:   "projects/" + project + "/regions/" + region + "/networkEdgeSecurityServices/web",
		},
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			op, err := tc.first()
			if err != nil || op.Status != "RUNNING" {
				t.Fatalf("first mutation: %+v, %v", op, err)
			}
			if again, _ := svc.GlobalOrganizationOperations.Get(op.Name).Do(); op.Region == "" && strings.HasPrefix(op.Name, "org-") && again.Status != "RUNNING" {
				t.Errorf("operation done before OpLatency: %s", again.Status)
			}
			_, err = tc.second()
			if diff := cmp.Diff(notReady(tc.busy), asAPIErr(err)); diff != "" {
				t.Errorf("second mutation: -want, +got:\n%s", diff)
			}
			if _, err := tc.other(); err != nil {
				t.Errorf("mutation of another object: %v", err)
			}
		})
	}
	if n := em.Stats().NotReady; n != int64(len(cases)) {
		t.Errorf("Stats.NotReady: want %d, got %d", len(cases), n)
	}
}

// TestMoreObjectsInStatsAndState: /_emulator/stats shows the new objects
// beside the existing fields, and the state file keeps them.
func TestMoreObjectsInStatsAndState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	em := Start(t, Options{StateFile: file})
	svc := newService(t, em)
	wait := opWaiter(t, svc)
	_ = em.SetTier(project, TierEnterprisePaygo)
	id := newOrgPolicy(t, svc, org, "corp")
	armor := newProjectPolicy(t, svc, "", "armor", "CLOUD_ARMOR")
	network := newProjectPolicy(t, svc, region, "net", "CLOUD_ARMOR_NETWORK")
	wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: "web", SecurityPolicy: armor}).Do())
	wait(svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge", SecurityPolicy: network}).Do())

	res, body := rawCall(t, "GET", em.URL()+"/_emulator/stats", "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("stats: %d %s", res.StatusCode, body)
	}
	var st struct {
		Total    int64
		Policies map[string]map[string]int64
		State    map[string]map[string]any
		Orgs     map[string]map[string]any `json:"organizationSecurityPolicies"`
		Backends map[string]map[string]any `json:"backendServices"`
		Edges    map[string]map[string]any `json:"networkEdgeSecurityServices"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	orgPath := "locations/global/securityPolicies/" + id
	backend := "projects/" + project + "/global/backendServices/web"
	edge := "projects/" + project + "/regions/" + region + "/networkEdgeSecurityServices/edge"
	got := []any{st.Orgs[orgPath]["shortName"], st.Backends[backend]["securityPolicy"], st.Edges[edge]["securityPolicy"],
		len(st.State), st.Policies[orgPath]["organizationSecurityPolicies.insert"], st.Policies[orgPath]["globalOrganizationOperations.get"] > 0}
	if diff := cmp.Diff([]any{"corp", armor, network, 2, int64(1), true}, got); diff != "" {
		t.Errorf("stats (shortName, backend policy, edge policy, project policies, org insert count, org polls): -want, +got:\n%s", diff)
	}

	em2 := Start(t, Options{StateFile: file})
	if diff := cmp.Diff(em.OrganizationSecurityPolicies(), em2.OrganizationSecurityPolicies()); diff != "" {
		t.Errorf("organization policies after a restart: -before, +after:\n%s", diff)
	}
	if diff := cmp.Diff(em.BackendServices(), em2.BackendServices()); diff != "" {
		t.Errorf("backend services after a restart: -before, +after:\n%s", diff)
	}
	if diff := cmp.Diff(em.NetworkEdgeSecurityServices(), em2.NetworkEdgeSecurityServices()); diff != "" {
		t.Errorf("edge services after a restart: -before, +after:\n%s", diff)
	}
	em.Reset()
	if len(em.OrganizationSecurityPolicies())+len(em.BackendServices())+len(em.NetworkEdgeSecurityServices()) != 0 {
		t.Error("Reset kept objects")
	}
}

// TestOrgPolicyGrants: organization policies are checked against their
// parent, as organization address groups are.
func TestOrgPolicyGrants(t *testing.T) {
	em := Start(t, Options{Grants: map[string]Grant{
		"admin": {Write: []string{org}},
		"other": {Write: []string{"organizations/999"}},
	}})
	ctx := context.Background()
	admin, _ := em.NewServiceWithToken(ctx, "admin")
	other, _ := em.NewServiceWithToken(ctx, "other")
	id := newOrgPolicy(t, admin, org, "corp")
	_, err := other.OrganizationSecurityPolicies.Get(id).Do()
	want := &apiErr{Code: 403, Reason: "forbidden",
		Message: "Required 'compute.organizationSecurityPolicies.get' permission for 'locations/global/securityPolicies/" + id + "'"}
	if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
		t.Errorf("get by another organization's token: -want, +got:\n%s", diff)
	}
	_, err = other.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: "x"}).ParentId(org).Do()
	want = &apiErr{Code: 403, Reason: "forbidden", Message: "Required 'compute.organizationSecurityPolicies.create' permission for '" + org + "'"}
	if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
		t.Errorf("insert by another organization's token: -want, +got:\n%s", diff)
	}
}
