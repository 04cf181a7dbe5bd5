package gcp

import (
	"context"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Error strings.
const (
	errOrgLabels    = "organization security policies have no labels"
	errOrgMask      = "organization security policies cannot clear fields in place: compute v1 has no updateMask on their patch and patchRule"
	errOrgNoID      = "the insert's operation names no policy id"
	errFmtOrgParent = "parent %q is not organizations/N or folders/N"
)

// An OrgPolicyClient manages the organization security policies
// (hierarchical policies, compute v1 organizationSecurityPolicies) of one
// organization or folder.
//
// It is a PolicyClient whose policy name is the numeric id GCP gives a
// policy at insert: every call after the insert names the policy by id, so
// the id, not the shortName, is what a managed resource records. Reads are
// served from the shared SnapshotCache and writes go through the shared
// WriteQueue, as a project policy's are; operations are global
// organization operations, read with get (they have no wait method).
//
// compute v1 gives organization policies no labels (SetLabels fails) and
// no updateMask on patch and patchRule, so a Patch or PatchRule that would
// clear a field fails rather than silently leaving it set.
type OrgPolicyClient interface {
	PolicyClient
	// Create inserts the policy under the client's parent, waits for the
	// operation and returns the policy's id. Insert does the same and
	// drops the id.
	Create(ctx context.Context, p *compute.SecurityPolicy) (string, error)
	// Find lists the parent's policies and returns the one called
	// shortName, or a NotFound error. It is one list call (per page), not
	// cached: use it to find what an insert that lost its answer made.
	Find(ctx context.Context, shortName string) (*compute.SecurityPolicy, error)
	// AddAssociation attaches the policy. With replace an association of
	// another policy at the same attachment point is replaced in the same
	// operation; without it GCP refuses.
	AddAssociation(ctx context.Context, id string, a *compute.SecurityPolicyAssociation, replace bool) error
	// RemoveAssociation removes the policy's association called name.
	RemoveAssociation(ctx context.Context, id, name string) error
	// ListAssociations lists the associations of every policy attached to
	// target (organizations/N, folders/N or projects/P).
	ListAssociations(ctx context.Context, target string) ([]*compute.SecurityPolicyAssociation, error)
}

// OrgPolicies returns an OrgPolicyClient for the policies whose parent is
// organizations/N or folders/N. parent "" gives a client for policies
// known by id only (an association's): its Create and Find fail.
func (c *Client) OrgPolicies(parent string) (OrgPolicyClient, error) {
	if parent != "" && !ValidOrgParent(parent) {
		return nil, errors.Errorf(errFmtOrgParent, parent)
	}
	api := orgAPI{svc: c.svc, parent: parent}
	return &orgPolicyClient{policyClient: &policyClient{Client: c, org: true, api: api}, api: api, parent: parent}, nil
}

// ValidOrgParent reports whether parent is organizations/N or folders/N.
func ValidOrgParent(parent string) bool {
	for _, prefix := range []string{"organizations/", "folders/"} {
		if id, ok := strings.CutPrefix(parent, prefix); ok {
			_, err := strconv.ParseUint(id, 10, 64)
			return err == nil
		}
	}
	return false
}

type orgPolicyClient struct {
	*policyClient
	api    orgAPI
	parent string
}

var _ OrgPolicyClient = &orgPolicyClient{}

func (o *orgPolicyClient) Create(ctx context.Context, sp *compute.SecurityPolicy) (string, error) {
	if o.parent == "" {
		return "", errors.Errorf(errFmtOrgParent, o.parent)
	}
	body := withRulePriorities(sp)
	var id string
	// The id is unknown until GCP answers, so inserts of one shortName
	// queue behind each other under a key of their own.
	queued := PolicyKey{Org: true, Name: o.parent + "/" + sp.ShortName}
	err := o.queue.Do(ctx, queued, func(ctx context.Context) error {
		start := time.Now()
		op, err := o.api.insert(ctx, "", body)
		o.calls.record(MethodInsert, err)
		if err != nil {
			return err
		}
		if op != nil && op.TargetId != 0 {
			id = strconv.FormatUint(op.TargetId, 10)
			// A NotFound cached while the policy did not exist must not
			// outlive the insert, whatever the operation's outcome.
			defer o.snapshots.Invalidate(o.key(id))
		}
		err = o.waitOrg(ctx, op)
		o.calls.operation(MethodInsert, start, err)
		return err
	})
	if err == nil && id == "" {
		return "", errors.New(errOrgNoID)
	}
	return id, err
}

func (o *orgPolicyClient) Insert(ctx context.Context, sp *compute.SecurityPolicy) error {
	_, err := o.Create(ctx, sp)
	return err
}

func (o *orgPolicyClient) SetLabels(context.Context, string, map[string]string, string) error {
	return errors.New(errOrgLabels)
}

func (o *orgPolicyClient) Patch(ctx context.Context, id string, sp *compute.SecurityPolicy, updateMask ...string) error {
	if len(updateMask) > 0 {
		return errors.New(errOrgMask)
	}
	return o.policyClient.Patch(ctx, id, sp)
}

func (o *orgPolicyClient) PatchRule(ctx context.Context, id string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error {
	if len(updateMask) > 0 {
		return errors.New(errOrgMask)
	}
	return o.policyClient.PatchRule(ctx, id, priority, r)
}

func (o *orgPolicyClient) Find(ctx context.Context, shortName string) (*compute.SecurityPolicy, error) {
	if o.parent == "" {
		return nil, errors.Errorf(errFmtOrgParent, o.parent)
	}
	var found *compute.SecurityPolicy
	err := o.api.svc.OrganizationSecurityPolicies.List().ParentId(o.parent).Context(ctx).Pages(ctx, func(l *compute.SecurityPolicyList) error {
		o.calls.record(MethodOrgList, nil)
		for _, sp := range l.Items {
			if sp.ShortName == shortName && found == nil {
				found = sp
			}
		}
		return nil
	})
	if err != nil {
		o.calls.record(MethodOrgList, err)
		return nil, err
	}
	if found == nil {
		return nil, &googleapi.Error{Code: 404, Message: "The resource '" + o.parent + "/securityPolicies/" + shortName + "' was not found",
			Errors: []googleapi.ErrorItem{{Reason: "notFound", Message: "The resource '" + o.parent + "/securityPolicies/" + shortName + "' was not found"}}}
	}
	return found, nil
}

func (o *orgPolicyClient) AddAssociation(ctx context.Context, id string, a *compute.SecurityPolicyAssociation, replace bool) error {
	return o.mutate(ctx, id, MethodOrgAddAssociation, func(ctx context.Context) (*compute.Operation, error) {
		c := o.api.svc.OrganizationSecurityPolicies.AddAssociation(id, a).Context(ctx)
		if replace {
			c = c.ReplaceExistingAssociation(true)
		}
		return c.Do()
	})
}

func (o *orgPolicyClient) RemoveAssociation(ctx context.Context, id, name string) error {
	return o.mutate(ctx, id, MethodOrgRemoveAssociation, func(ctx context.Context) (*compute.Operation, error) {
		return o.api.svc.OrganizationSecurityPolicies.RemoveAssociation(id).Name(name).Context(ctx).Do()
	})
}

func (o *orgPolicyClient) ListAssociations(ctx context.Context, target string) ([]*compute.SecurityPolicyAssociation, error) {
	resp, err := o.api.svc.OrganizationSecurityPolicies.ListAssociations().TargetResource(target).Context(ctx).Do()
	o.calls.record(MethodOrgListAssociations, err)
	if err != nil {
		return nil, err
	}
	return resp.Associations, nil
}

// waitOrg waits for a global organization operation, reading it with get
// and counting each read as a wait call.
func (c *Client) waitOrg(ctx context.Context, op *compute.Operation) error {
	poll := func(ctx context.Context, name string) (*compute.Operation, error) {
		return c.svc.GlobalOrganizationOperations.Get(name).Context(ctx).Do()
	}
	o := append([]waitOption{withPoller(poll), withPollHook(func(err error) { c.calls.record(MethodWaitOperation, err) })}, c.waitOpts...)
	return WaitForOperation(ctx, c.svc, "", "", op, o...)
}

// orgAPI calls the OrganizationSecurityPolicies service for one parent. It
// is a policyAPI whose project argument is unused and whose names are ids.
type orgAPI struct {
	svc    *compute.Service
	parent string
}

func (a orgAPI) get(ctx context.Context, _, id string) (*compute.SecurityPolicy, error) {
	return a.svc.OrganizationSecurityPolicies.Get(id).Context(ctx).Do()
}

func (a orgAPI) insert(ctx context.Context, _ string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.Insert(p).ParentId(a.parent).Context(ctx).Do()
}

func (a orgAPI) patch(ctx context.Context, _, id string, p *compute.SecurityPolicy, _ string) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.Patch(id, p).Context(ctx).Do()
}

func (a orgAPI) delete(ctx context.Context, _, id string) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.Delete(id).Context(ctx).Do()
}

func (a orgAPI) addRule(ctx context.Context, _, id string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.AddRule(id, r).Context(ctx).Do()
}

func (a orgAPI) patchRule(ctx context.Context, _, id string, priority int64, r *compute.SecurityPolicyRule, _ string) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.PatchRule(id, r).Priority(priority).Context(ctx).Do()
}

func (a orgAPI) removeRule(ctx context.Context, _, id string, priority int64) (*compute.Operation, error) {
	return a.svc.OrganizationSecurityPolicies.RemoveRule(id).Priority(priority).Context(ctx).Do()
}

func (a orgAPI) setLabels(context.Context, string, string, map[string]string, string) (*compute.Operation, error) {
	return nil, errors.New(errOrgLabels)
}
