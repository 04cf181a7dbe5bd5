package addressgroup

import (
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/dryrun"
)

// An AddressGroup in dry run (v1beta1.AnnotationDryRun) writes nothing to
// GCP, as every kind's object does: the verdict is verdict.DryRun where
// Create or Update would write, and deleting the object leaves its group in
// place. GCP cannot be asked about it: networksecurity v1's address group
// methods (create, patch, addItems, removeItems) take no validateOnly. So
// the Validated condition says, once, that nothing was asked, and Ready says
// whether GCP's group matches the spec; the observation costs the reads it
// always does, and no other call.

const (
	msgFmtDryRunMissing = "dry run: GCP has no address group %s; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgFmtDryRunDiffers = "dry run: GCP address group %s differs from the spec; nothing is written while the annotation " + v1beta1.AnnotationDryRun + " is set"
	msgNotAsked         = "not asked: GCP's address groups (networksecurity v1) take no validateOnly, so a dry run of an AddressGroup writes nothing and asks nothing"
)

// dryRun reports, for cr in dry run, whether GCP's group exists and matches
// the spec in Ready, and that GCP was not asked in Validated, and returns the
// DryRun observation.
func dryRun(cr *v1alpha1.AddressGroup, key gcp.GroupKey, exists, upToDate bool) (managed.ExternalObservation, error) {
	switch {
	case !exists:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunMissing, key))
	case !upToDate:
		dryrun.Unavailable(cr, fmt.Sprintf(msgFmtDryRunDiffers, key))
	default:
		return dryrun.UpToDate(cr, nil)
	}
	return dryrun.Report(cr, dryrun.NotAsked(msgNotAsked))
}
