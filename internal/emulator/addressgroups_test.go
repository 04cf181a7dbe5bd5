package emulator

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	networksecurity "google.golang.org/api/networksecurity/v1"
)

const (
	groupParent = "projects/" + project + "/locations/global"
	orgParent   = "organizations/123456789/locations/global"
)

func TestAddressGroupCreateRefused(t *testing.T) {
	invalid := func(msg string) *rpcErr { return &rpcErr{Code: 400, Status: "INVALID_ARGUMENT", Message: msg} }
	cases := map[string]struct {
		id    string
		group *networksecurity.AddressGroup
		want  *rpcErr
	}{
		"NoCapacity": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV4"},
			want: invalid("Field 'capacity' is required and must be greater than 0.")},
		"NegativeCapacity": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV4", Capacity: -1},
			want: invalid("Field 'capacity' is required and must be greater than 0.")},
		"NoType": {id: "g", group: &networksecurity.AddressGroup{Capacity: 10},
			want: invalid("Field 'type' is required: IPV4 or IPV6.")},
		"UnknownType": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV5", Capacity: 10},
			want: invalid(`Invalid value at 'address_group.type' (type.googleapis.com/google.cloud.networksecurity.v1.AddressGroup.Type), "IPV5"`)},
		"IPv6ItemInIPv4Group": {id: "g", group: ipv4Group(10, "10.0.0.0/8", "2001:db8::/32"),
			want: invalid("Item '2001:db8::/32' is not an IPv4 address or range; the address group's type is IPV4.")},
		"IPv4ItemInIPv6Group": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV6", Capacity: 10, Items: []string{"1.2.3.4"}},
			want: invalid("Item '1.2.3.4' is not an IPv6 address or range; the address group's type is IPV6.")},
		"NotAnAddress": {id: "g", group: ipv4Group(10, "10.0.0.300"),
			want: invalid("Invalid item '10.0.0.300': an item is an IPv4 or IPv6 address or CIDR range.")},
		"MoreItemsThanCapacity": {id: "g", group: ipv4Group(1, "1.1.1.1", "2.2.2.2"),
			want: invalid("The address group would hold 2 items; its capacity is 1.")},
		"UnknownPurpose": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV4", Capacity: 1, Purpose: []string{"FIREWALL"}},
			want: invalid(`Invalid value at 'address_group.purpose[0]' (type.googleapis.com/google.cloud.networksecurity.v1.AddressGroup.Purpose), "FIREWALL"`)},
		"UnspecifiedPurpose": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV4", Capacity: 1, Purpose: []string{"PURPOSE_UNSPECIFIED"}},
			want: invalid("Field 'purpose' must list DEFAULT or CLOUD_ARMOR, not PURPOSE_UNSPECIFIED.")},
		"UppercaseLabel": {id: "g", group: &networksecurity.AddressGroup{Type: "IPV4", Capacity: 1, Labels: map[string]string{"Env": "x"}},
			want: invalid("Invalid value for field 'labels.Env': 'Env'. Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'.")},
		"IDStartsWithDigit": {id: "1g", group: ipv4Group(1),
			want: invalid("Invalid address_group_id '1g': 1-63 letters, digits, '-' or '_', not starting with a digit.")},
		"NoID": {group: ipv4Group(1), want: invalid("Field 'address_group_id' is required.")},
		"Duplicate": {id: "taken", group: ipv4Group(1),
			want: &rpcErr{Code: 409, Status: "ALREADY_EXISTS", Message: "Resource '" + groupParent + "/addressGroups/taken' already exists"}},
	}
	em := Start(t, Options{})
	api := groupsFor(newGroupsService(t, em), groupParent)
	groupWait(t, api)(api.create(groupParent, "taken", ipv4Group(1)))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := api.create(groupParent, tc.id, tc.group)
			if diff := cmp.Diff(tc.want, asRPCErr(err)); diff != "" {
				t.Errorf("create: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestAddressGroupLifecycle(t *testing.T) {
	for name, parent := range map[string]string{"Project": groupParent, "Organization": orgParent,
		"Regional": "projects/" + project + "/locations/us-central1"} {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{})
			api := groupsFor(newGroupsService(t, em), parent)
			path := parent + "/addressGroups/g"
			op := groupWait(t, api)(api.create(parent, "g", &networksecurity.AddressGroup{Type: "IPV6", Capacity: 5,
				Description: "d", Labels: map[string]string{"env": "test"}, Items: []string{"2001:db8::/32", "::1"}}))
			if want := parent + "/operations/"; len(op.Name) <= len(want) || op.Name[:len(want)] != want {
				t.Errorf("operation name %q, want it under %s", op.Name, want)
			}
			got, err := api.get(path)
			if err != nil {
				t.Fatal(err)
			}
			want := &networksecurity.AddressGroup{Name: path, Type: "IPV6", Capacity: 5, Description: "d",
				Labels: map[string]string{"env": "test"}, Items: []string{"2001:db8::/32", "::1"},
				CreateTime: got.CreateTime, UpdateTime: got.UpdateTime}
			if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
				t.Errorf("get: -want, +got:\n%s", diff)
			}
			groupWait(t, api)(api.delete(path))
			_, err = api.get(path)
			if diff := cmp.Diff(&rpcErr{Code: 404, Status: "NOT_FOUND", Message: "Resource '" + path + "' was not found"}, asRPCErr(err)); diff != "" {
				t.Errorf("get after delete: -want, +got:\n%s", diff)
			}
		})
	}
}

