package securitypolicies

import (
	"sort"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// get returns a copy of a policy.
func (st *store) get(sc scope, name string) (*policy, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p, ok := st.policies[sc.PolicyPath(name)]
	if !ok {
		return nil, core.ErrNotFound(sc.PolicyPath(name))
	}
	return p.clone(), nil
}

// list returns copies of the policies of a project, sorted by name. With
// allScopes it returns every scope of the project, else only sc.
func (st *store) list(sc scope, allScopes bool) []*policy {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*policy
	for _, p := range st.policies {
		if p.Scope.Project == sc.Project && (allScopes || p.Scope == sc) {
			out = append(out, p.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
}

// all returns copies of every project policy, sorted by path.
func (st *store) all() []*policy {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*policy, 0, len(st.policies))
	for _, p := range st.policies {
		out = append(out, p.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path() < out[j].path() })
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// policyInUseLocked refuses the delete of a project's security policy that
// an object of another API (a backend service, a backend bucket, a network
// edge security service) uses. The host's lock must be held.
func (a *API) policyInUseLocked(p *policy) error {
	if user := a.host.PolicyUserLocked(apiRoot + p.path()); user != "" {
		return errInUse("security_policy", p.path(), user)
	}
	return nil
}

// SavedPolicies is the policies' part of the server's state file.
type SavedPolicies struct {
	Policies []*policy               `json:"policies"`
	Projects map[string]*projectInfo `json:"projects,omitempty"`
	// Organization security policies.
	OrgPolicies []*orgPolicy `json:"organizationSecurityPolicies,omitempty"`
}

// Save returns the state to save.
func (a *API) Save() SavedPolicies {
	st := a.st
	out := SavedPolicies{Policies: st.all()}
	st.mu.Lock()
	defer st.mu.Unlock()
	out.Projects = make(map[string]*projectInfo, len(st.projects))
	for k, p := range st.projects {
		c := *p
		out.Projects[k] = &c
	}
	for _, k := range sortedKeys(st.orgPolicies) {
		out.OrgPolicies = append(out.OrgPolicies, st.orgPolicies[k].clone())
	}
	return out
}

// Load adds a saved state's policies and projects.
func (a *API) Load(f SavedPolicies) {
	st := a.st
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range f.Policies {
		if p != nil && !strings.Contains(p.Name, "/") {
			st.policies[p.path()] = p
		}
	}
	for k, p := range f.Projects {
		if p != nil {
			st.projects[k] = p
		}
	}
	for _, o := range f.OrgPolicies {
		if o != nil && o.Name != "" && !strings.Contains(o.Name, "/") {
			st.orgPolicies[o.Name] = o
		}
	}
}

// Rendered returns every project policy as GET would return it, keyed by
// its path ("projects/p/global/securityPolicies/n").
func (a *API) Rendered() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, p := range a.st.all() {
		out[p.path()] = renderPolicy(p)
	}
	return out
}

// RenderedLocked returns the project policy at path
// ("projects/p/global/securityPolicies/n") as GET would return it, and
// false when there is none. The host's lock must be held.
func (a *API) RenderedLocked(path string) (map[string]any, bool) {
	p, ok := a.st.policies[path]
	if !ok {
		return nil, false
	}
	return renderPolicy(p), true
}
