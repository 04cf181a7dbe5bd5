package securitypolicies

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Organization (hierarchical) security policies: compute v1's
// organizationSecurityPolicies, served at /locations/global/securityPolicies.
// A policy belongs to an organization or a folder (parentId), is named by
// the numeric id the server gives it and carries the user's shortName.

var (
	// parentPattern is what parentId takes: "folders/[FOLDER_ID]" or
	// "organizations/[ORGANIZATION_ID]" (insert's parentId).
	parentPattern = regexp.MustCompile(`^(organizations|folders)/[0-9]{1,20}$`)
	// attachmentPattern is what an association attaches to: an
	// organization or a folder, or a project (gcloud's --project-number).
	attachmentPattern = regexp.MustCompile(`^((organizations|folders)/[0-9]{1,20}|projects/[a-z0-9][-a-z0-9:.]{0,62})$`)
	// orgPolicyTypes are the types a hierarchical policy may have: shortName
	// "should only be used when SecurityPolicyType is CLOUD_ARMOR".
	orgPolicyTypes = core.Set("CLOUD_ARMOR")
	// orgOutputKeys are what an organization policy body may carry that is
	// not stored as sent: the server owns them or they have their own member.
	orgOutputKeys = core.Set("shortName", "parent", "associations", "ruleTupleCount", "displayName")
)

// An association attaches an organization policy to an organization, a
// folder or a project.
type association struct {
	Name             string   `json:"name"`
	AttachmentID     string   `json:"attachmentId"`
	ExcludedFolders  []string `json:"excludedFolders,omitempty"`
	ExcludedProjects []string `json:"excludedProjects,omitempty"`
}

// An orgPolicy is an organization security policy. Its policy's Name is its
// id, and its Scope is empty.
type orgPolicy struct {
	policy
	Parent       string        `json:"parent"`
	ShortName    string        `json:"shortName"`
	Associations []association `json:"associations,omitempty"`
}

// OrgPolicyPath is the path of the organization policy id, which a 403
// names.
func OrgPolicyPath(id string) string { return "locations/global/securityPolicies/" + id }

// OrgPolicyID reads the {orgPolicy} path value, whose pattern is
// "(securityPolicies/)?[0-9]{0,20}".
func OrgPolicyID(r *http.Request) string {
	return strings.TrimPrefix(r.PathValue("orgPolicy"), "securityPolicies/")
}

// CheckParent checks a parentId query parameter: organizations/N or
// folders/N.
func CheckParent(param, v string) error {
	if !parentPattern.MatchString(v) {
		return errParent(param, v)
	}
	return nil
}

func (o *orgPolicy) path() string { return OrgPolicyPath(o.Name) }

func (o *orgPolicy) clone() *orgPolicy {
	if o == nil {
		return nil
	}
	c := *o
	c.policy = *o.policy.clone()
	c.Associations = make([]association, len(o.Associations))
	for i, a := range o.Associations {
		a.ExcludedFolders = slices.Clone(a.ExcludedFolders)
		a.ExcludedProjects = slices.Clone(a.ExcludedProjects)
		c.Associations[i] = a
	}
	return &c
}

// asPolicy is the policy rules are validated against: a global CLOUD_ARMOR
// policy whose projects are on Cloud Armor Enterprise ("Projects in the
// hierarchy with effective hierarchical security policies will be
// automatically enrolled into Cloud Armor Enterprise").
func (o *orgPolicy) asPolicy() *policy {
	p := &o.policy
	p.tier = TierEnterprisePaygo
	return p
}

func renderOrgPolicy(o *orgPolicy) map[string]any {
	m := renderPolicy(&o.policy)
	m["selfLink"] = apiRoot + o.path()
	m["selfLinkWithId"] = apiRoot + o.path()
	m["parent"] = o.Parent
	m["shortName"] = o.ShortName
	if len(o.Associations) > 0 {
		list := make([]any, len(o.Associations))
		for i, a := range o.Associations {
			list[i] = renderAssociation(o, a)
		}
		m["associations"] = list
	}
	return m
}

// orgFields is settable without the organization-only output fields.
func orgFields(raw map[string]any) map[string]any {
	f := settable(raw)
	for k := range orgOutputKeys {
		delete(f, k)
	}
	return f
}

func errParent(param, v string) *core.Error {
	return core.ErrInvalidField(param, v, `Must be "organizations/[ORGANIZATION_ID]" or "folders/[FOLDER_ID]".`)
}

