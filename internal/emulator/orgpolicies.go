package emulator

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

func orgPolicyPath(id string) string { return "locations/global/securityPolicies/" + id }
func orgOpPath(name string) string   { return "locations/global/operations/" + name }

// orgOpPrefix starts the name of an organization operation: gcloud reads
// the organization back from "org-<ORGANIZATION_ID>-operation-…". A
// folder's operations are "folder-<FOLDER_ID>-operation-…" (the emulator
// does not know a folder's organization).
func orgOpPrefix(parent string) string {
	kind, id, _ := strings.Cut(parent, "/")
	if kind == "folders" {
		return "folder-" + id + "-"
	}
	return "org-" + id + "-"
}

// orgPolicyID reads the {securityPolicy} path parameter, whose pattern is
// "(securityPolicies/)?[0-9]{0,20}".
func orgPolicyID(v string) string { return strings.TrimPrefix(v, "securityPolicies/") }

func (o *orgPolicy) path() string { return orgPolicyPath(o.Name) }

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

func (st *store) orgPolicyParent(id string) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if o, ok := st.more.orgPolicies[id]; ok {
		return o.Parent, true
	}
	return "", false
}

func (st *store) orgOpParent(name string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op, ok := st.ops[orgOpPath(name)]; ok {
		return op.Parent
	}
	return ""
}

func (st *store) orgPolicy(id string) (*orgPolicy, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	o, ok := st.more.orgPolicies[id]
	if !ok {
		return nil, core.ErrNotFound(orgPolicyPath(id))
	}
	return o.clone(), nil
}

// orgPolicies returns copies of the policies whose parent is parent ("" for
// all), by id.
func (st *store) orgPolicies(parent string) []*orgPolicy {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*orgPolicy
	for _, k := range sortedKeys(st.more.orgPolicies) {
		if o := st.more.orgPolicies[k]; parent == "" || o.Parent == parent {
			out = append(out, o.clone())
		}
	}
	return out
}

// shortNameTakenLocked reports whether another policy of parent has the
// short name ("unique in the organization in which the security policy is
// created"; the emulator checks the parent). st.mu must be held.
func (st *store) shortNameTakenLocked(parent, short, exceptID string) bool {
	for id, o := range st.more.orgPolicies {
		if id != exceptID && o.Parent == parent && o.ShortName == short {
			return true
		}
	}
	return false
}

// orgMutation prepares a mutation of the organization policy id (an insert
// passes the new id): a global organization operation of the parent.
func (s *Server) orgMutation(r *http.Request, c *call, opType, id, parent string) objMutation {
	m := s.objectMutation(r, c, opType, orgPolicyPath(id))
	m.scope = scope{}
	m.parent = parent
	return m
}

// changeOrgPolicy runs a mutation of an existing organization policy:
// change gets a private copy and returns the policy to store, or nil to
// delete it. st.mu is held while change runs.
func (s *Server) changeOrgPolicy(w http.ResponseWriter, r *http.Request, c *call, opType string,
	change func(cur *orgPolicy) (*orgPolicy, error)) {
	id := orgPolicyID(r.PathValue("orgPolicy"))
	parent, _ := s.store.orgPolicyParent(id)
	m := s.orgMutation(r, c, opType, id, parent)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		cur, ok := s.store.more.orgPolicies[id]
		if !ok {
			return plan{}, core.ErrNotFound(orgPolicyPath(id))
		}
		next, err := change(cur.clone())
		if err != nil {
			return plan{}, err
		}
		p := plan{link: apiRoot + cur.path(), id: cur.ID, policy: cur.path(), commit: func() {
			delete(s.store.more.orgPolicies, id)
		}}
		if next != nil {
			p.commit = func() {
				next.Fingerprint = s.store.gen.Fingerprint()
				next.sortRules()
				s.store.more.orgPolicies[id] = next
			}
		}
		return p, nil
	})
	s.finishObject(w, c, m, orgPolicyPath(id), op, err)
}

