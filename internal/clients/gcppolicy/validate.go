package gcppolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// A Refusal is GCP's answer to a dry run (validateOnly) of one write the
// provider would send: GCP would refuse the write itself.
type Refusal struct {
	// Call names the write, e.g. "insert" or "addRule priority 1000".
	Call string
	// Err is GCP's answer, as the client returned it.
	Err error
}

func (r *Refusal) Error() string { return r.Call + ": " + r.Err.Error() }

func (r *Refusal) Unwrap() error { return r.Err }

// Message is GCP's own message, without the client's "googleapi: Error
// 400:" framing, on one line. GCP names the field it refuses in it.
func (r *Refusal) Message() string {
	var ge *googleapi.Error
	if errors.As(r.Err, &ge) && ge.Message != "" {
		return strings.Join(strings.Fields(ge.Message), " ")
	}
	return strings.Join(strings.Fields(r.Err.Error()), " ")
}

// An Unwritable is desired state the provider itself refuses to write, so
// there is nothing to ask GCP: a type GCP's policy cannot change to.
type Unwritable struct {
	// Reason is what the provider reports on the object.
	Reason string
}

func (u *Unwritable) Error() string { return u.Reason }

// refused wraps GCP's answer to a dry run, leaving answers that say
// nothing about the request (credentials, permissions, an unreachable or
// busy API) as they are: those mean the question could not be asked.
func refused(call string, err error) error {
	switch gcp.Kind(err) {
	case gcp.KindInvalid, gcp.KindAlreadyExists, gcp.KindNotFound, gcp.KindPreconditionFailed, gcp.KindQuotaExceeded:
		return &Refusal{Call: call, Err: err}
	}
	return err
}

