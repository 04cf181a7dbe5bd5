// Package verdict names what a managed resource's Observe concludes.
//
// An Observe concludes more than crossplane-runtime's managed reconciler can
// be told: its ExternalObservation says only whether the external resource
// exists and is up to date, or carries an error. Some conclusions bend that
// contract on purpose (a resource left in place reported gone, a wait
// reported up to date). Decide names the conclusion, a Verdict, from Facts;
// Verdict.Observation is the one place a verdict becomes an
// ExternalObservation, so no controller builds one itself. An Observe that
// fails before reaching a verdict returns Fail(err), an error with a zero
// observation from the same place.
package verdict

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// Facts are what an Observe learned, as far as they decide its verdict.
type Facts struct {
	// Role is what the object may do to its external resource.
	Role Role
	// Presence is what GCP holds of it.
	Presence Presence
	// Deleting: the object has a deletion timestamp.
	Deleting bool
	// DryRun: the object is in dry run (v1beta1.AnnotationDryRun): it
	// never writes to GCP, and asks GCP instead whether it would accept the
	// writes. It changes nothing for an Observer, which writes nothing
	// anyway, nor for an Outranked object, refused either way.
	DryRun bool
}

// FactsOf starts the facts of mg's Observe: Owner if its management policies
// write (it may yet be outranked or adopt), else Observer; in dry run if it
// writes and carries the dry-run annotation; nothing read.
func FactsOf(mg resource.Managed) Facts {
	f := Facts{Role: Observer, Deleting: meta.WasDeleted(mg)}
	if Writes(mg) {
		f.Role = Owner
		f.DryRun = IsDryRun(mg)
	}
	return f
}

// IsDryRun reports whether mg carries the dry-run annotation set to "true".
// Any other value is not a dry run: the annotation is an opt-in.
func IsDryRun(mg metav1.Object) bool {
	return mg.GetAnnotations()[v1beta1.AnnotationDryRun] == "true"
}

// A Role is what an object may do to the external resource it names.
type Role int

// Roles.
const (
	// Owner may write the resource: it owns it.
	Owner Role = iota
	// Adopter may write the resource, which carries no owner label yet: the
	// Update that follows labels it, as Crossplane adopts what an external
	// name points at.
	Adopter
	// Observer writes nothing: its management policies neither create,
	// update nor delete.
	Observer
	// Outranked may not write the resource: another object owns it (an
	// older one of this cluster, or the one GCP's owner label names).
	Outranked
	// Borrower owns a rule at a priority its policy's owner declares
	// inline: deleting the object hands the rule back to the policy, which
	// must find it in place.
	Borrower
)

// A Presence is what GCP holds of an object's external resource.
type Presence int

// Presences.
const (
	// Unread: GCP was not read. Ownership is asked of the cluster first, so
	// that an object its Role decides alone makes no call to GCP.
	Unread Presence = iota
	// Missing: GCP has no such resource.
	Missing
	// Present: GCP has it.
	Present
	// Permanent: GCP has it, and deleting the object leaves it as it is:
	// a policy's default rule, which GCP never removes, when no reset to
	// "allow *" is left to do.
	Permanent
	// NoParent: what the resource belongs to is not there yet (a rule's
	// policy: not named yet, or not in GCP).
	NoParent
)

// A Verdict is what an Observe concludes.
type Verdict int

// Verdicts.
const (
	// Undecided: the facts do not decide yet; GCP must be read first.
	Undecided Verdict = iota
	// Failed: Observe could not decide (GCP or the cluster could not be
	// read, or the spec asks what GCP cannot do). Decide never returns
	// it; Fail reports it.
	Failed
	// Absent: there is nothing to own; Create makes it.
	Absent
	// Own: the resource exists and the object owns it.
	Own
	// Adopt: the resource exists without an owner label; the object takes
	// it over.
	Adopt
	// ObserveOnly: the resource exists and the object only reads it.
	ObserveOnly
	// Delete: the resource exists and its owner is being deleted.
	Delete
	// Waiting: the resource's parent is not there yet; not an error.
	Waiting
	// Released: the object is being deleted and the resource stays: another
	// object owns it, the object hands it back, nothing is left to undo, or
	// the object is in dry run.
	Released
	// Refused: another object owns the resource; this one writes nothing.
	Refused
	// DryRun: the object would create or write the resource but is in dry
	// run: it writes nothing, and its Observe asks GCP instead whether it
	// would accept the writes (validateOnly) and reports the answer.
	DryRun
)

var verdictNames = [...]string{"Undecided", "Failed", "Absent", "Own", "Adopt", "ObserveOnly", "Delete", "Waiting", "Released", "Refused", "DryRun"}

func (v Verdict) String() string {
	if v < 0 || int(v) >= len(verdictNames) {
		return fmt.Sprintf("Verdict(%d)", int(v))
	}
	return verdictNames[v]
}

