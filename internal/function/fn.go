package function

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

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
	// addressSetPrefix prefixes the composition resource name of each node source's AddressSet.
	addressSetPrefix = "nodes-"
	// addressSetAPIVersion is the AddressSet's apiVersion.
	addressSetAPIVersion = "cloudarmor.armorplane.io/v1alpha1"
)

// WaitingTTL is how soon the function asks Crossplane to run it again while the allowlist waits
// for progress it cannot be told about for sure: sources still to report, or a switch between
// rules and address groups under way. Crossplane otherwise runs it when a composed resource
// changes, but its circuit breaker drops those events while open (a switch storm can open it), and
// the default TTL of a minute would then leave a finished switch unreported that long.
const WaitingTTL = 15 * time.Second

// Function is the IPAllowlist composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// New returns the function, logging to log.
func New(log logging.Logger) *Function {
	return &Function{log: log}
}

// RunFunction composes an IPAllowlist's SecurityPolicy, SecurityPolicyRules and one AddressSet
// per node source.
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
		stale(rsp, ReasonInvalidSpec, errors.Wrap(err, "cannot read the IPAllowlist's spec"))
		return rsp, nil
	}
	if err := spec.Validate(); err != nil {
		stale(rsp, ReasonInvalidSpec, err)
		return rsp, nil
	}
	if err := RequireSources(rsp, spec, oxr.Resource.GetNamespace()); err != nil {
		stale(rsp, ReasonInvalidSpec, err)
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
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
	for _, src := range spec.NodeSources {
		desired[nodesResource(src.Name)] = &resource.DesiredComposed{Resource: AddressSetResource(xrName, src)}
	}

	// The rules follow the sources only once every source has reported; until then, or when the
	// sources cannot be made into rules, they stay exactly as observed and the IPAllowlist says
	// why in its Current condition, and is not Ready.
	held := ObservedRules(observed)
	sets, waiting, degraded := ReadAddressSets(observed, spec.NodeSources)
	required, err := request.GetRequiredResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the required resources"))
		return rsp, nil
	}
	read, fetching, missing := ReadSources(spec, xrNamespace, required)
	var (
		src  Sources
		c    composition
		hold *holdReason
	)
	switch {
	case missing != nil:
		hold = &holdReason{ReasonCannotCompose, missing.Error()}
	case len(waiting) > 0 || len(fetching) > 0:
		hold = &holdReason{ReasonSourcesPending, pendingMessage(waiting, fetching)}
	default:
		src, err = Collect(spec, sets, read)
		if err == nil {
			c, err = compose(spec, xrNamespace, xrName, src.Ranges, observed, held, desired)
		}
		if err != nil {
			hold = &holdReason{ReasonCannotCompose, err.Error()}
		}
	}
	if hold != nil {
		// Address groups and the rules that use them stay exactly as observed too.
		readComposedGroups(observed).keep(desired, true)
		c.rules = heldRules(held)
	}
	for _, r := range c.rules {
		desired[resource.Name(rulePrefix+strconv.FormatInt(r.Priority, 10))] = &resource.DesiredComposed{
			Resource: RuleResource(spec, xrNamespace, xrName, r),
		}
	}
	if hold != nil && hold.reason == ReasonSourcesPending || c.switching != "" {
		rsp.Meta.Ttl = durationpb.New(WaitingTTL)
	}
	if hold != nil || c.switching != "" {
		// Crossplane's XR is Ready only when every composed resource is; these are not
		// current (or, while switching, what is current is still being replaced), so
		// neither is the allowlist.
		for _, d := range desired {
			d.Ready = resource.ReadyFalse
		}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}

	if hold != nil {
		// Keep the status the IPAllowlist shows: Crossplane applies the desired IPAllowlist
		// with server-side apply, so a status field left out would be removed.
		if err := setStatus(rsp, req, observedStatus(oxr)); err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		log.Debug("Holding the rules as they are", "reason", hold.reason, "message", hold.message)
		response.ConditionFalse(rsp, TypeCurrent, hold.reason).WithMessage(hold.message).TargetComposite()
		if hold.reason != ReasonSourcesPending {
			response.Warning(rsp, errors.New(hold.message)).TargetComposite()
		}
		return rsp, nil
	}

	for _, w := range src.Warnings {
		response.Warning(rsp, errors.New(w)).TargetComposite()
	}
	unmatched := make([]any, 0, len(src.Unmatched))
	for _, n := range src.Unmatched {
		unmatched = append(unmatched, n)
	}
	status := map[string]any{
		"ipCount":          int64(len(src.Ranges)),
		"ruleCount":        int64(len(c.rules)),
		"unmatchedSources": unmatched,
		"policyName":       spec.Policy.Name,
	}
	if spec.groupMode() {
		status["ruleCount"] = int64(0)
		if c.group.rule {
			status["ruleCount"] = int64(1)
		}
		status["addressGroup"] = spec.AddressGroup.Name
	}
	if err := setStatus(rsp, req, status); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

	switch {
	case len(degraded) > 0:
		// The AddressSet holds its last addresses on purpose (a held shrink, Nodes it may not
		// read); the rules follow them, and the AddressSet, not Ready, keeps the allowlist
		// from being Ready.
		response.ConditionFalse(rsp, TypeCurrent, ReasonSourceHeld).WithMessage(strings.Join(degraded, "; ")).TargetComposite()
	case c.switching != "":
		response.ConditionFalse(rsp, TypeCurrent, ReasonSwitching).WithMessage(c.switching).TargetComposite()
	case spec.groupMode() && !c.group.rule:
		response.ConditionTrue(rsp, TypeCurrent, ReasonComposed).
			WithMessage(fmt.Sprintf("%d source ranges in address group %s; the rule of policy %s that uses it comes once GCP has the group", len(src.Ranges), spec.AddressGroup.Name, spec.Policy.Name)).TargetComposite()
	case spec.groupMode():
		response.ConditionTrue(rsp, TypeCurrent, ReasonComposed).
			WithMessage(fmt.Sprintf("%d source ranges in address group %s, allowed by the rule at priority %d of policy %s", len(src.Ranges), spec.AddressGroup.Name, c.group.priority, spec.Policy.Name)).TargetComposite()
	default:
		response.ConditionTrue(rsp, TypeCurrent, ReasonComposed).
			WithMessage(fmt.Sprintf("%d source ranges in %d rule(s) of policy %s", len(src.Ranges), len(c.rules), spec.Policy.Name)).TargetComposite()
	}
	log.Debug("Composed allowlist", "ranges", len(src.Ranges), "rules", len(c.rules), "mode", spec.Mode)
	return rsp, nil
}

