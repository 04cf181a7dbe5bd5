package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Kinds of attachment targets.
const (
	TargetBackendService = "BackendService"
	TargetBackendBucket  = "BackendBucket"
)

// Fields of a target that name a security policy.
const (
	FieldSecurityPolicy     = "securityPolicy"
	FieldEdgeSecurityPolicy = "edgeSecurityPolicy"
)

// AnnotationReapply, set to a new value on a contested
// SecurityPolicyAttachment, ends the contest: the attachment writes its
// field again and counts reversals afresh. Any change of the spec does too.
const AnnotationReapply = "cloudarmor.armorplane.io/reapply"

// An AttachmentTarget is the GCP object whose field names the policy.
type AttachmentTarget struct {
	// Kind of the target: BackendService (global, or regional with
	// region) or BackendBucket (global).
	// +kubebuilder:validation:Enum=BackendService;BackendBucket
	Kind string `json:"kind"`

	// Name of the backend service or backend bucket.
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`

	// Region of a regional backend service; unset for a global one.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	Region *string `json:"region,omitempty"`
}

// SecurityPolicyAttachmentParameters are the configurable fields of a
// SecurityPolicyAttachment: which policy goes into which field of which
// backend.
// +kubebuilder:validation:XValidation:rule="has(self.securityPolicy) || has(self.securityPolicyRef) || has(self.securityPolicySelector)",message="set securityPolicy, securityPolicyRef or securityPolicySelector"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicyRef) || !has(self.securityPolicyRef.namespace)",message="securityPolicyRef must name a SecurityPolicy in this object's namespace: remove securityPolicyRef.namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicySelector) || !has(self.securityPolicySelector.namespace)",message="securityPolicySelector must select a SecurityPolicy in this object's namespace: remove securityPolicySelector.namespace"
// +kubebuilder:validation:XValidation:rule="self.target.kind != 'BackendBucket' || self.field == 'edgeSecurityPolicy'",message="a backend bucket has only edgeSecurityPolicy: set field to edgeSecurityPolicy"
// +kubebuilder:validation:XValidation:rule="self.target.kind != 'BackendBucket' || !has(self.target.region)",message="backend buckets are global: remove target.region"
// +kubebuilder:validation:XValidation:rule="!has(self.target.region) || self.field == 'securityPolicy'",message="regional backend services have no edgeSecurityPolicy: set field to securityPolicy"
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable"
type SecurityPolicyAttachmentParameters struct {
	// Project of the target. Defaults to the ProviderConfig's projectID.
	// Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable"
	Project *string `json:"project,omitempty"`

	// SecurityPolicy is the policy to attach, by name (a policy of the
	// target's project and scope: global, or the target's region) or URL
	// (projects/P/global/securityPolicies/N or
	// projects/P/regions/R/securityPolicies/N, optionally prefixed with
	// https://www.googleapis.com/compute/v1/). Usually resolved from
	// securityPolicyRef or securityPolicySelector. GCP checks that it fits
	// the field: CLOUD_ARMOR for securityPolicy, CLOUD_ARMOR_EDGE for
	// edgeSecurityPolicy.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([a-z]([-a-z0-9]{0,61}[a-z0-9])?|(https://[^/]+/compute/v1/)?projects/[^/]+/(global|regions/[^/]+)/securityPolicies/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$`
	// +crossplane:generate:reference:type=github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1.SecurityPolicy
	SecurityPolicy *string `json:"securityPolicy,omitempty"`

	// SecurityPolicyRef references a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicyRef *xpv2.NamespacedReference `json:"securityPolicyRef,omitempty"`

	// SecurityPolicySelector selects a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicySelector *xpv2.NamespacedSelector `json:"securityPolicySelector,omitempty"`

	// Target is the backend service or backend bucket. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable: create an attachment for the other target"
	Target AttachmentTarget `json:"target"`

	// Field of the target that names the policy: securityPolicy (a
	// CLOUD_ARMOR policy; backend services) or edgeSecurityPolicy (a
	// CLOUD_ARMOR_EDGE policy; global backend services and backend
	// buckets). Immutable.
	// +kubebuilder:default=securityPolicy
	// +kubebuilder:validation:Enum=securityPolicy;edgeSecurityPolicy
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable: create an attachment for the other field"
	Field string `json:"field"`
}

