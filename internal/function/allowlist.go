// Package function is the IPAllowlist composition function: it turns an IPAllowlist XR (static
// CIDR lists and Node label selectors) into SecurityPolicyRules of at most ten source ranges
// each, inside the priority range the XR reserves, and optionally the SecurityPolicy itself.
// LoadBalancer Services, a field of other objects and ConfigMap keys of the XR's own namespace
// are sources too, which the function reads through Crossplane's required resources
// (sources.go).
//
// It never reads Nodes. Each node source becomes an AddressSet, which the provider keeps equal
// to the addresses of the Nodes it selects; the function reads the AddressSets' status. So a
// function request carries addresses, not Node objects (a realistic Node is 14 KB; 450 of them
// filled gRPC's 4 MiB message limit), and a Node's status heartbeat wakes nothing here.
//
// Assignment of addresses to rules is stable without any state of its own: it is derived from
// the rules Crossplane observed on the previous reconcile. Every address already in a rule stays
// in that rule; new addresses fill the holes of existing rules first (lowest priority first),
// and only then open a new rule at the lowest free priority. So one node replaced changes one
// rule, one node added or removed changes at most one rule, and every other rule keeps its
// content and priority.
package function

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// MaxRangesPerRule is Cloud Armor's limit of source ranges in one basic (SRC_IPS_V1) match.
const MaxRangesPerRule = iprange.MaxPerRule

// Spec is the part of an IPAllowlist's spec the function reads.
type Spec struct {
	Policy            Policy             `json:"policy"`
	PriorityRange     PriorityRange      `json:"priorityRange"`
	ProviderConfigRef *ProviderConfigRef `json:"providerConfigRef,omitempty"`
	StaticSources     []StaticSource     `json:"staticSources,omitempty"`
	NodeSources       []NodeSource       `json:"nodeSources,omitempty"`
	// Mode is ModeRules (rules of ten ranges) or ModeAddressGroup (an address group and one
	// rule); "" means ModeRules.
	Mode         string     `json:"mode,omitempty"`
	AddressGroup *GroupSpec `json:"addressGroup,omitempty"`
	// ServiceSources, ObjectSources and ConfigMapSources are read from the IPAllowlist's own
	// namespace through Crossplane's required resources (sources.go).
	ServiceSources   []ServiceSource   `json:"serviceSources,omitempty"`
	ObjectSources    []ObjectSource    `json:"objectSources,omitempty"`
	ConfigMapSources []ConfigMapSource `json:"configMapSources,omitempty"`
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
}

// DefaultAction of a created policy: it is an allowlist, so everything else is denied.
const DefaultAction = "deny(403)"

// Slots is the number of rules the priority range holds.
func (r PriorityRange) Slots() int64 { return r.Last - r.First + 1 }

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
			return fmt.Errorf("source name %q is used twice: source names must be unique across staticSources, nodeSources, serviceSources, objectSources and configMapSources", n)
		}
		seen[n] = true
	}
	if s.groupMode() && (s.AddressGroup == nil || s.AddressGroup.Name == "") {
		return fmt.Errorf("mode %s needs spec.addressGroup.name", ModeAddressGroup)
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
	for _, src := range s.readSources() {
		names = append(names, src.name)
	}
	return names
}

// DefaultRulePriority is the priority of a policy's default rule, outside any reserved range.
const DefaultRulePriority = 2147483647

// ParseRange parses a CIDR or a bare IP address (made a /32 or /128) into its canonical form.
// A CIDR with host bits set is refused rather than silently widened or narrowed.
func ParseRange(s string) (netip.Prefix, error) { return iprange.Parse(s) }

// NodeSet is what one node source's AddressSet reports: the addresses of the Nodes its
// selector matches, as the provider publishes them in the AddressSet's status.
type NodeSet struct {
	// Addresses are canonical host prefixes.
	Addresses []string
	// Nodes is how many Nodes the selector matches.
	Nodes int
	// Skipped names Nodes left out (at most a few), SkippedCount counts them all.
	Skipped      []SkippedNode
	SkippedCount int
}

// SkippedNode is a selected Node whose addresses the AddressSet leaves out, and why.
type SkippedNode struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Sources is the outcome of collecting every source's addresses.
type Sources struct {
	// Ranges are the distinct ranges of all sources, sorted, none inside another.
	Ranges []netip.Prefix
	// Unmatched names the sources that contributed no address, in spec order.
	Unmatched []string
	// Warnings are non-fatal findings, such as an optional selector matching nothing.
	Warnings []string
}