// --- store ---

// OrgPolicyParent is the parent (organizations/N or folders/N) of the
// organization policy id, which grants are checked against.
func (a *API) OrgPolicyParent(id string) (string, bool) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if o, ok := a.st.orgPolicies[id]; ok {
		return o.Parent, true
	}
	return "", false
}

func (st *store) orgPolicy(id string) (*orgPolicy, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	o, ok := st.orgPolicies[id]
	if !ok {
		return nil, core.ErrNotFound(OrgPolicyPath(id))
	}
	return o.clone(), nil
}

// orgPoliciesOf returns copies of the policies whose parent is parent ("" for
// all), by id.
func (st *store) orgPoliciesOf(parent string) []*orgPolicy {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*orgPolicy
	for _, k := range sortedKeys(st.orgPolicies) {
		if o := st.orgPolicies[k]; parent == "" || o.Parent == parent {
			out = append(out, o.clone())
		}
	}
	return out
}

// shortNameTakenLocked reports whether another policy of parent has the
// short name ("unique in the organization in which the security policy is
// created"; the emulator checks the parent). st.mu must be held.
func (st *store) shortNameTakenLocked(parent, short, exceptID string) bool {
	for id, o := range st.orgPolicies {
		if id != exceptID && o.Parent == parent && o.ShortName == short {
			return true
		}
	}
	return false
}

// orgWrite is a write to the organization policy id (an insert passes the
// new id): a global organization operation of its parent.
func orgWrite(opType, id, parent string) Write {
	return Write{OpType: opType, Keys: []string{OrgPolicyPath(id)}, Parent: parent, What: OrgPolicyPath(id)}
}

// changeOrgPolicy runs a mutation of an existing organization policy:
// change gets a private copy and returns the policy to store, or nil to
// delete it. The host's lock is held while change runs.
func (a *API) changeOrgPolicy(r *http.Request, c Call, opType string, change func(cur *orgPolicy) (*orgPolicy, error)) {
	id := OrgPolicyID(r)
	parent, _ := a.OrgPolicyParent(id)
	c.Mutate(orgWrite(opType, id, parent), func() (Plan, error) {
		cur, ok := a.st.orgPolicies[id]
		if !ok {
			return Plan{}, core.ErrNotFound(OrgPolicyPath(id))
		}
		next, err := change(cur.clone())
		if err != nil {
			return Plan{}, err
		}
		p := Plan{Link: apiRoot + cur.path(), ID: cur.ID, Policy: cur.path(), Commit: func() {
			delete(a.st.orgPolicies, id)
		}}
		if next != nil {
			p.Commit = func() {
				next.Fingerprint = a.st.gen.Fingerprint()
				next.sortRules()
				a.st.orgPolicies[id] = next
			}
		}
		return p, nil
	})
}

// orgPolicyKind reaches the organization policy of the {orgPolicy} path
// value for the methods it shares with project policies (policyKind). Its
// rules are validated as asPolicy says.
func (a *API) orgPolicyKind() policyKind {
	return policyKind{
		read: func(r *http.Request, _ Call) (*policy, error) {
			o, err := a.st.orgPolicy(OrgPolicyID(r))
			if err != nil {
				return nil, err
			}
			return &o.policy, nil
		},
		change: func(r *http.Request, c Call, opType string, f changeFn) {
			a.changeOrgPolicy(r, c, opType, func(cur *orgPolicy) (*orgPolicy, error) {
				if next, err := f(cur.asPolicy()); next == nil || err != nil {
					return nil, err
				}
				return cur, nil // f changed cur's policy in place
			})
		},
		inUse: func(cur *policy) error {
			if o := a.st.orgPolicies[cur.Name]; len(o.Associations) > 0 {
				return errInUse("security_policy", o.path(), o.Associations[0].AttachmentID)
			}
			return nil
		},
		patchable: func(cur *policy, in *compute.SecurityPolicy, raw map[string]any) error {
			for k := range orgOutputKeys {
				delete(raw, k)
			}
			if short := a.st.orgPolicies[cur.Name].ShortName; in.ShortName != "" && in.ShortName != short {
				return core.ErrInvalidField("resource.shortName", in.ShortName, "The short name of a security policy cannot be changed.")
			}
			if len(in.Labels) > 0 {
				return core.ErrInvalidField("resource.labels", shown(in.Labels), "Organization security policies have no labels.")
			}
			return nil
		},
	}
}

