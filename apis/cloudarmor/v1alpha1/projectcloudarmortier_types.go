package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// The Cloud Armor tiers of a project (compute v1 Project.cloudArmorTier).
const (
	TierStandard         = "CA_STANDARD"
	TierEnterprisePaygo  = "CA_ENTERPRISE_PAYGO"
	TierEnterpriseAnnual = "CA_ENTERPRISE_ANNUAL"
)

// ProjectCloudArmorTierParameters are the configurable fields of a
// project's Cloud Armor tier.
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable: create a ProjectCloudArmorTier for the other project"
type ProjectCloudArmorTierParameters struct {
	// Project whose tier this is. Defaults to the ProviderConfig's
	// projectID. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable: create a ProjectCloudArmorTier for the other project"
	Project *string `json:"project,omitempty"`

	// CloudArmorTier is the project's Cloud Armor tier: CA_STANDARD,
	// CA_ENTERPRISE_PAYGO or CA_ENTERPRISE_ANNUAL. Address groups,
	// adaptive protection, named IP lists, threat intelligence and network
	// edge security policies need an Enterprise tier. Enterprise is billed
	// (per project for PAYGO; Annual is a subscription GCP may not let the
	// project leave before its term ends, and refuses with a message the
	// object's Synced condition shows).
	// +kubebuilder:validation:XValidation:rule="self in ['CA_STANDARD', 'CA_ENTERPRISE_PAYGO', 'CA_ENTERPRISE_ANNUAL']",message="cloudArmorTier must be CA_STANDARD, CA_ENTERPRISE_PAYGO or CA_ENTERPRISE_ANNUAL"
	CloudArmorTier string `json:"cloudArmorTier"`
}

// ProjectCloudArmorTierObservation is the project's tier as GCP reports it.
type ProjectCloudArmorTierObservation struct {
	// Project is the project the tier was read from.
	// +optional
	Project string `json:"project,omitempty"`
	// CloudArmorTier is the project's tier (projects.get cloudArmorTier);
	// CA_STANDARD when GCP reports none.
	// +optional
	CloudArmorTier string `json:"cloudArmorTier,omitempty"`
}

// A ProjectCloudArmorTierSpec defines the desired state of a
// ProjectCloudArmorTier.
type ProjectCloudArmorTierSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              ProjectCloudArmorTierParameters `json:"forProvider"`
}

// A ProjectCloudArmorTierStatus represents the observed state of a
// ProjectCloudArmorTier.
type ProjectCloudArmorTierStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 ProjectCloudArmorTierObservation `json:"atProvider,omitempty"`
	// DryRun is unused: setCloudArmorTier takes no validateOnly. It is
	// here so that every kind's status has the same shape.
	// +optional
	DryRun *v1beta1.DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// A ProjectCloudArmorTier is a GCP project's Cloud Armor tier
// (projects.setCloudArmorTier, read back from projects.get): Standard, or
// Enterprise (pay as you go, or annual). A project has one tier, so one
// object writes it: the oldest one naming the project; any other is
// Synced=False naming it and writes nothing. Deleting the object leaves the
// project on the tier it has: set CA_STANDARD first to go back to Standard.
//
// The tier is the whole project's, so an object that writes it may use a
// ProviderConfig of its own namespace (its credentials are the namespace's
// own: GCP decides what they may do) or a ClusterProviderConfig whose
// spec.projectSettingsNamespaceSelector selects its namespace; a
// ClusterProviderConfig that does not is refused (Synced=False), so a
// namespace admitted to manage its own policies in a shared project cannot
// change that project's tier. An object with managementPolicies [Observe]
// only reports the tier and may use either.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="PROJECT",type="string",JSONPath=".status.atProvider.project"
// +kubebuilder:printcolumn:name="TIER",type="string",JSONPath=".status.atProvider.cloudArmorTier"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
type ProjectCloudArmorTier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProjectCloudArmorTierSpec   `json:"spec"`
	Status ProjectCloudArmorTierStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProjectCloudArmorTierList contains a list of ProjectCloudArmorTier.
type ProjectCloudArmorTierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProjectCloudArmorTier `json:"items"`
}

// ProjectCloudArmorTier type metadata.
var (
	ProjectCloudArmorTierKind             = reflect.TypeOf(ProjectCloudArmorTier{}).Name()
	ProjectCloudArmorTierGroupKind        = schema.GroupKind{Group: Group, Kind: ProjectCloudArmorTierKind}.String()
	ProjectCloudArmorTierKindAPIVersion   = ProjectCloudArmorTierKind + "." + SchemeGroupVersion.String()
	ProjectCloudArmorTierGroupVersionKind = SchemeGroupVersion.WithKind(ProjectCloudArmorTierKind)
)

func init() {
	SchemeBuilder.Register(&ProjectCloudArmorTier{}, &ProjectCloudArmorTierList{})
}
