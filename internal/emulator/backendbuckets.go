package emulator

import (
	"net/http"
	"strconv"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Backend buckets (compute v1 backendBuckets, global only): enough of them
// to attach edge security policies. Their edgeSecurityPolicy is set by
// setEdgeSecurityPolicy, which takes a global CLOUD_ARMOR_EDGE policy (a
// backend bucket has no securityPolicy field); the rest of a body is kept as
// sent.

// bucketOutputKeys are the fields the server owns or keeps in their own
// member.
var bucketOutputKeys = set("kind", "id", "creationTimestamp", "selfLink", "name", "edgeSecurityPolicy")

type backendBucket struct {
	Project            string         `json:"project"`
	Name               string         `json:"name"`
	ID                 uint64         `json:"id"`
	Created            time.Time      `json:"created"`
	Fields             map[string]any `json:"fields,omitempty"`
	EdgeSecurityPolicy string         `json:"edgeSecurityPolicy,omitempty"` // the policy's selfLink
}

func (b *backendBucket) scope() scope { return scope{Project: b.Project} }

func (b *backendBucket) path() string { return b.scope().ObjectPath("backendBuckets", b.Name) }

func (b *backendBucket) clone() *backendBucket {
	c := *b
	c.Fields = core.CloneMap(b.Fields)
	return &c
}

func renderBucket(b *backendBucket) map[string]any {
	m := core.CloneMap(b.Fields)
	if m == nil {
		m = map[string]any{}
	}
	m["kind"] = "compute#backendBucket"
	m["id"] = strconv.FormatUint(b.ID, 10)
	m["name"] = b.Name
	m["creationTimestamp"] = core.Timestamp(b.Created)
	m["selfLink"] = apiRoot + b.path()
	if b.EdgeSecurityPolicy != "" {
		m["edgeSecurityPolicy"] = b.EdgeSecurityPolicy
	}
	return m
}

func (s *Server) insertBucket(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.BackendBucket
	raw, err := s.decode(w, r, &in, "backend_bucket")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if err := core.ValidateName(in.Name); err != nil {
		core.WriteError(w, err)
		return
	}
	fields := map[string]any{}
	for k, v := range core.Normalize(core.CloneMap(raw)) {
		if !bucketOutputKeys[k] {
			fields[k] = v
		}
	}
	b := &backendBucket{Project: c.scope.Project, Name: in.Name, ID: s.store.gen.ID(), Created: s.now(), Fields: fields}
	m := s.objectMutation(r, c, "insert", b.path())
	op, err := s.store.mutateObject(m, func() (plan, error) {
		if _, ok := s.store.more.buckets[b.path()]; ok {
			return plan{}, core.ErrAlreadyExists(b.path())
		}
		if in.EdgeSecurityPolicy != "" {
			var err error
			if b.EdgeSecurityPolicy, err = s.store.resolvePolicyForLocked("backend bucket", b.scope(), "edgeSecurityPolicy", in.EdgeSecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		return plan{link: apiRoot + b.path(), id: b.ID, commit: func() { s.store.more.buckets[b.path()] = b }}, nil
	})
	s.finishObject(w, c, m, b.path(), op, err)
}

func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request, c *call) {
	var items []map[string]any
	s.store.mu.Lock()
	for _, k := range sortedKeys(s.store.more.buckets) {
		if b := s.store.more.buckets[k]; b.Project == c.scope.Project {
			items = append(items, renderBucket(b))
		}
	}
	s.store.mu.Unlock()
	core.WriteList(w, r, items, "compute#backendBucketList", c.scope.Base()+"/backendBuckets", true)
}

// setBucketEdgePolicy serves backendBuckets.setEdgeSecurityPolicy: the
// policy must be a global CLOUD_ARMOR_EDGE policy; an empty securityPolicy
// detaches it.
func (s *Server) setBucketEdgePolicy(w http.ResponseWriter, r *http.Request, c *call) {
	var in compute.SecurityPolicyReference
	if _, err := s.decode(w, r, &in, "security_policy_reference"); err != nil {
		core.WriteError(w, err)
		return
	}
	path := c.scope.ObjectPath("backendBuckets", r.PathValue("backendBucket"))
	m := s.objectMutation(r, c, "setEdgeSecurityPolicy", path)
	op, err := s.store.mutateObject(m, func() (plan, error) {
		b, ok := s.store.more.buckets[path]
		if !ok {
			return plan{}, core.ErrNotFound(path)
		}
		link := ""
		if in.SecurityPolicy != "" {
			var err error
			if link, err = s.store.resolvePolicyForLocked("backend bucket", b.scope(), "edgeSecurityPolicy", in.SecurityPolicy); err != nil {
				return plan{}, err
			}
		}
		next := b.clone()
		next.EdgeSecurityPolicy = link
		return plan{link: apiRoot + path, id: b.ID, commit: func() { s.store.more.buckets[path] = next }}, nil
	})
	s.finishObject(w, c, m, path, op, err)
}

// BackendBuckets returns every backend bucket as GET would return it, keyed
// by its path ("projects/p/global/backendBuckets/n").
func (s *Server) BackendBuckets() map[string]map[string]any {
	return renderAll(s, s.bucketMap, renderBucket)
}
