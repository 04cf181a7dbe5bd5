package gcp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/networksecurity/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Error strings.
const (
	errNoNetworkSecurity = "this GCP client has no networksecurity service"
	errWaitGroupOp       = "cannot wait for address group operation"
)

// A GroupKey names one address group.
type GroupKey struct {
	// Parent is "projects/<project>" or "organizations/<id>".
	Parent string
	// Location is "global" or a region.
	Location string
	// Name is the group's id.
	Name string
}

// ProjectParent and OrganizationParent are a GroupKey's Parent.
func ProjectParent(project string) string { return "projects/" + project }

// OrganizationParent is the Parent of an organization's groups.
func OrganizationParent(id string) string { return "organizations/" + id }

// Collection is the resource name of the groups of the key's parent and
// location.
func (k GroupKey) Collection() string {
	return k.Parent + "/locations/" + k.Location
}

// String is the group's full resource name.
func (k GroupKey) String() string {
	return k.Collection() + "/addressGroups/" + k.Name
}

// An AddressGroupClient manages address groups. Errors are returned as GCP
// sent them (*googleapi.Error; a failed operation's status is made one, its
// gRPC code mapped to the HTTP code GCP uses for it), so Kind and the Is
// functions classify them like compute's.
type AddressGroupClient interface {
	// Get returns the group.
	Get(ctx context.Context, k GroupKey) (*networksecurity.AddressGroup, error)
	// References returns the security policy rules that use the group.
	References(ctx context.Context, k GroupKey) ([]*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference, error)
	// Create creates the group and waits for the operation.
	Create(ctx context.Context, k GroupKey, g *networksecurity.AddressGroup) error
	// Patch updates the fields of g named in updateMask.
	Patch(ctx context.Context, k GroupKey, g *networksecurity.AddressGroup, updateMask string) error
	// AddItems adds items to the group in one call.
	AddItems(ctx context.Context, k GroupKey, items []string) error
	// RemoveItems removes items from the group in one call.
	RemoveItems(ctx context.Context, k GroupKey, items []string) error
	// Delete deletes the group.
	Delete(ctx context.Context, k GroupKey) error
}

// AddressGroups returns the Client's AddressGroupClient.
func (c *Client) AddressGroups() AddressGroupClient {
	return &groupClient{Client: c}
}

type groupClient struct {
	*Client
}

var _ AddressGroupClient = &groupClient{}

func (g *groupClient) groups() (*networksecurity.ProjectsLocationsAddressGroupsService, error) {
	if g.ns == nil {
		return nil, errors.New(errNoNetworkSecurity)
	}
	// The project service's calls take full resource names ("v1/{+name}"),
	// so they serve organization groups as well.
	return g.ns.Projects.Locations.AddressGroups, nil
}

func (g *groupClient) Get(ctx context.Context, k GroupKey) (*networksecurity.AddressGroup, error) {
	s, err := g.groups()
	if err != nil {
		return nil, err
	}
	ag, err := s.Get(k.String()).Context(ctx).Do()
	g.calls.record(MethodGroupGet, err)
	return ag, err
}

func (g *groupClient) References(ctx context.Context, k GroupKey) ([]*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference, error) {
	s, err := g.groups()
	if err != nil {
		return nil, err
	}
	var out []*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference
	err = s.ListReferences(k.String()).Context(ctx).Pages(ctx, func(r *networksecurity.ListAddressGroupReferencesResponse) error {
		out = append(out, r.AddressGroupReferences...)
		return nil
	})
	g.calls.record(MethodGroupListReferences, err)
	return out, err
}

func (g *groupClient) Create(ctx context.Context, k GroupKey, ag *networksecurity.AddressGroup) error {
	return g.mutate(ctx, MethodGroupCreate, func(s *networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error) {
		return s.Create(k.Collection(), ag).AddressGroupId(k.Name).Context(ctx).Do()
	})
}

func (g *groupClient) Patch(ctx context.Context, k GroupKey, ag *networksecurity.AddressGroup, updateMask string) error {
	return g.mutate(ctx, MethodGroupPatch, func(s *networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error) {
		return s.Patch(k.String(), ag).UpdateMask(updateMask).Context(ctx).Do()
	})
}