// Collect gathers, validates and de-duplicates the ranges of every source. sets holds each
// node source's AddressSet report, and read what each service, object and ConfigMap source
// yields (ReadSources), both keyed by source name. A range inside another one (a Node in an
// office's /24) is dropped: the wider range allows it already, and the rules hold fewer
// entries. It fails on an invalid static CIDR, and on a required source that yields no
// address; a malformed value read from an object is left out with a warning.
func Collect(s Spec, sets map[string]NodeSet, read map[string]Read) (Sources, error) {
	out := Sources{}
	set := map[netip.Prefix]bool{}
	add := func(p netip.Prefix) {
		if !set[p] {
			set[p] = true
			out.Ranges = append(out.Ranges, p)
		}
	}
	for _, src := range s.StaticSources {
		if len(src.CIDRs) == 0 {
			out.Unmatched = append(out.Unmatched, src.Name)
			continue
		}
		for _, c := range src.CIDRs {
			p, err := ParseRange(c)
			if err != nil {
				return Sources{}, fmt.Errorf("static source %q: %w", src.Name, err)
			}
			add(p)
		}
	}
	for _, src := range s.NodeSources {
		ns := sets[src.Name]
		found := 0
		for _, a := range ns.Addresses {
			p, err := ParseRange(a)
			if err != nil {
				// The provider writes canonical addresses; anything else is left out, not fatal.
				out.Warnings = append(out.Warnings, fmt.Sprintf("node source %q: address %q left out: %v", src.Name, a, err))
				continue
			}
			add(p)
			found++
		}
		if ns.SkippedCount > 0 {
			out.Warnings = append(out.Warnings, skippedWarning(src.Name, ns))
		}
		if found > 0 {
			continue
		}
		msg := fmt.Sprintf("node source %q: no address: %d node(s) match labels %s", src.Name, ns.Nodes, labelString(src.MatchLabels))
		if src.Required {
			return Sources{}, fmt.Errorf("%s, and the source is required; the rules are left as they are", msg)
		}
		out.Unmatched = append(out.Unmatched, src.Name)
		out.Warnings = append(out.Warnings, msg)
	}
	for _, src := range s.readSources() {
		r := read[src.name]
		found, warnings := collectRead(src, r, func(v Value) error {
			p, err := ParseRange(v.Text)
			if err == nil {
				add(p)
			}
			return err
		})
		out.Warnings = append(out.Warnings, warnings...)
		if found > 0 {
			continue
		}
		msg := fmt.Sprintf("%s: no address: %s", src.label(), r.Empty)
		if src.required {
			return Sources{}, fmt.Errorf("%s, and the source is required; the rules are left as they are", msg)
		}
		out.Unmatched = append(out.Unmatched, src.name)
		out.Warnings = append(out.Warnings, msg)
	}
	out.Ranges = iprange.Minimal(out.Ranges)
	return out, nil
}

func skippedWarning(source string, ns NodeSet) string {
	names := make([]string, 0, len(ns.Skipped))
	for _, n := range ns.Skipped {
		names = append(names, n.Name+" ("+n.Reason+")")
	}
	more := ""
	if extra := ns.SkippedCount - len(ns.Skipped); extra > 0 {
		more = fmt.Sprintf(" and %d more", extra)
	}
	return fmt.Sprintf("node source %q: %d node(s) left out, the others kept: %s%s", source, ns.SkippedCount, strings.Join(names, ", "), more)
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "{} (every node)"
	}
	kv := make([]string, 0, len(l))
	for k, v := range l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// Rule is the content of one composed SecurityPolicyRule.
type Rule = iprange.Rule

// Assign places ranges into rules at priorities inside r, keeping each range that an observed
// rule (priority -> ranges) already holds in that rule (iprange.Pack).
func Assign(ranges []netip.Prefix, observed map[int64][]netip.Prefix, r PriorityRange) ([]Rule, error) {
	return AssignAround(ranges, observed, r, nil)
}

// AssignAround is Assign leaving the priorities in taken free: those of rules that stay in
// place beside the ones assigned (the rule that uses an address group, while an allowlist
// moves from the group back to rules).
func AssignAround(ranges []netip.Prefix, observed map[int64][]netip.Prefix, r PriorityRange, taken map[int64]bool) ([]Rule, error) {
	return iprange.Pack(ranges, observed, r.First, r.Last, taken)
}
