package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// OrganizationSecurityPolicyRuleParameters are the configurable fields of
// one rule of an organization security policy. The rule is identified by
// (policy id, priority).
// +kubebuilder:validation:XValidation:rule="has(self.securityPolicy) || has(self.securityPolicyRef) || has(self.securityPolicySelector)",message="one of securityPolicy, securityPolicyRef or securityPolicySelector is required"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.securityPolicy) || (has(self.securityPolicy) && self.securityPolicy == oldSelf.securityPolicy)",message="securityPolicy is immutable: delete this rule and create one for the other policy"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicyRef) || !has(self.securityPolicyRef.namespace)",message="securityPolicyRef must name an OrganizationSecurityPolicy in this rule's namespace: remove securityPolicyRef.namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicySelector) || !has(self.securityPolicySelector.namespace)",message="securityPolicySelector must select an OrganizationSecurityPolicy in this rule's namespace: remove securityPolicySelector.namespace"
// +kubebuilder:validation:XValidation:rule="has(self.match) || has(self.networkMatch)",message="a rule needs match or networkMatch"
type OrganizationSecurityPolicyRuleParameters struct {
	// SecurityPolicy is the numeric id of the organization policy this rule
	// belongs to. Usually resolved from securityPolicyRef or
	// securityPolicySelector. Immutable once set.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,20}$`
	// +crossplane:generate:reference:type=OrganizationSecurityPolicy
	SecurityPolicy *string `json:"securityPolicy,omitempty"`

	// SecurityPolicyRef references an OrganizationSecurityPolicy in the same
	// namespace.
	// +optional
	SecurityPolicyRef *xpv2.NamespacedReference `json:"securityPolicyRef,omitempty"`

	// SecurityPolicySelector selects an OrganizationSecurityPolicy in the same
	// namespace.
	// +optional
	SecurityPolicySelector *xpv2.NamespacedSelector `json:"securityPolicySelector,omitempty"`

	// Priority of the rule: 0 is evaluated first. 2147483647 is the
	// policy's default rule, set through the OrganizationSecurityPolicy's
	// defaultRule, never by a rule object. Immutable.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483646
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="priority is immutable: create a new rule at the other priority"
	Priority int64 `json:"priority"`

	v1beta1.RuleParameters `json:",inline"`
}

// OrganizationSecurityPolicyRuleObservation is the observed state of an
// OrganizationSecurityPolicyRule.
type OrganizationSecurityPolicyRuleObservation struct {
	// SecurityPolicyID is the id of the organization policy the rule lives in.
	// +optional
	SecurityPolicyID string `json:"securityPolicyId,omitempty"`

	// SecurityPolicySelfLink of the policy the rule lives in.
	// +optional
	SecurityPolicySelfLink string `json:"securityPolicySelfLink,omitempty"`

	// Rule as GCP reports it.
	// +optional
	Rule *v1beta1.RuleObservation `json:"rule,omitempty"`
}

// An OrganizationSecurityPolicyRuleSpec defines the desired state of an
// OrganizationSecurityPolicyRule. A rule of an organization policy affects
// every project below the points the policy is associated with, so only a
// ClusterProviderConfig may serve it.
// +kubebuilder:validation:XValidation:rule="!has(self.providerConfigRef) || self.providerConfigRef.kind == 'ClusterProviderConfig'",message="an OrganizationSecurityPolicyRule changes a rule every project below its organization or folder policy enforces, so it may only use a ClusterProviderConfig: set providerConfigRef.kind to ClusterProviderConfig (a namespaced ProviderConfig is refused)"
type OrganizationSecurityPolicyRuleSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              OrganizationSecurityPolicyRuleParameters `json:"forProvider"`
}

// An OrganizationSecurityPolicyRuleStatus represents the observed state of
// an OrganizationSecurityPolicyRule.
type OrganizationSecurityPolicyRuleStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 OrganizationSecurityPolicyRuleObservation `json:"atProvider,omitempty"`
	// DryRun is what the provider last reported while the object was in
	// dry run (cloudarmor.armorplane.io/dry-run). compute v1 has no
	// validateOnly on any organization policy method, so GCP is never
	// asked.
	// +optional
	DryRun *v1beta1.DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// An OrganizationSecurityPolicyRule is one rule of a hierarchical Cloud
// Armor policy (compute v1 organizationSecurityPolicies addRule, patchRule,
// removeRule), identified by its policy's id and its priority. Its external
// name is "<policy id>/<priority>".
//
// GCP gives organization rules no labels, so which object owns a rule is
// decided from the cluster's objects: an OrganizationSecurityPolicy of the
// same id whose spec.forProvider.rules is set owns every non-default rule,
// else the oldest OrganizationSecurityPolicyRule for the priority, in any
// namespace. An object refused makes no change to GCP and leaves the rule in
// place when deleted.
//
// Only a ClusterProviderConfig may serve it, refused otherwise at admission
// and by the provider.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="POLICY",type="string",JSONPath=".spec.forProvider.securityPolicy"
// +kubebuilder:printcolumn:name="PRIORITY",type="integer",JSONPath=".spec.forProvider.priority"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
type OrganizationSecurityPolicyRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OrganizationSecurityPolicyRuleSpec   `json:"spec"`
	Status OrganizationSecurityPolicyRuleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OrganizationSecurityPolicyRuleList contains a list of
// OrganizationSecurityPolicyRule.
type OrganizationSecurityPolicyRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OrganizationSecurityPolicyRule `json:"items"`
}

// OrganizationSecurityPolicyRule type metadata.
var (
	OrganizationSecurityPolicyRuleKind             = reflect.TypeOf(OrganizationSecurityPolicyRule{}).Name()
	OrganizationSecurityPolicyRuleGroupKind        = schema.GroupKind{Group: Group, Kind: OrganizationSecurityPolicyRuleKind}.String()
	OrganizationSecurityPolicyRuleKindAPIVersion   = OrganizationSecurityPolicyRuleKind + "." + SchemeGroupVersion.String()
	OrganizationSecurityPolicyRuleGroupVersionKind = SchemeGroupVersion.WithKind(OrganizationSecurityPolicyRuleKind)
)

func init() {
	SchemeBuilder.Register(&OrganizationSecurityPolicyRule{}, &OrganizationSecurityPolicyRuleList{})
}
