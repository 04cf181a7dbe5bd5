package backends

import (
	"net/http"
	"strconv"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Backend services, global (backendServices) and regional
// (regionBackendServices): enough of them to attach security policies.
// Their securityPolicy and edgeSecurityPolicy are set by setSecurityPolicy
// and setEdgeSecurityPolicy (regional backend services have no edge
// policy); the rest of a body is kept as sent.

// backendOutputKeys are the fields the server owns or keeps in their own
// member.
var backendOutputKeys = core.Set("kind", "id", "creationTimestamp", "selfLink", "selfLinkWithId", "fingerprint",
	"name", "region", "securityPolicy", "edgeSecurityPolicy")

// loadBalancingSchemes are BackendService.loadBalancingScheme's values.
var loadBalancingSchemes = core.Set("EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED", "INTERNAL_SELF_MANAGED")

// A Service is a backend service, global or regional.
type Service struct {
	Scope              core.Scope     `json:"scope"`
	Name               string         `json:"name"`
	ID                 uint64         `json:"id"`
	Created            time.Time      `json:"created"`
	Fingerprint        string         `json:"fingerprint"`
	Fields             map[string]any `json:"fields,omitempty"`
	SecurityPolicy     string         `json:"securityPolicy,omitempty"`     // the policy's selfLink
	EdgeSecurityPolicy string         `json:"edgeSecurityPolicy,omitempty"` // the policy's selfLink
}

func (b *Service) path() string { return b.Scope.ObjectPath("backendServices", b.Name) }

func (b *Service) clone() *Service {
	c := *b
	c.Fields = core.CloneMap(b.Fields)
	return &c
}

func renderBackend(b *Service) map[string]any {
	m := core.CloneMap(b.Fields)
	if m == nil {
		m = map[string]any{}
	}
	id := strconv.FormatUint(b.ID, 10)
	m["kind"] = "compute#backendService"
	m["id"] = id
	m["name"] = b.Name
	m["creationTimestamp"] = core.Timestamp(b.Created)
	m["selfLink"] = core.ComputeRoot + b.path()
	m["selfLinkWithId"] = core.ComputeRoot + b.Scope.ObjectPath("backendServices", id)
	m["fingerprint"] = b.Fingerprint
	if b.Scope.Region != "" {
		m["region"] = b.Scope.RegionURL()
	}
	if b.SecurityPolicy != "" {
		m["securityPolicy"] = b.SecurityPolicy
	}
	if b.EdgeSecurityPolicy != "" {
		m["edgeSecurityPolicy"] = b.EdgeSecurityPolicy
	}
	return m
}

func (a *API) insertBackend(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.BackendService
	raw, err := a.decode(w, r, &in, "backend_service")
	if err == nil {
		err = core.CheckNew(c.Scope(), in.Name, in.Region)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if err := core.CheckEnum("resource.loadBalancingScheme", in.LoadBalancingScheme, loadBalancingSchemes); err != nil {
		core.WriteError(w, err)
		return
	}
	if in.EdgeSecurityPolicy != "" && c.Scope().Region != "" {
		core.WriteError(w, core.ErrInvalidField("resource.edgeSecurityPolicy", in.EdgeSecurityPolicy,
			"Regional backend services have no edge security policy."))
		return
	}
	fields := map[string]any{}
	for k, v := range core.Normalize(core.CloneMap(raw)) {
		if !backendOutputKeys[k] {
			fields[k] = v
		}
	}
	b := &Service{Scope: c.Scope(), Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(), Fields: fields}
	c.Mutate("insert", b.path(), func() (core.Plan, error) {
		if _, ok := a.st.Services[b.path()]; ok {
			return core.Plan{}, core.ErrAlreadyExists(b.path())
		}
		var err error
		if in.SecurityPolicy != "" {
			if b.SecurityPolicy, err = a.host.ResolvePolicyLocked("backend service", c.Scope(), "securityPolicy", in.SecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		if in.EdgeSecurityPolicy != "" {
			if b.EdgeSecurityPolicy, err = a.host.ResolvePolicyLocked("backend service", c.Scope(), "edgeSecurityPolicy", in.EdgeSecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		return core.Plan{Link: core.ComputeRoot + b.path(), ID: b.ID, Commit: func() {
			b.Fingerprint = a.host.Gen().Fingerprint()
			a.st.Services[b.path()] = b
		}}, nil
	})
}

// servicesOf returns copies of the backend services of a project, by path:
// every scope with all, else only sc.
func (a *API) servicesOf(sc core.Scope, all bool) []*Service {
	a.host.Lock()
	defer a.host.Unlock()
	var out []*Service
	for _, k := range sorted(a.st.Services) {
		b := a.st.Services[k]
		if b.Scope.Project == sc.Project && (all || b.Scope == sc) {
			out = append(out, b.clone())
		}
	}
	return out
}

func (a *API) listBackends(w http.ResponseWriter, r *http.Request, c core.Call) {
	var items []map[string]any
	for _, b := range a.servicesOf(c.Scope(), false) {
		items = append(items, renderBackend(b))
	}
	core.WriteList(w, r, items, "compute#backendServiceList", c.Scope().Base()+"/backendServices", true)
}

// aggregatedBackends lists the global and regional backend services of a
// project in one answer, with their securityPolicy and edgeSecurityPolicy.
func (a *API) aggregatedBackends(w http.ResponseWriter, r *http.Request, c core.Call) {
	byScope := map[string][]map[string]any{}
	for _, b := range a.servicesOf(c.Scope(), true) {
		k := b.Scope.AggregatedKey()
		byScope[k] = append(byScope[k], renderBackend(b))
	}
	core.WriteAggregated(w, r, c.Scope().Project, "compute#backendServiceAggregatedList", "backendServices", "backendServices", true, byScope)
}

// setBackendPolicy serves setSecurityPolicy and setEdgeSecurityPolicy: the
// policy must exist and be of the right type and scope; an empty
// securityPolicy detaches the policy.
func (a *API) setBackendPolicy(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.SecurityPolicyReference
	if _, err := a.decode(w, r, &in, "security_policy_reference"); err != nil {
		core.WriteError(w, err)
		return
	}
	field, opType := "securityPolicy", "setSecurityPolicy"
	if c.Method() == "backendServices.setEdgeSecurityPolicy" {
		field, opType = "edgeSecurityPolicy", "setEdgeSecurityPolicy"
	}
	path := c.Scope().ObjectPath("backendServices", r.PathValue("backendService"))
	c.Mutate(opType, path, func() (core.Plan, error) {
		b, ok := a.st.Services[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		link := ""
		if in.SecurityPolicy != "" {
			var err error
			if link, err = a.host.ResolvePolicyLocked("backend service", c.Scope(), field, in.SecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		next := b.clone()
		if field == "edgeSecurityPolicy" {
			next.EdgeSecurityPolicy = link
		} else {
			next.SecurityPolicy = link
		}
		return core.Plan{Link: core.ComputeRoot + path, ID: b.ID, Commit: func() {
			next.Fingerprint = a.host.Gen().Fingerprint()
			a.st.Services[path] = next
		}}, nil
	})
}
