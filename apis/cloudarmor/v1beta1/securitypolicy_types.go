package v1beta1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// SecurityPolicyParameters are the configurable fields of a SecurityPolicy.
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region)",message="region is immutable: a policy cannot move between global and regional"
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project)",message="project is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.type) == has(oldSelf.type)",message="type is immutable: it can only be set when the policy is created"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'CLOUD_ARMOR_EDGE' || !has(self.region)",message="CLOUD_ARMOR_EDGE policies are global: remove region"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'CLOUD_ARMOR_NETWORK' || has(self.region)",message="CLOUD_ARMOR_NETWORK policies are regional: set region"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultRule) || !has(self.defaultRule.match) || (has(self.defaultRule.match.config) && self.defaultRule.match.config.srcIpRanges == ['*']) || (has(self.defaultRule.match.expr) && self.defaultRule.match.expr.expression == 'true')",message="defaultRule matches every request: leave its match unset, or set srcIpRanges [\"*\"] or expression \"true\""
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || (!has(self.region) && (!has(self.type) || self.type == 'CLOUD_ARMOR')) || self.rules.all(r, r.action != 'redirect' && (!has(r.headerAction) || !has(r.headerAction.requestHeadersToAdds)))",message="redirect rules and headerAction are only supported in global policies of type CLOUD_ARMOR"
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || (has(self.type) && self.type == 'CLOUD_ARMOR_INTERNAL_SERVICE') || self.rules.all(r, r.action != 'fairshare')",message="fairshare rules are only supported in policies of type CLOUD_ARMOR_INTERNAL_SERVICE"
// +kubebuilder:validation:XValidation:rule="(!has(self.adaptiveProtectionConfig) && !has(self.recaptchaOptionsConfig)) || (!has(self.region) && (!has(self.type) || self.type == 'CLOUD_ARMOR'))",message="adaptiveProtectionConfig and recaptchaOptionsConfig are only supported in global policies of type CLOUD_ARMOR"
// +kubebuilder:validation:XValidation:rule="!has(self.ddosProtectionConfig) || (has(self.type) && self.type == 'CLOUD_ARMOR_NETWORK')",message="ddosProtectionConfig is only supported in regional policies of type CLOUD_ARMOR_NETWORK"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'CLOUD_ARMOR_NETWORK') || (!has(self.userDefinedFields) && (!has(self.rules) || self.rules.all(r, !has(r.networkMatch))))",message="userDefinedFields and networkMatch are only supported in policies of type CLOUD_ARMOR_NETWORK"
type SecurityPolicyParameters struct {
	// Project that holds the policy. Defaults to the ProviderConfig's
	// projectID. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="project is immutable"
	Project *string `json:"project,omitempty"`

	// Region makes this a regional policy (regionSecurityPolicies). Unset means
	// a global policy. Immutable.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="region is immutable: a policy cannot move between regions"
	Region *string `json:"region,omitempty"`

	// Type of the policy: CLOUD_ARMOR (GCP's default), CLOUD_ARMOR_EDGE,
	// CLOUD_ARMOR_NETWORK, or CLOUD_ARMOR_INTERNAL_SERVICE (preview only:
	// the status gets a Warning condition). GCP adds types, so any value in
	// GCP's form is accepted; one the provider does not know is passed to
	// GCP with a Warning condition, and GCP's refusal, if any, is reported
	// in Synced. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable: it can only be set when the policy is created"
	Type *string `json:"type,omitempty"`

	// Description of the policy.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description *string `json:"description,omitempty"`

	// Labels of the policy, set through setLabels. Unset leaves GCP's labels
	// alone; {} removes them all. The provider adds its own labels, which
	// are not the user's to set: the owner label (armorplane-owner) and the
	// labels that say which object wrote the policy (crossplane-kind,
	// crossplane-name, crossplane-namespace, crossplane-providerconfig and
	// crossplane-providerconfig-kind). GCP allows 64 labels; these take 6.
	// +optional
	// +kubebuilder:validation:MaxProperties=58
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['armorplane-owner', 'crossplane-kind', 'crossplane-name', 'crossplane-namespace', 'crossplane-providerconfig', 'crossplane-providerconfig-kind'])",message="armorplane-owner and the crossplane-kind, crossplane-name, crossplane-namespace, crossplane-providerconfig and crossplane-providerconfig-kind labels are set by the provider: remove them from labels"
	Labels map[string]string `json:"labels"` // no omitempty: {} must survive a round trip

	// AdaptiveProtectionConfig configures Adaptive Protection.
	// +optional
	AdaptiveProtectionConfig *AdaptiveProtectionConfig `json:"adaptiveProtectionConfig,omitempty"`

	// AdvancedOptionsConfig configures request parsing and logging.
	// +optional
	AdvancedOptionsConfig *AdvancedOptionsConfig `json:"advancedOptionsConfig,omitempty"`

	// RecaptchaOptionsConfig configures reCAPTCHA for redirect rules.
	// +optional
	RecaptchaOptionsConfig *RecaptchaOptionsConfig `json:"recaptchaOptionsConfig,omitempty"`

	// DdosProtectionConfig configures network DDoS protection and its
	// Adaptive Protection. Only CLOUD_ARMOR_NETWORK policies have it.
	// +optional
	DdosProtectionConfig *DdosProtectionConfig `json:"ddosProtectionConfig,omitempty"`

	// UserDefinedFields declares packet fields that networkMatch can test.
	// +optional
	// +listType=map
	// +listMapKey=name
	UserDefinedFields []UserDefinedField `json:"userDefinedFields,omitempty"`

	// DefaultRule sets the policy's default rule (priority 2147483647), which
	// matches every request. Unset leaves whatever default rule GCP has alone.
	// Its match is always "*"; set action to deny(403) for an allowlist.
	// +optional
	DefaultRule *RuleParameters `json:"defaultRule,omitempty"`

	// Rules are inline rules. Unset: this SecurityPolicy never touches
	// non-default rules, which SecurityPolicyRule objects, other tools or the
	// console own. Set (even to []): this SecurityPolicy owns every
	// non-default priority except those claimed by SecurityPolicyRule objects
	// for the same GCP policy, and removes rules at other priorities.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=priority
	Rules []PolicyRule `json:"rules"` // no omitempty: [] (own every rule) must not become unset (hands off)
}