// --- handlers ---

func (a *API) insertOrgPolicy(w http.ResponseWriter, r *http.Request, c Call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	var in compute.SecurityPolicy
	raw, err := a.decode(w, r, &in, "security_policy")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if in.Type == "" {
		in.Type = "CLOUD_ARMOR"
	}
	if err := validateOrgPolicy(&in); err != nil {
		core.WriteError(w, err)
		return
	}
	o := &orgPolicy{Parent: parent, ShortName: in.ShortName}
	o.policy = policy{ID: a.st.gen.ID(), Created: a.host.Now(), Type: in.Type, Fields: orgFields(raw)}
	o.Name = strconv.FormatUint(o.ID, 10)
	if err := validatePolicyFields(o.asPolicy(), &in); err != nil {
		core.WriteError(w, err)
		return
	}
	if err := validateRuleSet(o.asPolicy(), in.Rules); err != nil {
		core.WriteError(w, err)
		return
	}
	for i, body := range ruleBodies(raw) {
		o.addRule(in.Rules[i].Priority, body)
	}
	if len(o.Rules) == 0 {
		o.addRule(defaultPriority, defaultRule())
	}
	c.CountPolicy(o.path())
	c.Mutate(orgWrite("insert", o.Name, parent), func() (Plan, error) {
		if a.st.shortNameTakenLocked(parent, o.ShortName, "") {
			return Plan{}, core.ErrAlreadyExists(parent + "/securityPolicies/" + o.ShortName)
		}
		return Plan{Link: apiRoot + o.path(), ID: o.ID, Policy: o.path(), Commit: func() {
			o.Fingerprint = a.st.gen.Fingerprint()
			o.sortRules()
			a.st.orgPolicies[o.Name] = o
		}}, nil
	})
}

// validateOrgPolicy checks what only an organization policy has: its type
// and short name; labels cannot be set (there is no setLabels method).
func validateOrgPolicy(in *compute.SecurityPolicy) error {
	if !orgPolicyTypes[in.Type] {
		return core.ErrInvalidField("resource.type", in.Type,
			"Organization security policies must be of type CLOUD_ARMOR; FIREWALL policies are managed by firewallPolicies.")
	}
	if !core.NamePattern.MatchString(in.ShortName) {
		return core.ErrInvalidField("resource.shortName", in.ShortName,
			"Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	if len(in.Labels) > 0 {
		return core.ErrInvalidField("resource.labels", shown(in.Labels), "Organization security policies have no labels.")
	}
	return nil
}

func (a *API) getOrgPolicy(w http.ResponseWriter, r *http.Request, _ Call) {
	o, err := a.st.orgPolicy(OrgPolicyID(r))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderOrgPolicy(o))
}

func (a *API) listOrgPolicies(w http.ResponseWriter, r *http.Request, _ Call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	var items []map[string]any
	for _, o := range a.st.orgPoliciesOf(parent) {
		items = append(items, renderOrgPolicy(o))
	}
	core.WriteList(w, r, items, "compute#securityPolicyList", "locations/global/securityPolicies", false)
}

// moveOrgPolicy gives the policy a new parent. Its operation belongs to the
// new parent (chosen).
func (a *API) moveOrgPolicy(w http.ResponseWriter, r *http.Request, c Call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	id := OrgPolicyID(r)
	c.Mutate(orgWrite("move", id, parent), func() (Plan, error) {
		cur, ok := a.st.orgPolicies[id]
		if !ok {
			return Plan{}, core.ErrNotFound(OrgPolicyPath(id))
		}
		if cur.Parent != parent && a.st.shortNameTakenLocked(parent, cur.ShortName, id) {
			return Plan{}, core.ErrAlreadyExists(parent + "/securityPolicies/" + cur.ShortName)
		}
		next := cur.clone()
		next.Parent = parent
		return Plan{Link: apiRoot + cur.path(), ID: cur.ID, Policy: cur.path(), Commit: func() {
			next.Fingerprint = a.st.gen.Fingerprint()
			a.st.orgPolicies[id] = next
		}}, nil
	})
}

// OrganizationSecurityPolicies returns every organization security policy
// as GET would return it, keyed by its path
// ("locations/global/securityPolicies/<id>").
func (a *API) OrganizationSecurityPolicies() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range a.st.orgPoliciesOf("") {
		out[o.path()] = renderOrgPolicy(o)
	}
	return out
}
