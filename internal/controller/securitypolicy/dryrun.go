package securitypolicy

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

// A SecurityPolicy in dry run (v1beta1.AnnotationDryRun) writes nothing to
// GCP: Observe reads the policy and the cluster's claims as usual, and where
// Create or Update would write, the verdict is ownership.DryRun and Observe
// asks GCP instead, with validateOnly=true, the requests the validate
// command sends (gcppolicy.ValidatePolicyAgainst): insert for a policy GCP
// does not have, else each addRule and patchRule of the plan. GCP's
// securityPolicies.patch and setLabels take no validateOnly, so a change of
// an existing policy's own fields or labels is not asked about; the
// Validated message says so. GCP is asked again only when those requests
// change (their hash is status.dryRun.requestHash): not on every poll.
// GCP's refusal is the Validated condition, not an error, so it neither
// backs off nor retries; an error that says nothing about the request (a
// 429, a 5xx, credentials) is Observe's error, retried with backoff.

// Events of a dry run, recorded when GCP answers (once per change of the
// requests asked).
const (
	reasonDryRunAccepted event.Reason = "DryRunAccepted"
	reasonDryRunRefused  event.Reason = "DryRunRefused"
)

const (
	errValidate = "cannot ask GCP to validate the policy (dry run)"

	msgFmtDryRunMissing = "dry run: GCP has no policy %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgUpToDate         = "GCP already holds the spec: there is no write to ask about"
	msgFmtAccepted      = "GCP accepts %s (validateOnly)"
	msgFmtRefused       = "GCP refuses %s: %s"
	msgFmtNotAsked      = "not asked: %s"
)

// dryRun reports, for cr in dry run, what GCP holds in Ready and GCP's
// answer to the writes the provider would send in Validated, and returns
// the DryRun observation. sp is GCP's policy, nil when GCP has none;
// upToDate says whether it matches the spec.
func (e *external) dryRun(ctx context.Context, cr *v1beta1.SecurityPolicy, sp *compute.SecurityPolicy, upToDate bool) (managed.ExternalObservation, error) {
	switch {
	case sp == nil:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunMissing, e.key)))
	case !upToDate:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunDiffers, e.key)))
	default:
		// Nothing would be written, so there is nothing to ask.
		cr.SetConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, msgUpToDate))
		cr.Status.DryRun = nil
		return ownership.DryRun.Observation(ownership.Details{})
	}
	c, err := e.claims(ctx, cr)
	if err != nil {
		return ownership.Fail(err)
	}
	var unchecked []string
	ask := func(ctx context.Context, v gcp.PolicyValidator) error {
		var err error
		unchecked, err = gcppolicy.ValidatePolicyAgainst(ctx, v, e.key.Name, sp, cr.Spec.ForProvider, c.own)
		return err
	}
	reqs, err := gcppolicy.Record(ctx, ask)
	if err != nil {
		return ownership.Fail(errors.Wrap(err, errValidate))
	}
	if answered(cr.Status.DryRun, cr.GetCondition(v1beta1.TypeValidated), reqs.Hash) {
		// GCP answered these requests already: its answer stands.
		return ownership.DryRun.Observation(ownership.Details{})
	}
	if len(reqs.Calls) > 0 {
		err = ask(ctx, e.validator)
	}
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
	case len(reqs.Calls) == 0:
		cr.SetConditions(v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, fmt.Sprintf(msgFmtNotAsked, strings.Join(unchecked, "; "))))
	default:
		msg := fmt.Sprintf(msgFmtAccepted, strings.Join(reqs.Calls, ", "))
		if len(unchecked) > 0 {
			msg += "; " + fmt.Sprintf(msgFmtNotAsked, strings.Join(unchecked, "; "))
		}
		cr.SetConditions(v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonAccepted, msg))
		e.recorder.Event(cr, event.Normal(reasonDryRunAccepted, msg))
	}
	cr.Status.DryRun = &v1beta1.DryRunStatus{RequestHash: reqs.Hash}
	return ownership.DryRun.Observation(ownership.Details{})
}

// answered reports whether GCP's answer to the requests hashed hash is
// already recorded: the same hash, and the Validated condition it set.
func answered(last *v1beta1.DryRunStatus, validated xpv2.Condition, hash string) bool {
	return last != nil && last.RequestHash == hash && validated.Reason != ""
}

// endDryRun removes what a dry run reported from cr, which is not (or no
// longer) in dry run.
func endDryRun(cr *v1beta1.SecurityPolicy) {
	cr.Status.DryRun = nil
	cr.Status.Conditions = slices.DeleteFunc(cr.Status.Conditions, func(c xpv2.Condition) bool { return c.Type == v1beta1.TypeValidated })
}