// TypeCurrent is the IPAllowlist condition that says whether its rules follow its sources.
// Its last transition time says since when they do, or do not.
const TypeCurrent = "Current"

// Reasons of the Current condition.
const (
	ReasonComposed       = "Composed"
	ReasonSourcesPending = "SourcesPending"
	ReasonSourceHeld     = "SourceHeld"
	ReasonCannotCompose  = "CannotCompose"
	ReasonInvalidSpec    = "InvalidSpec"
)

type holdReason struct{ reason, message string }

// stale reports an error that leaves every composed resource as it is: a fatal result, which
// makes Crossplane apply nothing, and Current=False saying why.
func stale(rsp *fnv1.RunFunctionResponse, reason string, err error) {
	response.ConditionFalse(rsp, TypeCurrent, reason).WithMessage(err.Error()).TargetComposite()
	response.Fatal(rsp, err)
}

// setStatus sets the desired IPAllowlist's status fields (keys under status).
func setStatus(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, fields map[string]any) error {
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return errors.Wrap(err, "cannot get the desired IPAllowlist")
	}
	for k, v := range fields {
		if err := dxr.Resource.SetValue("status."+k, v); err != nil {
			return errors.Wrapf(err, "cannot set status.%s", k)
		}
	}
	return errors.Wrap(response.SetDesiredCompositeResource(rsp, dxr), "cannot set the desired IPAllowlist")
}

// observedStatus is the status fields the function writes, as the IPAllowlist shows them.
func observedStatus(oxr *resource.Composite) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"ipCount", "ruleCount", "unmatchedSources", "policyName", "addressGroup"} {
		if v, err := oxr.Resource.GetValue("status." + k); err == nil {
			out[k] = v
		}
	}
	return out
}

// heldRules are the observed rules as they are, those outside a priority range just narrowed
// included: a held allowlist loses nothing.
func heldRules(observed map[int64][]netip.Prefix) []Rule {
	out := make([]Rule, 0, len(observed))
	for prio, ranges := range observed {
		if len(ranges) > 0 {
			out = append(out, Rule{Priority: prio, Ranges: ranges})
		}
	}
	return out
}

