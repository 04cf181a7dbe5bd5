package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// AnnotationDryRun, set to "true" on a SecurityPolicy, SecurityPolicyRule or
// AddressGroup whose management policies write, puts the object in dry run: the provider
// reads GCP as usual but never writes to it for the object (no create,
// update or delete). When the object would be created or updated, the
// provider asks GCP whether it would accept the write, with validateOnly=true,
// and reports GCP's answer in the Validated condition and an event. GCP is
// asked again only when what would be asked changes (status.dryRun). The
// object keeps its place in ownership: it is refused where it would be
// refused, and owns what it would own. Removing the annotation resumes normal
// reconciling: the next reconcile writes. Deleting an object in dry run
// leaves its GCP resource in place.
//
// GCP's securityPolicies.patch and setLabels take no validateOnly: for a
// policy GCP already has, only its rule writes (addRule, patchRule) are
// asked about, and the Validated message names what was not. Address groups
// (networksecurity v1) have no validateOnly at all: an AddressGroup in dry
// run writes nothing and asks nothing (Validated=Unknown, NotAsked).
const AnnotationDryRun = "cloudarmor.armorplane.io/dry-run"

// TypeValidated is the condition of an object in dry run: GCP's answer to
// the writes the provider would send for it.
const TypeValidated xpv2.ConditionType = "Validated"

// Reasons of the Validated condition, and the Ready reason of an object in
// dry run whose GCP resource does not match its spec.
const (
	// ReasonAccepted (Validated=True): GCP accepts every write asked about.
	ReasonAccepted xpv2.ConditionReason = "Accepted"
	// ReasonRefused (Validated=False): GCP refuses a write; the message is
	// GCP's, with the call it answered.
	ReasonRefused xpv2.ConditionReason = "Refused"
	// ReasonUpToDate (Validated=True): GCP already holds the spec, so there
	// is no write to ask about.
	ReasonUpToDate xpv2.ConditionReason = "UpToDate"
	// ReasonNotAsked (Validated=Unknown): every write the provider would
	// send lacks validateOnly in GCP (securityPolicies.patch, setLabels), so
	// nothing could be asked; the message says what.
	ReasonNotAsked xpv2.ConditionReason = "NotAsked"
	// ReasonDryRun (Ready=False): the object is in dry run and GCP's
	// resource is missing or differs from its spec.
	ReasonDryRun xpv2.ConditionReason = "DryRun"
)

// A DryRunStatus is what the provider last asked GCP for an object in dry
// run.
type DryRunStatus struct {
	// RequestHash identifies the validateOnly requests last answered by GCP
	// (their calls and bodies): while the requests the provider would send
	// hash the same, GCP is not asked again and the Validated condition
	// stands.
	// +optional
	RequestHash string `json:"requestHash,omitempty"`
}

// Validated returns the Validated condition of status, reason and message.
func Validated(status corev1.ConditionStatus, reason xpv2.ConditionReason, message string) xpv2.Condition {
	return xpv2.Condition{Type: TypeValidated, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}
}

// DryRunUnavailable is the Ready condition of an object in dry run whose GCP
// resource is missing or differs from its spec: Ready=False, reason DryRun,
// message saying which.
func DryRunUnavailable(message string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: ReasonDryRun, Message: message, LastTransitionTime: metav1.Now()}
}
