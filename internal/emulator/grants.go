package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

// AnyProject in a Grant's Read or Write list stands for every project.
const AnyProject = "*"

// A Grant lists the projects one bearer token may read and write (see
// Options.Grants). Write implies read.
type Grant struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// access is a Grant compiled for lookup.
type access struct{ read, write map[string]bool }

func (a access) allows(project string, write bool) bool {
	if a.write[project] || a.write[AnyProject] {
		return true
	}
	return !write && (a.read[project] || a.read[AnyProject])
}

// compileGrants turns Options.Grants into lookup sets. It returns nil, meaning
// "no restriction", for no grants, so that behaviour stays what it was.
func compileGrants(g map[string]Grant) map[string]access {
	if len(g) == 0 {
		return nil
	}
	out := make(map[string]access, len(g))
	for token, gr := range g {
		out[token] = access{read: core.Set(gr.Read...), write: core.Set(gr.Write...)}
	}
	return out
}

func validateGrants(g map[string]Grant) error {
	for token, gr := range g {
		if token == "" {
			return fmt.Errorf("grant with an empty token")
		}
		for _, p := range slices.Concat(gr.Read, gr.Write) {
			if p == "" {
				return fmt.Errorf("grant for token %q: empty project", token)
			}
		}
	}
	return nil
}

// A permission is the IAM permission GCP checks for a method.
type permission struct {
	name  string // e.g. compute.securityPolicies.update
	write bool   // needs a write grant
}

// iamVerbs maps a method's verb to its IAM verb. Rule edits need update and
// getRule needs get, as in GCP; operations.wait needs get like operations.get.
var iamVerbs = map[string]permission{
	"insert":                          {"create", true},
	"get":                             {"get", false},
	"list":                            {"list", false},
	"patch":                           {"update", true},
	"delete":                          {"delete", true},
	"addRule":                         {"update", true},
	"patchRule":                       {"update", true},
	"removeRule":                      {"update", true},
	"getRule":                         {"get", false},
	"setLabels":                       {"setLabels", true},
	"wait":                            {"get", false},
	"aggregatedList":                  {"list", false},
	"listPreconfiguredExpressionSets": {"list", false},
}

// permissionOf returns the permission of a method such as
// "regionSecurityPolicies.addRule". It panics for a method without one, so a
// new route cannot go unchecked.
func permissionOf(method string) permission {
	if p, ok := otherPermissions[method]; ok {
		return p
	}
	collection, verb, _ := strings.Cut(method, ".")
	p, ok := iamVerbs[verb]
	if !ok {
		panic("emulator: no IAM permission for method " + method)
	}
	if method == "globalOperations.aggregatedList" {
		p.name = "aggregatedList" // operations have their own aggregatedList permission
	}
	p.name = "compute." + collection + "." + p.name
	return p
}

// permit checks the caller's grant for the call's project (or, for an
// organization's address groups, "organizations/ORG"). It runs after
// authentication and before anything else, as IAM does in GCP, so a denied
// call neither consumes an injected fault nor changes state.
func (s *Server) permit(r *http.Request, c *call, p permission) error {
	if s.grants == nil {
		return nil
	}
	if a, ok := s.grants[requestToken(r)]; ok && a.allows(c.owner, p.write) {
		return nil
	}
	if newerAPI(p) {
		return core.ErrRPCForbidden(p.name, networksecurity.Resource(r))
	}
	return core.ErrForbidden(p.name, deniedResource(c, r.PathValue("operation")))
}

// deniedResource is the resource GCP's message names: the policy or the
// operation, else the collection's parent (projects/P or
// projects/P/regions/R) for list, aggregatedList and insert.
func deniedResource(c *call, operation string) string {
	switch {
	case c.resource != "":
		return c.resource
	case c.policy != "":
		return c.scope.PolicyPath(c.policy)
	case operation != "":
		return c.scope.OpPath(operation)
	case c.scope.Region != "":
		return "projects/" + c.scope.Project + "/regions/" + c.scope.Region
	default:
		return "projects/" + c.scope.Project
	}
}
