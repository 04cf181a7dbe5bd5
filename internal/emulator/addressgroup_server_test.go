package emulator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networksecurity "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// TestAddressGroupGrants: a project grant covers that project's groups; an
// organization's groups need a grant naming "organizations/ORG".
func TestAddressGroupGrants(t *testing.T) {
	em := Start(t, Options{Grants: map[string]Grant{
		"proj":   {Write: []string{project}},
		"org":    {Write: []string{"organizations/123456789"}},
		"reader": {Read: []string{AnyProject}},
	}})
	client := func(token string) *networksecurity.Service {
		svc, err := em.NewNetworkSecurityServiceWithToken(context.Background(), token)
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	denied := func(perm, resource string) *rpcErr {
		return &rpcErr{403, "PERMISSION_DENIED", fmt.Sprintf("Permission '%s' denied on resource '//networksecurity.googleapis.com/%s' (or it may not exist).", perm, resource)}
	}
	groupWait(t, groupsFor(client("proj"), groupParent))(groupsFor(client("proj"), groupParent).create(groupParent, "g", ipv4Group(5)))
	groupWait(t, groupsFor(client("org"), orgParent))(groupsFor(client("org"), orgParent).create(orgParent, "g", ipv4Group(5)))
	cases := map[string]struct {
		token string
		call  func(api groupsAPI) error
		api   string // the parent
		want  *rpcErr
	}{
		"ProjectTokenOnOrganization": {token: "proj", api: orgParent,
			call: func(a groupsAPI) error { _, err := a.create(orgParent, "x", ipv4Group(1)); return err },
			want: denied("networksecurity.addressGroups.create", orgParent)},
		"OrganizationTokenOnProject": {token: "org", api: groupParent,
			call: func(a groupsAPI) error { _, err := a.get(groupParent + "/addressGroups/g"); return err },
			want: denied("networksecurity.addressGroups.get", groupParent+"/addressGroups/g")},
		"OrganizationTokenOnOrganization": {token: "org", api: orgParent,
			call: func(a groupsAPI) error { _, err := a.addItems(orgParent+"/addressGroups/g", "1.1.1.1"); return err }},
		"ReaderReads": {token: "reader", api: orgParent,
			call: func(a groupsAPI) error { _, err := a.list(orgParent, 0, ""); return err }},
		"ReaderWrites": {token: "reader", api: groupParent,
			call: func(a groupsAPI) error {
				_, err := a.removeItems(groupParent+"/addressGroups/g", "1.1.1.1")
				return err
			},
			want: denied("networksecurity.addressGroups.update", groupParent+"/addressGroups/g")},
		"UnknownToken": {token: "nobody", api: groupParent,
			call: func(a groupsAPI) error { _, err := a.op(groupParent + "/operations/x"); return err },
			want: denied("networksecurity.operations.get", groupParent+"/operations/x")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.call(groupsFor(client(tc.token), tc.api))
			if diff := cmp.Diff(tc.want, asRPCErr(err)); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

// TestAddressGroupFaults: faults name address group methods; injected errors
// and failed operations come in networksecurity's format.
func TestAddressGroupFaults(t *testing.T) {
	em := Start(t, Options{Faults: Faults{Methods: map[string]FaultRule{
		"addressGroups.addItems": {ErrorRate: 1, ErrorCodes: []int{503}},
		"addressGroups.create":   {OpErrorRate: 1},
	}}})
	api := groupsFor(newGroupsService(t, em), groupParent)
	_, err := api.addItems(groupParent+"/addressGroups/g", "1.1.1.1")
	if diff := cmp.Diff(&rpcErr{503, "UNAVAILABLE", "The service is currently unavailable."}, asRPCErr(err)); diff != "" {
		t.Errorf("addItems: -want, +got:\n%s", diff)
	}
	op, err := api.create(groupParent, "g", ipv4Group(1))
	if err != nil {
		t.Fatal(err)
	}
	if op, err = api.op(op.Name); err != nil {
		t.Fatal(err)
	}
	want := &networksecurity.Status{Code: 13, Message: "Internal error. Please try again or contact Google Support."}
	if diff := cmp.Diff(want, op.Error); !op.Done || diff != "" {
		t.Errorf("operation: done %t, error -want, +got:\n%s", op.Done, diff)
	}
	if _, err := api.get(groupParent + "/addressGroups/g"); asRPCErr(err) == nil || asRPCErr(err).Code != 404 {
		t.Errorf("a failed create left a group: %v", err)
	}
	if st := em.Stats(); st.Methods["addressGroups.addItems"] != 1 || st.Methods["addressGroups.create"] != 1 ||
		st.Methods["locationOperations.get"] != 1 || st.InjectedErrors != 1 || st.Mutations != 1 {
		t.Errorf("stats: %+v", st)
	}
}

// TestAddressGroupState: groups and tiers survive a restart through the
// state file; operations do not.
func TestAddressGroupState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	em := Start(t, Options{StateFile: file})
	api := groupsFor(newGroupsService(t, em), groupParent)
	op := groupWait(t, api)(api.create(groupParent, "g", ipv4Group(5, "1.1.1.1", "2.2.2.0/24")))
	org := groupsFor(newGroupsService(t, em), orgParent)
	groupWait(t, org)(org.create(orgParent, "og", ipv4Group(5)))
	if err := em.SetTier(project, TierEnterpriseAnnual); err != nil {
		t.Fatal(err)
	}
	before := em.AddressGroups()
	if err := em.Close(); err != nil {
		t.Fatal(err)
	}

	again := Start(t, Options{StateFile: file})
	if diff := cmp.Diff(before, again.AddressGroups()); diff != "" {
		t.Errorf("groups after restart: -before, +after:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{project: TierEnterpriseAnnual}, again.Tiers()); diff != "" {
		t.Errorf("tiers after restart: -want, +got:\n%s", diff)
	}
	_, err := groupsFor(newGroupsService(t, again), groupParent).op(op.Name)
	if diff := cmp.Diff(&rpcErr{404, "NOT_FOUND", "Resource '" + op.Name + "' was not found"}, asRPCErr(err)); diff != "" {
		t.Errorf("operation after restart: -want, +got:\n%s", diff)
	}
}

// TestAddressGroupLog: one line per accepted mutation, one per refused one.
func TestAddressGroupLog(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	em := Start(t, Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	api := groupsFor(newGroupsService(t, em), groupParent)
	op := groupWait(t, api)(api.create(groupParent, "g", ipv4Group(1)))
	_, _ = api.addItems(groupParent+"/addressGroups/g", "1.1.1.1", "2.2.2.2")
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"addressGroups.create " + groupParent + "/addressGroups/g operation=" + op.Name,
		"addressGroups.addItems /v1/" + groupParent + "/addressGroups/g:addItems refused=400 reason=INVALID_ARGUMENT " +
			`message="The address group would hold 2 items; its capacity is 1."`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("log: -want, +got:\n%s", diff)
	}
}

// TestAddressGroupOperationLatency: with OpLatency the operation is not
// done until it has passed; the change is visible at once.
func TestAddressGroupOperationLatency(t *testing.T) {
	em := Start(t, Options{OpLatency: time.Hour})
	api := groupsFor(newGroupsService(t, em), groupParent)
	op, err := api.create(groupParent, "g", ipv4Group(1))
	if err != nil {
		t.Fatal(err)
	}
	if op, err = api.op(op.Name); err != nil || op.Done || op.Response != nil {
		t.Errorf("operation within its latency: %+v, %v", op, err)
	}
	if _, err := api.get(groupParent + "/addressGroups/g"); err != nil {
		t.Errorf("the group is not there while its create runs: %v", err)
	}
}

// TestAddressGroupRaw: answers the Go client does not show.
func TestAddressGroupRaw(t *testing.T) {
	em := Start(t, Options{})
	api := groupsFor(newGroupsService(t, em), groupParent)
	groupWait(t, api)(api.create(groupParent, "g", ipv4Group(2, "1.1.1.1")))
	cases := map[string]struct {
		method, path, body string
		token              bool
		wantStatus         int
		want               string
	}{
		"Fields": {method: "GET", path: "/v1/" + groupParent + "/addressGroups/g?fields=name,items", token: true, wantStatus: 200,
			want: `{"items":["1.1.1.1"],"name":"` + groupParent + `/addressGroups/g"}`},
		"EnumsAsNumbers": {method: "GET", path: "/v1/" + groupParent + "/addressGroups/g?%24alt=json%3Benum-encoding%3Dint&fields=type,purpose", token: true, wantStatus: 200,
			want: `{"purpose":[2],"type":1}`},
		"NoCredentials": {method: "GET", path: "/v1/" + groupParent + "/addressGroups/g", wantStatus: 401,
			want: `{"error":{"code":401,"message":"Request is missing required authentication credential. ` + core.AuthHelp + `","status":"UNAUTHENTICATED"}}`},
		"UnknownCustomMethod": {method: "POST", path: "/v1/" + groupParent + "/addressGroups/g:frob", token: true, wantStatus: 404,
			want: `{"error":{"code":404,"message":"The requested URL /v1/` + groupParent + `/addressGroups/g:frob was not found on this server.","status":"NOT_FOUND"}}`},
		"UnknownField": {method: "POST", path: "/v1/" + groupParent + "/addressGroups?addressGroupId=x", body: `{"type":"IPV4","capacity":1,"size":3}`, token: true, wantStatus: 400,
			want: `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"size\" at 'address_group': Cannot find field.","status":"INVALID_ARGUMENT"}}`},
		"CapacityAsString": {method: "POST", path: "/v1/" + groupParent + "/addressGroups?addressGroupId=s", body: `{"type":"IPV4","capacity":"3"}`, token: true, wantStatus: 200},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			header := map[string]string{}
			if !tc.token {
				header["Authorization"] = ""
			}
			res, body := rawCall(t, tc.method, em.URL()+tc.path, tc.body, header)
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status: want %d, got %d: %s", tc.wantStatus, res.StatusCode, body)
			}
			if tc.want != "" && strings.TrimSpace(body) != tc.want {
				t.Errorf("body:\nwant %s\ngot  %s", tc.want, body)
			}
		})
	}
}
