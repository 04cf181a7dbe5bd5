package emulator

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	compute "google.golang.org/api/compute/v1"
	networksecurity "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The address group API is networksecurity v1, served at the root like
// networksecurity.googleapis.com serves it (/v1/projects/…, /v1/organizations/…),
// so a client whose endpoint is the emulator's URL + "/" reaches it.
// Method names: addressGroups.{create,get,list,patch,delete,addItems,
// removeItems,cloneItems,listReferences}, the same under
// organizationAddressGroups., and locationOperations.get /
// organizationLocationOperations.get for their operations.

// groupPermissions are the IAM permissions of the address group methods
// ("networksecurity.addressGroups.*", Cloud Armor's "Configure address
// groups"); the item methods need update (chosen), listReferences get
// (chosen). Organization groups use the same names (chosen).
var groupPermissions = map[string]permission{
	"create":         {"networksecurity.addressGroups.create", true},
	"get":            {"networksecurity.addressGroups.get", false},
	"list":           {"networksecurity.addressGroups.list", false},
	"patch":          {"networksecurity.addressGroups.update", true},
	"delete":         {"networksecurity.addressGroups.delete", true},
	"addItems":       {"networksecurity.addressGroups.update", true},
	"removeItems":    {"networksecurity.addressGroups.update", true},
	"cloneItems":     {"networksecurity.addressGroups.update", true},
	"listReferences": {"networksecurity.addressGroups.get", false},
}

var groupCollections = []string{"addressGroups.", "organizationAddressGroups."}

// otherPermissions are the permissions of the methods beyond security
// policies and their operations (see permissionOf).
var otherPermissions = func() map[string]permission {
	m := map[string]permission{
		"projects.get":                       {"compute.projects.get", false},
		"projects.setCloudArmorTier":         {"compute.projects.setCloudArmorTier", true},
		"locationOperations.get":             {"networksecurity.operations.get", false},
		"organizationLocationOperations.get": {"networksecurity.operations.get", false},
	}
	for _, c := range groupCollections {
		for verb, p := range groupPermissions {
			m[c+verb] = p
		}
	}
	return m
}()

// otherResponseTypes are the response types of those methods, for fields=.
var otherResponseTypes = func() map[string]reflect.Type {
	op := reflect.TypeOf(networksecurity.Operation{})
	m := map[string]reflect.Type{
		"projects.get":                       reflect.TypeOf(compute.Project{}),
		"projects.setCloudArmorTier":         reflect.TypeOf(compute.Operation{}),
		"locationOperations.get":             op,
		"organizationLocationOperations.get": op,
	}
	for _, c := range groupCollections {
		for verb := range groupPermissions {
			m[c+verb] = op
		}
		m[c+"get"] = reflect.TypeOf(networksecurity.AddressGroup{})
		m[c+"list"] = reflect.TypeOf(networksecurity.ListAddressGroupsResponse{})
		m[c+"listReferences"] = reflect.TypeOf(networksecurity.ListAddressGroupReferencesResponse{})
	}
	return m
}()

// newerAPI reports whether a method belongs to networksecurity, whose errors
// have the newer format.
func newerAPI(p permission) bool { return strings.HasPrefix(p.name, "networksecurity.") }

// A groupMethod is one method served on a path: its verb and handler.
type groupMethod struct {
	verb string
	h    handler
}

func (s *Server) groupRoutes() {
	for _, p := range []struct{ prefix, parent string }{
		{"addressGroups.", "/v1/projects/{project}/locations/{location}"},
		{"organizationAddressGroups.", "/v1/organizations/{organization}/locations/{location}"},
	} {
		coll, one := p.parent+"/addressGroups", p.parent+"/addressGroups/{group}"
		s.groupRoute("POST", coll, p.prefix, map[string]groupMethod{"": {"create", s.createGroup}})
		s.groupRoute("GET", coll, p.prefix, map[string]groupMethod{"": {"list", s.listGroups}})
		s.groupRoute("GET", one, p.prefix, map[string]groupMethod{"": {"get", s.getGroup},
			"listReferences": {"listReferences", s.listGroupReferences}})
		s.groupRoute("PATCH", one, p.prefix, map[string]groupMethod{"": {"patch", s.patchGroup}})
		s.groupRoute("DELETE", one, p.prefix, map[string]groupMethod{"": {"delete", s.deleteGroup}})
		s.groupRoute("POST", one, p.prefix, map[string]groupMethod{"addItems": {"addItems", s.addGroupItems},
			"removeItems": {"removeItems", s.removeGroupItems}, "cloneItems": {"cloneItems", s.cloneGroupItems}})
	}
	s.groupRoute("GET", "/v1/projects/{project}/locations/{location}/operations/{operation}", "",
		map[string]groupMethod{"": {"locationOperations.get", s.getGroupOp}})
	s.groupRoute("GET", "/v1/organizations/{organization}/locations/{location}/operations/{operation}", "",
		map[string]groupMethod{"": {"organizationLocationOperations.get", s.getGroupOp}})
}

// groupRoute serves a path whose last segment may carry a custom method
// ("{group}:addItems"): ServeMux wildcards are whole segments, so the method
// is chosen here, by what follows the colon.
func (s *Server) groupRoute(method, path, prefix string, byCustom map[string]groupMethod) {
	perms := map[string]permission{}
	for custom, gm := range byCustom {
		perms[custom] = permissionOf(prefix + gm.verb)
	}
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		_, custom, _ := strings.Cut(r.PathValue("group"), ":")
		gm, ok := byCustom[custom]
		if !ok {
			core.WriteRPC(w, &core.RPCError{Code: 404, Status: "NOT_FOUND",
				Message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)})
			return
		}
		s.serve(w, r, prefix+gm.verb, perms[custom], gm.h)
	})
}

// A groupTarget is what a request's path names: the parent (projects/P or
// organizations/O), the location, and the group, if any.
type groupTarget struct{ parent, location, name string }

func targetOf(r *http.Request) groupTarget {
	parent := "projects/" + r.PathValue("project")
	if org := r.PathValue("organization"); org != "" {
		parent = "organizations/" + org
	}
	name, _, _ := strings.Cut(r.PathValue("group"), ":")
	return groupTarget{parent: parent, location: r.PathValue("location"), name: name}
}

func (t groupTarget) path() string       { return groupPath(t.parent, t.location, t.name) }
func (t groupTarget) parentPath() string { return t.parent + "/locations/" + t.location }

// groupResource is the resource a denied networksecurity call names: the
// group, the operation, or the parent location for create and list.
func groupResource(r *http.Request) string {
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
