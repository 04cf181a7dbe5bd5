package networksecurity

import (
	"net/http"
	"reflect"
	"strings"

	nsapi "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The address group API is networksecurity v1, served at the root like
// networksecurity.googleapis.com serves it (/v1/projects/…, /v1/organizations/…),
// so a client whose endpoint is the emulator's URL + "/" reaches it.
// Method names: addressGroups.{create,get,list,patch,delete,addItems,
// removeItems,cloneItems,listReferences}, the same under
// organizationAddressGroups., and locationOperations.get /
// organizationLocationOperations.get for their operations.

// A Permission is the IAM permission a method needs, and whether it writes.
type Permission = core.Permission

// groupPermissions are the IAM permissions of the address group methods
// ("networksecurity.addressGroups.*", Cloud Armor's "Configure address
// groups"); the item methods need update (chosen), listReferences get
// (chosen). Organization groups use the same names (chosen).
var groupPermissions = map[string]Permission{
	"create":         {Name: "networksecurity.addressGroups.create", Write: true},
	"get":            {Name: "networksecurity.addressGroups.get", Write: false},
	"list":           {Name: "networksecurity.addressGroups.list", Write: false},
	"patch":          {Name: "networksecurity.addressGroups.update", Write: true},
	"delete":         {Name: "networksecurity.addressGroups.delete", Write: true},
	"addItems":       {Name: "networksecurity.addressGroups.update", Write: true},
	"removeItems":    {Name: "networksecurity.addressGroups.update", Write: true},
	"cloneItems":     {Name: "networksecurity.addressGroups.update", Write: true},
	"listReferences": {Name: "networksecurity.addressGroups.get", Write: false},
}

var groupCollections = []string{"addressGroups.", "organizationAddressGroups."}

// Permissions are the permissions of every method of the API, by name.
var Permissions = func() map[string]Permission {
	m := map[string]Permission{
		"locationOperations.get":             {Name: "networksecurity.operations.get", Write: false},
		"organizationLocationOperations.get": {Name: "networksecurity.operations.get", Write: false},
	}
	for _, c := range groupCollections {
		for verb, p := range groupPermissions {
			m[c+verb] = p
		}
	}
	return m
}()

// ResponseTypes are the response types of every method, by name, for
// fields=.
var ResponseTypes = func() map[string]reflect.Type {
	op := reflect.TypeOf(nsapi.Operation{})
	m := map[string]reflect.Type{
		"locationOperations.get":             op,
		"organizationLocationOperations.get": op,
	}
	for _, c := range groupCollections {
		for verb := range groupPermissions {
			m[c+verb] = op
		}
		m[c+"get"] = reflect.TypeOf(nsapi.AddressGroup{})
		m[c+"list"] = reflect.TypeOf(nsapi.ListAddressGroupsResponse{})
		m[c+"listReferences"] = reflect.TypeOf(nsapi.ListAddressGroupReferencesResponse{})
	}
	return m
}()

// A Method is one method served on a route: its name and handler.
type Method struct {
	Name   string
	Handle Handler
}

// A Route is a pattern the API serves and its methods, by the custom
// method its last segment may carry ("{group}:addItems"; "" for none):
// ServeMux wildcards are whole segments, so the server chooses the method
// by CustomMethod.
type Route struct {
	Pattern string
	Methods map[string]Method
}

// Routes are every route of the API.
func (a *API) Routes() []Route {
	var out []Route
	add := func(method, path, prefix string, byCustom map[string]Method) {
		for custom, m := range byCustom {
			m.Name = prefix + m.Name
			byCustom[custom] = m
		}
		out = append(out, Route{Pattern: method + " " + path, Methods: byCustom})
	}
	for _, p := range []struct{ prefix, parent string }{
		{"addressGroups.", "/v1/projects/{project}/locations/{location}"},
		{"organizationAddressGroups.", "/v1/organizations/{organization}/locations/{location}"},
	} {
		coll, one := p.parent+"/addressGroups", p.parent+"/addressGroups/{group}"
		add("POST", coll, p.prefix, map[string]Method{"": {"create", a.createGroup}})
		add("GET", coll, p.prefix, map[string]Method{"": {"list", a.listGroups}})
		add("GET", one, p.prefix, map[string]Method{"": {"get", a.getGroup},
			"listReferences": {"listReferences", a.listGroupReferences}})
		add("PATCH", one, p.prefix, map[string]Method{"": {"patch", a.patchGroup}})
		add("DELETE", one, p.prefix, map[string]Method{"": {"delete", a.deleteGroup}})
		add("POST", one, p.prefix, map[string]Method{"addItems": {"addItems", a.addGroupItems},
			"removeItems": {"removeItems", a.removeGroupItems}, "cloneItems": {"cloneItems", a.cloneGroupItems}})
	}
	add("GET", "/v1/projects/{project}/locations/{location}/operations/{operation}", "",
		map[string]Method{"": {"locationOperations.get", a.getOp}})
	add("GET", "/v1/organizations/{organization}/locations/{location}/operations/{operation}", "",
		map[string]Method{"": {"organizationLocationOperations.get", a.getOp}})
	return out
}

// CustomMethod is what follows the colon in the request's {group}.
func CustomMethod(r *http.Request) string {
	_, custom, _ := strings.Cut(r.PathValue("group"), ":")
	return custom
}

// A target is what a request's path names: the parent (projects/P or
// organizations/O), the location, and the group, if any.
type target struct{ parent, location, name string }

func targetOf(r *http.Request) target {
	parent := "projects/" + r.PathValue("project")
	if org := r.PathValue("organization"); org != "" {
		parent = "organizations/" + org
	}
	name, _, _ := strings.Cut(r.PathValue("group"), ":")
	return target{parent: parent, location: r.PathValue("location"), name: name}
}

func (t target) path() string       { return Path(t.parent, t.location, t.name) }
func (t target) parentPath() string { return t.parent + "/locations/" + t.location }

// Resource is the resource a denied call names: the group, the operation,
// or the parent location for create and list.
func Resource(r *http.Request) string {
	t := targetOf(r)
	switch op := r.PathValue("operation"); {
	case t.name != "":
		return t.path()
	case op != "":
		return t.parentPath() + "/operations/" + op
	default:
		return t.parentPath()
	}
}
