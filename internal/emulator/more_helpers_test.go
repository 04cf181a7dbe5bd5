package emulator

import (
	"strconv"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

const (
	org    = "organizations/123"
	folder = "folders/456"
)

// opWaiter returns a function that polls an operation of any kind (global,
// regional, global organization) through the client until it is DONE, and
// fails the test unless the call and the operation succeeded; it takes a
// call's two results directly.
func opWaiter(t *testing.T, svc *compute.Service) func(*compute.Operation, error) *compute.Operation {
	return func(op *compute.Operation, err error) *compute.Operation {
		t.Helper()
		return waitDone(t, svc, op, err)
	}
}

// caller is a compute call that answers an operation.
type caller interface {
	Do(...googleapi.CallOption) (*compute.Operation, error)
}

// do turns a call into a function, for tables.
func do(c caller) func() (*compute.Operation, error) {
	return func() (*compute.Operation, error) { return c.Do() }
}

func waitDone(t *testing.T, svc *compute.Service, op *compute.Operation, err error) *compute.Operation {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	for range 100 {
		switch {
		case op.Region != "":
			op, err = svc.RegionOperations.Get(project, op.Region[strings.LastIndex(op.Region, "/")+1:], op.Name).Do()
		case strings.HasPrefix(op.Name, "org-") || strings.HasPrefix(op.Name, "folder-"):
			op, err = svc.GlobalOrganizationOperations.Get(op.Name).Do()
		default:
			op, err = svc.GlobalOperations.Get(project, op.Name).Do()
		}
		if err != nil {
			t.Fatalf("poll failed: %v", err)
		}
		if op.Status == "DONE" {
			if op.Error != nil {
				t.Fatalf("operation %s failed: %+v", op.Name, op.Error.Errors[0])
			}
			return op
		}
	}
	t.Fatalf("operation %s never DONE", op.Name)
	return nil
}

// newOrgPolicy inserts an organization policy and returns its id.
func newOrgPolicy(t *testing.T, svc *compute.Service, parent, short string, rules ...*compute.SecurityPolicyRule) string {
	t.Helper()
	op := opWaiter(t, svc)(svc.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: short, Rules: rules}).
		ParentId(parent).Do())
	return itoa(op.TargetId)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// newProjectPolicy inserts a project policy of a type, global (region "")
// or regional, and returns its selfLink.
func newProjectPolicy(t *testing.T, svc *compute.Service, region, name, typ string) string {
	t.Helper()
	p := &compute.SecurityPolicy{Name: name, Type: typ}
	if region == "" {
		opWaiter(t, svc)(svc.SecurityPolicies.Insert(project, p).Do())
		return apiRoot + "projects/" + project + "/global/securityPolicies/" + name
	}
	opWaiter(t, svc)(svc.RegionSecurityPolicies.Insert(project, region, p).Do())
	return apiRoot + "projects/" + project + "/regions/" + region + "/securityPolicies/" + name
}
