package gcp

import (
	"context"
	"strings"

	"google.golang.org/api/compute/v1"
)

// A PolicyValidator asks GCP whether it would accept a write to the security
// policies of one project and region, without writing: each call is sent
// with validateOnly=true, GCP runs the checks of the real write and commits
// nothing. Calls bypass the WriteQueue and the SnapshotCache, since nothing
// they do changes or depends on a cached policy.
//
// compute v1 has validateOnly on insert, addRule and patchRule only;
// securityPolicies.patch, removeRule and setLabels have none, so they have
// no counterpart here.
//
// A refusal is returned as GCP sent it (*googleapi.Error), or as an
// *OperationError when GCP's answer is a failed operation.
type PolicyValidator interface {
	// Get reads the policy from GCP.
	Get(ctx context.Context, name string) (*compute.SecurityPolicy, error)
	// ValidateInsert asks whether GCP would insert p.
	ValidateInsert(ctx context.Context, p *compute.SecurityPolicy) error
	// ValidateAddRule asks whether GCP would add r to the policy.
	ValidateAddRule(ctx context.Context, name string, r *compute.SecurityPolicyRule) error
	// ValidatePatchRule asks whether GCP would patch the rule at priority
	// with r (see PolicyClient.PatchRule).
	ValidatePatchRule(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error
}

// dryRunAPI is the validateOnly form of policyAPI's three methods that
// have one.
type dryRunAPI interface {
	get(ctx context.Context, project, name string) (*compute.SecurityPolicy, error)
	validateInsert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error)
	validateAddRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error)
	validatePatchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error)
}

// Validator returns a PolicyValidator for the security policies of project
// in region; region "" means global policies.
func (c *Client) Validator(project, region string) PolicyValidator {
	if region == "" {
		return &validator{project: project, api: globalAPI{c.svc}}
	}
	return &validator{project: project, api: regionalAPI{svc: c.svc, region: region}}
}

type validator struct {
	project string
	api     dryRunAPI
}

func (v *validator) Get(ctx context.Context, name string) (*compute.SecurityPolicy, error) {
	return v.api.get(ctx, v.project, name)
}

func (v *validator) ValidateInsert(ctx context.Context, p *compute.SecurityPolicy) error {
	return answer(v.api.validateInsert(ctx, v.project, withRulePriorities(p)))
}

func (v *validator) ValidateAddRule(ctx context.Context, name string, r *compute.SecurityPolicyRule) error {
	return answer(v.api.validateAddRule(ctx, v.project, name, withPriority(r, r.Priority)))
}

func (v *validator) ValidatePatchRule(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error {
	return answer(v.api.validatePatchRule(ctx, v.project, name, priority, withPriority(r, priority), strings.Join(updateMask, ",")))
}

// answer turns a dry run's answer into an error. GCP validates before it
// answers, so the operation it returns is not waited for; one that already
// carries an error is a refusal too.
func answer(op *compute.Operation, err error) error {
	if err != nil {
		return err
	}
	if oe := NewOperationError(op); oe != nil {
		return oe
	}
	return nil
}

func (a globalAPI) validateInsert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.Insert(project, p).ValidateOnly(true).Context(ctx).Do()
}

func (a globalAPI) validateAddRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return a.svc.SecurityPolicies.AddRule(project, name, r).ValidateOnly(true).Context(ctx).Do()
}

func (a globalAPI) validatePatchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error) {
	c := a.svc.SecurityPolicies.PatchRule(project, name, r).Priority(priority).ValidateOnly(true).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}

func (a regionalAPI) validateInsert(ctx context.Context, project string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.Insert(project, a.region, p).ValidateOnly(true).Context(ctx).Do()
}

func (a regionalAPI) validateAddRule(ctx context.Context, project, name string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return a.svc.RegionSecurityPolicies.AddRule(project, a.region, name, r).ValidateOnly(true).Context(ctx).Do()
}

func (a regionalAPI) validatePatchRule(ctx context.Context, project, name string, priority int64, r *compute.SecurityPolicyRule, mask string) (*compute.Operation, error) {
	c := a.svc.RegionSecurityPolicies.PatchRule(project, a.region, name, r).Priority(priority).ValidateOnly(true).Context(ctx)
	if mask != "" {
		c = c.UpdateMask(mask)
	}
	return c.Do()
}
