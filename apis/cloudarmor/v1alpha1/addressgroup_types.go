package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// AddressGroup types (networksecurity v1 AddressGroup.type).
const (
	AddressGroupIPv4 = "IPV4"
	AddressGroupIPv6 = "IPV6"
)

// AddressGroupParameters are the configurable fields of a Cloud Armor
// address group. The group is identified by its parent (a project or an
// organization), location and name (the external name).
// +kubebuilder:validation:XValidation:rule="!(has(self.project) && has(self.organization))",message="set project or organization, not both"
// +kubebuilder:validation:XValidation:rule="has(self.organization) == has(oldSelf.organization)",message="organization is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.items) || size(self.items) <= self.capacity",message="items exceed capacity: capacity is fixed when the group is created, so create a larger group"
type AddressGroupParameters struct {
	// Project of the group. Defaults to the ProviderConfig's projectID.
	// Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable"
	Project *string `json:"project,omitempty"`

	// Organization is the numeric id of the organization that holds the
	// group, for groups shared by every project below it (rules use them
	// with evaluateOrganizationAddressGroup). An organization group acts
	// on every project of the organization, so only a ClusterProviderConfig
	// may manage one. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,19}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="organization is immutable"
	Organization *string `json:"organization,omitempty"`

	// Location of the group: "global" for groups used by global security
	// policies, or the region of regional policies. Immutable.
	// +kubebuilder:default=global
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="location is immutable"
	Location string `json:"location,omitempty"`

	// Type of the addresses the group holds. Immutable.
	// +kubebuilder:validation:Enum=IPV4;IPV6
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type string `json:"type"`

	// Capacity is the most items the group can hold, fixed when GCP
	// creates it. Immutable.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="capacity is immutable: GCP fixes it at creation, so create a larger group and move the rules to it"
	Capacity int32 `json:"capacity"`

	// Purpose of the group. Cloud Armor security policies only use groups
	// whose purpose includes CLOUD_ARMOR. Immutable.
	// +optional
	// +kubebuilder:default={CLOUD_ARMOR}
	// +kubebuilder:validation:items:Enum=DEFAULT;CLOUD_ARMOR
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="purpose is immutable"
	Purpose []string `json:"purpose,omitempty"`

	// Description of the group.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description *string `json:"description,omitempty"`

	// Labels of the group in GCP. The provider adds its own labels, which
	// are not the user's to set: the owner label (armorplane-owner) and the
	// labels that say which object wrote the group (crossplane-kind,
	// crossplane-name, crossplane-namespace, crossplane-providerconfig and
	// crossplane-providerconfig-kind). GCP allows 64 labels; these take 6.
	// +optional
	// +kubebuilder:validation:MaxProperties=58
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['armorplane-owner', 'crossplane-kind', 'crossplane-name', 'crossplane-namespace', 'crossplane-providerconfig', 'crossplane-providerconfig-kind'])",message="armorplane-owner and the crossplane-kind, crossplane-name, crossplane-namespace, crossplane-providerconfig and crossplane-providerconfig-kind labels are set by the provider: remove them from labels"
	Labels map[string]string `json:"labels,omitempty"`

	// Items are the IP addresses and CIDR ranges the group holds, of the
	// group's type. Changes are applied item by item (one addItems and one
	// removeItems call), adding before removing, so an address moved from
	// one range to another is never out of the group.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:MaxLength=50
	Items []string `json:"items,omitempty"`
}

// AddressGroupReference is a security policy rule that uses the group.
type AddressGroupReference struct {
	// SecurityPolicy is the policy's URL.
	// +optional
	SecurityPolicy string `json:"securityPolicy,omitempty"`
	// RulePriority is the priority of the rule that uses the group.
	// +optional
	RulePriority int32 `json:"rulePriority,omitempty"`
}

// AddressGroupObservation is the group as GCP reports it.
type AddressGroupObservation struct {
	// Name is the group's full resource name.
	// +optional
	Name string `json:"name,omitempty"`
	// CreateTime and UpdateTime as GCP reports them.
	// +optional
	CreateTime string `json:"createTime,omitempty"`
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`
	// ItemCount is how many items the group holds.
	// +optional
	ItemCount int `json:"itemCount,omitempty"`
	// References are the security policy rules that use the group.
	// +optional
	References []AddressGroupReference `json:"references,omitempty"`
}

// An AddressGroupSpec defines the desired state of an AddressGroup.
type AddressGroupSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              AddressGroupParameters `json:"forProvider"`
}

// An AddressGroupStatus represents the observed state of an AddressGroup.
type AddressGroupStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 AddressGroupObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An AddressGroup is a Cloud Armor address group (networksecurity v1): a
// named list of up to capacity addresses that security policy rules match
// with evaluateAddressGroup('<name>', origin.ip). One rule then allows
// thousands of addresses, and adding or removing one is a single call.
// Using an address group in a rule needs Cloud Armor Enterprise. Its
// external name is the group's name.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="ITEMS",type="integer",JSONPath=".status.atProvider.itemCount"
// +kubebuilder:printcolumn:name="CAPACITY",type="integer",JSONPath=".spec.forProvider.capacity"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
// +kubebuilder:validation:XValidation:rule="!has(self.spec.forProvider.organization) || (has(self.spec.providerConfigRef) && self.spec.providerConfigRef.kind == 'ClusterProviderConfig')",message="an organization address group affects every project of the organization: only a ClusterProviderConfig may manage one"
type AddressGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressGroupSpec   `json:"spec"`
	Status AddressGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AddressGroupList contains a list of AddressGroup.
type AddressGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddressGroup `json:"items"`
}

// AddressGroup type metadata.
var (
	AddressGroupKind             = reflect.TypeOf(AddressGroup{}).Name()
	AddressGroupGroupKind        = schema.GroupKind{Group: Group, Kind: AddressGroupKind}.String()
	AddressGroupKindAPIVersion   = AddressGroupKind + "." + SchemeGroupVersion.String()
	AddressGroupGroupVersionKind = SchemeGroupVersion.WithKind(AddressGroupKind)
)

func init() {
	SchemeBuilder.Register(&AddressGroup{}, &AddressGroupList{})
}
