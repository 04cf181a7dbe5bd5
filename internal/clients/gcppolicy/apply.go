package gcppolicy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// Error strings.
const (
	errGetPolicy     = "cannot get security policy"
	errPatchPolicy   = "cannot patch security policy"
	errSetLabels     = "cannot set security policy labels"
	errPatchDefault  = "cannot patch default rule"
	errFmtAddRule    = "cannot add inline rule at priority %d"
	errFmtPatchRule  = "cannot patch inline rule at priority %d"
	errFmtRemoveRule = "cannot remove rule at priority %d"
)

// Ownership is what the cluster decided about one GCP policy before it is
// planned: the priorities SecurityPolicyRule objects own, and the labels that
// mark the policy as its owner's in GCP.
type Ownership struct {
	// Claims are the priorities SecurityPolicyRule objects own.
	Claims Claims
	// Labels must be on the policy whatever spec.labels says (the owner
	// and provenance labels). They are merged over spec.labels, so a label
	// the provider sets is desired state: present in GCP, it is not drift.
	Labels map[string]string
}

// A PolicyPlan is everything that separates GCP's policy from the spec.
type PolicyPlan struct {
	// Patch describes the top-level fields securityPolicies.patch must
	// change; "" when none.
	Patch string
	// Labels is true when setLabels is needed.
	Labels bool
	// DefaultRule describes how the default rule differs; "" when it does
	// not.
	DefaultRule string
	// DefaultClaimedBy is the SecurityPolicyRule that owns the default rule
	// instead of spec.defaultRule, when the spec sets one.
	DefaultClaimedBy string
	// Rules is the plan for the non-default rules.
	Rules RulePlan
}

// PlanPolicy compares the policy GCP holds with p, given who owns what.
func PlanPolicy(p v1beta1.SecurityPolicyParameters, observed *compute.SecurityPolicy, own Ownership) PolicyPlan {
	var d PolicyPlan
	if ok, s := PatchUpToDate(p, observed); !ok {
		d.Patch = s
	}
	d.Labels = !LabelsUpToDate(wantLabels(p.Labels, own.Labels, observed), observed)
	if by, ok := own.Claims[v1beta1.DefaultRulePriority]; ok && p.DefaultRule != nil {
		d.DefaultClaimedBy = by
	} else if ok, s := DefaultRuleUpToDate(p.DefaultRule, observed); !ok {
		d.DefaultRule = s
	}
	d.Rules = PlanRules(p.Rules, p.Rules != nil, observed, own.Claims)
	return d
}

// UpToDate reports whether the plan writes nothing.
func (d PolicyPlan) UpToDate() bool {
	return d.Patch == "" && !d.Labels && d.DefaultRule == "" && d.Rules.Empty()
}

