package emulator

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
var backendOutputKeys = set("kind", "id", "creationTimestamp", "selfLink", "selfLinkWithId", "fingerprint",
	"name", "region", "securityPolicy", "edgeSecurityPolicy")

type backendService struct {
	Scope              scope          `json:"scope"`
	Name               string         `json:"name"`
	ID                 uint64         `json:"id"`
	Created            time.Time      `json:"created"`
	Fingerprint        string         `json:"fingerprint"`
	Fields             map[string]any `json:"fields,omitempty"`
	SecurityPolicy     string         `json:"securityPolicy,omitempty"`     // the policy's selfLink
	EdgeSecurityPolicy string         `json:"edgeSecurityPolicy,omitempty"` // the policy's selfLink
}

func (b *backendService) path() string { return b.Scope.ObjectPath("backendServices", b.Name) }

func (b *backendService) clone() *backendService {
	c := *b
	c.Fields = core.CloneMap(b.Fields)
	return &c
}

func renderBackend(b *backendService) map[string]any {
	m := core.CloneMap(b.Fields)
	if m == nil {
		m = map[string]any{}
	}
	id := strconv.FormatUint(b.ID, 10)
	m["kind"] = "compute#backendService"
	m["id"] = id
	m["name"] = b.Name
	m["creationTimestamp"] = core.Timestamp(b.Created)
	m["selfLink"] = apiRoot + b.path()
	m["selfLinkWithId"] = apiRoot + b.Scope.ObjectPath("backendServices", id)
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

// resolvePolicyLocked checks that ref names a security policy a backend
// service in sc may use in the given field: securityPolicy takes a
// CLOUD_ARMOR policy of the backend's scope (global for a global backend,
// the same region for a regional one), edgeSecurityPolicy a global
// CLOUD_ARMOR_EDGE policy. It returns the policy's selfLink. st.mu must be
// held.
func (st *store) resolvePolicyLocked(sc scope, field, ref string) (string, error) {
	return st.resolvePolicyForLocked("backend service", sc, field, ref)
}

// resolvePolicyForLocked is resolvePolicyLocked for a user of the given kind
// ("backend service", "backend bucket"), which GCP's message names. st.mu
// must be held.
func (st *store) resolvePolicyForLocked(kind string, sc scope, field, ref string) (string, error) {
	want := "CLOUD_ARMOR"
	if field == "edgeSecurityPolicy" {
		want = "CLOUD_ARMOR_EDGE"
	}
	f := "resource." + field
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope.Region != sc.Region {
		where := "global"
		if sc.Region != "" {
			where = "in region '" + sc.Region + "'"
		}
		return "", core.ErrInvalidField(f, ref, "The security policy must be "+where+", like the "+kind+".")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrNotFound(r.scope.PolicyPath(r.name))
	}
	if policyType(p) != want {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type "+want+"; '"+p.Name+"' is of type "+policyType(p)+".")
	}
	return apiRoot + p.path(), nil
}

func (s *Server) insertBackend(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.BackendService
	raw, err := s.decode(w, r, &in, "backend_service")
	if err == nil {
		err = core.CheckNew(c.scope, in.Name, in.Region)
	}
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if err := core.CheckEnum("resource.loadBalancingScheme", in.LoadBalancingScheme, set(
		"EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED", "INTERNAL_SELF_MANAGED")); err != nil {
		core.WriteError(w, err)
		return
	}
	if in.EdgeSecurityPolicy != "" && c.scope.Region != "" {
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
	b := &backendService{Scope: c.scope, Name: in.Name, ID: s.store.gen.ID(), Created: s.now(), Fields: fields}
	m := s.objectMutation(r, c, "insert", b.path())
	op, err := s.store.mutateObject(m, func() (plan, error) {
		if _, ok := s.store.more.backends[b.path()]; ok {
			return plan{}, core.ErrAlreadyExists(b.path())
		}
		var err error
		if in.SecurityPolicy != "" {
			if b.SecurityPolicy, err = s.store.resolvePolicyLocked(c.scope, "securityPolicy", in.SecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		if in.EdgeSecurityPolicy != "" {
			if b.EdgeSecurityPolicy, err = s.store.resolvePolicyLocked(c.scope, "edgeSecurityPolicy", in.EdgeSecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		return plan{link: apiRoot + b.path(), id: b.ID, commit: func() {
			b.Fingerprint = s.store.gen.Fingerprint()
			s.store.more.backends[b.path()] = b
		}}, nil
	})
	s.finishObject(w, c, m, b.path(), op, err)
}

// backends returns copies of the backend services of a project, by path:
// every scope with all, else only sc.
func (s *Server) backends(sc scope, all bool) []*backendService {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	var out []*backendService
	for _, k := range sortedKeys(s.store.more.backends) {
		b := s.store.more.backends[k]
		if b.Scope.Project == sc.Project && (all || b.Scope == sc) {
			out = append(out, b.clone())
		}
	}
	return out
}

func (s *Server) listBackends(w http.ResponseWriter, r *http.Request, c *call) {
	var items []map[string]any
	for _, b := range s.backends(c.scope, false) {
		items = append(items, renderBackend(b))
	}
	core.WriteList(w, r, items, "compute#backendServiceList", c.scope.Base()+"/backendServices", true)
}

// aggregatedBackends lists the global and regional backend services of a
// project in one answer, with their securityPolicy and edgeSecurityPolicy.
func (s *Server) aggregatedBackends(w http.ResponseWriter, r *http.Request, c *call) {
	byScope := map[string][]map[string]any{}
	for _, b := range s.backends(c.scope, true) {
		k := b.Scope.AggregatedKey()
		byScope[k] = append(byScope[k], renderBackend(b))
	}
	aggregated(w, r, c, "compute#backendServiceAggregatedList", "backendServices", "backendServices", true, byScope)
}

// setBackendPolicy serves setSecurityPolicy and setEdgeSecurityPolicy: the
// policy must exist and be of the right type and scope; an empty
// securityPolicy detaches the policy.
func (s *Server) setBackendPolicy(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.SecurityPolicyReference
	if _, err := s.decode(w, r, &in, "security_policy_reference"); err != nil {
		core.WriteError(w, err)
		return
	}
	field, opType := "securityPolicy", "setSecurityPolicy"
	if c.method == "backendServices.setEdgeSecurityPolicy" {
		field, opType = "edgeSecurityPolicy", "setEdgeSecurityPolicy"
	}
	path := c.scope.ObjectPath("backendServices", r.PathValue("backendService"))
	m := s.objectMutation(r, c, opType, path)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		b, ok := s.store.more.backends[path]
		if !ok {
			return plan{}, core.ErrNotFound(path)
		}
		link := ""
		if in.SecurityPolicy != "" {
			var err error
			if link, err = s.store.resolvePolicyLocked(c.scope, field, in.SecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		next := b.clone()
		if field == "edgeSecurityPolicy" {
			next.EdgeSecurityPolicy = link
		} else {
			next.SecurityPolicy = link
		}
		return plan{link: apiRoot + path, id: b.ID, commit: func() {
			next.Fingerprint = s.store.gen.Fingerprint()
			s.store.more.backends[path] = next
		}}, nil
	})
	s.finishObject(w, c, m, path, op, err)
}

// BackendServices returns every backend service as GET would return it,
// keyed by its path ("projects/p/global/backendServices/n").
func (s *Server) BackendServices() map[string]map[string]any {
	return renderAll(s, s.backendMap, renderBackend)
}
