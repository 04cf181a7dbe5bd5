package function

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
)

const (
	// apiVersion of the provider's managed resources.
	mrAPIVersion = "cloudarmor.armorplane.io/v1beta1"

	// policyResource is the composition resource name of the created SecurityPolicy.
	policyResource = resource.Name("policy")
	// rulePrefix prefixes the composition resource name of each rule: rule-<priority>.
	rulePrefix = "rule-"
	// requirementPrefix prefixes the name of each node source's required resources.
	requirementPrefix = "nodes-"
)

// Function is the IPAllowlist composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// New returns the function, logging to log.
func New(log logging.Logger) *Function {
	return &Function{log: log}
}

// RunFunction composes an IPAllowlist's SecurityPolicy and SecurityPolicyRules.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed IPAllowlist"))
		return rsp, nil
	}
	log := f.log.WithValues("xr", oxr.Resource.GetName(), "namespace", oxr.Resource.GetNamespace())

	spec := Spec{}
	if err := oxr.Resource.GetValueInto("spec", &spec); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the IPAllowlist's spec"))
		return rsp, nil
	}
	if err := spec.Validate(); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

	// Ask for the Nodes of every source, on every call: Crossplane calls again until the
	// requirements are stable, and only then acts on the desired state.
	nodes, resolved, err := requireNodes(req, rsp, spec.NodeSources)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if !resolved {
		log.Debug("Waiting for Crossplane to resolve the required Nodes")
		return rsp, nil
	}

	src, err := Collect(spec, nodes)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	for _, w := range src.Warnings {
		response.Warning(rsp, errors.New(w)).TargetComposite()
	}

	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}
	rules, err := Assign(src.Ranges, ObservedRules(observed), spec.PriorityRange)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}
	xrName, xrNamespace := oxr.Resource.GetName(), oxr.Resource.GetNamespace()
	if spec.Policy.Create {
		desired[policyResource] = &resource.DesiredComposed{Resource: PolicyResource(spec)}
	}
	for _, r := range rules {
		desired[resource.Name(rulePrefix+strconv.FormatInt(r.Priority, 10))] = &resource.DesiredComposed{
			Resource: RuleResource(spec, xrNamespace, xrName, r),
		}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired IPAllowlist"))
		return rsp, nil
	}
	unmatched := make([]any, 0, len(src.Unmatched))
	for _, n := range src.Unmatched {
		unmatched = append(unmatched, n)
	}
	for path, v := range map[string]any{
		"status.ipCount":          int64(len(src.Ranges)),
		"status.ruleCount":        int64(len(rules)),
		"status.unmatchedSources": unmatched,
		"status.policyName":       spec.Policy.Name,
	} {
		if err := dxr.Resource.SetValue(path, v); err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot set %s", path))
			return rsp, nil
		}
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired IPAllowlist"))
		return rsp, nil
	}

	log.Debug("Composed allowlist", "ranges", len(src.Ranges), "rules", len(rules))
	response.Normalf(rsp, "%d source ranges in %d rule(s) of policy %s", len(src.Ranges), len(rules), spec.Policy.Name)
	return rsp, nil
}

// requireNodes adds a requirement for each node source's Nodes to rsp and returns the Nodes
// Crossplane supplied, keyed by source name, and whether it resolved every requirement yet.
func requireNodes(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, sources []NodeSource) (map[string][]Node, bool, error) {
	if len(sources) == 0 {
		return nil, true, nil
	}
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{}}
	nodes := map[string][]Node{}
	resolved := true
	for _, src := range sources {
		key := requirementPrefix + src.Name
		rsp.Requirements.Resources[key] = &fnv1.ResourceSelector{
			ApiVersion: "v1",
			Kind:       "Node",
			Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: src.MatchLabels}},
		}
		items, ok, err := request.GetRequiredResource(req, key)
		if err != nil {
			return nil, false, errors.Wrapf(err, "cannot read the Nodes of node source %q", src.Name)
		}
		if !ok {
			resolved = false
			continue
		}
		for _, it := range items {
			nodes[src.Name] = append(nodes[src.Name], nodeOf(it.Resource))
		}
	}
	return nodes, resolved, nil
}

