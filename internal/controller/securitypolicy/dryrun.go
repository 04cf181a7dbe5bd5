package securitypolicy

import (
	"context"
	"fmt"

	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// A SecurityPolicy in dry run (v1beta1.AnnotationDryRun) writes nothing to
// GCP: Observe reads the policy and the cluster's claims as usual, and where
// Create or Update would write, the verdict is verdict.DryRun and Observe
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

const (
	errValidate = "cannot ask GCP to validate the policy (dry run)"

	msgFmtDryRunMissing = "dry run: GCP has no policy %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP policy %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
)

// dryRun reports, for cr in dry run, what GCP holds in Ready and GCP's
// answer to the writes the provider would send in Validated, and returns
// the DryRun observation. sp is GCP's policy, nil when GCP has none;
// upToDate says whether it matches the spec.
func (e *external) dryRun(ctx context.Context, cr *v1beta1.SecurityPolicy, sp *compute.SecurityPolicy, upToDate bool) (managed.ExternalObservation, error) {
	switch {
	case sp == nil:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, e.key))
	case !upToDate:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, e.key))
	default:
		return dryrun.UpToDate(cr, &cr.Status.DryRun)
	}
	c, err := e.claims(ctx, cr)
	if err != nil {
		return verdict.Fail(err)
	}
	var unchecked []string
	ask := func(ctx context.Context, v gcp.PolicyValidator) error {
		var err error
		unchecked, err = gcppolicy.ValidatePolicyAgainst(ctx, v, e.key.Name, sp, cr.Spec.ForProvider, c.own)
		return err
	}
	return dryrun.AskPolicy(ctx, cr, &cr.Status.DryRun, e.recorder, errValidate, e.validator, ask, func() []string { return unchecked })
}
