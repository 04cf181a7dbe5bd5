package gcp

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/networksecurity/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Error strings.
const (
	errNewService         = "cannot create compute client"
	errNewNetworkSecurity = "cannot create networksecurity client"
)

// A Method is a compute API call the Client makes, for per-method counts.
type Method int

// Methods the Client counts.
const (
	MethodGet Method = iota
	MethodInsert
	MethodPatch
	MethodDelete
	MethodAddRule
	MethodPatchRule
	MethodRemoveRule
	MethodSetLabels
	MethodWaitOperation
	MethodGroupGet
	MethodGroupCreate
	MethodGroupPatch
	MethodGroupDelete
	MethodGroupAddItems
	MethodGroupRemoveItems
	MethodGroupListReferences
	MethodGroupWaitOperation
	MethodEdgeGet
	MethodEdgeInsert
	MethodEdgeValidateInsert
	MethodEdgePatch
	MethodEdgeDelete
	MethodProjectGet
	MethodSetTier
	MethodBackendAggregatedList
	MethodEdgeAggregatedList
	MethodOrgList
	MethodOrgAddAssociation
	MethodOrgRemoveAssociation
	MethodOrgListAssociations
	MethodBackendGet
	MethodBackendSetPolicy
	MethodBucketList
	MethodInstanceAggregatedList
	MethodRouterList
	MethodRouterGetStatus
	methodCount
)

var methodNames = [methodCount]string{
	MethodGet:           "Get",
	MethodInsert:        "Insert",
	MethodPatch:         "Patch",
	MethodDelete:        "Delete",
	MethodAddRule:       "AddRule",
	MethodPatchRule:     "PatchRule",
	MethodRemoveRule:    "RemoveRule",
	MethodSetLabels:     "SetLabels",
	MethodWaitOperation: "WaitOperation",
	// Address group calls (networksecurity v1).
	MethodGroupGet:            "AddressGroupGet",
	MethodGroupCreate:         "AddressGroupCreate",
	MethodGroupPatch:          "AddressGroupPatch",
	MethodGroupDelete:         "AddressGroupDelete",
	MethodGroupAddItems:       "AddressGroupAddItems",
	MethodGroupRemoveItems:    "AddressGroupRemoveItems",
	MethodGroupListReferences: "AddressGroupListReferences",
	MethodGroupWaitOperation:  "AddressGroupWaitOperation",
	// Network edge security service calls (compute v1); their operations
	// are regional operations, counted under WaitOperation.
	MethodEdgeGet:            "EdgeServiceGet",
	MethodEdgeInsert:         "EdgeServiceInsert",
	MethodEdgeValidateInsert: "EdgeServiceValidateInsert",
	MethodEdgePatch:          "EdgeServicePatch",
	MethodEdgeDelete:         "EdgeServiceDelete",
	// Project-wide reads and the tier (compute v1), cached per Client
	// (see readCache).
	MethodProjectGet:            "ProjectGet",
	MethodSetTier:               "SetCloudArmorTier",
	MethodBackendAggregatedList: "BackendServiceAggregatedList",
	MethodEdgeAggregatedList:    "EdgeServiceAggregatedList",
	// Organization policy calls (compute v1 organizationSecurityPolicies)
	// other than those a project policy has too: get, insert, patch,
	// delete and the rule calls count under the policy methods above, and
	// each read of a global organization operation under WaitOperation.
	MethodOrgList:              "OrganizationPolicyList",
	MethodOrgAddAssociation:    "OrganizationPolicyAddAssociation",
	MethodOrgRemoveAssociation: "OrganizationPolicyRemoveAssociation",
	MethodOrgListAssociations:  "OrganizationPolicyListAssociations",
	// Backend service and bucket calls of attachments (compute v1); their
	// operations are global or regional operations, counted under
	// WaitOperation.
	MethodBackendGet:       "BackendGet",
	MethodBackendSetPolicy: "BackendSetSecurityPolicy",
	MethodBucketList:       "BackendBucketList",
	// Compute Engine instances an AddressSet selects by label; one call
	// per page of instances.aggregatedList.
	MethodInstanceAggregatedList: "InstanceAggregatedList",
	// Cloud Routers of an AddressSet's Cloud NAT source: one routers.list
	// per page for each region of a network, one getRouterStatus per
	// router.
	MethodRouterList:      "RouterList",
	MethodRouterGetStatus: "RouterGetStatus",
}

// String returns the method's name, suitable for a metric label.
func (m Method) String() string {
	if m < 0 || m >= methodCount {
		return "Unknown"
	}
	return methodNames[m]
}

// CallCounter counts compute API calls per method and response code, and
// the outcome and duration of the operations the writes start. The provider
// shares one across all its Clients and exports it with NewCollector.
//
// Counts are atomics indexed by method and code rather than Prometheus
// metrics, so a call pays for one atomic add and a scrape reads them all.
type CallCounter struct {
	n   [methodCount][numCodes]atomic.Int64
	ops [methodCount][numOpResults]atomic.Int64
	// opSeconds is the time from sending a write until its operation was
	// seen DONE, by method.
	opSeconds *prometheus.HistogramVec
}

// NewCallCounter returns a zeroed CallCounter.
func NewCallCounter() *CallCounter {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cloudarmor_gcp_operation_wait_seconds",
		Help: "Time from sending a write to GCP until its operation was seen DONE, failed operations included, by method.",
		// Cloud Armor operations take about a second to tens of seconds;
		// the wait gives up after DefaultOperationTimeout.
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120},
	}, []string{"method"})
	for _, m := range writeMethods {
		h.WithLabelValues(m.String()) // A series from the start, for rate().
	}
	return &CallCounter{opSeconds: h}
}

