package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// OrganizationSecurityPolicyAssociationParameters are the configurable
// fields of an association of an organization security policy: where the
// policy applies.
// +kubebuilder:validation:XValidation:rule="has(self.securityPolicy) || has(self.securityPolicyRef) || has(self.securityPolicySelector)",message="set securityPolicy, securityPolicyRef or securityPolicySelector"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicyRef) || !has(self.securityPolicyRef.namespace)",message="securityPolicyRef must name an OrganizationSecurityPolicy in this object's namespace: remove securityPolicyRef.namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicySelector) || !has(self.securityPolicySelector.namespace)",message="securityPolicySelector must select an OrganizationSecurityPolicy in this object's namespace: remove securityPolicySelector.namespace"
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name)",message="name is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.excludedFolders) == has(oldSelf.excludedFolders)",message="excludedFolders is immutable: GCP cannot change an association; replace this object"
// +kubebuilder:validation:XValidation:rule="has(self.excludedProjects) == has(oldSelf.excludedProjects)",message="excludedProjects is immutable: GCP cannot change an association; replace this object"
// +kubebuilder:validation:XValidation:rule="!self.attachmentId.startsWith('projects/') || (!has(self.excludedFolders) && !has(self.excludedProjects))",message="an association attached to a project has nothing below it to exclude: remove excludedFolders and excludedProjects"
type OrganizationSecurityPolicyAssociationParameters struct {
	// SecurityPolicy is the numeric id of the organization policy to
	// attach. Usually resolved from securityPolicyRef or
	// securityPolicySelector. Immutable once set.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,20}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="securityPolicy is immutable: create an association of the other policy"
	// +crossplane:generate:reference:type=OrganizationSecurityPolicy
	SecurityPolicy *string `json:"securityPolicy,omitempty"`

	// SecurityPolicyRef references an OrganizationSecurityPolicy in the
	// same namespace.
	// +optional
	SecurityPolicyRef *xpv2.NamespacedReference `json:"securityPolicyRef,omitempty"`

	// SecurityPolicySelector selects an OrganizationSecurityPolicy in the
	// same namespace.
	// +optional
	SecurityPolicySelector *xpv2.NamespacedSelector `json:"securityPolicySelector,omitempty"`

	// AttachmentID is where the policy applies: organizations/N (the whole
	// organization), folders/N or projects/P. An attachment point has at
	// most one association of a CLOUD_ARMOR policy. Immutable.
	// +kubebuilder:validation:Pattern=`^((organizations|folders)/[0-9]{1,20}|projects/[a-z0-9][-a-z0-9:.]{0,62})$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="attachmentId is immutable: create an association for the other attachment point"
	AttachmentID string `json:"attachmentId"`

	// ExcludedFolders are folders below the attachment point where the
	// policy does not apply (folders/N), for example a sandbox. Immutable:
	// GCP has no call that changes an association.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Pattern=`^folders/[0-9]{1,20}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="excludedFolders is immutable: GCP cannot change an association; replace this object"
	ExcludedFolders []string `json:"excludedFolders,omitempty"`

	// ExcludedProjects are projects below the attachment point where the
	// policy does not apply (projects/P). Immutable.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Pattern=`^projects/[a-z0-9][-a-z0-9:.]{0,62}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="excludedProjects is immutable: GCP cannot change an association; replace this object"
	ExcludedProjects []string `json:"excludedProjects,omitempty"`

	// Name of the association within its policy. Defaults to
	// metadata.name. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="name is immutable"
	Name *string `json:"name,omitempty"`
}

// OrganizationSecurityPolicyAssociationObservation is the association as
// GCP reports it.
type OrganizationSecurityPolicyAssociationObservation struct {
	// SecurityPolicyID is the id of the attached policy.
	// +optional
	SecurityPolicyID string `json:"securityPolicyId,omitempty"`
	// AttachmentID is where the policy applies.
	// +optional
	AttachmentID string `json:"attachmentId,omitempty"`
	// DisplayName is the attached policy's short name.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// ExcludedFolders and ExcludedProjects are where the policy does not
	// apply below the attachment point.
	// +optional
	// +listType=atomic
	ExcludedFolders []string `json:"excludedFolders,omitempty"`
	// +optional
	// +listType=atomic
	ExcludedProjects []string `json:"excludedProjects,omitempty"`
}

// An OrganizationSecurityPolicyAssociationSpec defines the desired state of
// an OrganizationSecurityPolicyAssociation. Attaching a policy changes what
// every project below the attachment point enforces, so only a
// ClusterProviderConfig may serve it.
// +kubebuilder:validation:XValidation:rule="!has(self.providerConfigRef) || self.providerConfigRef.kind == 'ClusterProviderConfig'",message="an OrganizationSecurityPolicyAssociation changes what every project below its attachment point enforces, so it may only use a ClusterProviderConfig: set providerConfigRef.kind to ClusterProviderConfig (a namespaced ProviderConfig is refused)"
type OrganizationSecurityPolicyAssociationSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              OrganizationSecurityPolicyAssociationParameters `json:"forProvider"`
}

// An OrganizationSecurityPolicyAssociationStatus represents the observed
// state of an OrganizationSecurityPolicyAssociation.
type OrganizationSecurityPolicyAssociationStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 OrganizationSecurityPolicyAssociationObservation `json:"atProvider,omitempty"`
	// DryRun is what the provider last reported while the object was in
	// dry run; addAssociation takes no validateOnly, so GCP is never asked.
	// +optional
	DryRun *v1beta1.DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// An OrganizationSecurityPolicyAssociation attaches an
// OrganizationSecurityPolicy to an organization, a folder or a project
// (compute v1 organizationSecurityPolicies.addAssociation). Its external
// name is the association's name. Only a ClusterProviderConfig may serve
// it, refused otherwise at admission and by the provider.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="POLICY",type="string",JSONPath=".spec.forProvider.securityPolicy"
// +kubebuilder:printcolumn:name="ATTACHMENT",type="string",JSONPath=".spec.forProvider.attachmentId"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
// +kubebuilder:validation:XValidation:rule="has(self.spec.forProvider.name) || self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name is the association's name unless spec.forProvider.name is set, and must then be 1-63 characters: lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen"
type OrganizationSecurityPolicyAssociation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OrganizationSecurityPolicyAssociationSpec   `json:"spec"`
	Status OrganizationSecurityPolicyAssociationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OrganizationSecurityPolicyAssociationList contains a list of
// OrganizationSecurityPolicyAssociation.
type OrganizationSecurityPolicyAssociationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OrganizationSecurityPolicyAssociation `json:"items"`
}

// OrganizationSecurityPolicyAssociation type metadata.
var (
	OrganizationSecurityPolicyAssociationKind             = reflect.TypeOf(OrganizationSecurityPolicyAssociation{}).Name()
	OrganizationSecurityPolicyAssociationGroupKind        = schema.GroupKind{Group: Group, Kind: OrganizationSecurityPolicyAssociationKind}.String()
	OrganizationSecurityPolicyAssociationKindAPIVersion   = OrganizationSecurityPolicyAssociationKind + "." + SchemeGroupVersion.String()
	OrganizationSecurityPolicyAssociationGroupVersionKind = SchemeGroupVersion.WithKind(OrganizationSecurityPolicyAssociationKind)
)

func init() {
	SchemeBuilder.Register(&OrganizationSecurityPolicyAssociation{}, &OrganizationSecurityPolicyAssociationList{})
}