// A ContestObservation says that another writer keeps changing the field
// back, so the attachment stopped writing it.
type ContestObservation struct {
	// Value is what GCP's field held when the attachment stopped writing
	// ("" for no policy).
	Value string `json:"value"`
	// Reversals is how many times another writer changed the field after
	// the attachment had set it, within the window.
	Reversals int `json:"reversals"`
	// LastReversalTime is when the attachment last found its write undone.
	LastReversalTime metav1.Time `json:"lastReversalTime"`
	// Generation is the object's generation when the attachment stopped
	// writing: a spec change ends the contest.
	Generation int64 `json:"generation"`
	// Reapply is the value of the cloudarmor.armorplane.io/reapply
	// annotation when the attachment stopped writing: a new value ends the
	// contest.
	// +optional
	Reapply string `json:"reapply,omitempty"`
}

// SecurityPolicyAttachmentObservation is the target's field as GCP reports
// it, and what the attachment remembers of its writes.
type SecurityPolicyAttachmentObservation struct {
	// Target is the target's relative resource name.
	// +optional
	Target string `json:"target,omitempty"`
	// Value is the policy GCP's field names, as a relative resource name
	// ("" for none).
	// +optional
	Value string `json:"value,omitempty"`
	// AppliedPolicy is the policy the attachment last wrote into the field.
	// +optional
	AppliedPolicy string `json:"appliedPolicy,omitempty"`
	// LastAppliedTime is when it wrote it.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// ReversalTimes are when the attachment found its write undone by
	// another writer, within the window, oldest first.
	// +optional
	// +listType=atomic
	ReversalTimes []metav1.Time `json:"reversalTimes,omitempty"`
	// Contest is set while the attachment does not write because another
	// writer keeps changing the field back.
	// +optional
	Contest *ContestObservation `json:"contest,omitempty"`
}

// A SecurityPolicyAttachmentSpec defines the desired state of a
// SecurityPolicyAttachment.
type SecurityPolicyAttachmentSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              SecurityPolicyAttachmentParameters `json:"forProvider"`
}

// A SecurityPolicyAttachmentStatus represents the observed state of a
// SecurityPolicyAttachment.
type SecurityPolicyAttachmentStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityPolicyAttachmentObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityPolicyAttachment attaches a security policy to one backend
// service (global or regional) or backend bucket, by
// setSecurityPolicy or setEdgeSecurityPolicy, which change that one field
// and nothing else of the backend. It owns exactly that field of that
// target: of the attachments naming the same field of the same target, in
// any namespace, the oldest writes and the others are refused. Deleting it
// detaches the policy only if the field still names it.
//
// When another writer changes the field back after the attachment set it,
// the attachment sets it again with a growing delay; after 3 reversals
// within 10 minutes it stops writing and reports Synced=False and the
// Contested condition, until its spec changes or the annotation
// cloudarmor.armorplane.io/reapply gets a new value.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="TARGET",type="string",JSONPath=".spec.forProvider.target.name"
// +kubebuilder:printcolumn:name="FIELD",type="string",JSONPath=".spec.forProvider.field"
// +kubebuilder:printcolumn:name="POLICY",type="string",JSONPath=".spec.forProvider.securityPolicy"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
type SecurityPolicyAttachment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityPolicyAttachmentSpec   `json:"spec"`
	Status SecurityPolicyAttachmentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityPolicyAttachmentList contains a list of SecurityPolicyAttachment.
type SecurityPolicyAttachmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityPolicyAttachment `json:"items"`
}

// SecurityPolicyAttachment type metadata.
var (
	SecurityPolicyAttachmentKind             = reflect.TypeOf(SecurityPolicyAttachment{}).Name()
	SecurityPolicyAttachmentGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityPolicyAttachmentKind}.String()
	SecurityPolicyAttachmentKindAPIVersion   = SecurityPolicyAttachmentKind + "." + SchemeGroupVersion.String()
	SecurityPolicyAttachmentGroupVersionKind = SchemeGroupVersion.WithKind(SecurityPolicyAttachmentKind)
)

func init() {
	SchemeBuilder.Register(&SecurityPolicyAttachment{}, &SecurityPolicyAttachmentList{})
}