// ValidatePolicy asks GCP, without writing, whether it accepts what the
// SecurityPolicy controller would write for p to the policy called name:
// the insert body when GCP has no such policy, else each addRule and
// patchRule of the plan, the default rule's included. It stops at the first
// refusal (*Refusal).
//
// GCP's securityPolicies.patch and setLabels have no validateOnly, so for an
// existing policy a change of its own fields or labels cannot be asked
// about: unchecked says what was left out. A type GCP's policy cannot change
// to is an *Unwritable: the provider writes nothing then.
func ValidatePolicy(ctx context.Context, v gcp.PolicyValidator, name string, p v1beta1.SecurityPolicyParameters, own Ownership) (unchecked []string, err error) {
	observed, err := v.Get(ctx, name)
	if gcp.IsNotFound(err) {
		observed, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ValidatePolicyAgainst(ctx, v, name, observed, p, own)
}

// ValidatePolicyAgainst is ValidatePolicy with the policy GCP holds already
// read: observed, nil when GCP has no such policy. v's Get is not called.
func ValidatePolicyAgainst(ctx context.Context, v gcp.PolicyValidator, name string, observed *compute.SecurityPolicy, p v1beta1.SecurityPolicyParameters, own Ownership) (unchecked []string, err error) {
	if observed == nil {
		return nil, refused("insert", v.ValidateInsert(ctx, InsertBody(name, p, own)))
	}
	if ok, why := TypeUpToDate(p, observed); !ok {
		return nil, &Unwritable{Reason: why}
	}
	d := PlanPolicy(p, observed, own)
	if d.Patch != "" {
		unchecked = append(unchecked, "the change of the policy's own fields: securityPolicies.patch has no validateOnly")
	}
	if d.Labels {
		unchecked = append(unchecked, "the change of the labels: setLabels has no validateOnly")
	}
	for _, r := range d.Rules.Add {
		if err := v.ValidateAddRule(ctx, name, r); err != nil {
			return unchecked, refused(fmt.Sprintf("addRule priority %d", r.Priority), err)
		}
	}
	patches := append(slices.Clone(d.Rules.Widen), d.Rules.Patch...)
	if d.DefaultRule != "" {
		patches = append(patches, GenerateDefaultRule(*p.DefaultRule))
	}
	for _, r := range patches {
		mask := RuleUpdateMask(r, FindRule(observed, r.Priority))
		if err := v.ValidatePatchRule(ctx, name, r.Priority, r, mask...); err != nil {
			return unchecked, refused(fmt.Sprintf("patchRule priority %d", r.Priority), err)
		}
	}
	return unchecked, nil
}

// ValidateRule asks GCP, without writing, whether it accepts what the
// SecurityPolicyRule controller would write for the rule at priority of the
// policy called policy: addRule when GCP's policy has no rule there,
// patchRule when it has a different one, nothing when it holds the rule as
// desired.
//
// When GCP has no such policy, pending is the insert body it will be
// created with (see InsertBody), if known: the rule is then asked about as
// part of that insert, which is where GCP first sees it beside the policy's
// scope and type. Without pending GCP's 404 is the refusal.
func ValidateRule(ctx context.Context, v gcp.PolicyValidator, policy string, priority int64, p v1beta1.RuleParameters, pending *compute.SecurityPolicy) error {
	want := GenerateRule(priority, p)
	observed, err := v.Get(ctx, policy)
	switch {
	case gcp.IsNotFound(err) && pending != nil:
		return refused("insert with the rule", v.ValidateInsert(ctx, withRule(pending, want)))
	case gcp.IsNotFound(err):
		return &Refusal{Call: "getting the policy", Err: err}
	case err != nil:
		return err
	}
	return ValidateRuleAgainst(ctx, v, policy, observed, priority, p)
}

// ValidateRuleAgainst is ValidateRule with the policy GCP holds already
// read: observed, which must not be nil. v's Get is not called.
func ValidateRuleAgainst(ctx context.Context, v gcp.PolicyValidator, policy string, observed *compute.SecurityPolicy, priority int64, p v1beta1.RuleParameters) error {
	want := GenerateRule(priority, p)
	have := FindRule(observed, priority)
	if have == nil {
		return refused(fmt.Sprintf("addRule priority %d", priority), v.ValidateAddRule(ctx, policy, want))
	}
	if ok, _ := RuleUpToDate(want, have); ok {
		return nil
	}
	call := fmt.Sprintf("patchRule priority %d", priority)
	return refused(call, v.ValidatePatchRule(ctx, policy, priority, want, RuleUpdateMask(want, have)...))
}

// withRule returns a copy of body with r in place of any rule at its
// priority.
func withRule(body *compute.SecurityPolicy, r *compute.SecurityPolicyRule) *compute.SecurityPolicy {
	out := *body
	out.Rules = slices.DeleteFunc(slices.Clone(body.Rules), func(o *compute.SecurityPolicyRule) bool { return o.Priority == r.Priority })
	out.Rules = append(out.Rules, r)
	return &out
}

// Requests are the validateOnly requests a dry run would send.
type Requests struct {
	// Hash identifies them, calls and bodies.
	Hash string
	// Calls name them in order, as a Refusal's Call does.
	Calls []string
}

// Record returns the validateOnly requests ask would send through the
// validator it is given, none of which is sent: that validator accepts every
// write and records its call and body. A dry run compares their hash with
// the hash of the requests GCP last answered, to ask GCP again only when
// they changed. ask must not read through the validator (use the ...Against
// forms): its Get returns an error.
func Record(ctx context.Context, ask func(context.Context, gcp.PolicyValidator) error) (Requests, error) {
	r := &recorder{h: sha256.New()}
	if err := ask(ctx, r); err != nil {
		return Requests{}, err
	}
	if r.err != nil {
		return Requests{}, r.err
	}
	return Requests{Hash: hex.EncodeToString(r.h.Sum(nil)), Calls: r.calls}, nil
}

// A recorder is the PolicyValidator of Record.
type recorder struct {
	h     hash.Hash
	calls []string
	err   error
}

// record adds the call named call, with its target and body, to the hash.
func (r *recorder) record(call, target string, body any) error {
	r.calls = append(r.calls, call)
	b, err := json.Marshal(body)
	if err != nil && r.err == nil {
		r.err = err
	}
	// Length-prefixed, so that no two sequences of calls hash alike.
	for _, part := range [][]byte{[]byte(call), []byte(target), b} {
		fmt.Fprintf(r.h, "%d:", len(part))
		r.h.Write(part)
	}
	return nil
}

func (r *recorder) Get(context.Context, string) (*compute.SecurityPolicy, error) {
	return nil, errors.New("Record reads nothing: pass the policy read")
}

func (r *recorder) ValidateInsert(_ context.Context, p *compute.SecurityPolicy) error {
	return r.record("insert", "", p)
}

func (r *recorder) ValidateAddRule(_ context.Context, name string, rule *compute.SecurityPolicyRule) error {
	return r.record(fmt.Sprintf("addRule priority %d", rule.Priority), name, rule)
}

func (r *recorder) ValidatePatchRule(_ context.Context, name string, priority int64, rule *compute.SecurityPolicyRule, updateMask ...string) error {
	return r.record(fmt.Sprintf("patchRule priority %d", priority), name+" "+strings.Join(updateMask, ","), rule)
}