// PolicyRule is an inline rule of a SecurityPolicy.
// +kubebuilder:validation:XValidation:rule="has(self.match) || has(self.networkMatch)",message="a rule needs match or networkMatch"
type PolicyRule struct {
	// Priority of the rule: 0 is evaluated first. Unique within the policy;
	// 2147483647 belongs to the default rule and is set through defaultRule.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483646
	Priority int64 `json:"priority"`

	RuleParameters `json:",inline"`
}

// AdaptiveProtectionConfig configures Adaptive Protection.
type AdaptiveProtectionConfig struct {
	// Layer7DdosDefenseConfig configures layer 7 DDoS defense.
	// +optional
	Layer7DdosDefenseConfig *Layer7DdosDefenseConfig `json:"layer7DdosDefenseConfig,omitempty"`
}

// Layer7DdosDefenseConfig configures layer 7 DDoS defense.
type Layer7DdosDefenseConfig struct {
	// Enable layer 7 DDoS defense.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// RuleVisibility of suggested rules: STANDARD or PREMIUM.
	// +optional
	// +kubebuilder:validation:Enum=STANDARD;PREMIUM
	RuleVisibility *string `json:"ruleVisibility,omitempty"`

	// ThresholdConfigs tune detection and auto-deploy per traffic class.
	// +optional
	// +listType=map
	// +listMapKey=name
	ThresholdConfigs []ThresholdConfig `json:"thresholdConfigs,omitempty"`
}

