package v1alpha1

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// AddressSetSpec says which addresses the set holds: those of Kubernetes
// Nodes (of the cluster the provider runs in, or of another cluster), those
// of Compute Engine instances, those of Cloud NAT gateways, or those objects
// of the set's own namespace publish (LoadBalancer Services, a field of any
// namespaced kind, a ConfigMap's list).
// +kubebuilder:validation:XValidation:rule="(has(self.nodes) ? 1 : 0) + (has(self.instances) ? 1 : 0) + (has(self.nat) ? 1 : 0) + (has(self.services) ? 1 : 0) + (has(self.object) ? 1 : 0) + (has(self.configMap) ? 1 : 0) == 1",message="an AddressSet has exactly one of nodes, instances, nat, services, object and configMap"
// +kubebuilder:validation:XValidation:rule="!has(self.instances) || has(self.providerConfigRef)",message="instances are listed with a ProviderConfig's credentials: set providerConfigRef"
// +kubebuilder:validation:XValidation:rule="!has(self.nat) || has(self.providerConfigRef)",message="Cloud NAT is read with a ProviderConfig's credentials: set providerConfigRef"
// +kubebuilder:validation:XValidation:rule="!has(self.nodes) || !has(self.nodes.cluster) || !has(self.nodes.cluster.identity) || self.nodes.cluster.identity != 'ProviderConfig' || has(self.providerConfigRef)",message="cluster identity ProviderConfig needs providerConfigRef"
type AddressSetSpec struct {
	// Nodes selects the Kubernetes Nodes whose addresses the set holds.
	// +optional
	Nodes *NodeSelector `json:"nodes,omitempty"`

	// Instances selects Compute Engine instances (a GKE node pool, a
	// managed instance group) by label, for clusters whose API server the
	// provider cannot reach.
	// +optional
	Instances *InstanceSelector `json:"instances,omitempty"`

	// NAT selects Cloud NAT gateways, whose addresses private GKE clusters
	// and VMs without external addresses egress from.
	// +optional
	NAT *NATSelector `json:"nat,omitempty"`

	// Services selects Services of type LoadBalancer of the set's own
	// namespace by label: their load balancer IPs.
	// +optional
	Services *ServiceSelector `json:"services,omitempty"`

	// Object reads one field of objects of one namespaced kind, in the
	// set's own namespace: a provider-gcp Address's
	// status.atProvider.address, a gateway's published addresses.
	// +optional
	Object *ObjectSelector `json:"object,omitempty"`

	// ConfigMap reads the addresses listed in one key of a ConfigMap of the
	// set's own namespace.
	// +optional
	ConfigMap *ConfigMapKeySelector `json:"configMap,omitempty"`

	// ProviderConfigRef names the credentials that list instances or read
	// Cloud NAT, or that
	// authenticate to a cluster with identity ProviderConfig. A
	// ProviderConfig is read from the AddressSet's own namespace.
	// +optional
	ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef,omitempty"`

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

	// Cluster reads the Nodes of another cluster, whose kubeconfig a Secret
	// of the same namespace holds. Unset: the cluster the provider runs in.
	// +optional
	Cluster *NodeCluster `json:"cluster,omitempty"`
}

// Identities a remote cluster is read with.
const (
	// IdentityKubeconfig: the token or client certificate of the kubeconfig.
	IdentityKubeconfig = "Kubeconfig"
	// IdentityProviderConfig: a Google OAuth access token of the
	// ProviderConfig's credentials, as a GKE API server accepts.
	IdentityProviderConfig = "ProviderConfig"
)

