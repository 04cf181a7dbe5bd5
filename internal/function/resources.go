package function

import (
	"fmt"

	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
)

const (
	// allowlistAPIVersion is the apiVersion of the provider's SecurityPolicyAllowlist.
	allowlistAPIVersion = "cloudarmor.armorplane.io/v1alpha1"

	// allowlistResource is the composition resource name of the SecurityPolicyAllowlist.
	allowlistResource = resource.Name("allowlist")

	// maxRuleDescription is Cloud Armor's limit of a rule's description.
	maxRuleDescription = 64
)

// AllowlistResource is the SecurityPolicyAllowlist that keeps the allowlist's ranges in GCP,
// named as the IPAllowlist.
func AllowlistResource(s Spec, xrNamespace, xrName string) *composed.Unstructured {
	description := fmt.Sprintf("IPAllowlist %s/%s", xrNamespace, xrName)
	if len(description) > maxRuleDescription {
		description = description[:maxRuleDescription]
	}
	mode := s.Mode
	if mode == "" {
		mode = ModeRules
	}
	spec := map[string]any{
		"securityPolicy":  s.Policy.Name,
		"priorityRange":   map[string]any{"first": s.PriorityRange.First, "last": s.PriorityRange.Last},
		"ruleDescription": description,
		"mode":            mode,
		"sources":         allowlistSources(s),
	}
	if s.Policy.Create {
		// The allowlist keeps the policy, as it keeps the rules: its status changes with every
		// rule, and composed here each change would be an event on the IPAllowlist.
		action := s.Policy.DefaultAction
		if action == "" {
			action = DefaultAction
		}
		create := map[string]any{"defaultAction": action}
		if s.Policy.Description != "" {
			create["description"] = s.Policy.Description
		}
		spec["createPolicy"] = create
	}
	location(spec, s.Policy)
	if s.AddressGroup != nil && s.AddressGroup.Name != "" {
		g := map[string]any{"name": s.AddressGroup.Name}
		if s.AddressGroup.Capacity != 0 {
			g["capacity"] = s.AddressGroup.Capacity
		}
		spec["addressGroup"] = g
	}
	providerConfig(spec, s.ProviderConfigRef)

	u := composed.New()
	u.SetAPIVersion(allowlistAPIVersion)
	u.SetKind("SecurityPolicyAllowlist")
	u.SetName(xrName)
	u.Object["spec"] = spec
	return u
}

// allowlistSources are the allowlist's sources: static, node, instance and nat sources, then
// service, object and ConfigMap sources, as the spec names them.
func allowlistSources(s Spec) []any {
	sources := make([]any, 0, len(s.StaticSources)+len(s.NodeSources)+len(s.InstanceSources)+len(s.NATSources)+len(s.readSources()))
	for _, src := range s.StaticSources {
		sources = append(sources, map[string]any{"name": src.Name, "cidrs": anys(src.CIDRs)})
	}
	for _, src := range s.NodeSources {
		sources = append(sources, nodeSource(src))
	}
	for _, src := range s.InstanceSources {
		sources = append(sources, instanceSource(src))
	}
	for _, src := range s.NATSources {
		sources = append(sources, natSource(src))
	}
	return append(sources, s.namespaceSources()...)
}

// unchanged is a desired resource equal to what was composed before: its apiVersion, kind,
// name, annotations and spec.
func unchanged(oc resource.ObservedComposed) *composed.Unstructured {
	u := composed.New()
	u.SetAPIVersion(oc.Resource.GetAPIVersion())
	u.SetKind(oc.Resource.GetKind())
	u.SetName(oc.Resource.GetName())
	if a := oc.Resource.GetAnnotations(); len(a) > 0 {
		u.SetAnnotations(a)
	}
	if spec, ok := oc.Resource.Object["spec"]; ok {
		u.Object["spec"] = spec
	}
	return u
}

func anys(ss []string) []any {
	out := make([]any, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

func location(m map[string]any, p Policy) {
	if p.Project != "" {
		m["project"] = p.Project
	}
	if p.Region != "" {
		m["region"] = p.Region
	}
}

func providerConfig(spec map[string]any, ref *ProviderConfigRef) {
	if ref == nil {
		return
	}
	kind := ref.Kind
	if kind == "" {
		kind = "ClusterProviderConfig"
	}
	spec["providerConfigRef"] = map[string]any{"kind": kind, "name": ref.Name}
}

// nodeSource is the allowlist's source of a node source.
func nodeSource(src NodeSource) map[string]any {
	nodes := map[string]any{}
	if len(src.MatchLabels) > 0 {
		nodes["matchLabels"] = stringMap(src.MatchLabels)
	}
	if src.IncludeInternalIP {
		nodes["includeInternalIP"] = true
	}
	if src.ShrinkHoldSeconds != nil {
		nodes["shrinkHoldSeconds"] = *src.ShrinkHoldSeconds
	}
	if c := src.Cluster; c != nil {
		ref := map[string]any{"name": c.KubeconfigSecretRef.Name}
		if c.KubeconfigSecretRef.Key != "" {
			ref["key"] = c.KubeconfigSecretRef.Key
		}
		cluster := map[string]any{"kubeconfigSecretRef": ref}
		if c.Identity != "" {
			cluster["identity"] = c.Identity
		}
		nodes["cluster"] = cluster
	}
	out := map[string]any{"name": src.Name, "nodes": nodes}
	if src.Required {
		out["required"] = true
	}
	return out
}

// instanceSource is the allowlist's source of an instance source.
func instanceSource(src InstanceSource) map[string]any {
	in := map[string]any{"matchLabels": stringMap(src.MatchLabels)}
	if src.Project != "" {
		in["project"] = src.Project
	}
	if src.IncludeInternalIP {
		in["includeInternalIP"] = true
	}
	if src.PollSeconds != nil {
		in["pollSeconds"] = *src.PollSeconds
	}
	if src.ShrinkHoldSeconds != nil {
		in["shrinkHoldSeconds"] = *src.ShrinkHoldSeconds
	}
	out := map[string]any{"name": src.Name, "instances": in}
	if src.Required {
		out["required"] = true
	}
	return out
}

// natSource is the allowlist's source of a nat source.
func natSource(src NATSource) map[string]any {
	nat := map[string]any{}
	for k, v := range map[string]string{"project": src.Project, "region": src.Region, "router": src.Router, "nat": src.NAT, "network": src.Network} {
		if v != "" {
			nat[k] = v
		}
	}
	if len(src.Regions) > 0 {
		nat["regions"] = anys(src.Regions)
	}
	if src.PollSeconds != nil {
		nat["pollSeconds"] = *src.PollSeconds
	}
	if src.ShrinkHoldSeconds != nil {
		nat["shrinkHoldSeconds"] = *src.ShrinkHoldSeconds
	}
	out := map[string]any{"name": src.Name, "nat": nat}
	if src.Required {
		out["required"] = true
	}
	return out
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
