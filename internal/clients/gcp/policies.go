package gcp

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
)

// A PolicyClient manages the security policies of one project and region.
//
// Errors are returned unwrapped, as GCP sent them (*googleapi.Error) or as
// an *OperationError or *OperationPendingError, so a controller wraps each
// exactly once and classifies it with Kind or the Is functions.
// Deleting or removing something already gone returns a NotFound error;
// ignore it with resource.Ignore(gcp.IsNotFound, err).
//
// Mutations are serialised per policy through the shared WriteQueue, wait
// (bounded) for their GCP operation, and invalidate the policy's snapshot
// whether they succeed or fail.
type PolicyClient interface {
	// Get returns the policy from the shared snapshot cache, reading GCP
	// only when the snapshot is missing or expired. The result is shared
	// and read-only: deep-copy it before modifying it.
	Get(ctx context.Context, name string) (*compute.SecurityPolicy, error)
	// GetFresh reads the policy from GCP (joining a read already in
	// flight) and refreshes the snapshot. Use it before a write that needs
	// the current fingerprint. The result is shared and read-only.
	GetFresh(ctx context.Context, name string) (*compute.SecurityPolicy, error)
	// Insert creates the policy and waits for the operation.
	Insert(ctx context.Context, p *compute.SecurityPolicy) error
	// Patch updates the policy. updateMask lists fields to clear (GCP's
	// semantics); none means none. Note that a Patch carrying rules
	// replaces the policy's whole rule set.
	Patch(ctx context.Context, name string, p *compute.SecurityPolicy, updateMask ...string) error
	// Delete deletes the policy.
	Delete(ctx context.Context, name string) error
	// AddRule adds r at r.Priority (0 included).
	AddRule(ctx context.Context, name string, r *compute.SecurityPolicyRule) error
	// PatchRule replaces the rule at priority with r (fields named in
	// updateMask and empty in r are cleared).
	PatchRule(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error
	// RemoveRule removes the rule at priority.
	RemoveRule(ctx context.Context, name string, priority int64) error
	// SetLabels replaces the policy's labels. labelFingerprint must be the
	// policy's current one; a stale one fails with PreconditionFailed.
	SetLabels(ctx context.Context, name string, labels map[string]string, labelFingerprint string) error
}

// policyAPI hides the difference between the global SecurityPolicies and
// the RegionSecurityPolicies services, which take the same calls with an
// extra region argument.
type policyAPI interface {
	get(ctx context.Context, project, name string) (*compute.SecurityPolicy, error)
	insert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error)
	patch(ctx context.Context, project, name string, p *compute.SecurityPolicy, mask string) (*compute.Operation, error)
	delete(ctx context.Context, project, name string) (*compute.Operation, error)
	addRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error)
	patchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error)
	removeRule(ctx context.Context, project, name string, priority int64) (*compute.Operation, error)
	setLabels(ctx context.Context, project, name string, labels map[string]string, fingerprint string) (*compute.Operation, error)
}

// policyClient implements PolicyClient for one project and region.
type policyClient struct {
	*Client
	project string
	region  string
	// org is set for organization policies, which have no project and
	// whose operations are global organization operations.
	org bool
	api policyAPI
}

var _ PolicyClient = &policyClient{}

func (p *policyClient) key(name string) PolicyKey {
	return PolicyKey{Project: p.project, Region: p.region, Name: name, Org: p.org}
}

func (p *policyClient) fetch(name string) FetchFn {
	return func(ctx context.Context) (*compute.SecurityPolicy, error) {
		sp, err := p.api.get(ctx, p.project, name)
		p.calls.record(MethodGet, err)
		return sp, err
	}
}

func (p *policyClient) Get(ctx context.Context, name string) (*compute.SecurityPolicy, error) {
	return p.snapshots.Get(ctx, p.identity, p.key(name), p.fetch(name))
}

func (p *policyClient) GetFresh(ctx context.Context, name string) (*compute.SecurityPolicy, error) {
	return p.snapshots.Refresh(ctx, p.identity, p.key(name), p.fetch(name))
}

// mutate runs call in the policy's write queue, waits for its operation and
// invalidates the snapshot. The invalidation is deferred so it also happens
// when the call or the wait fails: a failed operation may have changed the
// policy, and a cached NotFound must not outlive an Insert.
func (p *policyClient) mutate(ctx context.Context, name string, m Method, call func(ctx context.Context) (*compute.Operation, error)) error {
	key := p.key(name)
	return p.queue.Do(ctx, key, func(ctx context.Context) error {
		defer p.snapshots.Invalidate(key)
		start := time.Now()
		op, err := call(ctx)
		p.calls.record(m, err)
		if err != nil {
			return err
		}
		if p.org {
			err = p.waitOrg(ctx, op)
		} else {
			err = p.wait(ctx, p.project, p.region, op)
		}
		p.calls.operation(m, start, err)
		return err
	})
}

func (p *policyClient) Insert(ctx context.Context, sp *compute.SecurityPolicy) error {
	body := withRulePriorities(sp)
	return p.mutate(ctx, sp.Name, MethodInsert, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.insert(ctx, p.project, body)
	})
}

func (p *policyClient) Patch(ctx context.Context, name string, sp *compute.SecurityPolicy, updateMask ...string) error {
	body := withRulePriorities(sp)
	return p.mutate(ctx, name, MethodPatch, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.patch(ctx, p.project, name, body, strings.Join(updateMask, ","))
	})
}

func (p *policyClient) Delete(ctx context.Context, name string) error {
	return p.mutate(ctx, name, MethodDelete, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.delete(ctx, p.project, name)
	})
}

