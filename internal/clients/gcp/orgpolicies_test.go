package gcp

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

// TestOrgPolicyClient drives an organization policy's life against the
// emulator: insert (the id comes back), reads from the snapshot, rules,
// associations, and a delete GCP refuses while the policy is attached.
func TestOrgPolicyClient(t *testing.T) {
	ctx := context.Background()
	c, _, _ := emulatorClient(t, time.Hour)
	o, err := c.OrgPolicies("organizations/123")
	if err != nil {
		t.Fatal(err)
	}

	id, err := o.Create(ctx, &compute.SecurityPolicy{ShortName: "baseline", Type: "CLOUD_ARMOR", Description: "d"})
	if err != nil || id == "" {
		t.Fatalf("Create(): want an id, got %q, %v", id, err)
	}
	sp, err := o.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := c.calls.Count(MethodGet); n != 1 {
		t.Errorf("two Get(): want 1 read (the snapshot), got %d", n)
	}
	if diff := cmp.Diff([]string{"baseline", "d", "organizations/123"}, []string{sp.ShortName, sp.Description, sp.Parent}); diff != "" {
		t.Errorf("Get(): -want, +got:\n%s", diff)
	}
	found, err := o.Find(ctx, "baseline")
	if err != nil || found.Name != id {
		t.Errorf("Find(baseline): want policy %s, got %v, %v", id, found, err)
	}
	if _, err := o.Find(ctx, "other"); !IsNotFound(err) {
		t.Errorf("Find(other): want NotFound, got %v", err)
	}
	if _, err := o.Create(ctx, &compute.SecurityPolicy{ShortName: "baseline", Type: "CLOUD_ARMOR"}); !IsAlreadyExists(err) {
		t.Errorf("Create() of a taken shortName: want AlreadyExists, got %v", err)
	}

	rule := &compute.SecurityPolicyRule{Priority: 100, Action: "deny(403)",
		Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"192.0.2.0/24"}}}}
	if err := o.AddRule(ctx, id, rule); err != nil {
		t.Fatalf("AddRule(): %v", err)
	}
	rule.Description = "office"
	if err := o.PatchRule(ctx, id, 100, rule); err != nil {
		t.Fatalf("PatchRule(): %v", err)
	}
	if err := o.PatchRule(ctx, id, 100, rule, "description"); err == nil {
		t.Error("PatchRule() with an updateMask: want an error (v1 has none), got nil")
	}
	if err := o.SetLabels(ctx, id, map[string]string{"a": "b"}, ""); err == nil {
		t.Error("SetLabels(): want an error (no labels), got nil")
	}
	sp, err = o.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r := findRule(sp, 100); r == nil || r.Description != "office" {
		t.Errorf("Get() after the rule writes: want rule 100 'office', got %+v", r)
	}
	if err := o.RemoveRule(ctx, id, 100); err != nil {
		t.Fatalf("RemoveRule(): %v", err)
	}

	a := &compute.SecurityPolicyAssociation{Name: "whole-org", AttachmentId: "organizations/123"}
	if err := o.AddAssociation(ctx, id, a, false); err != nil {
		t.Fatalf("AddAssociation(): %v", err)
	}
	list, err := o.ListAssociations(ctx, "organizations/123")
	if err != nil || len(list) != 1 || list[0].Name != "whole-org" || list[0].SecurityPolicyId != id {
		t.Errorf("ListAssociations(): want whole-org of %s, got %+v, %v", id, list, err)
	}
	if err := o.Delete(ctx, id); err == nil {
		t.Error("Delete() of an attached policy: want GCP's refusal, got nil")
	}
	if err := o.RemoveAssociation(ctx, id, "whole-org"); err != nil {
		t.Fatalf("RemoveAssociation(): %v", err)
	}
	if err := o.Delete(ctx, id); err != nil {
		t.Fatalf("Delete(): %v", err)
	}
	if _, err := o.Get(ctx, id); !IsNotFound(err) {
		t.Errorf("Get() after Delete(): want NotFound, got %v", err)
	}
	if n := c.calls.Count(MethodOrgAddAssociation); n != 1 {
		t.Errorf("want 1 %s counted, got %d", MethodOrgAddAssociation, n)
	}
}

func findRule(sp *compute.SecurityPolicy, prio int64) *compute.SecurityPolicyRule {
	for _, r := range sp.Rules {
		if r.Priority == prio {
			return r
		}
	}
	return nil
}

func TestOrgPoliciesParent(t *testing.T) {
	c := NewClient(nil, nil, nil)
	for parent, ok := range map[string]bool{"organizations/1": true, "folders/22": true, "projects/p": false, "organizations/x": false, "": true} {
		if _, err := c.OrgPolicies(parent); (err == nil) != ok {
			t.Errorf("OrgPolicies(%q): want ok=%t, got %v", parent, ok, err)
		}
	}
}
