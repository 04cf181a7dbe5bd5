// Package function is the IPAllowlist composition function. It composes the structure of an
// allowlist and never its data: one SecurityPolicyAllowlist, a kind of the provider that owns the
// allowlist's priority range (and the policy, when the allowlist creates it) and keeps the ranges
// in GCP itself, in rules of ten or in an address group, following the Nodes from the provider's
// own informers. A Node coming, going or changing address therefore changes no object the
// function composes, and wakes Crossplane only through the allowlist's status, which the provider
// writes at a bounded rate.
//
// The function validates the spec, composes every source as a source of the allowlist (the
// private-cluster ones too: LoadBalancer Services, a field of other objects and ConfigMap keys
// of the XR's own namespace, which the provider reads there, sources.go), and reports the
// allowlist's status on the IPAllowlist (status.go). For each backend of spec.attachTo it
// composes a SecurityPolicyAttachment naming the policy, and reports whether the backends name
// it in the IPAllowlist's Attached condition (attach.go).
package function

import (
	"fmt"
)

// Spec is the part of an IPAllowlist's spec the function reads.
type Spec struct {
	Policy            Policy             `json:"policy"`
	PriorityRange     PriorityRange      `json:"priorityRange"`
	ProviderConfigRef *ProviderConfigRef `json:"providerConfigRef,omitempty"`
	StaticSources     []StaticSource     `json:"staticSources,omitempty"`
	NodeSources       []NodeSource       `json:"nodeSources,omitempty"`
	// InstanceSources are Compute Engine instances listed by the provider with the
	// ProviderConfig's credentials.
	InstanceSources []InstanceSource `json:"instanceSources,omitempty"`
	// NATSources are Cloud NAT gateways read by the provider with the ProviderConfig's
	// credentials.
	NATSources []NATSource `json:"natSources,omitempty"`
	// Mode is ModeRules (rules of ten ranges) or ModeAddressGroup (an address group and one
	// rule); "" means ModeRules.
	Mode         string     `json:"mode,omitempty"`
	AddressGroup *GroupSpec `json:"addressGroup,omitempty"`
	// ServiceSources, ObjectSources and ConfigMapSources are read by the provider from the
	// IPAllowlist's own namespace (sources.go).
	ServiceSources   []ServiceSource   `json:"serviceSources,omitempty"`
	ObjectSources    []ObjectSource    `json:"objectSources,omitempty"`
	ConfigMapSources []ConfigMapSource `json:"configMapSources,omitempty"`
	// AttachTo are the backends the policy is attached to, one SecurityPolicyAttachment each
	// (attach.go).
	AttachTo []AttachTarget `json:"attachTo,omitempty"`
}

// Policy names the Cloud Armor policy the rules go into.
type Policy struct {
	// Name of the GCP policy; also the name of the SecurityPolicy object when Create is set.
	Name string `json:"name"`
	// Create the SecurityPolicy as part of this allowlist. Otherwise the rules reference an
	// existing GCP policy by name.
	Create bool `json:"create,omitempty"`
	// DefaultAction of a created policy: deny(403) unless set.
	DefaultAction string `json:"defaultAction,omitempty"`
	Description   string `json:"description,omitempty"`
	Project       string `json:"project,omitempty"`
	Region        string `json:"region,omitempty"`
}

// PriorityRange is the inclusive range of rule priorities reserved for one allowlist.
type PriorityRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// ProviderConfigRef is copied to every composed managed resource.
type ProviderConfigRef struct {
	Kind string `json:"kind,omitempty"`
	Name string `json:"name"`
}

// StaticSource is a named list of CIDRs (an office, a partner).
type StaticSource struct {
	Name  string   `json:"name"`
	CIDRs []string `json:"cidrs"`
}