func (p *policyClient) AddRule(ctx context.Context, name string, r *compute.SecurityPolicyRule) error {
	body := withPriority(r, r.Priority)
	return p.mutate(ctx, name, MethodAddRule, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.addRule(ctx, p.project, name, body)
	})
}

func (p *policyClient) PatchRule(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error {
	body := withPriority(r, priority)
	return p.mutate(ctx, name, MethodPatchRule, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.patchRule(ctx, p.project, name, priority, body, strings.Join(updateMask, ","))
	})
}

func (p *policyClient) RemoveRule(ctx context.Context, name string, priority int64) error {
	return p.mutate(ctx, name, MethodRemoveRule, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.removeRule(ctx, p.project, name, priority)
	})
}

func (p *policyClient) SetLabels(ctx context.Context, name string, labels map[string]string, labelFingerprint string) error {
	return p.mutate(ctx, name, MethodSetLabels, func(ctx context.Context) (*compute.Operation, error) {
		return p.api.setLabels(ctx, p.project, name, labels, labelFingerprint)
	})
}

// withPriority returns a shallow copy of r whose priority is always sent.
// The Go client marks Priority omitempty, so a rule at priority 0 would
// otherwise go out without one; GCP happens to read that as 0 today, but we
// do not rely on it. The caller's rule is not modified.
func withPriority(r *compute.SecurityPolicyRule, priority int64) *compute.SecurityPolicyRule {
	if r == nil {
		r = &compute.SecurityPolicyRule{}
	}
	out := *r
	out.Priority = priority
	if !slices.Contains(out.ForceSendFields, "Priority") {
		out.ForceSendFields = append(slices.Clip(out.ForceSendFields), "Priority")
	}
	return &out
}

// withRulePriorities returns a shallow copy of sp whose rules always send
// their priority.
func withRulePriorities(sp *compute.SecurityPolicy) *compute.SecurityPolicy {
	out := *sp
	if sp.Rules == nil {
		return &out
	}
	out.Rules = make([]*compute.SecurityPolicyRule, len(sp.Rules))
	for i, r := range sp.Rules {
		out.Rules[i] = withPriority(r, r.Priority)
	}
	return &out
}

// globalAPI calls the global SecurityPolicies service.
type globalAPI struct{ svc *compute.Service }

func (a globalAPI) get(ctx context.Context, project, name string) (*compute.SecurityPolicy, error) {
	return a.svc.SecurityPolicies.Get(project, name).Context(ctx).Do()
}

func (a globalAPI) insert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.Insert(project, p).Context(ctx).Do()
}

func (a globalAPI) patch(ctx context.Context, project, name string, p *compute.SecurityPolicy, mask string) (*compute.Operation, error) {
	c := a.svc.SecurityPolicies.Patch(project, name, p).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}

func (a globalAPI) delete(ctx context.Context, project, name string) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.Delete(project, name).Context(ctx).Do()
}

func (a globalAPI) addRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.AddRule(project, name, r).Context(ctx).Do()
}

func (a globalAPI) patchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error) {
	c := a.svc.SecurityPolicies.PatchRule(project, name, r).Priority(priority).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}

func (a globalAPI) removeRule(ctx context.Context, project, name string, priority int64) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.RemoveRule(project, name).Priority(priority).Context(ctx).Do()
}

func (a globalAPI) setLabels(ctx context.Context, project, name string, labels map[string]string, fingerprint string) (*compute.Operation, error) {
	req := &compute.GlobalSetLabelsRequest{Labels: labels, LabelFingerprint: fingerprint,
		ForceSendFields: []string{"Labels"}} // An empty map must be sent: it clears the labels.
	return a.svc.SecurityPolicies.SetLabels(project, name, req).Context(ctx).Do()
}

// regionalAPI calls the RegionSecurityPolicies service for one region.
type regionalAPI struct {
	svc    *compute.Service
	region string
}

func (a regionalAPI) get(ctx context.Context, project, name string) (*compute.SecurityPolicy, error) {
	return a.svc.RegionSecurityPolicies.Get(project, a.region, name).Context(ctx).Do()
}

func (a regionalAPI) insert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.Insert(project, a.region, p).Context(ctx).Do()
}

func (a regionalAPI) patch(ctx context.Context, project, name string, p *compute.SecurityPolicy, mask string) (*compute.Operation, error) {
	c := a.svc.RegionSecurityPolicies.Patch(project, a.region, name, p).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}

func (a regionalAPI) delete(ctx context.Context, project, name string) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.Delete(project, a.region, name).Context(ctx).Do()
}

func (a regionalAPI) addRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.AddRule(project, a.region, name, r).Context(ctx).Do()
}

func (a regionalAPI) patchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error) {
	c := a.svc.RegionSecurityPolicies.PatchRule(project, a.region, name, r).Priority(priority).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}

func (a regionalAPI) removeRule(ctx context.Context, project, name string, priority int64) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.RemoveRule(project, a.region, name).Priority(priority).Context(ctx).Do()
}

func (a regionalAPI) setLabels(ctx context.Context, project, name string, labels map[string]string, fingerprint string) (*compute.Operation, error) {
	req := &compute.RegionSetLabelsRequest{Labels: labels, LabelFingerprint: fingerprint,
		ForceSendFields: []string{"Labels"}} // An empty map must be sent: it clears the labels.
	return a.svc.RegionSecurityPolicies.SetLabels(project, a.region, name, req).Context(ctx).Do()
}
