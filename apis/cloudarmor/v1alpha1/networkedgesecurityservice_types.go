package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// NetworkEdgeSecurityServiceParameters are the configurable fields of a
// network edge security service (compute v1 networkEdgeSecurityServices).
// The service is identified by its project, region and name (the external
// name).
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicyRef) || !has(self.securityPolicyRef.namespace)",message="securityPolicyRef must name a SecurityPolicy in this object's namespace: remove securityPolicyRef.namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicySelector) || !has(self.securityPolicySelector.namespace)",message="securityPolicySelector must select a SecurityPolicy in this object's namespace: remove securityPolicySelector.namespace"
type NetworkEdgeSecurityServiceParameters struct {
	// Project of the service. Defaults to the ProviderConfig's projectID.
	// Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable"
	Project *string `json:"project,omitempty"`

	// Region of the service: it applies its policy to the network load
	// balancers, protocol forwarding and VMs with public IP addresses of
	// this region. Immutable.
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable: create a service in the other region"
	Region string `json:"region"`

	// Description of the service.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description *string `json:"description,omitempty"`

	// SecurityPolicy is the policy the service applies: a
	// CLOUD_ARMOR_NETWORK security policy of the same project and region,
	// by name or URL (projects/P/regions/R/securityPolicies/N, optionally
	// prefixed with https://www.googleapis.com/compute/v1/). Usually
	// resolved from securityPolicyRef or securityPolicySelector. Unset
	// (and no reference), the service's policy is left as GCP has it: none
	// for a service this object creates. Applying a network edge security
	// policy needs Cloud Armor Enterprise.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([a-z]([-a-z0-9]{0,61}[a-z0-9])?|(https://[^/]+/compute/v1/)?projects/[^/]+/regions/[^/]+/securityPolicies/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)$`
	// +crossplane:generate:reference:type=github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1.SecurityPolicy
	SecurityPolicy *string `json:"securityPolicy,omitempty"`

	// SecurityPolicyRef references a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicyRef *xpv2.NamespacedReference `json:"securityPolicyRef,omitempty"`

	// SecurityPolicySelector selects a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicySelector *xpv2.NamespacedSelector `json:"securityPolicySelector,omitempty"`
}

// NetworkEdgeSecurityServiceObservation is the service as GCP reports it.
type NetworkEdgeSecurityServiceObservation struct {
	// ID is the service's numeric id.
	// +optional
	ID string `json:"id,omitempty"`
	// SelfLink is the service's URL.
	// +optional
	SelfLink string `json:"selfLink,omitempty"`
	// Fingerprint is GCP's hash of the service, sent with each patch.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// SecurityPolicy is the URL of the policy the service applies.
	// +optional
	SecurityPolicy string `json:"securityPolicy,omitempty"`
	// CreationTimestamp as GCP reports it.
	// +optional
	CreationTimestamp string `json:"creationTimestamp,omitempty"`
}

// A NetworkEdgeSecurityServiceSpec defines the desired state of a
// NetworkEdgeSecurityService.
type NetworkEdgeSecurityServiceSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              NetworkEdgeSecurityServiceParameters `json:"forProvider"`
}

// A NetworkEdgeSecurityServiceStatus represents the observed state of a
// NetworkEdgeSecurityService.
type NetworkEdgeSecurityServiceStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 NetworkEdgeSecurityServiceObservation `json:"atProvider,omitempty"`
	// DryRun is what the provider last asked GCP while the object was in
	// dry run (cloudarmor.armorplane.io/dry-run).
	// +optional
	DryRun *v1beta1.DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// A NetworkEdgeSecurityService is a regional network edge security service
// (compute v1): it applies a CLOUD_ARMOR_NETWORK security policy of its
// region to the region's network load balancers, protocol forwarding and
// VMs with public IP addresses. A CLOUD_ARMOR_NETWORK policy does nothing
// until a service points at it. GCP allows one service per project and
// region, and needs Cloud Armor Enterprise for it to apply a policy. Its
// external name is the service's name, metadata.name unless
// crossplane.io/external-name says otherwise.
//
// GCP gives the service no labels, so no owner label says which object
// owns it: an object owns the service it created (crossplane.io/external-create-succeeded).
// An object finding a service it did not create takes it over only if its
// managementPolicies leave out Create (for example [Observe, Update]);
// otherwise it refuses, writes nothing and leaves the service in place when
// deleted. Setting crossplane.io/external-create-succeeded on an object
// hands it the service as if it had created it.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="REGION",type="string",JSONPath=".spec.forProvider.region"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name must be a valid network edge security service name: 1-63 characters, lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen"
type NetworkEdgeSecurityService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkEdgeSecurityServiceSpec   `json:"spec"`
	Status NetworkEdgeSecurityServiceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NetworkEdgeSecurityServiceList contains a list of NetworkEdgeSecurityService.
type NetworkEdgeSecurityServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetworkEdgeSecurityService `json:"items"`
}

// NetworkEdgeSecurityService type metadata.
var (
	NetworkEdgeSecurityServiceKind             = reflect.TypeOf(NetworkEdgeSecurityService{}).Name()
	NetworkEdgeSecurityServiceGroupKind        = schema.GroupKind{Group: Group, Kind: NetworkEdgeSecurityServiceKind}.String()
	NetworkEdgeSecurityServiceKindAPIVersion   = NetworkEdgeSecurityServiceKind + "." + SchemeGroupVersion.String()
	NetworkEdgeSecurityServiceGroupVersionKind = SchemeGroupVersion.WithKind(NetworkEdgeSecurityServiceKind)
)

func init() {
	SchemeBuilder.Register(&NetworkEdgeSecurityService{}, &NetworkEdgeSecurityServiceList{})
}
