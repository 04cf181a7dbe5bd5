package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// AddressSetSpec says which addresses the set holds.
type AddressSetSpec struct {
	// Nodes selects the Kubernetes Nodes whose addresses the set holds.
	Nodes NodeSelector `json:"nodes"`

	// ShrinkHoldSeconds is how long a sudden shrink is held back: when the
	// set would hold fewer than half of the most addresses it held within
	// the last shrinkHoldSeconds (and that most is at least four), it keeps
	// its addresses and says so in its Ready condition until the shrink has
	// lasted this long. Nodes leaving a few at a time count together. A watch
	// restart, an RBAC mistake or a mistyped selector then never empties an
	// allowlist at once, while Nodes that are really gone (a cluster stopped
	// for the night) leave it after the hold. 0 applies every shrink at once.
	// +optional
	// +kubebuilder:default=120
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ShrinkHoldSeconds *int32 `json:"shrinkHoldSeconds,omitempty"`
}

// NodeSelector selects Nodes by label.
type NodeSelector struct {
	// MatchLabels are the labels a Node must have; empty matches every Node.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// IncludeInternalIP adds the Nodes' InternalIP addresses to their
	// ExternalIP addresses.
	// +optional
	IncludeInternalIP bool `json:"includeInternalIP,omitempty"`
}

// SkippedNode is a selected Node whose addresses the set leaves out.
type SkippedNode struct {
	// Name of the Node.
	Name string `json:"name"`
	// Reason it is left out.
	Reason string `json:"reason"`
}

// AddressPeak is the most addresses the set held within a shrink hold.
type AddressPeak struct {
	// Count of addresses.
	Count int `json:"count"`
	// Since is when the set last held Count addresses, or more.
	Since metav1.Time `json:"since"`
}

// HeldShrink describes a shrink the set holds back.
type HeldShrink struct {
	// From is the most addresses the set held within the hold.
	From int `json:"from"`
	// To is how many the selected Nodes have now.
	To int `json:"to"`
	// Since is when the shrink was first seen.
	Since metav1.Time `json:"since"`
}

// AddressSetStatus is the set's content and health.
type AddressSetStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// Addresses are the selected Nodes' distinct addresses as canonical
	// CIDRs (/32 or /128), sorted, IPv4 first.
	// +optional
	Addresses []string `json:"addresses,omitempty"`

	// AddressCount is len(addresses).
	// +optional
	AddressCount int `json:"addressCount,omitempty"`

	// NodeCount is how many Nodes the selector matches.
	// +optional
	NodeCount int `json:"nodeCount,omitempty"`

	// Skipped lists up to 20 selected Nodes left out (no usable address, or
	// an address that does not parse); SkippedCount counts them all.
	// +optional
	Skipped []SkippedNode `json:"skipped,omitempty"`

	// SkippedCount is how many selected Nodes are left out.
	// +optional
	SkippedCount int `json:"skippedCount,omitempty"`

	// HeldShrink is set while a shrink is held back (see shrinkHoldSeconds).
	// +optional
	HeldShrink *HeldShrink `json:"heldShrink,omitempty"`

	// Peak is the most addresses the set held within the last
	// shrinkHoldSeconds, which a shrink is measured against.
	// +optional
	Peak *AddressPeak `json:"peak,omitempty"`

	// ObservedGeneration is the generation of the spec the addresses follow.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true

// An AddressSet holds the addresses of the Nodes its selector matches, kept
// current by the provider as Nodes come and go. The IPAllowlist composition
// composes one for each node source and reads only its status, so a
// composition function request carries addresses, not Node objects, and a
// Node's status heartbeat never wakes the composition.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="NODES",type="integer",JSONPath=".status.nodeCount"
// +kubebuilder:printcolumn:name="ADDRESSES",type="integer",JSONPath=".status.addressCount"
// +kubebuilder:printcolumn:name="SKIPPED",type="integer",JSONPath=".status.skippedCount"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,cloudarmor}
type AddressSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressSetSpec   `json:"spec"`
	Status AddressSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AddressSetList contains a list of AddressSet.
type AddressSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddressSet `json:"items"`
}

// AddressSet type metadata.
var (
	AddressSetKind             = reflect.TypeOf(AddressSet{}).Name()
	AddressSetGroupVersionKind = SchemeGroupVersion.WithKind(AddressSetKind)
	AddressSetGroupKind        = schema.GroupKind{Group: Group, Kind: AddressSetKind}
)

// ShrinkHold returns spec.shrinkHoldSeconds, or its default when unset.
func (s AddressSetSpec) ShrinkHold() int32 {
	if s.ShrinkHoldSeconds == nil {
		return DefaultShrinkHoldSeconds
	}
	return *s.ShrinkHoldSeconds
}

// DefaultShrinkHoldSeconds is shrinkHoldSeconds' default.
const DefaultShrinkHoldSeconds = 120

func init() {
	SchemeBuilder.Register(&AddressSet{}, &AddressSetList{})
}