// orgPolicies reach the organization policy of the {orgPolicy} path value
// for the methods it shares with project policies (policyKind). Its rules
// are validated as asPolicy says.
func (s *Server) orgPolicies() policyKind {
	return policyKind{
		read: func(r *http.Request, _ *call) (*policy, error) {
			o, err := s.store.orgPolicy(orgPolicyID(r.PathValue("orgPolicy")))
			if err != nil {
				return nil, err
			}
			return &o.policy, nil
		},
		change: func(w http.ResponseWriter, r *http.Request, c *call, opType string, f changeFn) {
			s.changeOrgPolicy(w, r, c, opType, func(cur *orgPolicy) (*orgPolicy, error) {
				if next, err := f(cur.asPolicy()); next == nil || err != nil {
					return nil, err
				}
				return cur, nil // f changed cur's policy in place
			})
		},
		inUse: func(cur *policy) error {
			if o := s.store.more.orgPolicies[cur.Name]; len(o.Associations) > 0 {
				return errInUse("security_policy", o.path(), o.Associations[0].AttachmentID)
			}
			return nil
		},
		patchable: func(cur *policy, in *compute.SecurityPolicy, raw map[string]any) error {
			for k := range orgOutputKeys {
				delete(raw, k)
			}
			if short := s.store.more.orgPolicies[cur.Name].ShortName; in.ShortName != "" && in.ShortName != short {
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

func (s *Server) insertOrgPolicy(w http.ResponseWriter, r *http.Request, c *call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	var in compute.SecurityPolicy
	raw, err := s.decode(w, r, &in, "security_policy")
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
	o.policy = policy{ID: s.store.gen.ID(), Created: s.now(), Type: in.Type, Fields: orgFields(raw)}
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
	s.stats.policy(o.path(), c.counted)
	m := s.orgMutation(r, c, "insert", o.Name, parent)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		if s.store.shortNameTakenLocked(parent, o.ShortName, "") {
			return plan{}, core.ErrAlreadyExists(parent + "/securityPolicies/" + o.ShortName)
		}
		return plan{link: apiRoot + o.path(), id: o.ID, policy: o.path(), commit: func() {
			o.Fingerprint = s.store.gen.Fingerprint()
			o.sortRules()
			s.store.more.orgPolicies[o.Name] = o
		}}, nil
	})
	s.finishObject(w, c, m, o.path(), op, err)
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

func (s *Server) getOrgPolicy(w http.ResponseWriter, r *http.Request, _ *call) {
	o, err := s.store.orgPolicy(orgPolicyID(r.PathValue("orgPolicy")))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderOrgPolicy(o))
}

func (s *Server) listOrgPolicies(w http.ResponseWriter, r *http.Request, _ *call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	var items []map[string]any
	for _, o := range s.store.orgPolicies(parent) {
		items = append(items, renderOrgPolicy(o))
	}
	core.WriteList(w, r, items, "compute#securityPolicyList", "locations/global/securityPolicies", false)
}

// moveOrgPolicy gives the policy a new parent. Its operation belongs to the
// new parent (chosen).
func (s *Server) moveOrgPolicy(w http.ResponseWriter, r *http.Request, c *call) {
	parent := r.URL.Query().Get("parentId")
	if !parentPattern.MatchString(parent) {
		core.WriteError(w, errParent("parentId", parent))
		return
	}
	id := orgPolicyID(r.PathValue("orgPolicy"))
	m := s.orgMutation(r, c, "move", id, parent)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		cur, ok := s.store.more.orgPolicies[id]
		if !ok {
			return plan{}, core.ErrNotFound(orgPolicyPath(id))
		}
		if cur.Parent != parent && s.store.shortNameTakenLocked(parent, cur.ShortName, id) {
			return plan{}, core.ErrAlreadyExists(parent + "/securityPolicies/" + cur.ShortName)
		}
		next := cur.clone()
		next.Parent = parent
		return plan{link: apiRoot + cur.path(), id: cur.ID, policy: cur.path(), commit: func() {
			next.Fingerprint = s.store.gen.Fingerprint()
			s.store.more.orgPolicies[id] = next
		}}, nil
	})
	s.finishObject(w, c, m, orgPolicyPath(id), op, err)
}

// OrganizationSecurityPolicies returns every organization security policy
// as GET would return it, keyed by its path
// ("locations/global/securityPolicies/<id>").
func (s *Server) OrganizationSecurityPolicies() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range s.store.orgPolicies("") {
		out[o.path()] = renderOrgPolicy(o)
	}
	return out
}
