package gcp

import (
	"context"
	"time"

	"google.golang.org/api/compute/v1"
)

// An EdgeServiceKey names one network edge security service.
type EdgeServiceKey struct {
	Project string
	Region  string
	Name    string
}

// String is the service's relative resource name, the form GCP uses in its
// own messages.
func (k EdgeServiceKey) String() string {
	return "projects/" + k.Project + "/regions/" + k.Region + "/networkEdgeSecurityServices/" + k.Name
}

// An EdgeServiceClient manages network edge security services (compute v1
// networkEdgeSecurityServices), regional objects that apply a
// CLOUD_ARMOR_NETWORK policy to their region. Errors are returned as GCP
// sent them (*googleapi.Error) or as an *OperationError or
// *OperationPendingError, as PolicyClient's are.
//
// Writes are not queued and nothing is cached: each service has one managed
// resource, whose reconciles never overlap, and no other object reads it.
type EdgeServiceClient interface {
	// Get reads the service from GCP.
	Get(ctx context.Context, k EdgeServiceKey) (*compute.NetworkEdgeSecurityService, error)
	// Insert creates the service (s.Name is k.Name) and waits for the
	// regional operation.
	Insert(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error
	// ValidateInsert asks whether GCP would insert s (validateOnly=true):
	// GCP runs the insert's checks and creates nothing.
	ValidateInsert(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error
	// Patch changes the fields named in updateMask (comma-separated) to
	// their values in s, cleared when s leaves them empty. s.Fingerprint
	// must be the service's current one; a stale one fails with
	// PreconditionFailed.
	Patch(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService, updateMask string) error
	// Delete deletes the service.
	Delete(ctx context.Context, k EdgeServiceKey) error
}

// EdgeServices returns the Client's EdgeServiceClient.
func (c *Client) EdgeServices() EdgeServiceClient {
	return &edgeClient{Client: c}
}

type edgeClient struct {
	*Client
}

var _ EdgeServiceClient = &edgeClient{}

func (c *edgeClient) Get(ctx context.Context, k EdgeServiceKey) (*compute.NetworkEdgeSecurityService, error) {
	s, err := c.svc.NetworkEdgeSecurityServices.Get(k.Project, k.Region, k.Name).Context(ctx).Do()
	c.calls.record(MethodEdgeGet, err)
	return s, err
}

func (c *edgeClient) Insert(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error {
	return c.mutate(ctx, k, MethodEdgeInsert, func() (*compute.Operation, error) {
		return c.svc.NetworkEdgeSecurityServices.Insert(k.Project, k.Region, s).Context(ctx).Do()
	})
}

func (c *edgeClient) ValidateInsert(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error {
	op, err := c.svc.NetworkEdgeSecurityServices.Insert(k.Project, k.Region, s).ValidateOnly(true).Context(ctx).Do()
	c.calls.record(MethodEdgeValidateInsert, err)
	return answer(op, err)
}

func (c *edgeClient) Patch(ctx context.Context, k EdgeServiceKey, s *compute.NetworkEdgeSecurityService, updateMask string) error {
	return c.mutate(ctx, k, MethodEdgePatch, func() (*compute.Operation, error) {
		call := c.svc.NetworkEdgeSecurityServices.Patch(k.Project, k.Region, k.Name, s).Context(ctx)
		if updateMask != "" {
			call = call.UpdateMask(updateMask)
		}
		return call.Do()
	})
}

func (c *edgeClient) Delete(ctx context.Context, k EdgeServiceKey) error {
	return c.mutate(ctx, k, MethodEdgeDelete, func() (*compute.Operation, error) {
		return c.svc.NetworkEdgeSecurityServices.Delete(k.Project, k.Region, k.Name).Context(ctx).Do()
	})
}

// mutate makes a write and waits for its regional operation.
func (c *edgeClient) mutate(ctx context.Context, k EdgeServiceKey, m Method, call func() (*compute.Operation, error)) error {
	start := time.Now()
	// What the Client keeps of the project's edge services (which policy
	// each applies) is stale once this write is sent, whatever its outcome.
	defer c.reads.invalidate("edges/" + k.Project)
	op, err := call()
	c.calls.record(m, err)
	if err != nil {
		return err
	}
	err = c.wait(ctx, k.Project, k.Region, op)
	c.calls.operation(m, start, err)
	return err
}
