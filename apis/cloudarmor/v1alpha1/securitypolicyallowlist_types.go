package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// AllowlistAddressGroup names the address group of mode addressGroup.
type AllowlistAddressGroup struct {
	// Name is the GCP name of the IPv4 group; IPv6 ranges go to <name>-ipv6.
	// A new name moves the ranges to new groups without a gap.
	// +kubebuilder:validation:MaxLength=58
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Capacity of each group, fixed by GCP when it creates the group.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Capacity int32 `json:"capacity,omitempty"`
}

// SecurityPolicyAllowlistSpec says which sources a policy allows, and where
// in the policy their ranges go.
// +kubebuilder:validation:XValidation:rule="self.priorityRange.first <= self.priorityRange.last",message="priorityRange.first must not exceed priorityRange.last"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'addressGroup' || has(self.addressGroup)",message="mode addressGroup needs addressGroup.name"
// +kubebuilder:validation:XValidation:rule="self.securityPolicy == oldSelf.securityPolicy",message="securityPolicy is immutable: create another SecurityPolicyAllowlist"
// +kubebuilder:validation:XValidation:rule="has(self.createPolicy) == has(oldSelf.createPolicy)",message="createPolicy cannot be added or removed: removing it would delete the policy the allowlist created"
// +kubebuilder:validation:XValidation:rule="has(self.project) == has(oldSelf.project) && (!has(self.project) || self.project == oldSelf.project)",message="project is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.region) == has(oldSelf.region) && (!has(self.region) || self.region == oldSelf.region)",message="region is immutable"
type SecurityPolicyAllowlistSpec struct {
	// SecurityPolicy is the GCP name of the policy the allow rules go into.
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	SecurityPolicy string `json:"securityPolicy"`

	// CreatePolicy makes the allowlist create the policy: a SecurityPolicy
	// object of its own, named as the GCP policy, which it deletes with
	// itself. Unset, the rules go into an existing policy, which the
	// allowlist never changes otherwise. The policy's status follows every
	// rule it holds; kept by the allowlist rather than composed beside it,
	// that churn never reaches Crossplane.
	// +optional
	CreatePolicy *AllowlistPolicy `json:"createPolicy,omitempty"`

	// Project of the policy. Defaults to the ProviderConfig's projectID.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9.:]{4,61}[a-z0-9]$`
	Project *string `json:"project,omitempty"`

	// Region of a regional policy. Unset means a global policy.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`
	Region *string `json:"region,omitempty"`

	// PriorityRange is the inclusive range of rule priorities this object
	// owns in the policy. It writes rules only inside it.
	PriorityRange AllowlistPriorityRange `json:"priorityRange"`

	// RuleDescription is the description of every rule (at most 64
	// characters, Cloud Armor's limit).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RuleDescription string `json:"ruleDescription,omitempty"`

	// Mode is where the ranges live: rules (allow rules of up to ten ranges
	// each, in priorityRange) or addressGroup (a Cloud Armor address group
	// per family, allowed by one rule at the lowest free priority of
	// priorityRange; needs Cloud Armor Enterprise). Switching either way
	// keeps what holds the ranges now until what replaces it is in GCP.
	// +optional
	// +kubebuilder:validation:Enum=rules;addressGroup
	// +kubebuilder:default=rules
	Mode string `json:"mode,omitempty"`

	// AddressGroup is the group of mode addressGroup.
	// +optional
	AddressGroup *AllowlistAddressGroup `json:"addressGroup,omitempty"`

	// Sources whose ranges the rules allow. Names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Sources []AllowlistSource `json:"sources"`

	// ProviderConfigRef is given to every rule this object keeps.
	// +optional
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// AllowlistPolicy is the policy an allowlist creates.
type AllowlistPolicy struct {
	// DefaultAction of the policy's default rule.
	// +optional
	// +kubebuilder:default="deny(403)"
	// +kubebuilder:validation:Enum="deny(403)";"deny(404)";"deny(502)";allow
	DefaultAction string `json:"defaultAction,omitempty"`

	// Description of the policy.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description string `json:"description,omitempty"`
}

// AllowlistPriorityRange is an inclusive range of rule priorities.
type AllowlistPriorityRange struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483646
	First int64 `json:"first"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483646
	Last int64 `json:"last"`
}

// AllowlistSource is one named source of ranges: fixed CIDRs, or what an
// AddressSet the provider keeps for it reads (Nodes, instances, Cloud NAT,
// or objects of the allowlist's namespace).
// +kubebuilder:validation:XValidation:rule="(has(self.cidrs) ? 1 : 0) + (has(self.nodes) ? 1 : 0) + (has(self.instances) ? 1 : 0) + (has(self.nat) ? 1 : 0) + (has(self.services) ? 1 : 0) + (has(self.object) ? 1 : 0) + (has(self.configMap) ? 1 : 0) == 1",message="a source has exactly one of cidrs, nodes, instances, nat, services, object and configMap"
type AllowlistSource struct {
	// Name of the source, as status and messages call it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// CIDRs or single addresses, IPv4 or IPv6. A CIDR with host bits set is
	// refused rather than silently widened.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=50
	CIDRs []string `json:"cidrs,omitempty"`

	// Nodes selects Kubernetes Nodes whose addresses are allowed. The
	// provider keeps an AddressSet for it (named <allowlist>-nodes-<source>)
	// and follows its addresses as it computes them.
	// +optional
	Nodes *AllowlistNodes `json:"nodes,omitempty"`

	// Instances selects Compute Engine instances whose addresses are
	// allowed, listed with the allowlist's ProviderConfig. The provider
	// keeps an AddressSet for it too (<allowlist>-nodes-<source>).
	// +optional
	Instances *AllowlistInstances `json:"instances,omitempty"`

	// NAT selects Cloud NAT gateways whose addresses are allowed, read with
	// the allowlist's ProviderConfig. The provider keeps an AddressSet for
	// it too (<allowlist>-nodes-<source>).
	// +optional
	NAT *AllowlistNAT `json:"nat,omitempty"`

	// Services selects LoadBalancer Services of the allowlist's namespace,
	// read by the provider through an AddressSet (<allowlist>-nodes-<source>)
	// that applies every shrink at once.
	// +optional
	Services *ServiceSelector `json:"services,omitempty"`

	// Object reads a field of objects of the allowlist's namespace, through
	// an AddressSet as services.
	// +optional
	Object *ObjectSelector `json:"object,omitempty"`

	// ConfigMap reads a list of addresses from a ConfigMap of the
	// allowlist's namespace, through an AddressSet as services.
	// +optional
	ConfigMap *ConfigMapKeySelector `json:"configMap,omitempty"`

	// Required holds the rules as they are when the source yields no
	// address, instead of leaving it out with a warning.
	// +optional
	Required bool `json:"required,omitempty"`
}

// ReadBySet reports whether the source is read through an AddressSet:
// every kind but cidrs.
func (s AllowlistSource) ReadBySet() bool {
	return s.Nodes != nil || s.Instances != nil || s.NAT != nil || s.ReadsNamespace()
}

// ReadsNamespace reports whether the source reads objects of the
// allowlist's namespace: services, object or configMap.
func (s AllowlistSource) ReadsNamespace() bool {
	return s.Services != nil || s.Object != nil || s.ConfigMap != nil
}

// AllowlistNodes selects Nodes, as an AddressSet does.
type AllowlistNodes struct {
	NodeSelector `json:",inline"`

	// ShrinkHoldSeconds is the AddressSet's; its default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ShrinkHoldSeconds *int32 `json:"shrinkHoldSeconds,omitempty"`
}

// AllowlistInstances selects instances, as an AddressSet does.
type AllowlistInstances struct {
	InstanceSelector `json:",inline"`

	// ShrinkHoldSeconds is the AddressSet's; its default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ShrinkHoldSeconds *int32 `json:"shrinkHoldSeconds,omitempty"`
}

// AllowlistNAT selects Cloud NAT gateways, as an AddressSet does.
type AllowlistNAT struct {
	NATSelector `json:",inline"`

	// ShrinkHoldSeconds is the AddressSet's; its default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ShrinkHoldSeconds *int32 `json:"shrinkHoldSeconds,omitempty"`
}

// SecurityPolicyAllowlistStatus is what GCP holds for the allowlist.
type SecurityPolicyAllowlistStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// IPCount is the number of distinct ranges the rules hold.
	// +optional
	IPCount int `json:"ipCount,omitempty"`

	// RangesInGCP is the number of those ranges GCP is confirmed to hold:
	// the provider made GCP what the spec of the rule or group holding the
	// range says, and nothing the allowlist is about to write takes it out.
	// The allowlist first turns Ready once it equals ipCount; a composition
	// that attaches the policy waits for that too.
	// +optional
	RangesInGCP int `json:"rangesInGCP,omitempty"`

	// RuleCount is the number of rules holding them (1 in mode
	// addressGroup, once its rule is in GCP).
	// +optional
	RuleCount int `json:"ruleCount,omitempty"`

	// AddressGroup is the GCP name of the IPv4 group holding the ranges in
	// mode addressGroup.
	// +optional
	AddressGroup string `json:"addressGroup,omitempty"`

	// UnmatchedSources names the sources that contributed no range.
	// +optional
	UnmatchedSources []string `json:"unmatchedSources,omitempty"`

	// Warnings are findings that left something out without stopping the
	// rest: Nodes without a usable address, an optional source that is empty.
	// +optional
	Warnings []string `json:"warnings,omitempty"`

	// ObservedGeneration is the generation of the spec the rules follow.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityPolicyAllowlist keeps allow rules of at most ten ranges each in
// a priority range of a Cloud Armor policy, holding the ranges of the
// sources it names, or in an address group allowed by one rule. The provider
// resolves the sources itself and keeps the rules, groups and AddressSets as
// objects it owns, so a Node coming or going changes no object that
// Crossplane composed. Its status counts are written at a bounded rate.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="POLICY",type="string",JSONPath=".spec.securityPolicy"
// +kubebuilder:printcolumn:name="MODE",type="string",JSONPath=".spec.mode"
// +kubebuilder:printcolumn:name="IPS",type="integer",JSONPath=".status.ipCount"
// +kubebuilder:printcolumn:name="RULES",type="integer",JSONPath=".status.ruleCount"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,cloudarmor}
type SecurityPolicyAllowlist struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityPolicyAllowlistSpec   `json:"spec"`
	Status SecurityPolicyAllowlistStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityPolicyAllowlistList contains a list of SecurityPolicyAllowlist.
type SecurityPolicyAllowlistList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityPolicyAllowlist `json:"items"`
}

// SecurityPolicyAllowlist type metadata.
var (
	SecurityPolicyAllowlistKind             = reflect.TypeOf(SecurityPolicyAllowlist{}).Name()
	SecurityPolicyAllowlistGroupVersionKind = SchemeGroupVersion.WithKind(SecurityPolicyAllowlistKind)
	SecurityPolicyAllowlistGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityPolicyAllowlistKind}
)

func init() {
	SchemeBuilder.Register(&SecurityPolicyAllowlist{}, &SecurityPolicyAllowlistList{})
}

// Modes of a SecurityPolicyAllowlist.
const (
	AllowlistModeRules        = "rules"
	AllowlistModeAddressGroup = "addressGroup"
)

// TypeCurrent is the condition that says whether GCP follows the sources;
// its last transition time says since when it does, or does not.
const TypeCurrent xpv2.ConditionType = "Current"

// Reasons of the Current condition.
const (
	// ReasonComposed: GCP holds every source's ranges, or is being given
	// the latest ones.
	ReasonComposed xpv2.ConditionReason = "Composed"
	// ReasonSourcesPending: a source has not been computed yet; GCP keeps
	// what it holds.
	ReasonSourcesPending xpv2.ConditionReason = "SourcesPending"
	// ReasonSourceHeld: a node source holds back a shrink; GCP follows what
	// it publishes.
	ReasonSourceHeld xpv2.ConditionReason = "SourceHeld"
	// ReasonSourceUnreadable: a source cannot be read (a cluster or project
	// out of reach, a Secret gone, Nodes the provider may not list); GCP
	// keeps its last addresses until it can be read again.
	ReasonSourceUnreadable xpv2.ConditionReason = "SourceUnreadable"
	// ReasonCannotCompose: the sources cannot be made into rules or groups;
	// GCP keeps what it holds.
	ReasonCannotCompose xpv2.ConditionReason = "CannotCompose"
	// ReasonSwitching: the ranges move between rules and address groups,
	// or between groups; what holds them now stays until the rest is in GCP.
	ReasonSwitching xpv2.ConditionReason = "Switching"
)

// GroupCapacity is the group's capacity, or its default.
func (g *AllowlistAddressGroup) GroupCapacity() int64 {
	if g == nil || g.Capacity == 0 {
		return DefaultAddressGroupCapacity
	}
	return int64(g.Capacity)
}

// DefaultAddressGroupCapacity is addressGroup.capacity's default.
const DefaultAddressGroupCapacity = 1000
