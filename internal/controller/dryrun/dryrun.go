// Package dryrun reports an object in dry run (the annotation
// cloudarmor.armorplane.io/dry-run): Ready says whether GCP's resource
// matches the spec, Validated says what GCP answered to the writes the
// provider would send (asked with validateOnly), and status.dryRun.requestHash
// remembers which requests that answer was for, so that GCP is asked again
// only when they change, not on every poll. Every kind reports a dry run
// through these functions; only what it asks GCP differs.
package dryrun

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

// Events of a dry run, recorded when GCP answers (once per change of the
// requests asked).
const (
	ReasonAccepted event.Reason = "DryRunAccepted"
	ReasonRefused  event.Reason = "DryRunRefused"
)

// MsgUpToDate is Validated's message when GCP already holds the spec.
const MsgUpToDate = "GCP already holds the spec: there is no write to ask about"

// An Answer is what a dry run reports in Validated.
type Answer struct {
	status  corev1.ConditionStatus
	reason  xpv2.ConditionReason
	message string
}

// Accepted is GCP accepting every request asked; message says which.
func Accepted(message string) Answer {
	return Answer{corev1.ConditionTrue, v1beta1.ReasonAccepted, message}
}

// Refused is GCP refusing a request, with its message.
func Refused(message string) Answer {
	return Answer{corev1.ConditionFalse, v1beta1.ReasonRefused, message}
}

// NotAsked is a change no request with validateOnly can ask about; message
// says which.
func NotAsked(message string) Answer {
	return Answer{corev1.ConditionUnknown, v1beta1.ReasonNotAsked, message}
}

// Observation is what Observe returns for an object in dry run: the DryRun
// verdict, which writes nothing.
func Observation() (managed.ExternalObservation, error) {
	return verdict.DryRun.Observation(verdict.Details{})
}

// Unavailable reports in Ready that GCP's resource is missing or differs
// from the spec (message says which) and that nothing is written.
func Unavailable(o resource.Managed, message string) {
	o.SetConditions(v1beta1.DryRunUnavailable(message))
}

// UpToDate reports that GCP already holds o's spec: nothing would be
// written, so nothing is asked. last is o's status.dryRun, nil for a kind
// that never asks.
func UpToDate(o resource.Managed, last **v1beta1.DryRunStatus) (managed.ExternalObservation, error) {
	o.SetConditions(xpv2.Available(), v1beta1.Validated(corev1.ConditionTrue, v1beta1.ReasonUpToDate, MsgUpToDate))
	if last != nil {
		*last = nil
	}
	return Observation()
}

// Report sets Validated to a, with no request asked (no event, no hash).
func Report(o resource.Managed, a Answer) (managed.ExternalObservation, error) {
	o.SetConditions(v1beta1.Validated(a.status, a.reason, a.message))
	return Observation()
}

// Ask reports GCP's answer to the requests hashed hash in Validated, with an
// event, and records hash in *last. When GCP answered the same requests
// already (the same hash, and the Validated condition it set), its answer
// stands and ask is not called: no call per poll. An error from ask is not
// an answer about the requests (a 429, a 5xx, credentials): it is Observe's
// error, wrapped in errMsg, retried with backoff and asked again, since no
// hash is recorded.
func Ask(o resource.Managed, last **v1beta1.DryRunStatus, rec event.Recorder, hash, errMsg string, ask func() (Answer, error)) (managed.ExternalObservation, error) {
	if *last != nil && (*last).RequestHash == hash && o.GetCondition(v1beta1.TypeValidated).Reason != "" {
		return Observation()
	}
	a, err := ask()
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errMsg))
	}
	o.SetConditions(v1beta1.Validated(a.status, a.reason, a.message))
	switch a.reason {
	case v1beta1.ReasonRefused:
		rec.Event(o, event.Warning(ReasonRefused, errors.New(a.message)))
	case v1beta1.ReasonAccepted:
		rec.Event(o, event.Normal(ReasonAccepted, a.message))
	}
	*last = &v1beta1.DryRunStatus{RequestHash: hash}
	return Observation()
}

// End removes what a dry run reported from an object that is not (or no
// longer) in dry run: its Validated condition and, when the kind has one,
// its status.dryRun (last).
func End(c *xpv2.ConditionedStatus, last **v1beta1.DryRunStatus) {
	if last != nil {
		*last = nil
	}
	c.Conditions = slices.DeleteFunc(c.Conditions, func(c xpv2.Condition) bool { return c.Type == v1beta1.TypeValidated })
}
