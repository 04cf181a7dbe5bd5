package emulator

import (
	"encoding/json"
	"net/http"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Stats returns the request counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Reset forgets every policy (project and organization), address group,
// backend service, network edge security service, project tier, router,
// static address, operation and counter and restores the faults given in Options. A state
// file, if any, is rewritten empty.
func (s *Server) Reset() {
	s.store.mu.Lock()
	s.store.reset()
	s.policies.ResetLocked()
	s.routers.ResetLocked()
	s.addresses.ResetLocked()
	s.store.mu.Unlock()
	s.instances.Reset()
	s.stats.reset()
	_ = s.SetFaults(s.opts.Faults)
	s.saveState()
}

// debugState is the body of GET /_emulator/stats.
type debugState struct {
	Stats
	State         map[string]map[string]any `json:"state"`
	AddressGroups map[string]map[string]any `json:"addressGroups,omitempty"`
	Tiers         map[string]string         `json:"tiers,omitempty"`
	// OrganizationSecurityPolicies, BackendServices and
	// NetworkEdgeSecurityServices are keyed by path, as GET returns them.
	OrganizationSecurityPolicies map[string]map[string]any `json:"organizationSecurityPolicies,omitempty"`
	BackendServices              map[string]map[string]any `json:"backendServices,omitempty"`
	BackendBuckets               map[string]map[string]any `json:"backendBuckets,omitempty"`
	NetworkEdgeSecurityServices  map[string]map[string]any `json:"networkEdgeSecurityServices,omitempty"`
}

func (s *Server) debugStats(w http.ResponseWriter, _ *http.Request) {
	core.WriteJSON(w, http.StatusOK, debugState{Stats: s.Stats(), State: s.Snapshot(),
		AddressGroups: s.AddressGroups(), Tiers: s.Tiers(),
		OrganizationSecurityPolicies: s.OrganizationSecurityPolicies(), BackendServices: s.BackendServices(),
		BackendBuckets:              s.BackendBuckets(),
		NetworkEdgeSecurityServices: s.NetworkEdgeSecurityServices()})
}

func (s *Server) debugReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	core.WriteJSON(w, http.StatusOK, map[string]string{"status": "reset"})
}

func (s *Server) debugGetFaults(w http.ResponseWriter, _ *http.Request) {
	core.WriteJSON(w, http.StatusOK, s.Faults())
}

// debugSetFaults replaces the fault configuration with the JSON body.
func (s *Server) debugSetFaults(w http.ResponseWriter, r *http.Request) {
	b, err := core.ReadBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	var f Faults
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		core.WriteError(w, core.ErrPayload("Invalid fault configuration: "+err.Error()))
		return
	}
	if err := s.SetFaults(f); err != nil {
		core.WriteError(w, core.ErrPayload("Invalid fault configuration: "+err.Error()))
		return
	}
	core.WriteJSON(w, http.StatusOK, f)
}