func isServerResponse(p cmp.Path) bool { return p.Last().String() == ".ServerResponse" }

func TestAddressGroupItems(t *testing.T) {
	type op func(api groupsAPI, name string) (*networksecurity.Operation, error)
	add := func(items ...string) op {
		return func(api groupsAPI, n string) (*networksecurity.Operation, error) { return api.addItems(n, items...) }
	}
	remove := func(items ...string) op {
		return func(api groupsAPI, n string) (*networksecurity.Operation, error) { return api.removeItems(n, items...) }
	}
	clone := func(src string) op {
		return func(api groupsAPI, n string) (*networksecurity.Operation, error) {
			return api.cloneItems(n, groupParent+"/addressGroups/"+src)
		}
	}
	cases := map[string]struct {
		call    op
		want    []string
		wantErr *rpcErr
	}{
		"AddNew":              {call: add("5.6.7.8"), want: []string{"10.0.0.0/24", "1.2.3.4", "5.6.7.8"}},
		"AddPresent":          {call: add("1.2.3.4"), want: []string{"10.0.0.0/24", "1.2.3.4"}},
		"AddPresentAsPrefix":  {call: add("1.2.3.4/32"), want: []string{"10.0.0.0/24", "1.2.3.4"}},
		"AddTwiceInOneCall":   {call: add("5.6.7.8", "5.6.7.8"), want: []string{"10.0.0.0/24", "1.2.3.4", "5.6.7.8"}},
		"AddBeyondCapacity":   {call: add("5.6.7.8", "9.9.9.9"), wantErr: &rpcErr{400, "INVALID_ARGUMENT", "The address group would hold 4 items; its capacity is 3."}},
		"AddOtherFamily":      {call: add("::1"), wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Item '::1' is not an IPv4 address or range; the address group's type is IPV4."}},
		"AddNothing":          {call: add(), wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Field 'items' is required."}},
		"RemovePresent":       {call: remove("1.2.3.4"), want: []string{"10.0.0.0/24"}},
		"RemovePresentPrefix": {call: remove("1.2.3.4/32"), want: []string{"10.0.0.0/24"}},
		"RemoveAbsent":        {call: remove("9.9.9.9"), want: []string{"10.0.0.0/24", "1.2.3.4"}},
		"RemoveAll":           {call: remove("1.2.3.4", "10.0.0.0/24"), want: nil},
		"CloneFrom":           {call: clone("source"), want: []string{"10.0.0.0/24", "1.2.3.4", "7.7.7.7"}},
		"CloneFromOtherType":  {call: clone("six"), wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Address group '" + groupParent + "/addressGroups/six' is of type IPV6; '" + groupParent + "/addressGroups/g' is of type IPV4."}},
		"CloneFromMissing":    {call: clone("nope"), wantErr: &rpcErr{404, "NOT_FOUND", "Resource '" + groupParent + "/addressGroups/nope' was not found"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{})
			api := groupsFor(newGroupsService(t, em), groupParent)
			groupWait(t, api)(api.create(groupParent, "g", ipv4Group(3, "10.0.0.0/24", "1.2.3.4")))
			groupWait(t, api)(api.create(groupParent, "source", ipv4Group(3, "7.7.7.7", "1.2.3.4")))
			groupWait(t, api)(api.create(groupParent, "six", &networksecurity.AddressGroup{Type: "IPV6", Capacity: 1}))
			path := groupParent + "/addressGroups/g"
			op, err := tc.call(api, path)
			if diff := cmp.Diff(tc.wantErr, asRPCErr(err)); diff != "" {
				t.Fatalf("call: -want, +got:\n%s", diff)
			}
			if err != nil {
				return
			}
			op = groupDone(t, api, op, nil)
			var res networksecurity.AddressGroup
			mustUnmarshal(t, string(op.Response), &res)
			got, err := api.get(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Items); diff != "" {
				t.Errorf("items: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, res.Items); diff != "" {
				t.Errorf("items in the operation's response: -want, +got:\n%s", diff)
			}
		})
	}
	t.Run("UnknownGroup", func(t *testing.T) {
		em := Start(t, Options{})
		api := groupsFor(newGroupsService(t, em), groupParent)
		_, err := api.addItems(groupParent+"/addressGroups/nope", "1.1.1.1")
		if diff := cmp.Diff(&rpcErr{404, "NOT_FOUND", "Resource '" + groupParent + "/addressGroups/nope' was not found"}, asRPCErr(err)); diff != "" {
			t.Errorf("addItems: -want, +got:\n%s", diff)
		}
	})
}

func TestAddressGroupPatch(t *testing.T) {
	type fields struct {
		Description string
		Labels      map[string]string
		Items       []string
		Purpose     []string
		Capacity    int64
	}
	start := fields{Description: "d", Labels: map[string]string{"a": "b"}, Items: []string{"1.1.1.1"},
		Purpose: []string{"CLOUD_ARMOR"}, Capacity: 5}
	cases := map[string]struct {
		mask    string
		body    *networksecurity.AddressGroup
		want    fields
		wantErr *rpcErr
	}{
		"DescriptionOnly": {mask: "description", body: &networksecurity.AddressGroup{Description: "new", Items: []string{"9.9.9.9"}},
			want: fields{Description: "new", Labels: start.Labels, Items: start.Items, Purpose: start.Purpose, Capacity: 5}},
		"ItemsOnly": {mask: "items", body: &networksecurity.AddressGroup{Description: "ignored", Items: []string{"2.2.2.2", "3.3.3.3"}},
			want: fields{Description: "d", Labels: start.Labels, Items: []string{"2.2.2.2", "3.3.3.3"}, Purpose: start.Purpose, Capacity: 5}},
		"ClearDescriptionAndLabels": {mask: "description,labels", body: &networksecurity.AddressGroup{},
			want: fields{Items: start.Items, Purpose: start.Purpose, Capacity: 5}},
		"OutputOnlyPathIgnored": {mask: "description,update_time", body: &networksecurity.AddressGroup{Description: "x"},
			want: fields{Description: "x", Labels: start.Labels, Items: start.Items, Purpose: start.Purpose, Capacity: 5}},
		"NoMaskOverwritesAll": {body: &networksecurity.AddressGroup{Description: "x", Capacity: 5, Type: "IPV4"},
			want: fields{Description: "x", Capacity: 5}},
		"SameCapacity": {mask: "capacity,description", body: &networksecurity.AddressGroup{Capacity: 5, Description: "x"},
			want: fields{Description: "x", Labels: start.Labels, Items: start.Items, Purpose: start.Purpose, Capacity: 5}},
		"CapacityChange": {mask: "capacity", body: &networksecurity.AddressGroup{Capacity: 10},
			wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Field 'capacity' cannot be changed: it is fixed when the address group is created."}},
		"TypeChange": {mask: "type", body: &networksecurity.AddressGroup{Type: "IPV6"},
			wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Field 'type' cannot be changed: it is fixed when the address group is created."}},
		"TypeChangeWithoutMask": {body: &networksecurity.AddressGroup{Type: "IPV6"},
			wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Field 'type' cannot be changed: it is fixed when the address group is created."}},
		"ItemsBeyondCapacity": {mask: "items", body: ipv4Group(0, "1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4", "5.5.5.5", "6.6.6.6"),
			wantErr: &rpcErr{400, "INVALID_ARGUMENT", "The address group would hold 6 items; its capacity is 5."}},
		"UnknownPath": {mask: "frob", body: &networksecurity.AddressGroup{},
			wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Invalid update_mask path 'frob'."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{})
			api := groupsFor(newGroupsService(t, em), groupParent)
			path := groupParent + "/addressGroups/g"
			groupWait(t, api)(api.create(groupParent, "g", &networksecurity.AddressGroup{Type: "IPV4", Capacity: start.Capacity,
				Description: start.Description, Labels: start.Labels, Items: start.Items, Purpose: start.Purpose}))
			op, err := api.patch(path, tc.mask, tc.body)
			if diff := cmp.Diff(tc.wantErr, asRPCErr(err)); diff != "" {
				t.Fatalf("patch: -want, +got:\n%s", diff)
			}
			if err != nil {
				return
			}
			groupDone(t, api, op, nil)
			g, err := api.get(path)
			if err != nil {
				t.Fatal(err)
			}
			got := fields{Description: g.Description, Labels: g.Labels, Items: g.Items, Purpose: g.Purpose, Capacity: g.Capacity}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("group after patch: -want, +got:\n%s", diff)
			}
		})
	}
	t.Run("Missing", func(t *testing.T) {
		em := Start(t, Options{})
		api := groupsFor(newGroupsService(t, em), groupParent)
		_, err := api.patch(groupParent+"/addressGroups/nope", "description", &networksecurity.AddressGroup{})
		if diff := cmp.Diff(&rpcErr{404, "NOT_FOUND", "Resource '" + groupParent + "/addressGroups/nope' was not found"}, asRPCErr(err)); diff != "" {
			t.Errorf("patch: -want, +got:\n%s", diff)
		}
	})
}

func TestAddressGroupList(t *testing.T) {
	em := Start(t, Options{})
	svc := newGroupsService(t, em)
	api := groupsFor(svc, groupParent)
	for _, n := range []string{"c", "a", "b"} {
		groupWait(t, api)(api.create(groupParent, n, ipv4Group(1)))
	}
	groupWait(t, api)(api.create("projects/"+project+"/locations/us-central1", "regional", ipv4Group(1)))
	groupWait(t, api)(api.create("projects/other/locations/global", "elsewhere", ipv4Group(1)))
	names := func(r *networksecurity.ListAddressGroupsResponse) (out []string) {
		for _, g := range r.AddressGroups {
			out = append(out, g.Name)
		}
		return out
	}
	cases := map[string]struct {
		size      int64
		token     string
		want      []string
		wantToken string
		wantErr   *rpcErr
	}{
		"All":       {want: []string{groupParent + "/addressGroups/a", groupParent + "/addressGroups/b", groupParent + "/addressGroups/c"}},
		"FirstPage": {size: 2, want: []string{groupParent + "/addressGroups/a", groupParent + "/addressGroups/b"}, wantToken: "2"},
		"LastPage":  {size: 2, token: "2", want: []string{groupParent + "/addressGroups/c"}},
		"BadToken":  {token: "x", wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Invalid page_token 'x'."}},
		"BadSize":   {size: -1, wantErr: &rpcErr{400, "INVALID_ARGUMENT", "Invalid page_size '-1'."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := api.list(groupParent, tc.size, tc.token)
			if diff := cmp.Diff(tc.wantErr, asRPCErr(err)); diff != "" {
				t.Fatalf("list: -want, +got:\n%s", diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, names(res)); diff != "" {
				t.Errorf("names: -want, +got:\n%s", diff)
			}
			if res.NextPageToken != tc.wantToken {
				t.Errorf("nextPageToken: want %q, got %q", tc.wantToken, res.NextPageToken)
			}
		})
	}
}

// TestAddressGroupReferences: listReferences names the rules that use a
// group, and a used group cannot be deleted.
func TestAddressGroupReferences(t *testing.T) {
	em := Start(t, Options{DefaultTier: TierEnterprisePaygo})
	ns := newGroupsService(t, em)
	api, org := groupsFor(ns, groupParent), groupsFor(ns, orgParent)
	groupWait(t, api)(api.create(groupParent, "g", ipv4Group(10)))
	groupWait(t, api)(api.create(groupParent, "unused", ipv4Group(10)))
	groupWait(t, org)(org.create(orgParent, "og", ipv4Group(10)))
	svc := newService(t, em)
	global, regional := globalAPI{svc}, regionalAPI{svc}
	waiter(t, global)(global.Insert(policyWith("web",
		vRule(100, "deny(403)", vExpr("evaluateAddressGroup('g', origin.ip)")),
		vRule(200, "deny(403)", vExpr("evaluateOrganizationAddressGroup('og', origin.ip)")),
		vRule(300, "deny(403)", vExpr("evaluateAddressGroup('"+groupParent+"/addressGroups/g', origin.user_ip)")),
	)))
	waiter(t, regional)(regional.Insert(policyWith("regional", vRule(100, "deny(403)", vExpr("evaluateAddressGroup('g', origin.ip)")))))
	op, err := svc.SecurityPolicies.Insert("other-project", policyWith("other",
		vRule(100, "deny(403)", vExpr("evaluateAddressGroup('g', origin.ip) || evaluateOrganizationAddressGroup('og', origin.ip)")))).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GlobalOperations.Wait("other-project", op.Name).Do(); err != nil {
		t.Fatal(err)
	}

	webURL := apiRoot + "projects/" + project + "/global/securityPolicies/web"
	otherURL := apiRoot + "projects/other-project/global/securityPolicies/other"
	type refs = []*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference
	ref := func(url string, prio int64) *networksecurity.ListAddressGroupReferencesResponseAddressGroupReference {
		return &networksecurity.ListAddressGroupReferencesResponseAddressGroupReference{SecurityPolicy: url, RulePriority: prio}
	}
	cases := map[string]struct {
		api       groupsAPI
		group     string
		size      int64
		token     string
		want      refs
		wantToken string
	}{
		"ProjectGroup":      {api: api, group: groupParent + "/addressGroups/g", want: append(refs{}, ref(webURL, 100), ref(webURL, 300))},
		"ProjectGroupPaged": {api: api, group: groupParent + "/addressGroups/g", size: 1, want: append(refs{}, ref(webURL, 100)), wantToken: "1"},
		"Unused":            {api: api, group: groupParent + "/addressGroups/unused"},
		"OrganizationGroup": {api: org, group: orgParent + "/addressGroups/og", want: append(refs{}, ref(otherURL, 100), ref(webURL, 200))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := tc.api.references(tc.group, tc.size, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.AddressGroupReferences); diff != "" {
				t.Errorf("references: -want, +got:\n%s", diff)
			}
			if res.NextPageToken != tc.wantToken {
				t.Errorf("nextPageToken: want %q, got %q", tc.wantToken, res.NextPageToken)
			}
		})
	}

	t.Run("DeleteRefused", func(t *testing.T) {
		_, err := api.delete(groupParent + "/addressGroups/g")
		want := &rpcErr{400, "FAILED_PRECONDITION", fmt.Sprintf("Address group '%s/addressGroups/g' is used by security policy rules and cannot be deleted: "+
			"projects/%s/global/securityPolicies/web (priority 100), projects/%s/global/securityPolicies/web (priority 300).", groupParent, project, project)}
		if diff := cmp.Diff(want, asRPCErr(err)); diff != "" {
			t.Errorf("delete: -want, +got:\n%s", diff)
		}
	})
	t.Run("DeleteOnceUnused", func(t *testing.T) {
		waiter(t, global)(global.RemoveRule("web", 100))
		waiter(t, global)(global.RemoveRule("web", 300))
		groupWait(t, api)(api.delete(groupParent + "/addressGroups/g"))
	})
	t.Run("Missing", func(t *testing.T) {
		_, err := api.references(groupParent+"/addressGroups/nope", 0, "")
		if diff := cmp.Diff(&rpcErr{404, "NOT_FOUND", "Resource '" + groupParent + "/addressGroups/nope' was not found"}, asRPCErr(err)); diff != "" {
			t.Errorf("listReferences: -want, +got:\n%s", diff)
		}
	})
}
