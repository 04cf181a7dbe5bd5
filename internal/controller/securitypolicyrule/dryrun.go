package securitypolicyrule

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
)

// A SecurityPolicyRule in dry run (v1beta1.AnnotationDryRun) writes nothing
// to GCP: Observe reads the policy as usual, and where Create or Update
// would write, the verdict is verdict.DryRun and Observe asks GCP instead,
// with validateOnly=true, the request the validate command sends
// (gcppolicy.ValidateRuleAgainst): addRule when the policy has no rule at
// the priority, else patchRule (the default rule is always patched). A rule
// whose policy GCP does not have yet waits as any rule does, unasked:
// addRule needs the policy. GCP is asked again only when the request
// changes (its hash is status.dryRun.requestHash). GCP's refusal is the
// Validated condition, not an error; an error that says nothing about the
// request (a 429, a 5xx, credentials) is Observe's error, retried with
// backoff. The rule keeps its standing in ownership: a dry-run rule that is
// the oldest at its priority claims it, as it will once the annotation goes.

const (
	errValidate = "cannot ask GCP to validate the rule (dry run)"

	msgFmtDryRunMissing = "dry run: GCP policy %s has no rule at priority %d; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: the rule at priority %d of GCP policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
)

// dryRun reports, for cr in dry run, what GCP holds in Ready and GCP's
// answer to the write the provider would send in Validated, and returns the
// DryRun observation. sp is GCP's policy; upToDate says whether its rule at
// cr's priority matches the spec (false when it has none).
func (e *external) dryRun(ctx context.Context, cr *v1beta1.SecurityPolicyRule, sp *compute.SecurityPolicy, upToDate bool) (managed.ExternalObservation, error) {
	p := cr.Spec.ForProvider
	switch {
	case gcppolicy.FindRule(sp, p.Priority) == nil:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, e.key, p.Priority))
	case !upToDate:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, p.Priority, e.key))
	default:
		return dryrun.UpToDate(cr, &cr.Status.DryRun)
	}
	ask := func(ctx context.Context, v gcp.PolicyValidator) error {
		return gcppolicy.ValidateRuleAgainst(ctx, v, policyName(cr), sp, p.Priority, p.RuleParameters)
	}
	return dryrun.AskPolicy(ctx, cr, &cr.Status.DryRun, e.recorder, errValidate, e.validator, ask, nil)
}
