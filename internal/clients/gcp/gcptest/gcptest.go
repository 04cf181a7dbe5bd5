// Package gcptest holds a fake gcp.PolicyClient for the controllers' unit
// tests, so every controller test fakes GCP the same way.
package gcptest

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// A Call is one call made to the fake. Priority, Rule and Mask are set by
// the rule methods only.
type Call struct {
	Method   string
	Policy   string
	Priority int64
	Rule     *compute.SecurityPolicyRule
	Mask     []string
}

// Policies is a gcp.PolicyClient whose methods call the XxxFn fields and
// record every call in Calls. A method without a function fails the call, so
// an unexpected write shows up as an error.
type Policies struct {
	GetFn        func(name string) (*compute.SecurityPolicy, error)
	GetFreshFn   func(name string) (*compute.SecurityPolicy, error)
	InsertFn     func(p *compute.SecurityPolicy) error
	PatchFn      func(p *compute.SecurityPolicy) error
	DeleteFn     func() error
	AddRuleFn    func(r *compute.SecurityPolicyRule) error
	PatchRuleFn  func(priority int64, r *compute.SecurityPolicyRule, mask []string) error
	RemoveRuleFn func(priority int64) error
	SetLabelsFn  func(labels map[string]string, fingerprint string) error

	Calls []Call
}

var _ gcp.PolicyClient = &Policies{}

// Methods returns the calls made, in order, as "Get" or, for the rule
// methods, "AddRule 500".
func (f *Policies) Methods() []string {
	var out []string
	for _, c := range f.Calls {
		switch c.Method {
		case "AddRule", "PatchRule", "RemoveRule":
			out = append(out, fmt.Sprintf("%s %d", c.Method, c.Priority))
		default:
			out = append(out, c.Method)
		}
	}
	return out
}

func unexpected(m string) error { return errors.New("unexpected call to " + m) }

// Get calls GetFn.
func (f *Policies) Get(_ context.Context, name string) (*compute.SecurityPolicy, error) {
	f.Calls = append(f.Calls, Call{Method: "Get", Policy: name})
	if f.GetFn == nil {
		return nil, unexpected("Get")
	}
	return f.GetFn(name)
}

// GetFresh calls GetFreshFn.
func (f *Policies) GetFresh(_ context.Context, name string) (*compute.SecurityPolicy, error) {
	f.Calls = append(f.Calls, Call{Method: "GetFresh", Policy: name})
	if f.GetFreshFn == nil {
		return nil, unexpected("GetFresh")
	}
	return f.GetFreshFn(name)
}

// Insert calls InsertFn.
func (f *Policies) Insert(_ context.Context, p *compute.SecurityPolicy) error {
	f.Calls = append(f.Calls, Call{Method: "Insert"})
	if f.InsertFn == nil {
		return unexpected("Insert")
	}
	return f.InsertFn(p)
}

// Patch calls PatchFn.
func (f *Policies) Patch(_ context.Context, name string, p *compute.SecurityPolicy, mask ...string) error {
	f.Calls = append(f.Calls, Call{Method: "Patch", Policy: name, Mask: mask})
	if f.PatchFn == nil {
		return unexpected("Patch")
	}
	return f.PatchFn(p)
}

// Delete calls DeleteFn.
func (f *Policies) Delete(_ context.Context, name string) error {
	f.Calls = append(f.Calls, Call{Method: "Delete", Policy: name})
	if f.DeleteFn == nil {
		return unexpected("Delete")
	}
	return f.DeleteFn()
}

// AddRule calls AddRuleFn.
func (f *Policies) AddRule(_ context.Context, name string, r *compute.SecurityPolicyRule) error {
	f.Calls = append(f.Calls, Call{Method: "AddRule", Policy: name, Priority: r.Priority, Rule: r})
	if f.AddRuleFn == nil {
		return unexpected("AddRule")
	}
	return f.AddRuleFn(r)
}

// PatchRule calls PatchRuleFn.
func (f *Policies) PatchRule(_ context.Context, name string, priority int64, r *compute.SecurityPolicyRule, mask ...string) error {
	f.Calls = append(f.Calls, Call{Method: "PatchRule", Policy: name, Priority: priority, Rule: r, Mask: mask})
	if f.PatchRuleFn == nil {
		return unexpected("PatchRule")
	}
	return f.PatchRuleFn(priority, r, mask)
}

// RemoveRule calls RemoveRuleFn.
func (f *Policies) RemoveRule(_ context.Context, name string, priority int64) error {
	f.Calls = append(f.Calls, Call{Method: "RemoveRule", Policy: name, Priority: priority})
	if f.RemoveRuleFn == nil {
		return unexpected("RemoveRule")
	}
	return f.RemoveRuleFn(priority)
}

// SetLabels calls SetLabelsFn.
func (f *Policies) SetLabels(_ context.Context, name string, labels map[string]string, fingerprint string) error {
	f.Calls = append(f.Calls, Call{Method: "SetLabels", Policy: name})
	if f.SetLabelsFn == nil {
		return unexpected("SetLabels")
	}
	return f.SetLabelsFn(labels, fingerprint)
}

// Validator is a gcp.PolicyValidator whose ValidateXxx methods call the
// XxxFn fields and record every call in Calls, as Policies does. A method
// without a function fails the call.
type Validator struct {
	GetFn       func(name string) (*compute.SecurityPolicy, error)
	InsertFn    func(p *compute.SecurityPolicy) error
	AddRuleFn   func(r *compute.SecurityPolicyRule) error
	PatchRuleFn func(priority int64, r *compute.SecurityPolicyRule, mask []string) error
	Calls       []Call
}

var _ gcp.PolicyValidator = &Validator{}

// Methods returns the calls made, as Policies.Methods does.
func (f *Validator) Methods() []string {
	return (&Policies{Calls: f.Calls}).Methods()
}

// Get calls GetFn.
func (f *Validator) Get(_ context.Context, name string) (*compute.SecurityPolicy, error) {
	f.Calls = append(f.Calls, Call{Method: "Get", Policy: name})
	if f.GetFn == nil {
		return nil, unexpected("Get")
	}
	return f.GetFn(name)
}

// ValidateInsert calls InsertFn.
func (f *Validator) ValidateInsert(_ context.Context, p *compute.SecurityPolicy) error {
	f.Calls = append(f.Calls, Call{Method: "ValidateInsert", Policy: p.Name})
	if f.InsertFn == nil {
		return unexpected("ValidateInsert")
	}
	return f.InsertFn(p)
}

// ValidateAddRule calls AddRuleFn.
func (f *Validator) ValidateAddRule(_ context.Context, name string, r *compute.SecurityPolicyRule) error {
	f.Calls = append(f.Calls, Call{Method: "AddRule", Policy: name, Priority: r.Priority, Rule: r})
	if f.AddRuleFn == nil {
		return unexpected("ValidateAddRule")
	}
	return f.AddRuleFn(r)
}

// ValidatePatchRule calls PatchRuleFn.
func (f *Validator) ValidatePatchRule(_ context.Context, name string, priority int64, r *compute.SecurityPolicyRule, mask ...string) error {
	f.Calls = append(f.Calls, Call{Method: "PatchRule", Policy: name, Priority: priority, Rule: r, Mask: mask})
	if f.PatchRuleFn == nil {
		return unexpected("ValidatePatchRule")
	}
	return f.PatchRuleFn(priority, r, mask)
}