// String is the diff the managed reconciler logs when the policy is not up
// to date.
func (d PolicyPlan) String() string {
	var parts []string
	if d.Patch != "" {
		parts = append(parts, d.Patch)
	}
	if d.Labels {
		parts = append(parts, "labels differ")
	}
	if d.DefaultRule != "" {
		parts = append(parts, d.DefaultRule)
	}
	if s := d.Rules.Describe(); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

// wantLabels returns the labels the policy must carry: spec's plus own's.
// With spec.labels unset (don't care) that is GCP's labels plus own's, so
// only a missing or different provider label is drift. nil means don't care.
func wantLabels(spec, own map[string]string, observed *compute.SecurityPolicy) map[string]string {
	if spec == nil && len(own) == 0 {
		return nil
	}
	base := spec
	if base == nil && observed != nil {
		base = observed.Labels
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, own)
	return out
}

// InsertBody returns the body of securityPolicies.insert for a policy called
// name: p without the inline rules (and default rule) whose priorities rule
// objects own, labelled with own.Labels.
func InsertBody(name string, p v1beta1.SecurityPolicyParameters, own Ownership) *compute.SecurityPolicy {
	sp := GeneratePolicy(name, withImplicitDefault(unclaimed(p, own.Claims)))
	if l := wantLabels(p.Labels, own.Labels, nil); len(l) > 0 {
		sp.Labels = l
	}
	return sp
}

// unclaimed returns p without inline rules (or default rule) at priorities a
// SecurityPolicyRule claims.
func unclaimed(p v1beta1.SecurityPolicyParameters, claims Claims) v1beta1.SecurityPolicyParameters {
	out := *p.DeepCopy()
	// Keep [] apart from unset: rules: [] means "own every unclaimed
	// priority", unset means "hands off", even when every rule is claimed.
	out.Rules = out.Rules[:0:0]
	for _, r := range p.Rules {
		if _, ok := claims[r.Priority]; !ok {
			out.Rules = append(out.Rules, r)
		}
	}
	if _, ok := claims[v1beta1.DefaultRulePriority]; ok {
		out.DefaultRule = nil
	}
	return out
}

// withImplicitDefault spells out GCP's implicit "allow *" default rule when p
// has inline rules but no default rule: GCP refuses an insert whose rules
// lack a default rule, yet adds exactly this one to an insert without rules.
func withImplicitDefault(p v1beta1.SecurityPolicyParameters) v1beta1.SecurityPolicyParameters {
	if p.DefaultRule == nil && len(p.Rules) > 0 {
		p.DefaultRule = &v1beta1.RuleParameters{Action: v1beta1.ActionAllow}
	}
	return p
}

// ApplyPolicy makes GCP's policy called name match p, one step at a time,
// each step reading the policy afresh where it needs GCP's current
// fingerprint. The first error stops it; the next reconcile plans again from
// what GCP then holds. Rules are added, widened and patched, then the default
// rule changes, then rules are removed: an allowlist never loses an allowed
// range before its replacement exists (see RulePlan), and a default rule that
// turns to deny finds the new allow rules already in place.
func ApplyPolicy(ctx context.Context, policies gcp.PolicyClient, name string, p v1beta1.SecurityPolicyParameters, own Ownership) error {
	sp, err := policies.GetFresh(ctx, name)
	if err != nil {
		return errors.Wrap(err, errGetPolicy)
	}
	d := PlanPolicy(p, sp, own)
	if d.Patch != "" {
		if err := policies.Patch(ctx, name, GeneratePolicyPatch(p, sp)); err != nil {
			return errors.Wrap(err, errPatchPolicy)
		}
	}
	if d.Labels {
		if err := setLabels(ctx, policies, name, sp, d.Patch != "", p.Labels, own.Labels); err != nil {
			return err
		}
	}
	if err := addAndPatch(ctx, policies, name, sp, d.Rules); err != nil {
		return err
	}
	if d.DefaultRule != "" {
		want := GenerateDefaultRule(*p.DefaultRule)
		mask := patchRuleMask(policies, want, FindRule(sp, v1beta1.DefaultRulePriority))
		if err := policies.PatchRule(ctx, name, v1beta1.DefaultRulePriority, want, mask...); err != nil {
			return errors.Wrap(err, errPatchDefault)
		}
	}
	return remove(ctx, policies, name, d.Rules.Remove)
}

// setLabels needs the labels and labelFingerprint as of now. sp, read just
// before the plan, is current unless a patch ran since: GCP may then have
// changed the fingerprint, so the policy is read again.
func setLabels(ctx context.Context, policies gcp.PolicyClient, name string, sp *compute.SecurityPolicy, patched bool, spec, own map[string]string) error {
	if patched {
		var err error
		if sp, err = policies.GetFresh(ctx, name); err != nil {
			return errors.Wrap(err, errGetPolicy)
		}
	}
	return errors.Wrap(policies.SetLabels(ctx, name, wantLabels(spec, own, sp), sp.LabelFingerprint), errSetLabels)
}

// addAndPatch applies the plan's additions, widenings and patches.
func addAndPatch(ctx context.Context, policies gcp.PolicyClient, name string, sp *compute.SecurityPolicy, plan RulePlan) error {
	for _, r := range plan.Add {
		// The policy owns every unclaimed priority, so a rule that appeared
		// there since we read the policy is patched on the next pass.
		if err := policies.AddRule(ctx, name, r); err != nil && !gcp.IsAlreadyExists(err) {
			return errors.Wrapf(err, errFmtAddRule, r.Priority)
		}
	}
	// Widened rules carry the same fields as their final versions, so
	// both get the mask computed against what GCP held before.
	for _, r := range append(slices.Clone(plan.Widen), plan.Patch...) {
		mask := patchRuleMask(policies, r, FindRule(sp, r.Priority))
		if err := policies.PatchRule(ctx, name, r.Priority, r, mask...); err != nil {
			return errors.Wrapf(err, errFmtPatchRule, r.Priority)
		}
	}
	return nil
}

// patchRuleMask is the updateMask of patchRule(want) over observed. An
// organization policy's patchRule takes none (gcp.OrgPolicyClient): it is
// given only the fields to clear, none when the patch clears nothing, so a
// change that clears nothing is sent without a mask and one that would clear
// a field fails with the client's error instead of leaving the field set.
func patchRuleMask(policies gcp.PolicyClient, want, observed *compute.SecurityPolicyRule) []string {
	if _, org := policies.(gcp.OrgPolicyClient); org {
		return RuleClearedFields(want, observed)
	}
	return RuleUpdateMask(want, observed)
}

// remove removes the rules at priorities; one already gone is fine.
func remove(ctx context.Context, policies gcp.PolicyClient, name string, priorities []int64) error {
	for _, prio := range priorities {
		if err := resource.Ignore(gcp.IsNotFound, policies.RemoveRule(ctx, name, prio)); err != nil {
			return errors.Wrapf(err, errFmtRemoveRule, prio)
		}
	}
	return nil
}

// TypeUpToDate reports whether GCP's policy has the type p asks for. Type is
// immutable in GCP, so a mismatch cannot be written away: the caller reports
// it and writes nothing.
func TypeUpToDate(p v1beta1.SecurityPolicyParameters, observed *compute.SecurityPolicy) (bool, string) {
	want := deref(p.Type)
	if want == "" || observed == nil {
		return true, ""
	}
	got := observed.Type
	if got == "" {
		got = typeCloudArmor
	}
	if got == want {
		return true, ""
	}
	return false, fmt.Sprintf("spec.forProvider.type is %q but GCP policy %q has type %q; type is immutable in GCP: delete the policy to recreate it with the new type, or set type to %q", want, observed.Name, got, got)
}