// NodeSource selects Nodes by label and allows their addresses.
type NodeSource struct {
	Name        string            `json:"name"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// IncludeInternalIP allows the Nodes' InternalIP addresses as well as their ExternalIPs.
	IncludeInternalIP bool `json:"includeInternalIP,omitempty"`
	// Required makes a selector that matches no usable address an error (the rules stay as
	// they are) rather than a warning (the source simply contributes nothing).
	Required bool `json:"required,omitempty"`
	// ShrinkHoldSeconds is passed to the source's AddressSet; nil leaves its default.
	ShrinkHoldSeconds *int64 `json:"shrinkHoldSeconds,omitempty"`
	// Cluster reads the Nodes of another cluster; nil is the cluster Crossplane runs in.
	Cluster *NodeCluster `json:"cluster,omitempty"`
}

// NodeCluster is another cluster, reached through the kubeconfig a Secret of the IPAllowlist's
// namespace holds.
type NodeCluster struct {
	KubeconfigSecretRef SecretKey `json:"kubeconfigSecretRef"`
	// Identity is Kubeconfig (its token or certificate) or ProviderConfig (a Google access
	// token of the ProviderConfig, as GKE accepts); "" is Kubeconfig.
	Identity string `json:"identity,omitempty"`
}

// SecretKey is a key of a Secret in the IPAllowlist's namespace.
type SecretKey struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

// InstanceSource selects Compute Engine instances by label and allows their addresses.
type InstanceSource struct {
	Name              string            `json:"name"`
	Project           string            `json:"project,omitempty"`
	MatchLabels       map[string]string `json:"matchLabels"`
	IncludeInternalIP bool              `json:"includeInternalIP,omitempty"`
	PollSeconds       *int64            `json:"pollSeconds,omitempty"`
	Required          bool              `json:"required,omitempty"`
	ShrinkHoldSeconds *int64            `json:"shrinkHoldSeconds,omitempty"`
}

// NATSource allows the addresses of Cloud NAT gateways: those of one router (Router, Region,
// optionally NAT) or of every router of a network in Regions (Network, Regions).
type NATSource struct {
	Name              string   `json:"name"`
	Project           string   `json:"project,omitempty"`
	Region            string   `json:"region,omitempty"`
	Router            string   `json:"router,omitempty"`
	NAT               string   `json:"nat,omitempty"`
	Network           string   `json:"network,omitempty"`
	Regions           []string `json:"regions,omitempty"`
	PollSeconds       *int64   `json:"pollSeconds,omitempty"`
	Required          bool     `json:"required,omitempty"`
	ShrinkHoldSeconds *int64   `json:"shrinkHoldSeconds,omitempty"`
}

// validate reports what admission would refuse of src; a render without the XRD does not.
func (src NATSource) validate() error {
	switch {
	case (src.Router == "") == (src.Network == ""):
		return fmt.Errorf("nat source %q names exactly one of router and network", src.Name)
	case src.Router != "" && src.Region == "":
		return fmt.Errorf("nat source %q: router needs region", src.Name)
	case src.Network != "" && len(src.Regions) == 0:
		return fmt.Errorf("nat source %q: network needs regions", src.Name)
	}
	return nil
}

// Modes of an IPAllowlist.
const (
	ModeRules        = "rules"
	ModeAddressGroup = "addressGroup"
)

// GroupSpec is spec.addressGroup: the group of an allowlist in addressGroup mode.
type GroupSpec struct {
	// Name of the GCP address group holding the IPv4 ranges; the IPv6 ranges go to
	// <name>-ipv6.
	Name string `json:"name"`
	// Capacity of each group, fixed when GCP creates it.
	Capacity int64 `json:"capacity,omitempty"`
}

// groupMode reports whether s keeps its ranges in an address group.
func (s Spec) groupMode() bool { return s.Mode == ModeAddressGroup }

// DefaultAction of a created policy: it is an allowlist, so everything else is denied.
const DefaultAction = "deny(403)"

// Validate reports the first problem with a spec that no Node can fix.
func (s Spec) Validate() error {
	if s.Policy.Name == "" {
		return fmt.Errorf("spec.policy.name is required")
	}
	r := s.PriorityRange
	if r.First < 0 || r.Last >= DefaultRulePriority || r.First > r.Last {
		return fmt.Errorf("spec.priorityRange %d-%d is invalid: need 0 <= first <= last < %d", r.First, r.Last, DefaultRulePriority)
	}
	seen := map[string]bool{}
	for _, n := range s.sourceNames() {
		if n == "" {
			return fmt.Errorf("every source needs a name")
		}
		if seen[n] {
			return fmt.Errorf("source name %q is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources", n)
		}
		seen[n] = true
	}
	for _, src := range s.InstanceSources {
		if len(src.MatchLabels) == 0 {
			// Admission refuses it too; a render without the XRD does not.
			return fmt.Errorf("instance source %q needs matchLabels: listing every instance of a project is rarely what an allowlist means", src.Name)
		}
	}
	for _, src := range s.NATSources {
		if err := src.validate(); err != nil {
			return err
		}
	}
	if s.groupMode() && (s.AddressGroup == nil || s.AddressGroup.Name == "") {
		return fmt.Errorf("mode %s needs spec.addressGroup.name", ModeAddressGroup)
	}
	if err := s.validateAttachTo(); err != nil {
		return err
	}
	return s.validateReadSources()
}

func (s Spec) sourceNames() []string {
	names := make([]string, 0, len(s.StaticSources)+len(s.NodeSources))
	for _, src := range s.StaticSources {
		names = append(names, src.Name)
	}
	for _, src := range s.NodeSources {
		names = append(names, src.Name)
	}
	for _, src := range s.InstanceSources {
		names = append(names, src.Name)
	}
	for _, src := range s.NATSources {
		names = append(names, src.Name)
	}
	for _, src := range s.readSources() {
		names = append(names, src.name)
	}
	return names
}

// DefaultRulePriority is the priority of a policy's default rule, outside any reserved range.
const DefaultRulePriority = 2147483647