// NodeCluster is another Kubernetes cluster, reached through a kubeconfig.
type NodeCluster struct {
	// KubeconfigSecretRef names the Secret, in the namespace of the object
	// that names it, whose key holds a kubeconfig: a provider-gcp GKE
	// Cluster's connection Secret (key kubeconfig) or Cluster API's
	// <cluster>-kubeconfig Secret (key value). The kubeconfig's current
	// context is used. Exec plugins and auth providers are refused: the
	// provider's pod runs no gcloud or cloud CLI.
	KubeconfigSecretRef LocalSecretKey `json:"kubeconfigSecretRef"`

	// Identity is how the provider authenticates to the cluster: Kubeconfig
	// (the kubeconfig's token or client certificate) or ProviderConfig (a
	// Google OAuth access token of the ProviderConfig's credentials, which a
	// GKE API server accepts as a bearer token; the kubeconfig then gives
	// only the server and its CA).
	// +optional
	// +kubebuilder:default=Kubeconfig
	// +kubebuilder:validation:Enum=Kubeconfig;ProviderConfig
	Identity string `json:"identity,omitempty"`
}

// LocalSecretKey is a key of a Secret in the referrer's own namespace.
type LocalSecretKey struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the kubeconfig in the Secret.
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// KeyOrDefault is Key, or "kubeconfig" when unset.
func (k LocalSecretKey) KeyOrDefault() string {
	if k.Key == "" {
		return "kubeconfig"
	}
	return k.Key
}

// IdentityOrDefault is Identity, or Kubeconfig when unset.
func (c NodeCluster) IdentityOrDefault() string {
	if c.Identity == "" {
		return IdentityKubeconfig
	}
	return c.Identity
}

// InstanceSelector selects Compute Engine instances of a project by label,
// listed with one instances.aggregatedList call per poll.
type InstanceSelector struct {
	// Project to list; unset: the ProviderConfig's.
	// +optional
	Project string `json:"project,omitempty"`

	// MatchLabels are the labels an instance must have, such as
	// goog-k8s-node-pool-name for a GKE node pool. At least one: a project's
	// every instance is rarely what an allowlist means.
	// +kubebuilder:validation:MinProperties=1
	MatchLabels map[string]string `json:"matchLabels"`

	// IncludeInternalIP adds the instances' internal addresses (networkIP)
	// to their external ones (accessConfigs' natIP).
	// +optional
	IncludeInternalIP bool `json:"includeInternalIP,omitempty"`

	// PollSeconds is how often the instances are listed.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=3600
	PollSeconds *int32 `json:"pollSeconds,omitempty"`
}

// Poll is PollSeconds as a duration, 30 s when unset.
func (s InstanceSelector) Poll() time.Duration {
	if s.PollSeconds == nil {
		return 30 * time.Second
	}
	return time.Duration(*s.PollSeconds) * time.Second
}

// NATSelector selects Cloud NAT gateways: the NATs of one Cloud Router
// (router, region and optionally nat), or of every Cloud Router of a VPC
// network in the regions listed (network and regions). Each poll reads each
// router's status once (routers.getRouterStatus), after one routers.list per
// region for a network. The set holds every address a NAT uses: allocated
// automatically or by hand, and those draining, which still carry
// connections, until GCP stops reporting them.
//
// Naming: the field is nat on an AddressSet and on a SecurityPolicyAllowlist
// source, as nodes and instances name what one set selects, and natSources
// on an IPAllowlist, as instanceSources there.
// +kubebuilder:validation:XValidation:rule="has(self.router) != has(self.network)",message="a NAT selector names exactly one of router (one Cloud Router) and network (every Cloud Router of a VPC network)"
// +kubebuilder:validation:XValidation:rule="!has(self.router) || (has(self.region) && !has(self.regions))",message="router needs region, and takes no regions"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || (has(self.regions) && !has(self.region) && !has(self.nat))",message="network needs regions, and takes neither region nor nat"
type NATSelector struct {
	// Project of the routers; unset: the ProviderConfig's.
	// +optional
	Project string `json:"project,omitempty"`

	// Region of router.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]+-[a-z]+[0-9]+$`
	Region string `json:"region,omitempty"`

	// Router is the Cloud Router whose NATs are read.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	Router string `json:"router,omitempty"`

	// NAT names one NAT of router; unset: every NAT of the router.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	NAT string `json:"nat,omitempty"`

	// Network is a VPC network of project: every NAT of every Cloud Router
	// on it, in regions, is read.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`
	Network string `json:"network,omitempty"`

	// Regions in which network's routers are listed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z]+-[a-z]+[0-9]+$`
	Regions []string `json:"regions,omitempty"`

	// PollSeconds is how often the routers are read.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=3600
	PollSeconds *int32 `json:"pollSeconds,omitempty"`
}

