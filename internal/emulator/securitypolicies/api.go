// Package securitypolicies serves Cloud Armor's own API in compute v1:
// security policies (global and regional) and their rules, organization
// security policies with their rules and associations, the preconfigured
// WAF expression sets, and the project's Cloud Armor tier (projects.get,
// projects.setCloudArmorTier), with everything GCP checks in them (rule
// validation, CEL expressions, quotas on the operation).
//
// The server in package emulator mounts it (Mount), runs every call
// through its pipeline (auth, grants, faults, fields=) and carries out its
// writes (Call.Mutate) as compute operations of its one store. The policies
// live under the host's lock with every other API's state. This package
// imports neither the server nor the other APIs: what they need of it
// (which policy an object may use, which rules name an address group) are
// methods of API that the server hands on.
package securitypolicies

import (
	"net/http"
	"reflect"
	"sync"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Host is what the server that mounts the API gives it.
type Host interface {
	// The store holds the API's state under its lock.
	core.Store
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes() int64
	// PolicyUserLocked returns the path of an object of another API that
	// uses the security policy whose selfLink is link ("" if none): a
	// policy in use cannot be deleted. The lock must be held.
	PolicyUserLocked(link string) string
}

// A Call is the call a handler serves, as the server's pipeline passes it.
type Call interface {
	Method() string // e.g. "securityPolicies.addRule"
	Scope() core.Scope
	// Policy is the {policy} path value, a numeric id resolved to the name
	// of the policy of Scope that has it (PolicyName).
	Policy() string
	// CountPolicy counts the call in the server's per-policy statistics
	// under path, as the pipeline does for a {policy} it knows.
	CountPolicy(path string)
	// Quota is the per-project quota the server enforces; 0 is unlimited.
	Quota() (policies, rules int)
	// Mutate carries out a write as a compute operation and answers the
	// call: under the host's lock, change validates and plans (its error
	// fails the call), and the plan's commit runs unless the call is a dry
	// run or its operation fails.
	Mutate(w Write, change func() (Plan, error))
}

// A Write describes a mutating call's operation.
type Write struct {
	OpType string // operationType, e.g. "AddRule"
	// Keys are the objects the operation holds busy (resourceNotReady for
	// any other write while it runs); Keys[0] is its target. None for a
	// project's setCloudArmorTier.
	Keys []string
	// Parent is organizations/N or folders/N for a global organization
	// operation, which belongs to no project; "" otherwise.
	Parent string
	What   string // what the server's log line names
}

// A Plan is what a write decided: its operation's target and the commit
// that makes the change.
type Plan struct {
	Link   string // targetLink
	ID     uint64 // targetId
	Policy string // the policy path the operation's polls are counted under
	// Fail, if set, fails the operation (a quota), and nothing is committed.
	Fail   *core.OpError
	Commit func()
}

// A Handler serves one route.
type Handler func(w http.ResponseWriter, r *http.Request, c Call)

// An API serves the security policy routes over the state it keeps under
// its host's lock.
type API struct {
	host Host
	st   *store
}

// store is the API's state. Its mu is the host's lock.
type store struct {
	mu          sync.Locker
	gen         *core.Gen
	now         func() time.Time
	policies    map[string]*policy      // project and regional policies, by path
	orgPolicies map[string]*orgPolicy   // by id
	projects    map[string]*projectInfo // by project name: id and Cloud Armor tier
	defaultTier string                  // the tier of a project never set
}

// New returns the API. defaultTier is the Cloud Armor tier of a project
// whose tier was never set ("": TierStandard).
func New(h Host, defaultTier string) *API {
	a := &API{host: h, st: &store{mu: h, gen: h.Gen(), now: h.Now, defaultTier: defaultTier}}
	a.st.reset()
	return a
}

func (st *store) reset() {
	st.policies = map[string]*policy{}
	st.orgPolicies = map[string]*orgPolicy{}
	st.projects = map[string]*projectInfo{}
}

// ResetLocked forgets every policy and project. The host's lock must be
// held.
func (a *API) ResetLocked() { a.st.reset() }

// Mount adds the API's routes through route, which runs each through the
// server's pipeline.
func (a *API) Mount(route func(verb, pattern, name string, h Handler)) {
	const g = "/projects/{project}/global/securityPolicies"
	const rg = "/projects/{project}/regions/{region}/securityPolicies"
	pp := a.projectPolicies()
	for _, sp := range []struct{ prefix, path string }{{"securityPolicies.", g}, {"regionSecurityPolicies.", rg}} {
		route("POST", sp.path, sp.prefix+"insert", a.insertPolicy)
		route("GET", sp.path, sp.prefix+"list", a.listPolicies)
		route("GET", sp.path+"/{policy}", sp.prefix+"get", a.getPolicy)
		route("PATCH", sp.path+"/{policy}", sp.prefix+"patch", a.patchPolicy(pp))
		route("DELETE", sp.path+"/{policy}", sp.prefix+"delete", a.deletePolicy(pp))
		route("POST", sp.path+"/{policy}/addRule", sp.prefix+"addRule", a.addRule(pp))
		route("GET", sp.path+"/{policy}/getRule", sp.prefix+"getRule", a.getRule(pp))
		route("POST", sp.path+"/{policy}/patchRule", sp.prefix+"patchRule", a.patchRule(pp))
		route("POST", sp.path+"/{policy}/removeRule", sp.prefix+"removeRule", a.removeRule(pp))
		route("POST", sp.path+"/{policy}/setLabels", sp.prefix+"setLabels", a.setLabels)
	}
	// A literal segment is more specific than {policy}, so ServeMux prefers it.
	route("GET", g+"/listPreconfiguredExpressionSets", "securityPolicies.listPreconfiguredExpressionSets", a.listPreconfigured)
	route("GET", "/projects/{project}/aggregated/securityPolicies", "securityPolicies.aggregatedList", a.aggregatedPolicies)
	route("GET", "/projects/{project}", "projects.get", a.getProject)
	route("POST", "/projects/{project}/setCloudArmorTier", "projects.setCloudArmorTier", a.setCloudArmorTier)

	const o = "/locations/global/securityPolicies"
	const one = o + "/{orgPolicy}"
	const p = "organizationSecurityPolicies."
	op := a.orgPolicyKind()
	route("POST", o, p+"insert", a.insertOrgPolicy)
	route("GET", o, p+"list", a.listOrgPolicies)
	route("GET", o+"/listAssociations", p+"listAssociations", a.listOrgAssociations)
	route("GET", o+"/listPreconfiguredExpressionSets", p+"listPreconfiguredExpressionSets", a.listPreconfigured)
	route("GET", one, p+"get", a.getOrgPolicy)
	route("PATCH", one, p+"patch", a.patchPolicy(op))
	route("DELETE", one, p+"delete", a.deletePolicy(op))
	route("POST", one+"/addRule", p+"addRule", a.addRule(op))
	route("GET", one+"/getRule", p+"getRule", a.getRule(op))
	route("POST", one+"/patchRule", p+"patchRule", a.patchRule(op))
	route("POST", one+"/removeRule", p+"removeRule", a.removeRule(op))
	route("POST", one+"/addAssociation", p+"addAssociation", a.addOrgAssociation)
	route("POST", one+"/removeAssociation", p+"removeAssociation", a.removeOrgAssociation)
	route("GET", one+"/getAssociation", p+"getAssociation", a.getOrgAssociation)
	route("POST", one+"/move", p+"move", a.moveOrgPolicy)
}

// Permissions are the IAM permissions of the methods whose permission is
// not compute.<collection>.<verb> by the usual verbs.
var Permissions = func() map[string]core.Permission {
	perm := func(name string, write bool) core.Permission { return core.Permission{Name: name, Write: write} }
	org := "compute.organizationSecurityPolicies."
	return map[string]core.Permission{
		"projects.get":                                                 perm("compute.projects.get", false),
		"projects.setCloudArmorTier":                                   perm("compute.projects.setCloudArmorTier", true),
		"organizationSecurityPolicies.insert":                          perm(org+"create", true),
		"organizationSecurityPolicies.get":                             perm(org+"get", false),
		"organizationSecurityPolicies.list":                            perm(org+"list", false),
		"organizationSecurityPolicies.patch":                           perm(org+"update", true),
		"organizationSecurityPolicies.delete":                          perm(org+"delete", true),
		"organizationSecurityPolicies.addRule":                         perm(org+"update", true),
		"organizationSecurityPolicies.patchRule":                       perm(org+"update", true),
		"organizationSecurityPolicies.removeRule":                      perm(org+"update", true),
		"organizationSecurityPolicies.getRule":                         perm(org+"get", false),
		"organizationSecurityPolicies.addAssociation":                  perm(org+"addAssociation", true),
		"organizationSecurityPolicies.removeAssociation":               perm(org+"removeAssociation", true),
		"organizationSecurityPolicies.getAssociation":                  perm(org+"get", false),
		"organizationSecurityPolicies.listAssociations":                perm(org+"listAssociations", false),
		"organizationSecurityPolicies.move":                            perm(org+"move", true),
		"organizationSecurityPolicies.listPreconfiguredExpressionSets": perm(org+"list", false),
	}
}()

// ResponseTypes are the response types of the methods whose type the
// server does not tell from their verb, for fields=.
var ResponseTypes = func() map[string]reflect.Type {
	op := reflect.TypeOf(compute.Operation{})
	out := map[string]reflect.Type{
		"projects.get":                                                 reflect.TypeOf(compute.Project{}),
		"projects.setCloudArmorTier":                                   op,
		"organizationSecurityPolicies.get":                             reflect.TypeOf(compute.SecurityPolicy{}),
		"organizationSecurityPolicies.list":                            reflect.TypeOf(compute.SecurityPolicyList{}),
		"organizationSecurityPolicies.getRule":                         reflect.TypeOf(compute.SecurityPolicyRule{}),
		"organizationSecurityPolicies.getAssociation":                  reflect.TypeOf(compute.SecurityPolicyAssociation{}),
		"organizationSecurityPolicies.listAssociations":                reflect.TypeOf(compute.OrganizationSecurityPoliciesListAssociationsResponse{}),
		"organizationSecurityPolicies.listPreconfiguredExpressionSets": reflect.TypeOf(compute.SecurityPoliciesListPreconfiguredExpressionSetsResponse{}),
	}
	for _, m := range []string{"insert", "patch", "delete", "addRule", "patchRule", "removeRule",
		"addAssociation", "removeAssociation", "move"} {
		out["organizationSecurityPolicies."+m] = op
	}
	return out
}()

// decode reads and decodes a request body (see core.DecodeBody).
func (a *API) decode(w http.ResponseWriter, r *http.Request, typed any, what string) (map[string]any, error) {
	return core.Decode(w, r, a.host.MaxBodyBytes(), typed, what)
}