// nodesResource is the composition resource name of a node source's AddressSet.
func nodesResource(source string) resource.Name {
	return resource.Name(addressSetPrefix + source)
}

// ReadAddressSets reads each node source's observed AddressSet. waiting names the sources
// whose AddressSet does not exist yet or has not reported on its current spec; degraded says,
// for each AddressSet that is not Ready, why (its Ready message).
func ReadAddressSets(observed map[resource.Name]resource.ObservedComposed, sources []NodeSource) (sets map[string]NodeSet, waiting, degraded []string) {
	sets = map[string]NodeSet{}
	for _, src := range sources {
		oc, ok := observed[nodesResource(src.Name)]
		if !ok || oc.Resource == nil {
			waiting = append(waiting, strconv.Quote(src.Name))
			continue
		}
		u := oc.Resource
		// GetValueInto, not GetInteger or GetGeneration: resources reach the function as
		// protobuf Structs, whose numbers are all float64, which those read as absent.
		var gen, observedGen int64
		_ = u.GetValueInto("metadata.generation", &gen)
		_ = u.GetValueInto("status.observedGeneration", &observedGen)
		ready := u.GetCondition(xpv2.TypeReady)
		if observedGen < gen || (ready.Status != corev1.ConditionTrue && ready.Status != corev1.ConditionFalse) {
			waiting = append(waiting, strconv.Quote(src.Name))
			continue
		}
		ns := NodeSet{}
		_ = u.GetValueInto("status.addresses", &ns.Addresses)
		_ = u.GetValueInto("status.skipped", &ns.Skipped)
		_ = u.GetValueInto("status.nodeCount", &ns.Nodes)
		_ = u.GetValueInto("status.skippedCount", &ns.SkippedCount)
		sets[src.Name] = ns
		if ready.Status == corev1.ConditionFalse {
			degraded = append(degraded, fmt.Sprintf("node source %q: AddressSet %s is not Ready (%s): %s", src.Name, u.GetName(), ready.Reason, ready.Message))
		}
	}
	return sets, waiting, degraded
}

// AddressSetResource is the AddressSet of one node source, named <xr>-nodes-<source>.
func AddressSetResource(xrName string, src NodeSource) *composed.Unstructured {
	nodes := map[string]any{}
	if len(src.MatchLabels) > 0 {
		l := make(map[string]any, len(src.MatchLabels))
		for k, v := range src.MatchLabels {
			l[k] = v
		}
		nodes["matchLabels"] = l
	}
	if src.IncludeInternalIP {
		nodes["includeInternalIP"] = true
	}
	spec := map[string]any{"nodes": nodes}
	if src.ShrinkHoldSeconds != nil {
		spec["shrinkHoldSeconds"] = *src.ShrinkHoldSeconds
	}
	u := composed.New()
	u.SetAPIVersion(addressSetAPIVersion)
	u.SetKind("AddressSet")
	u.SetName(AddressSetName(xrName, src.Name))
	u.Object["spec"] = spec
	return u
}

// AddressSetName is <xr>-nodes-<source>, made a valid object name: a source name may hold
// characters an object name may not (upper case, spaces), so such a name is lowered, its other
// characters made dashes, and a hash of the source name appended to keep two such names apart.
func AddressSetName(xrName, source string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, source)
	name := xrName + "-nodes-" + strings.Trim(clean, "-")
	if clean != source || len(name) > maxNameLength {
		sum := sha256.Sum256([]byte(source))
		suffix := "-" + hex.EncodeToString(sum[:])[:8]
		name = strings.TrimRight(name[:min(len(name), maxNameLength-len(suffix))], "-.") + suffix
	}
	return name
}

// maxNameLength is a Kubernetes object name's limit (a DNS subdomain).
const maxNameLength = 253

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
	return allowRule(s, xrNamespace, xrName, fmt.Sprintf("%s-%d", xrName, r.Priority), r.Priority, map[string]any{
		"versionedExpr": "SRC_IPS_V1",
		"config":        map[string]any{"srcIpRanges": ranges},
	})
}

// allowRule is a SecurityPolicyRule named name, at priority in the allowlist's policy, that
// allows what match matches.
func allowRule(s Spec, xrNamespace, xrName, name string, priority int64, match map[string]any) *composed.Unstructured {
	fp := map[string]any{
		"priority":    priority,
		"action":      "allow",
		"description": fmt.Sprintf("IPAllowlist %s/%s", xrNamespace, xrName),
		"match":       match,
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
	u.SetName(name)
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
