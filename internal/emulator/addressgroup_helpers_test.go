package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/api/googleapi"
	networksecurity "google.golang.org/api/networksecurity/v1"
)

// groupsAPI hides the difference between the project and the organization
// address group services of the official client.
type groupsAPI struct {
	create      func(parent, id string, g *networksecurity.AddressGroup) (*networksecurity.Operation, error)
	get         func(name string) (*networksecurity.AddressGroup, error)
	list        func(parent string, size int64, token string) (*networksecurity.ListAddressGroupsResponse, error)
	patch       func(name, mask string, g *networksecurity.AddressGroup) (*networksecurity.Operation, error)
	delete      func(name string) (*networksecurity.Operation, error)
	addItems    func(name string, items ...string) (*networksecurity.Operation, error)
	removeItems func(name string, items ...string) (*networksecurity.Operation, error)
	cloneItems  func(name, source string) (*networksecurity.Operation, error)
	references  func(name string, size int64, token string) (*networksecurity.ListAddressGroupReferencesResponse, error)
	op          func(name string) (*networksecurity.Operation, error)
}

// groupsFor returns the service that serves a parent (projects/… or
// organizations/…).
func groupsFor(svc *networksecurity.Service, parent string) groupsAPI {
	if strings.HasPrefix(parent, "organizations/") {
		g, ops := svc.Organizations.Locations.AddressGroups, svc.Organizations.Locations.Operations
		return groupsAPI{
			create: func(p, id string, b *networksecurity.AddressGroup) (*networksecurity.Operation, error) {
				return g.Create(p, b).AddressGroupId(id).Do()
			},
			get: func(n string) (*networksecurity.AddressGroup, error) { return g.Get(n).Do() },
			list: func(p string, size int64, token string) (*networksecurity.ListAddressGroupsResponse, error) {
				return g.List(p).PageSize(size).PageToken(token).Do()
			},
			patch: func(n, mask string, b *networksecurity.AddressGroup) (*networksecurity.Operation, error) {
				return g.Patch(n, b).UpdateMask(mask).Do()
			},
			delete: func(n string) (*networksecurity.Operation, error) { return g.Delete(n).Do() },
			addItems: func(n string, items ...string) (*networksecurity.Operation, error) {
				return g.AddItems(n, &networksecurity.AddAddressGroupItemsRequest{Items: items}).Do()
			},
			removeItems: func(n string, items ...string) (*networksecurity.Operation, error) {
				return g.RemoveItems(n, &networksecurity.RemoveAddressGroupItemsRequest{Items: items}).Do()
			},
			cloneItems: func(n, src string) (*networksecurity.Operation, error) {
				return g.CloneItems(n, &networksecurity.CloneAddressGroupItemsRequest{SourceAddressGroup: src}).Do()
			},
			references: func(n string, size int64, token string) (*networksecurity.ListAddressGroupReferencesResponse, error) {
				return g.ListReferences(n).PageSize(size).PageToken(token).Do()
			},
			op: func(n string) (*networksecurity.Operation, error) { return ops.Get(n).Do() },
		}
	}
	g, ops := svc.Projects.Locations.AddressGroups, svc.Projects.Locations.Operations
	return groupsAPI{
		create: func(p, id string, b *networksecurity.AddressGroup) (*networksecurity.Operation, error) {
			return g.Create(p, b).AddressGroupId(id).Do()
		},
		get: func(n string) (*networksecurity.AddressGroup, error) { return g.Get(n).Do() },
		list: func(p string, size int64, token string) (*networksecurity.ListAddressGroupsResponse, error) {
			return g.List(p).PageSize(size).PageToken(token).Do()
		},
		patch: func(n, mask string, b *networksecurity.AddressGroup) (*networksecurity.Operation, error) {
			return g.Patch(n, b).UpdateMask(mask).Do()
		},
		delete: func(n string) (*networksecurity.Operation, error) { return g.Delete(n).Do() },
		addItems: func(n string, items ...string) (*networksecurity.Operation, error) {
			return g.AddItems(n, &networksecurity.AddAddressGroupItemsRequest{Items: items}).Do()
		},
		removeItems: func(n string, items ...string) (*networksecurity.Operation, error) {
			return g.RemoveItems(n, &networksecurity.RemoveAddressGroupItemsRequest{Items: items}).Do()
		},
		cloneItems: func(n, src string) (*networksecurity.Operation, error) {
			return g.CloneItems(n, &networksecurity.CloneAddressGroupItemsRequest{SourceAddressGroup: src}).Do()
		},
		references: func(n string, size int64, token string) (*networksecurity.ListAddressGroupReferencesResponse, error) {
			return g.ListReferences(n).PageSize(size).PageToken(token).Do()
		},
		op: func(n string) (*networksecurity.Operation, error) { return ops.Get(n).Do() },
	}
}

func newGroupsService(t *testing.T, em *Running) *networksecurity.Service {
	t.Helper()
	svc, err := em.NewNetworkSecurityService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// groupWait returns a function that takes a call's two results and waits
// for its operation (see groupDone).
func groupWait(t *testing.T, api groupsAPI) func(*networksecurity.Operation, error) *networksecurity.Operation {
	return func(op *networksecurity.Operation, err error) *networksecurity.Operation {
		t.Helper()
		return groupDone(t, api, op, err)
	}
}

// groupDone polls an operation until it is done and fails the test unless
// it succeeded.
func groupDone(t *testing.T, api groupsAPI, op *networksecurity.Operation, err error) *networksecurity.Operation {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	for i := 0; !op.Done; i++ {
		if i == 100 {
			t.Fatalf("operation %s not done", op.Name)
		}
		if op, err = api.op(op.Name); err != nil {
			t.Fatalf("operation %s: %v", op.Name, err)
		}
	}
	if op.Error != nil {
		t.Fatalf("operation %s failed: %+v", op.Name, op.Error)
	}
	return op
}

// rpcErr is the comparable part of a google.rpc.Status error answer.
type rpcErr struct {
	Code    int
	Status  string
	Message string
}

// asRPCErr reads the error body the client kept; nil for no error.
func asRPCErr(err error) *rpcErr {
	if err == nil {
		return nil
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return &rpcErr{Message: "not a googleapi.Error: " + err.Error()}
	}
	var env struct{ Error rpcErr }
	if jerr := json.Unmarshal([]byte(ge.Body), &env); jerr != nil {
		return &rpcErr{Code: ge.Code, Message: "unreadable body: " + ge.Body}
	}
	return &env.Error
}

func ipv4Group(capacity int64, items ...string) *networksecurity.AddressGroup {
	return &networksecurity.AddressGroup{Type: "IPV4", Capacity: capacity, Items: items, Purpose: []string{"CLOUD_ARMOR"}}
}
