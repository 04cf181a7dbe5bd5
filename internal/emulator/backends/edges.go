package backends

import (
	"net/http"
	"strconv"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Network edge security services (networkEdgeSecurityServices): regional
// objects that apply a CLOUD_ARMOR_NETWORK policy of their region to the
// region's network load balancers, protocol forwarding and VMs.

// An EdgeService is a network edge security service.
type EdgeService struct {
	Scope          core.Scope `json:"scope"`
	Name           string     `json:"name"`
	ID             uint64     `json:"id"`
	Created        time.Time  `json:"created"`
	Fingerprint    string     `json:"fingerprint"`
	Description    string     `json:"description,omitempty"`
	SecurityPolicy string     `json:"securityPolicy,omitempty"` // the policy's selfLink
}

func (e *EdgeService) path() string { return e.Scope.ObjectPath("networkEdgeSecurityServices", e.Name) }

func renderEdge(e *EdgeService) map[string]any {
	id := strconv.FormatUint(e.ID, 10)
	m := map[string]any{
		"kind":              "compute#networkEdgeSecurityService",
		"id":                id,
		"name":              e.Name,
		"creationTimestamp": core.Timestamp(e.Created),
		"selfLink":          core.ComputeRoot + e.path(),
		"selfLinkWithId":    core.ComputeRoot + e.Scope.ObjectPath("networkEdgeSecurityServices", id),
		"region":            e.Scope.RegionURL(),
		"fingerprint":       e.Fingerprint,
	}
	if e.Description != "" {
		m["description"] = e.Description
	}
	if e.SecurityPolicy != "" {
		m["securityPolicy"] = e.SecurityPolicy
	}
	return m
}

func (a *API) insertEdge(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.NetworkEdgeSecurityService
	_, err := a.decode(w, r, &in, "network_edge_security_service")
	if err == nil {
		err = core.CheckNew(c.Scope(), in.Name, in.Region)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	e := &EdgeService{Scope: c.Scope(), Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(), Description: in.Description}
	c.Mutate("insert", e.path(), func() (core.Plan, error) {
		if _, ok := a.st.Edges[e.path()]; ok {
			return core.Plan{}, core.ErrAlreadyExists(e.path())
		}
		if in.SecurityPolicy != "" {
			var err error
			if e.SecurityPolicy, err = a.host.ResolveNetworkPolicyLocked(c.Scope(), in.SecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		return core.Plan{Link: core.ComputeRoot + e.path(), ID: e.ID, Commit: func() {
			e.Fingerprint = a.host.Gen().Fingerprint()
			a.st.Edges[e.path()] = e
		}}, nil
	})
}

// patchEdge changes description and securityPolicy. With an updateMask (or
// the older paths parameter) only the named fields change, cleared when the
// body leaves them empty; without one, the fields the body sends change.
func (a *API) patchEdge(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.NetworkEdgeSecurityService
	raw, err := a.decode(w, r, &in, "network_edge_security_service")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	q := r.URL.Query()
	var mask [][]string
	for _, v := range append([]string{q.Get("updateMask")}, q["paths"]...) {
		mask = append(mask, core.SplitMask(v)...)
	}
	change := map[string]bool{}
	for _, p := range mask {
		switch p[0] {
		case "description", "securityPolicy":
			change[p[0]] = true
		case "name", "id", "kind", "selfLink", "selfLinkWithId", "region", "creationTimestamp", "fingerprint":
		default:
			core.WriteError(w, core.ErrInvalidField("updateMask", p[0], "Only description and securityPolicy can be updated."))
			return
		}
	}
	if len(mask) == 0 {
		for _, k := range []string{"description", "securityPolicy"} {
			if _, ok := raw[k]; ok {
				change[k] = true
			}
		}
	}
	path := c.Scope().ObjectPath("networkEdgeSecurityServices", r.PathValue("edgeService"))
	c.Mutate("patch", path, func() (core.Plan, error) {
		cur, ok := a.st.Edges[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		if in.Fingerprint != "" && in.Fingerprint != cur.Fingerprint {
			return core.Plan{}, core.ErrFingerprint()
		}
		if in.Name != "" && in.Name != cur.Name {
			return core.Plan{}, core.ErrInvalidField("resource.name", in.Name, "The name of a network edge security service cannot be changed.")
		}
		if err := core.CheckRegion(cur.Scope, in.Region); err != nil {
			return core.Plan{}, err
		}
		next := *cur
		if change["description"] {
			next.Description = in.Description
		}
		if change["securityPolicy"] {
			next.SecurityPolicy = ""
			if in.SecurityPolicy != "" {
				link, err := a.host.ResolveNetworkPolicyLocked(c.Scope(), in.SecurityPolicy)
				if err != nil {
					return core.Plan{}, err
				}
				next.SecurityPolicy = link
			}
		}
		return core.Plan{Link: core.ComputeRoot + path, ID: cur.ID, Commit: func() {
			next.Fingerprint = a.host.Gen().Fingerprint()
			a.st.Edges[path] = &next
		}}, nil
	})
}

// aggregatedEdges lists a project's network edge security services by
// region; there is no global scope.
func (a *API) aggregatedEdges(w http.ResponseWriter, r *http.Request, c core.Call) {
	byScope := map[string][]map[string]any{}
	a.host.Lock()
	for _, k := range sorted(a.st.Edges) {
		if e := a.st.Edges[k]; e.Scope.Project == c.Scope().Project {
			key := e.Scope.AggregatedKey()
			byScope[key] = append(byScope[key], renderEdge(e))
		}
	}
	a.host.Unlock()
	core.WriteAggregated(w, r, c.Scope().Project, "compute#networkEdgeSecurityServiceAggregatedList", "networkEdgeSecurityServices",
		"networkEdgeSecurityServices", false, byScope)
}
