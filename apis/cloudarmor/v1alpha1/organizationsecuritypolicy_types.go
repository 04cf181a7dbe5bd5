package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// OrgPolicyTypeCloudArmor is the type of a hierarchical Cloud Armor policy.
const OrgPolicyTypeCloudArmor = "CLOUD_ARMOR"

// OrganizationSecurityPolicyParameters are the configurable fields of an
// organization security policy (compute v1 organizationSecurityPolicies): a
// Cloud Armor policy of an organization or folder, evaluated for every
// project below the points it is associated with.
// +kubebuilder:validation:XValidation:rule="has(self.shortName) == has(oldSelf.shortName)",message="shortName is immutable"
type OrganizationSecurityPolicyParameters struct {
	// Parent is the organization or folder the policy belongs to:
	// organizations/N or folders/N. Immutable.
	// +kubebuilder:validation:Pattern=`^(organizations|folders)/[0-9]{1,20}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parent is immutable: create a policy under the other parent"
	Parent string `json:"parent"`

	// ShortName is the policy's name within its parent, unique there.
	// Defaults to metadata.name. Immutable: GCP cannot rename a policy.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="shortName is immutable"
	ShortName *string `json:"shortName,omitempty"`

	// Description of the policy.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description *string `json:"description,omitempty"`

	// Type of the policy: CLOUD_ARMOR, the only type a hierarchical Cloud
	// Armor policy has. Immutable.
	// +optional
	// +kubebuilder:default=CLOUD_ARMOR
	// +kubebuilder:validation:Enum=CLOUD_ARMOR
	Type *string `json:"type,omitempty"`

	// DefaultRule sets the policy's default rule (priority 2147483647).
	// Unset leaves whatever default rule GCP has alone.
	// +optional
	DefaultRule *v1beta1.RuleParameters `json:"defaultRule,omitempty"`

	// Rules are the policy's rules, diffed by priority. Unset: this object
	// never touches non-default rules. Set (even to []): it owns every
	// non-default priority and removes rules at others.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=priority
	Rules []v1beta1.PolicyRule `json:"rules"` // no omitempty: [] (own every rule) must not become unset (hands off)
}

// OrganizationSecurityPolicyAttachment is one association of the
// policy as GCP reports it.
type OrganizationSecurityPolicyAttachment struct {
	// Name of the association.
	Name string `json:"name"`
	// AttachmentID is what the policy is attached to.
	AttachmentID string `json:"attachmentId"`
}

// OrganizationSecurityPolicyObservation is the policy as GCP reports it.
type OrganizationSecurityPolicyObservation struct {
	// ID is the policy's numeric id, also its external name.
	// +optional
	ID string `json:"id,omitempty"`
	// SelfLink is the policy's URL.
	// +optional
	SelfLink string `json:"selfLink,omitempty"`
	// Fingerprint is GCP's hash of the policy.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// Parent is the organization or folder the policy belongs to.
	// +optional
	Parent string `json:"parent,omitempty"`
	// ShortName is the policy's name within its parent.
	// +optional
	ShortName string `json:"shortName,omitempty"`
	// RuleCount is how many rules the policy has, the default rule included.
	// +optional
	RuleCount int `json:"ruleCount,omitempty"`
	// Associations are where the policy is attached.
	// +optional
	Associations []OrganizationSecurityPolicyAttachment `json:"associations,omitempty"`
	// CreationTimestamp as GCP reports it.
	// +optional
	CreationTimestamp string `json:"creationTimestamp,omitempty"`
}

// An OrganizationSecurityPolicySpec defines the desired state of an
// OrganizationSecurityPolicy. An organization policy affects every project
// below it, so only a ClusterProviderConfig may serve it.
// +kubebuilder:validation:XValidation:rule="!has(self.providerConfigRef) || self.providerConfigRef.kind == 'ClusterProviderConfig'",message="an OrganizationSecurityPolicy affects every project below its organization or folder, so it may only use a ClusterProviderConfig: set providerConfigRef.kind to ClusterProviderConfig (a namespaced ProviderConfig is refused)"
type OrganizationSecurityPolicySpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              OrganizationSecurityPolicyParameters `json:"forProvider"`
}

// An OrganizationSecurityPolicyStatus represents the observed state of an
// OrganizationSecurityPolicy.
type OrganizationSecurityPolicyStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 OrganizationSecurityPolicyObservation `json:"atProvider,omitempty"`
	// DryRun is what the provider last reported while the object was in
	// dry run (cloudarmor.armorplane.io/dry-run). compute v1 has no
	// validateOnly on any organization policy method, so GCP is never
	// asked.
	// +optional
	DryRun *v1beta1.DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// An OrganizationSecurityPolicy is a hierarchical Cloud Armor security
// policy (compute v1 organizationSecurityPolicies) of an organization or
// folder. It takes effect where an OrganizationSecurityPolicyAssociation
// attaches it, and is evaluated before the policies of the projects below.
// Its external name is the numeric id GCP gives it at creation.
//
// GCP gives organization policies no labels, so no owner label says which
// object owns one: an object owns the policy whose id it recorded when it
// created it (crossplane.io/external-name). Setting the annotation to an
// existing policy's id hands that policy to the object.
//
// Only a ClusterProviderConfig may serve it, refused otherwise at admission
// and by the provider.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="PARENT",type="string",JSONPath=".spec.forProvider.parent"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
// +kubebuilder:validation:XValidation:rule="has(self.spec.forProvider.shortName) || self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name is the policy's shortName unless spec.forProvider.shortName is set, and must then be 1-63 characters: lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen"
type OrganizationSecurityPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OrganizationSecurityPolicySpec   `json:"spec"`
	Status OrganizationSecurityPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OrganizationSecurityPolicyList contains a list of OrganizationSecurityPolicy.
type OrganizationSecurityPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OrganizationSecurityPolicy `json:"items"`
}

// OrganizationSecurityPolicy type metadata.
var (
	OrganizationSecurityPolicyKind             = reflect.TypeOf(OrganizationSecurityPolicy{}).Name()
	OrganizationSecurityPolicyGroupKind        = schema.GroupKind{Group: Group, Kind: OrganizationSecurityPolicyKind}.String()
	OrganizationSecurityPolicyKindAPIVersion   = OrganizationSecurityPolicyKind + "." + SchemeGroupVersion.String()
	OrganizationSecurityPolicyGroupVersionKind = SchemeGroupVersion.WithKind(OrganizationSecurityPolicyKind)
)

func init() {
	SchemeBuilder.Register(&OrganizationSecurityPolicy{}, &OrganizationSecurityPolicyList{})
}
