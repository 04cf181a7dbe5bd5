package emulator

import (
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

// The security policy API's methods beyond the verbs permissionOf knows,
// and their response types, for fields=.
func init() { addMethods(securitypolicies.Permissions, securitypolicies.ResponseTypes) }

// mountPolicies serves the security policy API's routes through serve.
func (s *Server) mountPolicies() {
	s.policies.Mount(func(verb, pattern, name string, h securitypolicies.Handler) {
		s.route(verb, pattern, name, func(w http.ResponseWriter, r *http.Request, c *call) {
			h(w, r, policyCall{apiCall{s: s, w: w, r: r, c: c}})
		})
	})
}

// policyCall is a call of the security policy API.
type policyCall struct{ apiCall }

func (pc policyCall) Policy() string          { return pc.c.policy }
func (pc policyCall) CountPolicy(path string) { pc.s.stats.policy(path, pc.c.counted) }

func (pc policyCall) Quota() (policies, rules int) {
	q := pc.s.Faults().Quota
	return q.Policies, q.Rules
}

func (pc policyCall) Mutate(wr securitypolicies.Write, change func() (securitypolicies.Plan, error)) {
	m := pc.s.mutation(pc.r, pc.c, wr.OpType, wr.Keys...)
	if wr.Parent != "" {
		m.scope, m.parent = scope{}, wr.Parent
	}
	pc.write(m, wr.What, func() (plan, error) {
		p, err := change()
		return plan{link: p.Link, id: p.ID, policy: p.Policy, fail: p.Fail, commit: p.Commit}, err
	})
}

// policiesHost is what the server gives the security policy API.
type policiesHost struct{ serverHost }

func (h policiesHost) PolicyUserLocked(link string) string {
	return h.s.store.backends.UserLocked(link)
}

// SetTier sets a project's Cloud Armor tier (TierStandard,
// TierEnterprisePaygo or TierEnterpriseAnnual) at once, without an
// operation, as if setCloudArmorTier had finished. Tests use it to allow
// rules that use address groups.
func (s *Server) SetTier(project, tier string) error {
	if err := s.policies.SetTier(project, tier); err != nil {
		return err
	}
	s.logf("SetTier projects/%s tier=%s", project, tier)
	s.saveState()
	return nil
}

// Tiers returns the Cloud Armor tier of every project whose tier was set
// or read.
func (s *Server) Tiers() map[string]string { return s.policies.Tiers() }

// Snapshot returns every project policy as GET would return it, keyed by
// its path ("projects/p/global/securityPolicies/n").
func (s *Server) Snapshot() map[string]map[string]any { return s.policies.Rendered() }

// OrganizationSecurityPolicies returns every organization security policy
// as GET would return it, keyed by its path
// ("locations/global/securityPolicies/<id>").
func (s *Server) OrganizationSecurityPolicies() map[string]map[string]any {
	return s.policies.OrganizationSecurityPolicies()
}

// The Cloud Armor tiers of a project (compute v1 Project.cloudArmorTier).
const (
	TierStandard         = securitypolicies.TierStandard
	TierEnterprisePaygo  = securitypolicies.TierEnterprisePaygo
	TierEnterpriseAnnual = securitypolicies.TierEnterpriseAnnual
)