func (g *groupClient) AddItems(ctx context.Context, k GroupKey, items []string) error {
	return g.mutate(ctx, MethodGroupAddItems, func(s *networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error) {
		return s.AddItems(k.String(), &networksecurity.AddAddressGroupItemsRequest{Items: items}).Context(ctx).Do()
	})
}

func (g *groupClient) RemoveItems(ctx context.Context, k GroupKey, items []string) error {
	return g.mutate(ctx, MethodGroupRemoveItems, func(s *networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error) {
		return s.RemoveItems(k.String(), &networksecurity.RemoveAddressGroupItemsRequest{Items: items}).Context(ctx).Do()
	})
}

func (g *groupClient) Delete(ctx context.Context, k GroupKey) error {
	return g.mutate(ctx, MethodGroupDelete, func(s *networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error) {
		return s.Delete(k.String()).Context(ctx).Do()
	})
}

// mutate makes a write and waits for its operation. Writes of one group are
// not queued here: each group has one managed resource, whose reconciles
// never overlap.
func (g *groupClient) mutate(ctx context.Context, m Method, call func(*networksecurity.ProjectsLocationsAddressGroupsService) (*networksecurity.Operation, error)) error {
	s, err := g.groups()
	if err != nil {
		return err
	}
	start := time.Now()
	op, err := call(s)
	g.calls.record(m, err)
	if err != nil {
		return err
	}
	err = g.waitGroupOp(ctx, op)
	g.calls.operation(m, start, err)
	return err
}

// waitGroupOp polls a long-running networksecurity operation until it is
// done, within DefaultOperationTimeout, and returns its error status as a
// *googleapi.Error.
func (g *groupClient) waitGroupOp(ctx context.Context, op *networksecurity.Operation) error {
	cfg := waitConfig{timeout: DefaultOperationTimeout, interval: DefaultPollInterval, maxInterval: DefaultMaxPollInterval, now: time.Now}
	for _, fn := range g.waitOpts {
		fn(&cfg)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	start := cfg.now()
	pause := cfg.interval
	for !op.Done {
		if !sleep(ctx, pause) {
			return pollError(op.Name, ctx.Err(), cfg.now().Sub(start))
		}
		pause = min(2*pause, cfg.maxInterval)
		next, err := g.ns.Projects.Locations.Operations.Get(op.Name).Context(ctx).Do()
		g.calls.record(MethodGroupWaitOperation, err)
		if err != nil {
			if retryWait(ctx, err) {
				continue
			}
			return pollError(op.Name, err, cfg.now().Sub(start))
		}
		op = next
	}
	return StatusError(op.Error)
}

// StatusError turns a failed operation's google.rpc.Status into the
// *googleapi.Error GCP would have answered the call with, so that it is
// classified the same way. nil stays nil.
func StatusError(s *networksecurity.Status) error {
	if s == nil {
		return nil
	}
	return &googleapi.Error{Code: httpCodeOf(s.Code), Message: s.Message,
		Body: fmt.Sprintf("operation failed with code %d: %s", s.Code, s.Message)}
}

// httpCodeOf maps a google.rpc.Code to the HTTP status GCP's REST APIs use
// for it (google.rpc.Code's documented mapping).
func httpCodeOf(code int64) int {
	switch code {
	case 3, 9, 11: // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
		return http.StatusBadRequest
	case 16: // UNAUTHENTICATED
		return http.StatusUnauthorized
	case 7: // PERMISSION_DENIED
		return http.StatusForbidden
	case 5: // NOT_FOUND
		return http.StatusNotFound
	case 6, 10: // ALREADY_EXISTS, ABORTED
		return http.StatusConflict
	case 8: // RESOURCE_EXHAUSTED
		return http.StatusTooManyRequests
	case 1: // CANCELLED
		return 499
	case 12: // UNIMPLEMENTED
		return http.StatusNotImplemented
	case 14: // UNAVAILABLE
		return http.StatusServiceUnavailable
	case 4: // DEADLINE_EXCEEDED
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