// nodeOf reads a Node's name and addresses from its status.
func nodeOf(u *unstructured.Unstructured) Node {
	n := Node{Name: u.GetName()}
	addrs, _, _ := unstructured.NestedSlice(u.Object, "status", "addresses")
	for _, a := range addrs {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		addr, _ := m["address"].(string)
		if addr == "" {
			continue
		}
		switch m["type"] {
		case "ExternalIP":
			n.ExternalIPs = append(n.ExternalIPs, addr)
		case "InternalIP":
			n.InternalIPs = append(n.InternalIPs, addr)
		}
	}
	return n
}

// ObservedRules returns the ranges each observed rule holds, keyed by priority. Ranges it cannot
// parse are ignored: the rule is rewritten without them.
func ObservedRules(observed map[resource.Name]resource.ObservedComposed) map[int64][]netip.Prefix {
	out := map[int64][]netip.Prefix{}
	for name, oc := range observed {
		prio, err := strconv.ParseInt(strings.TrimPrefix(string(name), rulePrefix), 10, 64)
		if !strings.HasPrefix(string(name), rulePrefix) || err != nil || oc.Resource == nil {
			continue
		}
		ranges, err := oc.Resource.GetStringArray("spec.forProvider.match.config.srcIpRanges")
		if err != nil {
			continue
		}
		for _, s := range ranges {
			if p, err := ParseRange(s); err == nil {
				out[prio] = append(out[prio], p)
			}
		}
	}
	return out
}

// PolicyResource is the SecurityPolicy of an allowlist that creates its policy. Its rules field
// stays unset, so the policy leaves the allowlist's SecurityPolicyRules alone.
func PolicyResource(s Spec) *composed.Unstructured {
	action := s.Policy.DefaultAction
	if action == "" {
		action = DefaultAction
	}
	fp := map[string]any{"defaultRule": map[string]any{"action": action}}
	if s.Policy.Description != "" {
		fp["description"] = s.Policy.Description
	}
	location(fp, s.Policy)
	spec := map[string]any{"forProvider": fp}
	providerConfig(spec, s.ProviderConfigRef)

	u := composed.New()
	u.SetAPIVersion(mrAPIVersion)
	u.SetKind("SecurityPolicy")
	u.SetName(s.Policy.Name)
	u.Object["spec"] = spec
	return u
}

// RuleResource is the SecurityPolicyRule holding one rule's ranges. Its name, <xr>-<priority>,
// is stable, and its priority (immutable) is part of it.
func RuleResource(s Spec, xrNamespace, xrName string, r Rule) *composed.Unstructured {
	ranges := make([]any, 0, len(r.Ranges))
	for _, p := range r.Ranges {
		ranges = append(ranges, p.String())
	}
	fp := map[string]any{
		"priority":    r.Priority,
		"action":      "allow",
		"description": fmt.Sprintf("IPAllowlist %s/%s", xrNamespace, xrName),
		"match": map[string]any{
			"versionedExpr": "SRC_IPS_V1",
			"config":        map[string]any{"srcIpRanges": ranges},
		},
	}
	if s.Policy.Create {
		fp["securityPolicyRef"] = map[string]any{"name": s.Policy.Name}
	} else {
		fp["securityPolicy"] = s.Policy.Name
	}
	location(fp, s.Policy)
	spec := map[string]any{"forProvider": fp}
	providerConfig(spec, s.ProviderConfigRef)

	u := composed.New()
	u.SetAPIVersion(mrAPIVersion)
	u.SetKind("SecurityPolicyRule")
	u.SetName(fmt.Sprintf("%s-%d", xrName, r.Priority))
	u.Object["spec"] = spec
	return u
}

func location(forProvider map[string]any, p Policy) {
	if p.Project != "" {
		forProvider["project"] = p.Project
	}
	if p.Region != "" {
		forProvider["region"] = p.Region
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