// record counts a call that returned err; a nil counter (a Client built
// without WithCallCounter) counts nothing.
func (c *CallCounter) record(m Method, err error) {
	if c != nil {
		c.n[m][codeOf(err)].Add(1)
	}
}

// Count returns the number of calls of m, whatever their code.
func (c *CallCounter) Count(m Method) int64 {
	if m < 0 || m >= methodCount {
		return 0
	}
	var n int64
	for i := range c.n[m] {
		n += c.n[m][i].Load()
	}
	return n
}

// operation records how the operation a write of m started ended, err
// being what waiting for it returned, and, when GCP reported it DONE, how
// long it took since start.
func (c *CallCounter) operation(m Method, start time.Time, err error) {
	if c == nil {
		return
	}
	r := opResultOf(err)
	c.ops[m][r].Add(1)
	if r == opDone || r == opFailed {
		c.opSeconds.WithLabelValues(m.String()).Observe(time.Since(start).Seconds())
	}
}

// A Client is what a ClientCache stores for one credential set: a compute
// service plus the process-wide SnapshotCache, WriteQueue and CallCounter.
type Client struct {
	svc *compute.Service
	// ns serves address groups (networksecurity v1); nil when the Client
	// was built without one (tests of policies only).
	ns *networksecurity.Service
	// identity is the credential identity the Client's snapshots are kept
	// under (Credentials.Hash), so no other credential set is served what
	// this one read.
	identity  string
	snapshots *SnapshotCache
	queue     *WriteQueue
	calls     *CallCounter // nil counts nothing
	waitOpts  []waitOption // set by tests only
	// reads holds this Client's project-wide reads (tier, backend
	// services, edge services). It belongs to the Client, which the
	// ClientCache keeps per config (UID and generation) and credentials,
	// so what one tenant's config read is never served to another's.
	reads *readCache
}

// A ClientOption configures a Client.
type ClientOption func(*Client)

// WithCallCounter makes the Client count its calls in c. Without it the
// Client counts nothing.
func WithCallCounter(c *CallCounter) ClientOption {
	return func(cl *Client) { cl.calls = c }
}

// WithIdentity sets the credential identity the Client's policy snapshots are
// shared under. Clients built for different credentials must have different
// identities; NewClientForCredentials uses Credentials.Hash.
func WithIdentity(id string) ClientOption {
	return func(cl *Client) { cl.identity = id }
}

// WithNetworkSecurity gives the Client the networksecurity service its
// AddressGroups use.
func WithNetworkSecurity(ns *networksecurity.Service) ClientOption {
	return func(cl *Client) { cl.ns = ns }
}

// WithProjectReadTTL sets how long the Client keeps a project's tier and
// the lists of its backend and edge security services (default
// DefaultProjectReadTTL).
func WithProjectReadTTL(d time.Duration) ClientOption {
	return func(cl *Client) { cl.reads = newReadCache(d, time.Now) }
}

// NewClient returns a Client over svc. snapshots and queue must be shared by
// every Client of the process; nil gets a private one (tests only).
func NewClient(svc *compute.Service, snapshots *SnapshotCache, queue *WriteQueue, o ...ClientOption) *Client {
	if snapshots == nil {
		snapshots = NewSnapshotCache()
	}
	if queue == nil {
		queue = NewWriteQueue()
	}
	c := &Client{svc: svc, snapshots: snapshots, queue: queue, reads: newReadCache(DefaultProjectReadTTL, time.Now)}
	for _, fn := range o {
		fn(c)
	}
	return c
}

// NewClientForCredentials builds a compute service from creds and returns a
// Client over it. Use it as a ClientCache BuildFn:
//
//	cache.Get(ctx, uid, gcp.IdentityKey(uid, creds.Hash()), func(ctx context.Context) (*gcp.Client, error) {
//		return gcp.NewClientForCredentials(ctx, creds, snapshots, queue, gcp.WithCallCounter(calls))
//	})
func NewClientForCredentials(ctx context.Context, creds Credentials, snapshots *SnapshotCache, queue *WriteQueue, o ...ClientOption) (*Client, error) {
	opts, err := ClientOptions(ctx, creds)
	if err != nil {
		return nil, err
	}
	svc, err := compute.NewService(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return nil, errors.Wrap(err, errNewService)
	}
	nsOpts, err := NetworkSecurityClientOptions(ctx, creds)
	if err != nil {
		return nil, err
	}
	ns, err := networksecurity.NewService(context.WithoutCancel(ctx), nsOpts...)
	if err != nil {
		return nil, errors.Wrap(err, errNewNetworkSecurity)
	}
	return NewClient(svc, snapshots, queue, append([]ClientOption{WithIdentity(creds.Hash()), WithNetworkSecurity(ns)}, o...)...), nil
}

// Policies returns a PolicyClient for the security policies of project in
// region; region "" means global policies.
func (c *Client) Policies(project, region string) PolicyClient {
	if region == "" {
		return &policyClient{Client: c, project: project, api: globalAPI{c.svc}}
	}
	return &policyClient{Client: c, project: project, region: region, api: regionalAPI{svc: c.svc, region: region}}
}

// wait waits for op, counting each wait call.
func (c *Client) wait(ctx context.Context, project, region string, op *compute.Operation) error {
	o := append([]waitOption{withPollHook(func(err error) { c.calls.record(MethodWaitOperation, err) })}, c.waitOpts...)
	return WaitForOperation(ctx, c.svc, project, region, op, o...)
}