// ThresholdConfig tunes Adaptive Protection for one traffic class.
type ThresholdConfig struct {
	// Name of the threshold config, unique within the policy.
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`

	// AutoDeployLoadThreshold triggers auto-deploy above this load.
	// +optional
	AutoDeployLoadThreshold *float64 `json:"autoDeployLoadThreshold,omitempty"`

	// AutoDeployConfidenceThreshold triggers auto-deploy above this confidence.
	// +optional
	AutoDeployConfidenceThreshold *float64 `json:"autoDeployConfidenceThreshold,omitempty"`

	// AutoDeployImpactedBaselineThreshold limits auto-deploy below this share
	// of impacted baseline traffic.
	// +optional
	AutoDeployImpactedBaselineThreshold *float64 `json:"autoDeployImpactedBaselineThreshold,omitempty"`

	// AutoDeployExpirationSec is how long an auto-deployed rule lasts.
	// +optional
	AutoDeployExpirationSec *int64 `json:"autoDeployExpirationSec,omitempty"`

	// DetectionLoadThreshold detects attacks above this load.
	// +optional
	DetectionLoadThreshold *float64 `json:"detectionLoadThreshold,omitempty"`

	// DetectionAbsoluteQps detects attacks above this rate.
	// +optional
	DetectionAbsoluteQps *float64 `json:"detectionAbsoluteQps,omitempty"`

	// DetectionRelativeToBaselineQps detects attacks above this multiple of
	// the baseline rate.
	// +optional
	DetectionRelativeToBaselineQps *float64 `json:"detectionRelativeToBaselineQps,omitempty"`

	// TrafficGranularityConfigs select the traffic class.
	// +optional
	// +listType=atomic
	TrafficGranularityConfigs []TrafficGranularityConfig `json:"trafficGranularityConfigs,omitempty"`
}

// TrafficGranularityConfig selects a traffic class by host or path.
type TrafficGranularityConfig struct {
	// Type of granularity: HTTP_HEADER_HOST or HTTP_PATH.
	// +kubebuilder:validation:Enum=HTTP_HEADER_HOST;HTTP_PATH;UNSPECIFIED_TYPE
	Type string `json:"type"`

	// Value the host or path must equal.
	// +optional
	Value *string `json:"value,omitempty"`

	// EnableEachUniqueValue treats each value as its own class.
	// +optional
	EnableEachUniqueValue *bool `json:"enableEachUniqueValue,omitempty"`
}

// AdvancedOptionsConfig configures request parsing and logging.
type AdvancedOptionsConfig struct {
	// JsonParsing parses JSON bodies for WAF inspection: DISABLED, STANDARD
	// or STANDARD_WITH_GRAPHQL. GCP adds modes, so another value in GCP's
	// form is passed to GCP with a Warning condition.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	JsonParsing *string `json:"jsonParsing,omitempty"` //nolint:revive // GCP's JSON name.

	// JsonCustomConfig lists extra JSON content types.
	// +optional
	JsonCustomConfig *JSONCustomConfig `json:"jsonCustomConfig,omitempty"` //nolint:revive // GCP's JSON name.

	// LogLevel of request logging: NORMAL or VERBOSE.
	// +optional
	// +kubebuilder:validation:Enum=NORMAL;VERBOSE
	LogLevel *string `json:"logLevel,omitempty"`

	// UserIpRequestHeaders name headers that carry the client IP.
	// +optional
	// +listType=atomic
	UserIpRequestHeaders []string `json:"userIpRequestHeaders,omitempty"` //nolint:revive // GCP's JSON name.

	// RequestBodyInspectionSize is how much of the body WAF inspects: 8KB,
	// 16KB, 32KB, 48KB or 64KB. GCP has raised the limit before, so another
	// size is passed to GCP with a Warning condition.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*KB$`
	RequestBodyInspectionSize *string `json:"requestBodyInspectionSize,omitempty"`
}

// JSONCustomConfig lists extra JSON content types.
type JSONCustomConfig struct {
	// ContentTypes parsed as JSON.
	// +listType=atomic
	ContentTypes []string `json:"contentTypes"`
}

// RecaptchaOptionsConfig configures reCAPTCHA.
type RecaptchaOptionsConfig struct {
	// RedirectSiteKey is the reCAPTCHA site key for GOOGLE_RECAPTCHA redirects.
	RedirectSiteKey string `json:"redirectSiteKey"`
}

