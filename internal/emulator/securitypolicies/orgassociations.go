package securitypolicies

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Associations attach an organization security policy to an organization,
// a folder or a project: addAssociation, removeAssociation,
// getAssociation, listAssociations.

func (o *orgPolicy) associationIndex(name string) int {
	for i, a := range o.Associations {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func renderAssociation(o *orgPolicy, a association) map[string]any {
	m := map[string]any{"name": a.Name, "attachmentId": a.AttachmentID, "securityPolicyId": o.Name,
		"shortName": o.ShortName, "displayName": o.ShortName}
	if len(a.ExcludedFolders) > 0 {
		m["excludedFolders"] = a.ExcludedFolders
	}
	if len(a.ExcludedProjects) > 0 {
		m["excludedProjects"] = a.ExcludedProjects
	}
	return m
}

// defaultAssociationName is gcloud's: "organization-{ORGANIZATION_ID}" or
// "folder-{FOLDER_ID}" (and "project-{PROJECT}" for a project).
func defaultAssociationName(attachment string) string {
	kind, id, _ := strings.Cut(attachment, "/")
	return strings.TrimSuffix(kind, "s") + "-" + id
}

// addOrgAssociation attaches the policy. An attachment point has at most one
// association of a policy of each type: a second one is refused unless
// replaceExistingAssociation=true, which removes the existing one in the
// same operation. Attaching to a project enrolls it in Cloud Armor
// Enterprise if it was on Standard.
func (api *API) addOrgAssociation(w http.ResponseWriter, r *http.Request, c Call) {
	a, replace, err := api.readAssociation(w, r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	id := OrgPolicyID(r)
	parent, _ := api.OrgPolicyParent(id)
	wr := orgWrite("addAssociation", id, parent)
	// The policy holding the association being replaced is changed too, so
	// it must not be busy either.
	if other, ok := api.st.attachedPolicy(a.AttachmentID, id); ok {
		wr.Keys = append(wr.Keys, OrgPolicyPath(other))
	}
	c.Mutate(wr, func() (Plan, error) {
		cur, ok := api.st.orgPolicies[id]
		if !ok {
			return Plan{}, core.ErrNotFound(OrgPolicyPath(id))
		}
		if cur.associationIndex(a.Name) >= 0 {
			return Plan{}, core.ErrAlreadyExists(cur.path() + "/associations/" + a.Name)
		}
		holder, idx := api.st.attachmentLocked(a.AttachmentID, cur.Type)
		if holder != nil && !replace {
			return Plan{}, core.ErrInvalidField("resource.attachmentId", a.AttachmentID, fmt.Sprintf(
				"The attachment point already has an association of a security policy of type %s: '%s' of security policy '%s'. "+
					"Set replaceExistingAssociation to replace it.", cur.Type, holder.Associations[idx].Name, holder.Name))
		}
		next := cur.clone()
		next.Associations = append(next.Associations, a)
		return Plan{Link: apiRoot + cur.path(), ID: cur.ID, Policy: cur.path(), Commit: func() {
			if holder != nil {
				old := holder.clone()
				if old.Name == next.Name {
					old = next
				}
				i := old.associationIndex(holder.Associations[idx].Name)
				old.Associations = slices.Delete(old.Associations, i, i+1)
				old.Fingerprint = api.st.gen.Fingerprint()
				api.st.orgPolicies[old.Name] = old
			}
			next.Fingerprint = api.st.gen.Fingerprint()
			api.st.orgPolicies[id] = next
			if project, ok := strings.CutPrefix(a.AttachmentID, "projects/"); ok && !enterprise(api.st.tierLocked(project)) {
				api.st.projectLocked(project).Tier = TierEnterprisePaygo
			}
		}}, nil
	})
}

// readAssociation reads and checks addAssociation's body and its
// replaceExistingAssociation parameter; an association without a name
// gets gcloud's.
func (api *API) readAssociation(w http.ResponseWriter, r *http.Request) (association, bool, error) {
	var in compute.SecurityPolicyAssociation
	if _, err := api.decode(w, r, &in, "security_policy_association"); err != nil {
		return association{}, false, err
	}
	replace := false
	if v := r.URL.Query().Get("replaceExistingAssociation"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return association{}, false, core.ErrPayload(fmt.Sprintf("Invalid value at 'replace_existing_association' (TYPE_BOOL), %q", v))
		}
		replace = b
	}
	if !attachmentPattern.MatchString(in.AttachmentId) {
		return association{}, false, core.ErrInvalidField("resource.attachmentId", in.AttachmentId,
			`Must be "organizations/[ORGANIZATION_ID]", "folders/[FOLDER_ID]" or "projects/[PROJECT]".`)
	}
	for i, f := range in.ExcludedFolders {
		if !strings.HasPrefix(f, "folders/") || !parentPattern.MatchString(f) {
			return association{}, false, core.ErrInvalidField(fmt.Sprintf("resource.excludedFolders[%d]", i), f, `Must be "folders/[FOLDER_ID]".`)
		}
	}
	for i, p := range in.ExcludedProjects {
		if !strings.HasPrefix(p, "projects/") || !attachmentPattern.MatchString(p) {
			return association{}, false, core.ErrInvalidField(fmt.Sprintf("resource.excludedProjects[%d]", i), p, `Must be "projects/[PROJECT]".`)
		}
	}
	a := association{Name: in.Name, AttachmentID: in.AttachmentId, ExcludedFolders: in.ExcludedFolders,
		ExcludedProjects: in.ExcludedProjects}
	if a.Name == "" {
		a.Name = defaultAssociationName(a.AttachmentID)
	}
	if !core.NamePattern.MatchString(a.Name) {
		return association{}, false, core.ErrInvalidField("resource.name", a.Name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	return a, replace, nil
}

// attachmentLocked finds the association of a policy of type typ at an
// attachment point. st.mu must be held.
func (st *store) attachmentLocked(attachment, typ string) (*orgPolicy, int) {
	for _, k := range sortedKeys(st.orgPolicies) {
		o := st.orgPolicies[k]
		if o.Type != typ {
			continue
		}
		for i, a := range o.Associations {
			if a.AttachmentID == attachment {
				return o, i
			}
		}
	}
	return nil, -1
}

// attachedPolicy is the id of another policy associated at attachment.
func (st *store) attachedPolicy(attachment, exceptID string) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for id, o := range st.orgPolicies {
		if id == exceptID {
			continue
		}
		for _, a := range o.Associations {
			if a.AttachmentID == attachment {
				return id, true
			}
		}
	}
	return "", false
}

func (a *API) removeOrgAssociation(w http.ResponseWriter, r *http.Request, c Call) {
	name := r.URL.Query().Get("name")
	a.changeOrgPolicy(r, c, "removeAssociation", func(cur *orgPolicy) (*orgPolicy, error) {
		i := cur.associationIndex(name)
		if i < 0 {
			return nil, errNoAssociation(name)
		}
		cur.Associations = slices.Delete(cur.Associations, i, i+1)
		return cur, nil
	})
}

func errNoAssociation(name string) *core.Error {
	return core.ErrInvalidField("name", name, fmt.Sprintf("The security policy does not have an association named '%s'.", name))
}

func (a *API) getOrgAssociation(w http.ResponseWriter, r *http.Request, _ Call) {
	o, err := a.st.orgPolicy(OrgPolicyID(r))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	name := r.URL.Query().Get("name")
	i := o.associationIndex(name)
	if i < 0 {
		core.WriteError(w, errNoAssociation(name))
		return
	}
	core.WriteJSON(w, http.StatusOK, renderAssociation(o, o.Associations[i]))
}

// listOrgAssociations lists the associations whose attachment point is
// targetResource, of every policy, by policy id then association order.
func (a *API) listOrgAssociations(w http.ResponseWriter, r *http.Request, _ Call) {
	target := r.URL.Query().Get("targetResource")
	if !attachmentPattern.MatchString(target) {
		core.WriteError(w, core.ErrInvalidField("targetResource", target,
			`Must be "organizations/[ORGANIZATION_ID]", "folders/[FOLDER_ID]" or "projects/[PROJECT]".`))
		return
	}
	var list []any
	for _, o := range a.st.orgPoliciesOf("") {
		for _, a := range o.Associations {
			if a.AttachmentID == target {
				list = append(list, renderAssociation(o, a))
			}
		}
	}
	body := map[string]any{"kind": "compute#organizationSecurityPoliciesListAssociationsResponse"}
	if len(list) > 0 {
		body["associations"] = list
	}
	core.WriteJSON(w, http.StatusOK, body)
}
