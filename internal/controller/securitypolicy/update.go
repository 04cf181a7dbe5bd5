package securitypolicy

import (
	"context"
	"slices"

	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
)

// Error strings.
const (
	errPatchPolicy   = "cannot patch security policy"
	errSetLabels     = "cannot set security policy labels"
	errPatchDefault  = "cannot patch default rule"
	errFmtAddRule    = "cannot add inline rule at priority %d"
	errFmtPatchRule  = "cannot patch inline rule at priority %d"
	errFmtRemoveRule = "cannot remove rule at priority %d"
)

// update makes GCP's policy match p, one step at a time, each step reading
// the policy afresh where it needs GCP's current fingerprint. The first error
// stops it; the next reconcile starts from what GCP then holds. Rules are
// added, widened and patched, then the default rule changes, then rules are
// removed: an allowlist never loses an allowed range before its replacement
// exists (see securitypolicy.RulePlan), and a default rule that turns to deny
// finds the new allow rules already in place.
func (e *external) update(ctx context.Context, name string, p v1beta1.SecurityPolicyParameters, claims securitypolicy.Claims) error {
	sp, err := e.policies.GetFresh(ctx, name)
	if err != nil {
		return errors.Wrap(err, errGetPolicy)
	}
	d := diff(p, sp, claims)
	if d.patch != "" {
		if err := e.policies.Patch(ctx, name, securitypolicy.GeneratePolicyPatch(p, sp)); err != nil {
			return errors.Wrap(err, errPatchPolicy)
		}
	}
	if d.labels {
		if err := e.setLabels(ctx, name, p.Labels); err != nil {
			return err
		}
	}
	if err := e.addAndPatch(ctx, name, sp, d.plan); err != nil {
		return err
	}
	if d.defaultRule != "" {
		want := securitypolicy.GenerateDefaultRule(*p.DefaultRule)
		mask := securitypolicy.RuleUpdateMask(want, securitypolicy.FindRule(sp, v1beta1.DefaultRulePriority))
		if err := e.policies.PatchRule(ctx, name, v1beta1.DefaultRulePriority, want, mask...); err != nil {
			return errors.Wrap(err, errPatchDefault)
		}
	}
	return e.remove(ctx, name, d.plan.Remove)
}

// setLabels needs the labelFingerprint as of now: the patch before it may
// have changed it.
func (e *external) setLabels(ctx context.Context, name string, labels map[string]string) error {
	sp, err := e.policies.GetFresh(ctx, name)
	if err != nil {
		return errors.Wrap(err, errGetPolicy)
	}
	return errors.Wrap(e.policies.SetLabels(ctx, name, labels, sp.LabelFingerprint), errSetLabels)
}

// addAndPatch applies the plan's additions, widenings and patches.
func (e *external) addAndPatch(ctx context.Context, name string, sp *compute.SecurityPolicy, plan securitypolicy.RulePlan) error {
	for _, r := range plan.Add {
		err := e.policies.AddRule(ctx, name, r)
		if err != nil && !gcp.IsAlreadyExists(err) {
			return errors.Wrapf(err, errFmtAddRule, r.Priority)
		}
	}
	// Widened rules carry the same fields as their final versions, so
	// both get the mask computed against what GCP held before.
	for _, r := range append(slices.Clone(plan.Widen), plan.Patch...) {
		mask := securitypolicy.RuleUpdateMask(r, securitypolicy.FindRule(sp, r.Priority))
		if err := e.policies.PatchRule(ctx, name, r.Priority, r, mask...); err != nil {
			return errors.Wrapf(err, errFmtPatchRule, r.Priority)
		}
	}
	return nil
}

// remove removes the rules at priorities; one already gone is fine.
func (e *external) remove(ctx context.Context, name string, priorities []int64) error {
	for _, prio := range priorities {
		if err := resource.Ignore(gcp.IsNotFound, e.policies.RemoveRule(ctx, name, prio)); err != nil {
			return errors.Wrapf(err, errFmtRemoveRule, prio)
		}
	}
	return nil
}
