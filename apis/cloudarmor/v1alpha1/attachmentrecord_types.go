package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AttachmentRecordSpec is what the provider remembers of one
// SecurityPolicyAttachment's writes.
type AttachmentRecordSpec struct {
	// Namespace, Name and UID are the attachment's.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`

	// Target is the target's relative resource name, Field its field.
	Target string `json:"target"`
	Field  string `json:"field"`

	// Written is the policy (relative resource name) the attachment last
	// wrote into the field.
	Written string `json:"written"`

	// Replaced is what the field named before the attachment first wrote
	// it ("" for no policy): deleting the attachment puts it back, if the
	// field still names Written.
	// +optional
	Replaced string `json:"replaced,omitempty"`

	// FirstWriteTime is when the attachment first wrote the field.
	FirstWriteTime metav1.Time `json:"firstWriteTime"`
}

// +kubebuilder:object:root=true

// An AttachmentRecord is the provider's own record that a
// SecurityPolicyAttachment wrote its target's field, and what the field
// named before. The provider creates and deletes it; nobody else should
// write it. It is cluster-scoped, so a tenant with edit rights in a
// namespace (which include an attachment's status) cannot forge it: it
// decides what deleting the attachment restores and which attachment owns
// a field. Its name is "spa-" and the attachment's UID.
// +kubebuilder:printcolumn:name="NAMESPACE",type="string",JSONPath=".spec.namespace"
// +kubebuilder:printcolumn:name="ATTACHMENT",type="string",JSONPath=".spec.name"
// +kubebuilder:printcolumn:name="TARGET",type="string",JSONPath=".spec.target"
// +kubebuilder:printcolumn:name="REPLACED",type="string",JSONPath=".spec.replaced"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Cluster,categories={cloudarmor}
type AttachmentRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AttachmentRecordSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AttachmentRecordList contains a list of AttachmentRecord.
type AttachmentRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AttachmentRecord `json:"items"`
}

// AttachmentRecord type metadata.
var (
	AttachmentRecordKind             = reflect.TypeOf(AttachmentRecord{}).Name()
	AttachmentRecordGroupVersionKind = SchemeGroupVersion.WithKind(AttachmentRecordKind)
)

// AttachmentRecordName is the name of the record of the attachment whose
// UID is uid.
func AttachmentRecordName(uid string) string { return "spa-" + uid }

func init() {
	SchemeBuilder.Register(&AttachmentRecord{}, &AttachmentRecordList{})
}