// DdosProtectionConfig configures network DDoS protection of a
// CLOUD_ARMOR_NETWORK policy. A field left unset keeps GCP's value.
// +kubebuilder:validation:MinProperties=1
type DdosProtectionConfig struct {
	// DdosProtection is STANDARD, ADVANCED or ADVANCED_PREVIEW. ADVANCED and
	// ADVANCED_PREVIEW need Cloud Armor Enterprise (the status gets a
	// Warning condition saying so). Another value in GCP's form is passed to
	// GCP with a Warning condition.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	DdosProtection *string `json:"ddosProtection,omitempty"`

	// DdosAdaptiveProtection turns Adaptive Protection for network load
	// balancers ENABLED, DISABLED, or PREVIEW (alerts without mitigation).
	// Another value in GCP's form is passed to GCP with a Warning condition.
	// GCP's unspecified values are not accepted: leave the field unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['DDOS_ADAPTIVE_PROTECTION_UNSPECIFIED', 'UNSPECIFIED_ADAPTIVE_PROTECTION'])",message="leave ddosAdaptiveProtection unset instead of setting GCP's unspecified value"
	DdosAdaptiveProtection *string `json:"ddosAdaptiveProtection,omitempty"`

	// DdosImpactedBaselineThreshold is the largest fraction (0 to 1) of
	// non-abuse baseline traffic a DDoS mitigation may block; mitigations
	// with more collateral damage are not deployed. GCP advises leaving it
	// unset unless logs show false positives with high collateral damage.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	DdosImpactedBaselineThreshold *float64 `json:"ddosImpactedBaselineThreshold,omitempty"`
}

// DdosProtectionConfigObservation is a policy's network DDoS protection as
// GCP reports it.
type DdosProtectionConfigObservation struct {
	// DdosProtection level.
	// +optional
	DdosProtection string `json:"ddosProtection,omitempty"`

	// DdosAdaptiveProtection state.
	// +optional
	DdosAdaptiveProtection string `json:"ddosAdaptiveProtection,omitempty"`

	// DdosImpactedBaselineThreshold as GCP holds it (a float32).
	// +optional
	DdosImpactedBaselineThreshold float64 `json:"ddosImpactedBaselineThreshold,omitempty"`
}

