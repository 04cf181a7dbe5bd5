package securitypolicies

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

// CheckTier checks that tier is a Cloud Armor tier.
func CheckTier(tier string) error {
	if !tiers[tier] {
		return fmt.Errorf("unknown Cloud Armor tier %q (want one of %s)", tier, core.Keys(tiers))
	}
	return nil
}

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

// SetTier sets a project's Cloud Armor tier (TierStandard,
// TierEnterprisePaygo or TierEnterpriseAnnual) at once, without an
// operation, as if setCloudArmorTier had finished. Tests use it to allow
// rules that use address groups.
func (a *API) SetTier(project, tier string) error {
	if err := CheckTier(tier); err != nil {
		return err
	}
	a.st.mu.Lock()
	a.st.projectLocked(project).Tier = tier
	a.st.mu.Unlock()
	return nil
}

// getProject answers compute's projects.get with the part of a Project the
// emulator knows.
func (a *API) getProject(w http.ResponseWriter, _ *http.Request, c Call) {
	p := a.st.projectView(c.Scope().Project)
	core.WriteJSON(w, http.StatusOK, map[string]any{
		"kind":              "compute#project",
		"id":                strconv.FormatUint(p.ID, 10),
		"name":              c.Scope().Project,
		"creationTimestamp": core.Timestamp(p.Created),
		"selfLink":          apiRoot + "projects/" + c.Scope().Project,
		"cloudArmorTier":    p.Tier,
	})
}

func (a *API) setCloudArmorTier(w http.ResponseWriter, r *http.Request, c Call) {
	var in compute.ProjectsSetCloudArmorTierRequest
	if _, err := a.decode(w, r, &in, "projects_set_cloud_armor_tier_request"); err != nil {
		core.WriteError(w, err)
		return
	}
	if !tiers[in.CloudArmorTier] {
		core.WriteError(w, core.ErrInvalidField("resource.cloudArmorTier", in.CloudArmorTier, "Must be one of "+core.Keys(tiers)+"."))
		return
	}
	// A global compute operation like any other write, holding nothing
	// busy; one failed by fault injection changes nothing.
	project := c.Scope().Project
	what := "projects/" + project + " tier=" + in.CloudArmorTier
	c.Mutate(Write{OpType: "setCloudArmorTier", What: what}, func() (Plan, error) {
		p := a.st.projectLocked(project)
		return Plan{Link: apiRoot + "projects/" + project, ID: p.ID, Commit: func() { p.Tier = in.CloudArmorTier }}, nil
	})
}

// Tiers returns the Cloud Armor tier of every project whose tier was set
// or read.
func (a *API) Tiers() map[string]string {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	out := make(map[string]string, len(a.st.projects))
	for name := range a.st.projects {
		out[name] = a.st.tierLocked(name)
	}
	return out
}
