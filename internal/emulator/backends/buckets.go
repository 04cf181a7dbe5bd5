package backends

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
var bucketOutputKeys = core.Set("kind", "id", "creationTimestamp", "selfLink", "name", "edgeSecurityPolicy")

// A Bucket is a backend bucket.
type Bucket struct {
	Project            string         `json:"project"`
	Name               string         `json:"name"`
	ID                 uint64         `json:"id"`
	Created            time.Time      `json:"created"`
	Fields             map[string]any `json:"fields,omitempty"`
	EdgeSecurityPolicy string         `json:"edgeSecurityPolicy,omitempty"` // the policy's selfLink
}

func (b *Bucket) scope() core.Scope { return core.Scope{Project: b.Project} }

func (b *Bucket) path() string { return b.scope().ObjectPath("backendBuckets", b.Name) }

func (b *Bucket) clone() *Bucket {
	c := *b
	c.Fields = core.CloneMap(b.Fields)
	return &c
}

func renderBucket(b *Bucket) map[string]any {
	m := core.CloneMap(b.Fields)
	if m == nil {
		m = map[string]any{}
	}
	m["kind"] = "compute#backendBucket"
	m["id"] = strconv.FormatUint(b.ID, 10)
	m["name"] = b.Name
	m["creationTimestamp"] = core.Timestamp(b.Created)
	m["selfLink"] = core.ComputeRoot + b.path()
	if b.EdgeSecurityPolicy != "" {
		m["edgeSecurityPolicy"] = b.EdgeSecurityPolicy
	}
	return m
}

func (a *API) insertBucket(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.BackendBucket
	raw, err := a.decode(w, r, &in, "backend_bucket")
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
	b := &Bucket{Project: c.Scope().Project, Name: in.Name, ID: a.host.Gen().ID(), Created: a.host.Now(), Fields: fields}
	c.Mutate("insert", b.path(), func() (core.Plan, error) {
		if _, ok := a.st.Buckets[b.path()]; ok {
			return core.Plan{}, core.ErrAlreadyExists(b.path())
		}
		if in.EdgeSecurityPolicy != "" {
			var err error
			if b.EdgeSecurityPolicy, err = a.host.ResolvePolicyLocked("backend bucket", b.scope(), "edgeSecurityPolicy", in.EdgeSecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		return core.Plan{Link: core.ComputeRoot + b.path(), ID: b.ID, Commit: func() { a.st.Buckets[b.path()] = b }}, nil
	})
}

func (a *API) listBuckets(w http.ResponseWriter, r *http.Request, c core.Call) {
	var items []map[string]any
	a.host.Lock()
	for _, k := range sorted(a.st.Buckets) {
		if b := a.st.Buckets[k]; b.Project == c.Scope().Project {
			items = append(items, renderBucket(b))
		}
	}
	a.host.Unlock()
	core.WriteList(w, r, items, "compute#backendBucketList", c.Scope().Base()+"/backendBuckets", true)
}

// setBucketEdgePolicy serves backendBuckets.setEdgeSecurityPolicy: the
// policy must be a global CLOUD_ARMOR_EDGE policy; an empty securityPolicy
// detaches it.
func (a *API) setBucketEdgePolicy(w http.ResponseWriter, r *http.Request, c core.Call) {
	var in compute.SecurityPolicyReference
	if _, err := a.decode(w, r, &in, "security_policy_reference"); err != nil {
		core.WriteError(w, err)
		return
	}
	path := c.Scope().ObjectPath("backendBuckets", r.PathValue("backendBucket"))
	c.Mutate("setEdgeSecurityPolicy", path, func() (core.Plan, error) {
		b, ok := a.st.Buckets[path]
		if !ok {
			return core.Plan{}, core.ErrNotFound(path)
		}
		link := ""
		if in.SecurityPolicy != "" {
			var err error
			if link, err = a.host.ResolvePolicyLocked("backend bucket", b.scope(), "edgeSecurityPolicy", in.SecurityPolicy); err != nil {
				return core.Plan{}, err
			}
		}
		next := b.clone()
		next.EdgeSecurityPolicy = link
		return core.Plan{Link: core.ComputeRoot + path, ID: b.ID, Commit: func() { a.st.Buckets[path] = next }}, nil
	})
}
