package emulator

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The Cloud Armor tiers of a project (compute v1 Project.cloudArmorTier).
const (
	TierStandard         = "CA_STANDARD"
	TierEnterprisePaygo  = "CA_ENTERPRISE_PAYGO"
	TierEnterpriseAnnual = "CA_ENTERPRISE_ANNUAL"
)

var tiers = core.Set(TierStandard, TierEnterprisePaygo, TierEnterpriseAnnual)

func enterprise(tier string) bool {
	return tier == TierEnterprisePaygo || tier == TierEnterpriseAnnual
}

// Features of a rule expression that need Cloud Armor Enterprise, as
// errTierDetail names them.
const (
	featureAddressGroups = "Address groups (evaluateAddressGroup, evaluateOrganizationAddressGroup)"
	featureNamedIPLists  = "Named IP address lists (evaluatePreconfiguredExpr('sourceiplist-*'))"
)

// errTierDetail completes the refusal of a rule that uses feature in a
// project without Cloud Armor Enterprise. The wording is the emulator's:
// GCP's is not recorded.
func errTierDetail(feature, project, tier string) string {
	if tier == "" {
		tier = TierStandard
	}
	return fmt.Sprintf("%s need Cloud Armor Enterprise; project '%s' is on %s.", feature, project, tier)
}

// A projectInfo is what the emulator knows of a project: a stable id and its
// Cloud Armor tier ("" until set: Options.DefaultTier).
type projectInfo struct {
	ID      uint64    `json:"id"`
	Created time.Time `json:"created"`
	Tier    string    `json:"tier,omitempty"`
}

// projectLocked returns the project, recording it on first use. st.mu must
// be held.
func (st *store) projectLocked(name string) *projectInfo {
	p, ok := st.projects[name]
	if !ok {
		p = &projectInfo{ID: st.gen.ID(), Created: st.now()}
		st.projects[name] = p
	}
	return p
}

// tierLocked is the project's tier, its default if never set. st.mu must be
// held.
func (st *store) tierLocked(name string) string {
	if p, ok := st.projects[name]; ok && p.Tier != "" {
		return p.Tier
	}
	if st.defaultTier != "" {
		return st.defaultTier
	}
	return TierStandard
}

func (st *store) tier(name string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tierLocked(name)
}

// projectView returns a copy of the project with its tier resolved.
func (st *store) projectView(name string) projectInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := *st.projectLocked(name)
	p.Tier = st.tierLocked(name)
	return p
}

// setTier carries out setCloudArmorTier: a global compute operation like any
// other write; an operation failed by fault injection changes nothing.
func (st *store) setTier(m mutation, name, tier string) *operation {
	st.mu.Lock()
	defer st.mu.Unlock()
	if op := st.byRequestID(m.requestID); op != nil {
		return op
	}
	p, now := st.projectLocked(name), st.now()
	op := &operation{ID: st.gen.ID(), Name: st.gen.OpName(now), Scope: scope{Project: name},
		Type: "setCloudArmorTier", User: m.user, Inserted: now, Done: now.Add(m.latency), Err: m.fail,
		TargetLink: apiRoot + "projects/" + name, TargetID: p.ID}
	if op.Err == nil {
		p.Tier = tier
	}
	st.remember(op, m.requestID)
	c := *op
	return &c
}

// SetTier sets a project's Cloud Armor tier (TierStandard,
// TierEnterprisePaygo or TierEnterpriseAnnual) at once, without an
// operation, as if setCloudArmorTier had finished. Tests use it to allow
// rules that use address groups.
func (s *Server) SetTier(project, tier string) error {
	if !tiers[tier] {
		return fmt.Errorf("unknown Cloud Armor tier %q (want one of %s)", tier, core.Keys(tiers))
	}
	s.store.mu.Lock()
	s.store.projectLocked(project).Tier = tier
	s.store.mu.Unlock()
	s.logf("SetTier projects/%s tier=%s", project, tier)
	s.saveState()
	return nil
}

// getProject answers compute's projects.get with the part of a Project the
// emulator knows.
func (s *Server) getProject(w http.ResponseWriter, _ *http.Request, c *call) {
	p := s.store.projectView(c.scope.Project)
	core.WriteJSON(w, http.StatusOK, map[string]any{
		"kind":              "compute#project",
		"id":                strconv.FormatUint(p.ID, 10),
		"name":              c.scope.Project,
		"creationTimestamp": core.Timestamp(p.Created),
		"selfLink":          apiRoot + "projects/" + c.scope.Project,
		"cloudArmorTier":    p.Tier,
	})
}

func (s *Server) setCloudArmorTier(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.ProjectsSetCloudArmorTierRequest
	if _, err := s.decode(w, r, &in, "projects_set_cloud_armor_tier_request"); err != nil {
		core.WriteError(w, err)
		return
	}
	if !tiers[in.CloudArmorTier] {
		core.WriteError(w, core.ErrInvalidField("resource.cloudArmorTier", in.CloudArmorTier, "Must be one of "+core.Keys(tiers)+"."))
		return
	}
	m := s.mutation(r, c, "", "setCloudArmorTier")
	op := s.store.setTier(m, c.scope.Project, in.CloudArmorTier)
	s.stats.mutation()
	s.logf("%s projects/%s tier=%s operation=%s%s", c.method, c.scope.Project, in.CloudArmorTier, op.Name, opOutcome(op))
	s.saveState()
	core.WriteJSON(w, http.StatusOK, renderOp(op, s.now(), true))
}

// Tiers returns the Cloud Armor tier of every project whose tier was set
// or read.
func (s *Server) Tiers() map[string]string {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	out := make(map[string]string, len(s.store.projects))
	for name := range s.store.projects {
		out[name] = s.store.tierLocked(name)
	}
	return out
}

// allProjects returns copies of the known projects (persistence).
func (st *store) allProjects() map[string]*projectInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make(map[string]*projectInfo, len(st.projects))
	for k, p := range st.projects {
		c := *p
		out[k] = &c
	}
	return out
}

// loadProjects adds persisted projects after load.
func (st *store) loadProjects(projects map[string]*projectInfo) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, p := range projects {
		if p != nil {
			st.projects[k] = p
		}
	}
}
