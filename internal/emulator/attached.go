package emulator

import (
	"encoding/json"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
)

// An Attached is what guards a backend service at one moment: what the
// data plane (package dataplane) evaluates a request to it against.
type Attached struct {
	// Policy is the security policy its securityPolicy names, as GET
	// returns it; nil when none is attached.
	Policy *compute.SecurityPolicy
	// Groups are every address group the emulator holds, for the
	// evaluateAddressGroup calls of the policy's rules.
	Groups []*networksecurity.AddressGroup
}

// AttachedPolicy returns what guards the backend service at path
// ("projects/p/global/backendServices/n" or
// "projects/p/regions/r/backendServices/n"), and false when there is no
// such backend service. The service, its policy and the address groups are
// read in one hold of the store's lock, so a request never meets half of a
// write.
func (s *Server) AttachedPolicy(path string) (Attached, bool, error) {
	s.store.mu.Lock()
	b, ok := s.store.backends.Services[path]
	if !ok {
		s.store.mu.Unlock()
		return Attached{}, false, nil
	}
	var rendered map[string]any
	if b.SecurityPolicy != "" {
		rendered, _ = s.policies.RenderedLocked(strings.TrimPrefix(b.SecurityPolicy, core.ComputeRoot))
	}
	out := Attached{Groups: s.groups.AllLocked()}
	s.store.mu.Unlock()
	if rendered == nil {
		return out, true, nil
	}
	// Through JSON, as the official client decodes the same body.
	raw, err := json.Marshal(rendered)
	if err != nil {
		return Attached{}, true, err
	}
	out.Policy = &compute.SecurityPolicy{}
	return out, true, json.Unmarshal(raw, out.Policy)
}
