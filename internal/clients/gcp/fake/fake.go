// Package fake provides a test double of gcp.PolicyClient for controller
// unit tests.
package fake

import (
	"context"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

var _ gcp.PolicyClient = &PolicyClient{}

// A PolicyClient is a gcp.PolicyClient whose methods call the matching Fn
// field. A method whose Fn is nil returns nil values, so a test sets only
// the calls it expects.
type PolicyClient struct {
	GetFn        func(ctx context.Context, name string) (*compute.SecurityPolicy, error)
	GetFreshFn   func(ctx context.Context, name string) (*compute.SecurityPolicy, error)
	InsertFn     func(ctx context.Context, p *compute.SecurityPolicy) error
	PatchFn      func(ctx context.Context, name string, p *compute.SecurityPolicy, updateMask ...string) error
	DeleteFn     func(ctx context.Context, name string) error
	AddRuleFn    func(ctx context.Context, name string, r *compute.SecurityPolicyRule) error
	PatchRuleFn  func(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error
	RemoveRuleFn func(ctx context.Context, name string, priority int64) error
	SetLabelsFn  func(ctx context.Context, name string, labels map[string]string, labelFingerprint string) error
}

// Get calls GetFn.
func (c *PolicyClient) Get(ctx context.Context, name string) (*compute.SecurityPolicy, error) {
	if c.GetFn == nil {
		return nil, nil
	}
	return c.GetFn(ctx, name)
}

// GetFresh calls GetFreshFn, or GetFn if GetFreshFn is nil, since most
// tests do not care which read a controller used.
func (c *PolicyClient) GetFresh(ctx context.Context, name string) (*compute.SecurityPolicy, error) {
	if c.GetFreshFn == nil {
		return c.Get(ctx, name)
	}
	return c.GetFreshFn(ctx, name)
}

// Insert calls InsertFn.
func (c *PolicyClient) Insert(ctx context.Context, p *compute.SecurityPolicy) error {
	if c.InsertFn == nil {
		return nil
	}
	return c.InsertFn(ctx, p)
}

// Patch calls PatchFn.
func (c *PolicyClient) Patch(ctx context.Context, name string, p *compute.SecurityPolicy, updateMask ...string) error {
	if c.PatchFn == nil {
		return nil
	}
	return c.PatchFn(ctx, name, p, updateMask...)
}

// Delete calls DeleteFn.
func (c *PolicyClient) Delete(ctx context.Context, name string) error {
	if c.DeleteFn == nil {
		return nil
	}
	return c.DeleteFn(ctx, name)
}

// AddRule calls AddRuleFn.
func (c *PolicyClient) AddRule(ctx context.Context, name string, r *compute.SecurityPolicyRule) error {
	if c.AddRuleFn == nil {
		return nil
	}
	return c.AddRuleFn(ctx, name, r)
}

// PatchRule calls PatchRuleFn.
func (c *PolicyClient) PatchRule(ctx context.Context, name string, priority int64, r *compute.SecurityPolicyRule, updateMask ...string) error {
	if c.PatchRuleFn == nil {
		return nil
	}
	return c.PatchRuleFn(ctx, name, priority, r, updateMask...)
}

// RemoveRule calls RemoveRuleFn.
func (c *PolicyClient) RemoveRule(ctx context.Context, name string, priority int64) error {
	if c.RemoveRuleFn == nil {
		return nil
	}
	return c.RemoveRuleFn(ctx, name, priority)
}

// SetLabels calls SetLabelsFn.
func (c *PolicyClient) SetLabels(ctx context.Context, name string, labels map[string]string, labelFingerprint string) error {
	if c.SetLabelsFn == nil {
		return nil
	}
	return c.SetLabelsFn(ctx, name, labels, labelFingerprint)
}
