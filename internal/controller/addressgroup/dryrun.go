package addressgroup

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
)

// An AddressGroup in dry run (v1beta1.AnnotationDryRun) writes nothing to
// GCP, as every kind's object does: the verdict is ownership.DryRun where
// Create or Update would write, and deleting the object leaves its group in
// place. GCP cannot be asked about it: networksecurity v1's address group
// methods (create, patch, addItems, removeItems) take no validateOnly. So
// the Validated condition says, once, that nothing was asked, and Ready says
// whether GCP's group matches the spec; the observation costs the reads it
// always does, and no other call.

const (
	msgFmtDryRunMissing = "dry run: GCP has no address group %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP address group %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgUpToDate         = "GCP already holds the spec: there is no write to ask about"
	msgNotAsked         = "not asked: GCP's address groups (networksecurity v1) take no validateOnly, so a dry run of an AddressGroup writes nothing and asks nothing"
)

// dryRun reports, for cr in dry run, whether GCP's group exists and matches
// the spec in Ready, and that GCP was not asked in Validated, and returns the
// DryRun observation.
func dryRun(cr *v1alpha1.AddressGroup, key gcp.GroupKey, exists, upToDate bool) (managed.ExternalObservation, error) {
	switch {
	case !exists:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunMissing, key)))
	case !upToDate:
		cr.SetConditions(v1beta1.DryRunUnavailable(fmt.Sprintf(msgFmtDryRunDiffers, key)))
	default:
		cr.SetConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, msgUpToDate))
		return ownership.DryRun.Observation(ownership.Details{})
	}
	cr.SetConditions(v1beta1.Validated(corev1.ConditionUnknown, v1beta1.ReasonNotAsked, msgNotAsked))
	return ownership.DryRun.Observation(ownership.Details{})
}

// endDryRun removes what a dry run reported from cr, which is not (or no
// longer) in dry run.
func endDryRun(cr *v1alpha1.AddressGroup) {
	cr.Status.Conditions = slices.DeleteFunc(cr.Status.Conditions, func(c xpv2.Condition) bool { return c.Type == v1beta1.TypeValidated })
}
