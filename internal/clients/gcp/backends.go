package gcp

import (
	"context"
	"time"

	"google.golang.org/api/compute/v1"
)

// A TargetKey names a backend service (global, or regional with Region) or
// a backend bucket (Bucket; always global).
type TargetKey struct {
	Project string
	Region  string
	Name    string
	Bucket  bool
}

// String is the target's relative resource name, the form GCP uses in its
// own messages.
func (k TargetKey) String() string {
	switch {
	case k.Bucket:
		return "projects/" + k.Project + "/global/backendBuckets/" + k.Name
	case k.Region != "":
		return "projects/" + k.Project + "/regions/" + k.Region + "/backendServices/" + k.Name
	}
	return "projects/" + k.Project + "/global/backendServices/" + k.Name
}

// A Target is what an attachment reads of a backend service or bucket.
type Target struct {
	// Name and Description as GCP reports them.
	Name        string
	Description string
	// SecurityPolicy and EdgeSecurityPolicy are the URLs of the policies
	// the target names ("" for none). A bucket has no SecurityPolicy.
	SecurityPolicy     string
	EdgeSecurityPolicy string
}

// Field returns the value of the target's field ("securityPolicy" or
// "edgeSecurityPolicy").
func (t *Target) Field(field string) string {
	if field == "edgeSecurityPolicy" {
		return t.EdgeSecurityPolicy
	}
	return t.SecurityPolicy
}

// A BackendClient reads backend services and buckets and sets the security
// policy fields of them (compute v1 backendServices, regionBackendServices
// and backendBuckets setSecurityPolicy / setEdgeSecurityPolicy), which
// change that one field and nothing else of the target. Errors are returned
// as GCP sent them (*googleapi.Error) or as an *OperationError or
// *OperationPendingError, as PolicyClient's are.
type BackendClient interface {
	// Get reads the target from GCP.
	Get(ctx context.Context, k TargetKey) (*Target, error)
	// SetPolicy sets the target's field ("securityPolicy" or
	// "edgeSecurityPolicy") to policy (a URL or relative name; "" detaches)
	// and waits for the operation. What the Client keeps of the project's
	// backend services (ProjectClient.Users) is dropped.
	SetPolicy(ctx context.Context, k TargetKey, field, policy string) error
}

// Backends returns the Client's BackendClient.
func (c *Client) Backends() BackendClient {
	return &backendClient{Client: c}
}

type backendClient struct {
	*Client
}

var _ BackendClient = &backendClient{}

func (c *backendClient) Get(ctx context.Context, k TargetKey) (*Target, error) {
	if k.Bucket {
		b, err := c.svc.BackendBuckets.Get(k.Project, k.Name).Context(ctx).Do()
		c.calls.record(MethodBackendGet, err)
		if err != nil {
			return nil, err
		}
		return &Target{Name: b.Name, Description: b.Description, EdgeSecurityPolicy: b.EdgeSecurityPolicy}, nil
	}
	var b *compute.BackendService
	var err error
	if k.Region != "" {
		b, err = c.svc.RegionBackendServices.Get(k.Project, k.Region, k.Name).Context(ctx).Do()
	} else {
		b, err = c.svc.BackendServices.Get(k.Project, k.Name).Context(ctx).Do()
	}
	c.calls.record(MethodBackendGet, err)
	if err != nil {
		return nil, err
	}
	return &Target{Name: b.Name, Description: b.Description, SecurityPolicy: b.SecurityPolicy, EdgeSecurityPolicy: b.EdgeSecurityPolicy}, nil
}

func (c *backendClient) SetPolicy(ctx context.Context, k TargetKey, field, policy string) error {
	ref := &compute.SecurityPolicyReference{SecurityPolicy: policy}
	start := time.Now()
	// What the Client keeps of the project's backend services (which
	// policy each uses) is stale once this write is sent, whatever its
	// outcome.
	defer c.reads.invalidate("backends/" + k.Project)
	defer c.reads.invalidate("buckets/" + k.Project)
	var op *compute.Operation
	var err error
	switch {
	case k.Bucket:
		op, err = c.svc.BackendBuckets.SetEdgeSecurityPolicy(k.Project, k.Name, ref).Context(ctx).Do()
	case k.Region != "":
		op, err = c.svc.RegionBackendServices.SetSecurityPolicy(k.Project, k.Region, k.Name, ref).Context(ctx).Do()
	case field == "edgeSecurityPolicy":
		op, err = c.svc.BackendServices.SetEdgeSecurityPolicy(k.Project, k.Name, ref).Context(ctx).Do()
	default:
		op, err = c.svc.BackendServices.SetSecurityPolicy(k.Project, k.Name, ref).Context(ctx).Do()
	}
	c.calls.record(MethodBackendSetPolicy, err)
	if err != nil {
		return err
	}
	err = c.wait(ctx, k.Project, k.Region, op)
	c.calls.operation(MethodBackendSetPolicy, start, err)
	return err
}
