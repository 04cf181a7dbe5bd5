package v1beta1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// SecurityPolicyRuleParameters are the configurable fields of a
// SecurityPolicyRule. The rule is identified by (policy, priority).
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.securityPolicy) || (has(self.securityPolicy) && self.securityPolicy == oldSelf.securityPolicy)",message="securityPolicy is immutable: delete this rule and create one for the other policy"
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region)",message="region is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.securityPolicy) || has(self.securityPolicyRef) || has(self.securityPolicySelector)",message="one of securityPolicy, securityPolicyRef or securityPolicySelector is required"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicyRef) || !has(self.securityPolicyRef.namespace)",message="securityPolicyRef must name a SecurityPolicy in this rule's namespace: remove securityPolicyRef.namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.securityPolicySelector) || !has(self.securityPolicySelector.namespace)",message="securityPolicySelector must select a SecurityPolicy in this rule's namespace: remove securityPolicySelector.namespace"
// +kubebuilder:validation:XValidation:rule="self.priority == 2147483647 || has(self.match) || has(self.networkMatch)",message="a rule needs match or networkMatch (only the default rule, priority 2147483647, matches everything implicitly)"
// +kubebuilder:validation:XValidation:rule="self.priority != 2147483647 || !has(self.match) || (has(self.match.config) && self.match.config.srcIpRanges == ['*']) || (has(self.match.expr) && self.match.expr.expression == 'true')",message="the default rule (priority 2147483647) matches every request: leave match unset, or set srcIpRanges [\"*\"] or expression \"true\""
type SecurityPolicyRuleParameters struct {
	// SecurityPolicy is the GCP name of the policy this rule belongs to.
	// Usually resolved from securityPolicyRef or securityPolicySelector.
	// Immutable once set.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +crossplane:generate:reference:type=SecurityPolicy
	SecurityPolicy *string `json:"securityPolicy,omitempty"`

	// SecurityPolicyRef references a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicyRef *xpv2.NamespacedReference `json:"securityPolicyRef,omitempty"`

	// SecurityPolicySelector selects a SecurityPolicy in the same namespace.
	// +optional
	SecurityPolicySelector *xpv2.NamespacedSelector `json:"securityPolicySelector,omitempty"`

	// Project of the policy. Defaults to the ProviderConfig's projectID.
	// Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable"
	Project *string `json:"project,omitempty"`

	// Region of a regional policy. Unset means a global policy. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable"
	Region *string `json:"region,omitempty"`

	// Priority of the rule: 0 is evaluated first. 2147483647 addresses the
	// policy's default rule, which this object then patches but never
	// removes. Immutable.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="priority is immutable: create a new rule at the other priority"
	Priority int64 `json:"priority"`

	RuleParameters `json:",inline"`
}

// SecurityPolicyRuleObservation is the observed state of a SecurityPolicyRule.
type SecurityPolicyRuleObservation struct {
	// SecurityPolicy is the GCP policy name the rule lives in.
	SecurityPolicy string `json:"securityPolicy,omitempty"`

	// PolicySelfLink of the policy the rule lives in.
	PolicySelfLink string `json:"policySelfLink,omitempty"`

	// Rule as GCP reports it.
	// +optional
	Rule *RuleObservation `json:"rule,omitempty"`
}

// A SecurityPolicyRuleSpec defines the desired state of a SecurityPolicyRule.
type SecurityPolicyRuleSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              SecurityPolicyRuleParameters `json:"forProvider"`
}

// A SecurityPolicyRuleStatus represents the observed state of a
// SecurityPolicyRule.
type SecurityPolicyRuleStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityPolicyRuleObservation `json:"atProvider,omitempty"`

	// DryRun is what the provider last asked GCP while the object was in
	// dry run (annotation cloudarmor.armorplane.io/dry-run); unset
	// otherwise.
	// +optional
	DryRun *DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityPolicyRule is one rule of a Cloud Armor security policy,
// identified by its policy and priority. Its external name is
// "<policy>/<priority>".
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="PRIORITY",type="integer",JSONPath=".spec.forProvider.priority"
// +kubebuilder:printcolumn:name="ACTION",type="string",JSONPath=".spec.forProvider.action"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
type SecurityPolicyRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityPolicyRuleSpec   `json:"spec"`
	Status SecurityPolicyRuleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityPolicyRuleList contains a list of SecurityPolicyRule.
type SecurityPolicyRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityPolicyRule `json:"items"`
}

// SecurityPolicyRule type metadata.
var (
	SecurityPolicyRuleKind             = reflect.TypeOf(SecurityPolicyRule{}).Name()
	SecurityPolicyRuleGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityPolicyRuleKind}.String()
	SecurityPolicyRuleKindAPIVersion   = SecurityPolicyRuleKind + "." + SchemeGroupVersion.String()
	SecurityPolicyRuleGroupVersionKind = SchemeGroupVersion.WithKind(SecurityPolicyRuleKind)
)

func init() {
	SchemeBuilder.Register(&SecurityPolicyRule{}, &SecurityPolicyRuleList{})
}