// Decide is the verdict the facts reach. A Role that decides alone
// (Outranked, or Borrower while deleting) needs no Presence. Dry run comes
// after ownership: an object refused stays refused, in dry run or not.
func Decide(f Facts) Verdict {
	switch {
	case (f.Role == Outranked || f.Role == Borrower) && f.Deleting:
		return Released
	case f.Role == Outranked:
		return Refused
	}
	dryRun := f.DryRun && f.Role != Observer
	switch f.Presence {
	case Missing:
		if dryRun && !f.Deleting {
			// Create would make it: ask GCP instead.
			return DryRun
		}
		return Absent
	case NoParent:
		if f.Deleting {
			// Nothing in GCP to remove.
			return Absent
		}
		return Waiting
	case Present, Permanent:
		switch {
		case f.Deleting && (f.Presence == Permanent || dryRun):
			// A dry run never deletes: the resource stays as it is.
			return Released
		case f.Deleting:
			// Whatever the role: crossplane-runtime calls Delete only
			// when the management policies delete, and an object whose
			// policies do not is never observed while deleting.
			return Delete
		case dryRun:
			// Update would write it (an adoption included): ask GCP
			// instead.
			return DryRun
		case f.Role == Adopter:
			return Adopt
		case f.Role == Observer:
			return ObserveOnly
		}
		return Own
	}
	return Undecided
}

// Details are what an observation carries besides its verdict.
type Details struct {
	// UpToDate and Diff compare GCP's resource with the spec: read for Own,
	// Adopt and ObserveOnly.
	UpToDate bool
	Diff     string
	// LateInitialized: Observe set something on the object that the
	// reconciler is to save (an imported object's external name): read for
	// Own, Adopt and ObserveOnly.
	LateInitialized bool
	// Err says why: the refusal (Refused) or the failure (Failed).
	Err error
}

// Observation is what crossplane-runtime's managed reconciler is told of
// verdict v. It is the only place an ExternalObservation is built; each case
// names the reconciler behaviour it relies on.
func (v Verdict) Observation(d Details) (managed.ExternalObservation, error) {
	switch v {
	case Absent:
		// The reconciler calls Create when the management policies create
		// (an observe-only object it reports as an error itself, requeued
		// after the poll interval); being deleted, it unpublishes and
		// removes the finalizer without calling Delete.
		return managed.ExternalObservation{ResourceExists: false}, nil
	case Own, Adopt, ObserveOnly:
		// Up to date: ReconcileSuccess, requeued after the poll interval.
		// Not up to date: the reconciler logs Diff and calls Update when the
		// management policies update. Late initialized: it saves the object
		// when the management policies late-initialize.
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: d.UpToDate, Diff: d.Diff, ResourceLateInitialized: d.LateInitialized}, nil
	case Delete:
		// Being deleted, the reconciler reads only ResourceExists: it calls
		// Delete and requeues to see the resource gone. Up to date, so that
		// nothing could ever Update what is being deleted.
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	case Waiting:
		// Exists and up to date is the one observation on which the
		// reconciler neither creates (which would fail without the parent),
		// nor records an error, nor backs off: ReconcileSuccess, requeued
		// after the poll interval unless the parent's arrival requeues first.
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	case DryRun:
		// Exists and up to date, as for Waiting, whatever GCP holds: the
		// reconciler neither creates, updates nor deletes, records no error
		// and does not back off: ReconcileSuccess, requeued after the poll
		// interval. What GCP answered is the object's Validated condition,
		// which its Observe sets; what GCP holds, its Ready condition.
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	case Released:
		// Reported gone on purpose, though it may be there: being deleted,
		// the reconciler then unpublishes and removes the finalizer without
		// calling Delete, so GCP keeps the resource.
		return managed.ExternalObservation{ResourceExists: false}, nil
	case Refused, Failed:
		if d.Err != nil {
			// An error: the reconciler sets Synced=False with it, records a
			// warning event and requeues with backoff; it calls neither
			// Create, Update nor Delete.
			return managed.ExternalObservation{}, d.Err
		}
	}
	// Undecided, or a verdict without its reason: an error too, never an
	// observation that would make the reconciler create or delete.
	return managed.ExternalObservation{}, errors.Errorf("observe reached no verdict (%s)", v)
}

// Refuse is the observation of an object that may not write its external
// resource because another owns it: the error why, reported and retried
// with backoff; while the object is being deleted, the resource is left in
// place (Released).
func Refuse(f Facts, why string) (managed.ExternalObservation, error) {
	f.Role = Outranked
	return Decide(f).Observation(Details{Err: errors.New(why)})
}

// Fail is the observation of an Observe that failed with err: err, with a
// zero observation.
func Fail(err error) (managed.ExternalObservation, error) {
	return Failed.Observation(Details{Err: err})
}

// managementPolicies is what Writes needs of a managed resource.
type managementPolicies interface {
	GetManagementPolicies() xpv2.ManagementPolicies
}

// Writes reports whether mg's management policies let it change GCP. Only
// such objects compete for ownership.
func Writes(mg managementPolicies) bool {
	mp := mg.GetManagementPolicies()
	if len(mp) == 0 {
		return true // The API default is ["*"].
	}
	return slices.ContainsFunc(mp, func(a xpv2.ManagementAction) bool {
		return a == xpv2.ManagementActionAll || a == xpv2.ManagementActionCreate ||
			a == xpv2.ManagementActionUpdate || a == xpv2.ManagementActionDelete
	})
}
