package emulator

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

type edgeService struct {
	Scope          scope     `json:"scope"`
	Name           string    `json:"name"`
	ID             uint64    `json:"id"`
	Created        time.Time `json:"created"`
	Fingerprint    string    `json:"fingerprint"`
	Description    string    `json:"description,omitempty"`
	SecurityPolicy string    `json:"securityPolicy,omitempty"` // the policy's selfLink
}

func (e *edgeService) path() string { return e.Scope.ObjectPath("networkEdgeSecurityServices", e.Name) }

func renderEdge(e *edgeService) map[string]any {
	id := strconv.FormatUint(e.ID, 10)
	m := map[string]any{
		"kind":              "compute#networkEdgeSecurityService",
		"id":                id,
		"name":              e.Name,
		"creationTimestamp": core.Timestamp(e.Created),
		"selfLink":          apiRoot + e.path(),
		"selfLinkWithId":    apiRoot + e.Scope.ObjectPath("networkEdgeSecurityServices", id),
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

// resolveNetworkPolicyLocked checks the securityPolicy of a network edge
// security service in sc: a CLOUD_ARMOR_NETWORK policy of the same project
// and region, in a project on Cloud Armor Enterprise. Every refusal is a
// 400. It returns the policy's selfLink. st.mu must be held.
func (st *store) resolveNetworkPolicyLocked(sc scope, ref string) (string, error) {
	const f = "resource.securityPolicy"
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope != sc {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a regional security policy of project '"+
			sc.Project+"' in region '"+sc.Region+"', like the network edge security service.")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The resource '"+r.scope.PolicyPath(r.name)+"' was not found.")
	}
	if policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type CLOUD_ARMOR_NETWORK; '"+
			p.Name+"' is of type "+policyType(p)+".")
	}
	if tier := st.tierLocked(sc.Project); !enterprise(tier) {
		return "", core.ErrInvalidField(f, ref, "Network edge security policies need Cloud Armor Enterprise; project '"+
			sc.Project+"' is on "+tier+".")
	}
	return apiRoot + p.path(), nil
}

func (s *Server) insertEdge(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.NetworkEdgeSecurityService
	_, err := s.decode(w, r, &in, "network_edge_security_service")
	if err == nil {
		err = core.CheckNew(c.scope, in.Name, in.Region)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	e := &edgeService{Scope: c.scope, Name: in.Name, ID: s.store.gen.ID(), Created: s.now(), Description: in.Description}
	m := s.objectMutation(r, c, "insert", e.path()) // validateOnly=true: c.dryRun
	op, err := s.store.mutateObject(m, func() (plan, error) {
		if _, ok := s.store.more.edges[e.path()]; ok {
			return plan{}, core.ErrAlreadyExists(e.path())
		}
		if in.SecurityPolicy != "" {
			var err error
			if e.SecurityPolicy, err = s.store.resolveNetworkPolicyLocked(c.scope, in.SecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		return plan{link: apiRoot + e.path(), id: e.ID, commit: func() {
			e.Fingerprint = s.store.gen.Fingerprint()
			s.store.more.edges[e.path()] = e
		}}, nil
	})
	s.finishObject(w, c, m, e.path(), op, err)
}

// patchEdge changes description and securityPolicy. With an updateMask (or
// the older paths parameter) only the named fields change, cleared when the
// body leaves them empty; without one, the fields the body sends change.
func (s *Server) patchEdge(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.NetworkEdgeSecurityService
	raw, err := s.decode(w, r, &in, "network_edge_security_service")
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
	path := c.scope.ObjectPath("networkEdgeSecurityServices", r.PathValue("edgeService"))
	m := s.objectMutation(r, c, "patch", path)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		cur, ok := s.store.more.edges[path]
		if !ok {
			return plan{}, core.ErrNotFound(path)
		}
		if in.Fingerprint != "" && in.Fingerprint != cur.Fingerprint {
			return plan{}, core.ErrFingerprint()
		}
		if in.Name != "" && in.Name != cur.Name {
			return plan{}, core.ErrInvalidField("resource.name", in.Name, "The name of a network edge security service cannot be changed.")
		}
		if err := core.CheckRegion(cur.Scope, in.Region); err != nil {
			return plan{}, err
		}
		next := *cur
		if change["description"] {
			next.Description = in.Description
		}
		if change["securityPolicy"] {
			next.SecurityPolicy = ""
			if in.SecurityPolicy != "" {
				link, err := s.store.resolveNetworkPolicyLocked(c.scope, in.SecurityPolicy)
				if err != nil {
					return plan{}, err
				}
				next.SecurityPolicy = link
			}
		}
		return plan{link: apiRoot + path, id: cur.ID, commit: func() {
			next.Fingerprint = s.store.gen.Fingerprint()
			s.store.more.edges[path] = &next
		}}, nil
	})
	s.finishObject(w, c, m, path, op, err)
}

// aggregatedEdges lists a project's network edge security services by
// region; there is no global scope.
func (s *Server) aggregatedEdges(w http.ResponseWriter, r *http.Request, c *call) {
	byScope := map[string][]map[string]any{}
	s.store.mu.Lock()
	for _, k := range sortedKeys(s.store.more.edges) {
		if e := s.store.more.edges[k]; e.Scope.Project == c.scope.Project {
			key := e.Scope.AggregatedKey()
			byScope[key] = append(byScope[key], renderEdge(e))
		}
	}
	s.store.mu.Unlock()
	aggregated(w, r, c, "compute#networkEdgeSecurityServiceAggregatedList", "networkEdgeSecurityServices",
		"networkEdgeSecurityServices", false, byScope)
}

// NetworkEdgeSecurityServices returns every network edge security service
// as GET would return it, keyed by its path
// ("projects/p/regions/r/networkEdgeSecurityServices/n").
func (s *Server) NetworkEdgeSecurityServices() map[string]map[string]any {
	return renderAll(s, s.edgeMap, renderEdge)
}