// UserDefinedField declares a packet field for networkMatch.
type UserDefinedField struct {
	// Name of the field.
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`

	// Base of the offset: IPV4, IPV6, TCP or UDP.
	// +kubebuilder:validation:Enum=IPV4;IPV6;TCP;UDP
	Base string `json:"base"`

	// Offset in bytes from the base.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Offset *int64 `json:"offset,omitempty"`

	// Size of the field in bytes (1 to 4).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4
	Size *int64 `json:"size,omitempty"`

	// Mask applied to the field, in hex (e.g. 0x1fff).
	// +optional
	Mask *string `json:"mask,omitempty"`
}

// SecurityPolicyObservation is the observed state of a SecurityPolicy.
type SecurityPolicyObservation struct {
	// ID is GCP's numeric id of the policy.
	ID string `json:"id,omitempty"`

	// SelfLink of the policy.
	SelfLink string `json:"selfLink,omitempty"`

	// Fingerprint GCP uses for optimistic locking of patches.
	Fingerprint string `json:"fingerprint,omitempty"`

	// LabelFingerprint GCP uses for optimistic locking of setLabels.
	LabelFingerprint string `json:"labelFingerprint,omitempty"`

	// CreationTimestamp as GCP reports it.
	CreationTimestamp string `json:"creationTimestamp,omitempty"`

	// Type as GCP reports it (server default included).
	Type string `json:"type,omitempty"`

	// Region URL of a regional policy.
	Region string `json:"region,omitempty"`

	// DdosProtectionConfig as GCP holds it, when it holds one.
	// +optional
	DdosProtectionConfig *DdosProtectionConfigObservation `json:"ddosProtectionConfig,omitempty"`

	// RuleCount is the number of rules GCP holds, default rule included.
	RuleCount int `json:"ruleCount,omitempty"`

	// Rules are the rules GCP holds, ordered by priority, each with every
	// field GCP returns in normalised form. Rules beyond a size budget
	// (256 KiB of JSON, so that status stays well under the API server's
	// object size limit next to a spec of hundreds of rules) carry only
	// priority and action; rulesSummarized counts them. Their full form is
	// on their SecurityPolicyRule object, if any, or in GCP.
	// +optional
	// +listType=atomic
	Rules []RuleObservation `json:"rules,omitempty"`

	// RulesSummarized is the number of rules that exceeded the size budget
	// and show only priority and action.
	// +optional
	RulesSummarized int `json:"rulesSummarized,omitempty"`

	// UsedBy are the GCP objects that use the policy: the backend services
	// (global and regional) whose securityPolicy or edgeSecurityPolicy
	// names it, and, for a CLOUD_ARMOR_NETWORK policy, the network edge
	// security services that apply it. Read with one aggregated list per
	// project and poll interval, shared by every policy of the project.
	// At most 50 are listed, sorted by name; usedByCount counts them all.
	// Unset for a policy type whose users are not read
	// (CLOUD_ARMOR_INTERNAL_SERVICE) and while they cannot be read (see
	// the Attached condition).
	// +optional
	// +listType=atomic
	UsedBy []PolicyUserObservation `json:"usedBy,omitempty"`

	// UsedByCount is the number of GCP objects that use the policy.
	// +optional
	UsedByCount *int `json:"usedByCount,omitempty"`
}

// PolicyUserObservation is a GCP object that uses a security policy.
type PolicyUserObservation struct {
	// Name is the object's relative resource name, e.g.
	// projects/p/global/backendServices/web or
	// projects/p/regions/r/networkEdgeSecurityServices/edge.
	Name string `json:"name"`
	// Field of the object that names the policy: securityPolicy or
	// edgeSecurityPolicy.
	Field string `json:"field"`
}

// A SecurityPolicySpec defines the desired state of a SecurityPolicy.
type SecurityPolicySpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              SecurityPolicyParameters `json:"forProvider"`

	// AllowedRules says which namespaces' SecurityPolicyRule objects may
	// claim priorities of this policy. Unset: only rules in this policy's
	// own namespace. It is not a GCP field: it decides who in this cluster
	// may write the policy's rules.
	// +optional
	AllowedRules *AllowedRules `json:"allowedRules,omitempty"`
}

// AllowedRules says which SecurityPolicyRule objects may claim priorities of
// a policy, after Gateway API's allowedRoutes.
type AllowedRules struct {
	// Namespaces whose SecurityPolicyRule objects may claim priorities.
	// +optional
	Namespaces *RuleNamespaces `json:"namespaces,omitempty"`
}

// FromNamespaces says where rules may come from.
// +kubebuilder:validation:Enum=Same;All;Selector
type FromNamespaces string

// Where rules may come from.
const (
	// NamespacesFromSame admits rules in the policy's own namespace only.
	NamespacesFromSame FromNamespaces = "Same"
	// NamespacesFromAll admits rules from every namespace.
	NamespacesFromAll FromNamespaces = "All"
	// NamespacesFromSelector admits rules from the policy's own namespace
	// and from namespaces whose labels match the selector.
	NamespacesFromSelector FromNamespaces = "Selector"
)

// RuleNamespaces selects the namespaces whose rules a policy admits.
// +kubebuilder:validation:XValidation:rule="self.from == 'Selector' ? has(self.selector) : !has(self.selector)",message="selector is required when from is Selector, and only then"
type RuleNamespaces struct {
	// From is Same (this policy's namespace), All, or Selector (this
	// policy's namespace and the namespaces selector matches).
	// +kubebuilder:default=Same
	From FromNamespaces `json:"from"`

	// Selector matches the labels of the namespaces admitted when from is
	// Selector.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// A SecurityPolicyStatus represents the observed state of a SecurityPolicy.
type SecurityPolicyStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityPolicyObservation `json:"atProvider,omitempty"`

	// DryRun is what the provider last asked GCP while the object was in
	// dry run (annotation cloudarmor.armorplane.io/dry-run); unset
	// otherwise.
	// +optional
	DryRun *DryRunStatus `json:"dryRun,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityPolicy is a Google Cloud Armor security policy. Its external name
// is the GCP policy name, metadata.name unless crossplane.io/external-name
// says otherwise (set it to import an existing policy).
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="RULES",type="integer",JSONPath=".status.atProvider.ruleCount"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,cloudarmor}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name must be a valid Cloud Armor policy name: 1-63 characters, lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen"
type SecurityPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityPolicySpec   `json:"spec"`
	Status SecurityPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityPolicyList contains a list of SecurityPolicy.
type SecurityPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityPolicy `json:"items"`
}

// SecurityPolicy type metadata.
var (
	SecurityPolicyKind             = reflect.TypeOf(SecurityPolicy{}).Name()
	SecurityPolicyGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityPolicyKind}.String()
	SecurityPolicyKindAPIVersion   = SecurityPolicyKind + "." + SchemeGroupVersion.String()
	SecurityPolicyGroupVersionKind = SchemeGroupVersion.WithKind(SecurityPolicyKind)
)

func init() {
	SchemeBuilder.Register(&SecurityPolicy{}, &SecurityPolicyList{})
}
