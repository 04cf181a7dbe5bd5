package securitypolicyrule

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	gcppolicy "github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

// A SecurityPolicyRule in dry run (v1beta1.AnnotationDryRun) writes nothing
// to GCP: Observe reads the policy as usual, and where Create or Update
// would write, the verdict is ownership.DryRun and Observe asks GCP instead,
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

// Events of a dry run, recorded when GCP answers (once per change of the
// request asked).
const (
	reasonDryRunAccepted event.Reason = "DryRunAccepted"
	reasonDryRunRefused  event.Reason = "DryRunRefused"
)

const (
	errValidate = "cannot ask GCP to validate the rule (dry run)"

	msgFmtDryRunMissing = "dry run: GCP policy %s has no rule at priority %d; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: the rule at priority %d of GCP policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgUpToDate         = "GCP already holds the spec: there is no write to ask about"
	msgFmtAccepted      = "GCP accepts %s (validateOnly)"
	msgFmtRefused       = "GCP refuses %s: %s"
)

// dryRun reports, for cr in dry run, what GCP holds in Ready and GCP's
// answer to the write the provider would send in Validated, and returns the
// DryRun observation. sp is GCP's policy; upToDate says whether its rule at
// cr's priority matches the spec (false when it has none).
func (e *external) dryRun(ctx context.Context, cr *v1beta1.SecurityPolicyRule, sp *compute.SecurityPolicy, upToDate bool) (managed.ExternalObservation, error) {
	p := cr.Spec.ForProvider
	switch {
	case gcppolicy.FindRule(sp, p.Priority) == nil:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunMissing, e.key, p.Priority)))
	case !upToDate:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunDiffers, p.Priority, e.key)))
	default:
		// Nothing would be written, so there is nothing to ask.
		cr.SetConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, msgUpToDate))
		cr.Status.DryRun = nil
		return ownership.DryRun.Observation(ownership.Details{})
	}
	ask := func(ctx context.Context, v gcp.PolicyValidator) error {
		return gcppolicy.ValidateRuleAgainst(ctx, v, policyName(cr), sp, p.Priority, p.RuleParameters)
	}
	reqs, err := gcppolicy.Record(ctx, ask)
	if err != nil {
		return ownership.Fail(errors.Wrap(err, errValidate))
	}
	if last, c := cr.Status.DryRun, cr.GetCondition(v1beta1.TypeValidated); last != nil && last.RequestHash == reqs.Hash && c.Reason != "" {
		// GCP answered this request already: its answer stands.
		return ownership.DryRun.Observation(ownership.Details{})
	}
	err = ask(ctx, e.validator)
	var refusal *gcppolicy.Refusal
	switch {
	case errors.As(err, &refusal):
		msg := fmt.Sprintf(msgFmtRefused, refusal.Call, refusal.Message())
		cr.SetConditions(v1beta1.Validated(corev1.ConditionFalse, v1beta1.ReasonRefused, msg))
		e.recorder.Event(cr, event.Warning(reasonDryRunRefused, errors.New(msg)))
	case err != nil:
		// Not an answer about the request: retried with backoff, and
		// asked again (no hash is recorded).
		return ownership.Fail(errors.Wrap(err, errValidate))
	default:
		msg := fmt.Sprintf(msgFmtAccepted, strings.Join(reqs.Calls, ", "))
		cr.SetConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, msg))
		e.recorder.Event(cr, event.Normal(reasonDryRunAccepted, msg))
	}
	cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: reqs.Hash}
	return ownership.DryRun.Observation(ownership.Details{})
}

// endDryRun removes what a dry run reported from cr, which is not (or no
// longer) in dry run.
func endDryRun(cr *v1beta1.SecurityPolicyRule) {
	cr.Status.DryRun = nil
	cr.Status.Conditions = slices.DeleteFunc(cr.Status.Conditions, func(c xpv2.Condition) bool { return c.Type == v1beta1.TypeValidated })
}