// Poll is PollSeconds as a duration, 30 s when unset, as for instances.
func (s NATSelector) Poll() time.Duration {
	return InstanceSelector{PollSeconds: s.PollSeconds}.Poll()
}

// ServiceSelector selects Services of type LoadBalancer of the AddressSet's
// namespace by label. The set holds their status.loadBalancer.ingress[].ip;
// a host name there cannot be allowed and is named in a warning. The
// provider must be granted list and watch on Services (Crossplane's RBAC
// manager does not grant it).
type ServiceSelector struct {
	// MatchLabels are the labels of the Services; at least one.
	// +kubebuilder:validation:MinProperties=1
	MatchLabels map[string]string `json:"matchLabels"`
}

// ObjectSelector reads the IPs or CIDRs at one field of objects of one
// namespaced kind in the AddressSet's namespace, selected by name or by
// label. Secrets are never read. The provider must be granted list and
// watch on the kind; what it reads is its own, so values of these objects
// are never quoted in messages.
// +kubebuilder:validation:XValidation:rule="has(self.objectName) != has(self.matchLabels)",message="set exactly one of objectName and matchLabels"
// +kubebuilder:validation:XValidation:rule="!(self.apiVersion == 'v1' && self.kind == 'Secret')",message="an object source cannot read Secrets"
type ObjectSelector struct {
	// APIVersion of the objects, such as compute.gcp.m.upbound.io/v1beta1.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	APIVersion string `json:"apiVersion"`

	// Kind of the objects, such as Address.
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]{0,62}$`
	Kind string `json:"kind"`

	// ObjectName is the one object to read. Its absence holds the set's
	// last addresses (a name is explicit): it is not "no address".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ObjectName string `json:"objectName,omitempty"`

	// MatchLabels are the labels of the objects to read; at least one.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// FieldPath holds a string or a list of strings, each an IP or a CIDR;
	// [*] reads one field of each element of a list
	// (status.addresses[*].value).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FieldPath string `json:"fieldPath"`
}

// ConfigMapKeySelector is one key of a ConfigMap of the AddressSet's
// namespace, listing IPs or CIDRs separated by whitespace, commas or
// newlines; '#' starts a comment. A missing ConfigMap or key holds the
// set's last addresses.
type ConfigMapKeySelector struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key of the ConfigMap's data holding the list.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// ReadsNamespace reports whether the set reads objects of its own namespace
// (services, object or configMap).
func (s AddressSetSpec) ReadsNamespace() bool {
	return s.Services != nil || s.Object != nil || s.ConfigMap != nil
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

	// Addresses are the distinct addresses of what the set selects, as
	// canonical CIDRs, sorted, IPv4 first: /32 or /128 for Nodes, instances
	// and NATs; a ConfigMap's list or an object's field may hold wider
	// ranges.
	// +optional
	Addresses []string `json:"addresses,omitempty"`

	// AddressCount is len(addresses).
	// +optional
	AddressCount int `json:"addressCount,omitempty"`

	// NodeCount is how many Nodes the selector matches (instances, NATs,
	// LoadBalancer Services or objects for those sources).
	// +optional
	NodeCount int `json:"nodeCount,omitempty"`

	// Skipped lists up to 20 selected Nodes left out (no usable address, or
	// an address that does not parse); SkippedCount counts them all.
	// +optional
	Skipped []SkippedNode `json:"skipped,omitempty"`

	// SkippedCount is how many selected Nodes are left out.
	// +optional
	SkippedCount int `json:"skippedCount,omitempty"`

	// Warnings are findings that leave no address out but need someone,
	// such as a Cloud NAT that needs more addresses than it has
	// (minExtraNatIpsNeeded); sorted. The set stays Ready.
	// +optional
	Warnings []string `json:"warnings,omitempty"`

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
