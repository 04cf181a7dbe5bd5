package gcppolicy

import (
	"encoding/json"
	"maps"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// GeneratePolicy returns the body of securityPolicies.insert (or
// regionSecurityPolicies.insert) for a policy called name. Its rules are the
// inline rules followed by the default rule when spec.defaultRule is set; with
// no defaultRule GCP adds its own default rule. Region is not part of the
// body: the caller addresses the regional endpoint. The caller removes inline
// rules at priorities a SecurityPolicyRule claims before calling it.
func GeneratePolicy(name string, p v1beta1.SecurityPolicyParameters) *compute.SecurityPolicy {
	out := &compute.SecurityPolicy{
		Name:                     name,
		Description:              deref(p.Description),
		Type:                     deref(p.Type),
		AdaptiveProtectionConfig: applyAdaptiveProtection(p.AdaptiveProtectionConfig, nil),
		AdvancedOptionsConfig:    applyAdvancedOptions(p.AdvancedOptionsConfig, nil),
		RecaptchaOptionsConfig:   applyRecaptchaOptions(p.RecaptchaOptionsConfig, nil),
		DdosProtectionConfig:     applyDdosProtection(p.DdosProtectionConfig, nil),
		UserDefinedFields:        applyUserDefinedFields(p.UserDefinedFields, nil),
	}
	if len(p.Labels) > 0 {
		out.Labels = maps.Clone(p.Labels)
	}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, GenerateRule(r.Priority, r.RuleParameters))
	}
	if p.DefaultRule != nil {
		out.Rules = append(out.Rules, GenerateDefaultRule(*p.DefaultRule))
	}
	return out
}

// GeneratePolicyPatch returns the body of securityPolicies.patch that makes
// observed's top-level fields match p. It carries only the fields p sets,
// each merged over what GCP holds so that sub-fields p leaves unset keep their
// value, plus observed's fingerprint for optimistic locking (a stale one gets
// 412 conditionNotMet). It never carries rules (a PATCH with rules replaces
// the whole rule set, so rules go through addRule, patchRule and removeRule),
// labels (setLabels) or type (immutable).
func GeneratePolicyPatch(p v1beta1.SecurityPolicyParameters, observed *compute.SecurityPolicy) *compute.SecurityPolicy {
	if observed == nil {
		observed = &compute.SecurityPolicy{}
	}
	out := &compute.SecurityPolicy{Fingerprint: observed.Fingerprint}
	if p.Description != nil {
		out.Description = *p.Description
		forceIf(&out.ForceSendFields, "Description", *p.Description == "")
	}
	if p.AdaptiveProtectionConfig != nil {
		out.AdaptiveProtectionConfig = applyAdaptiveProtection(p.AdaptiveProtectionConfig, clone(observed.AdaptiveProtectionConfig))
	}
	if p.AdvancedOptionsConfig != nil {
		out.AdvancedOptionsConfig = applyAdvancedOptions(p.AdvancedOptionsConfig, clone(observed.AdvancedOptionsConfig))
	}
	if p.RecaptchaOptionsConfig != nil {
		out.RecaptchaOptionsConfig = applyRecaptchaOptions(p.RecaptchaOptionsConfig, clone(observed.RecaptchaOptionsConfig))
	}
	if p.DdosProtectionConfig != nil {
		out.DdosProtectionConfig = applyDdosProtection(p.DdosProtectionConfig, clone(observed.DdosProtectionConfig))
	}
	if p.UserDefinedFields != nil {
		out.UserDefinedFields = applyUserDefinedFields(p.UserDefinedFields, cloneSlice(observed.UserDefinedFields))
		forceIf(&out.ForceSendFields, "UserDefinedFields", len(p.UserDefinedFields) == 0)
	}
	return out
}

// The apply functions overlay the fields the spec sets onto into (which they
// own and modify; nil means "start from nothing") and return the result. A
// spec field left nil keeps into's value, which is how "unset is don't care"
// works for GeneratePolicyPatch and PolicyUpToDate. Explicit zero values are
// added to ForceSendFields, because the Go client would drop them otherwise.

func applyAdaptiveProtection(s *v1beta1.AdaptiveProtectionConfig, into *compute.SecurityPolicyAdaptiveProtectionConfig) *compute.SecurityPolicyAdaptiveProtectionConfig {
	if s == nil {
		return into
	}
	if into == nil {
		into = &compute.SecurityPolicyAdaptiveProtectionConfig{}
	}
	into.Layer7DdosDefenseConfig = applyLayer7(s.Layer7DdosDefenseConfig, into.Layer7DdosDefenseConfig)
	return into
}

func applyLayer7(s *v1beta1.Layer7DdosDefenseConfig, into *compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig) *compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig {
	if s == nil {
		return into
	}
	if into == nil {
		into = &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{}
	}
	setBool(&into.Enable, s.Enable, &into.ForceSendFields, "Enable")
	setValue(&into.RuleVisibility, s.RuleVisibility)
	if s.ThresholdConfigs == nil {
		return into
	}
	// thresholdConfigs is a map keyed by name: each entry overlays GCP's entry
	// of the same name, and entries the spec does not list are dropped.
	observed := into.ThresholdConfigs
	into.ThresholdConfigs = nil
	for i := range s.ThresholdConfigs {
		t := &s.ThresholdConfigs[i]
		into.ThresholdConfigs = append(into.ThresholdConfigs, applyThresholdConfig(t, findThreshold(observed, t.Name)))
	}
	forceIf(&into.ForceSendFields, "ThresholdConfigs", len(s.ThresholdConfigs) == 0)
	return into
}

type thresholdConfig = compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfigThresholdConfig

func findThreshold(in []*thresholdConfig, name string) *thresholdConfig {
	for _, t := range in {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

func applyThresholdConfig(s *v1beta1.ThresholdConfig, into *thresholdConfig) *thresholdConfig {
	if into == nil {
		into = &thresholdConfig{}
	}
	into.Name = s.Name
	f := &into.ForceSendFields
	setNumber(&into.AutoDeployLoadThreshold, s.AutoDeployLoadThreshold, f, "AutoDeployLoadThreshold")
	setNumber(&into.AutoDeployConfidenceThreshold, s.AutoDeployConfidenceThreshold, f, "AutoDeployConfidenceThreshold")
	setNumber(&into.AutoDeployImpactedBaselineThreshold, s.AutoDeployImpactedBaselineThreshold, f, "AutoDeployImpactedBaselineThreshold")
	setNumber(&into.AutoDeployExpirationSec, s.AutoDeployExpirationSec, f, "AutoDeployExpirationSec")
	setNumber(&into.DetectionLoadThreshold, s.DetectionLoadThreshold, f, "DetectionLoadThreshold")
	setNumber(&into.DetectionAbsoluteQps, s.DetectionAbsoluteQps, f, "DetectionAbsoluteQps")
	setNumber(&into.DetectionRelativeToBaselineQps, s.DetectionRelativeToBaselineQps, f, "DetectionRelativeToBaselineQps")
	if s.TrafficGranularityConfigs != nil {
		// An atomic list: the spec replaces it whole.
		into.TrafficGranularityConfigs = nil
		for _, g := range s.TrafficGranularityConfigs {
			tg := &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfigThresholdConfigTrafficGranularityConfig{
				Type:                  g.Type,
				Value:                 deref(g.Value),
				EnableEachUniqueValue: deref(g.EnableEachUniqueValue),
			}
			forceIf(&tg.ForceSendFields, "EnableEachUniqueValue", g.EnableEachUniqueValue != nil && !*g.EnableEachUniqueValue)
			into.TrafficGranularityConfigs = append(into.TrafficGranularityConfigs, tg)
		}
		forceIf(f, "TrafficGranularityConfigs", len(s.TrafficGranularityConfigs) == 0)
	}
	return into
}

func applyAdvancedOptions(s *v1beta1.AdvancedOptionsConfig, into *compute.SecurityPolicyAdvancedOptionsConfig) *compute.SecurityPolicyAdvancedOptionsConfig {
	if s == nil {
		return into
	}
	if into == nil {
		into = &compute.SecurityPolicyAdvancedOptionsConfig{}
	}
	setValue(&into.JsonParsing, s.JsonParsing)
	setValue(&into.LogLevel, s.LogLevel)
	setValue(&into.RequestBodyInspectionSize, s.RequestBodyInspectionSize)
	if s.JsonCustomConfig != nil {
		into.JsonCustomConfig = &compute.SecurityPolicyAdvancedOptionsConfigJsonCustomConfig{ContentTypes: clip(s.JsonCustomConfig.ContentTypes)}
		// GCP merges a PATCH into what it holds: an empty list must be
		// sent to clear the old one.
		forceIf(&into.JsonCustomConfig.ForceSendFields, "ContentTypes", len(s.JsonCustomConfig.ContentTypes) == 0)
	}
	if s.UserIpRequestHeaders != nil {
		into.UserIpRequestHeaders = clip(s.UserIpRequestHeaders)
		forceIf(&into.ForceSendFields, "UserIpRequestHeaders", len(s.UserIpRequestHeaders) == 0)
	}
	return into
}

func applyRecaptchaOptions(s *v1beta1.RecaptchaOptionsConfig, into *compute.SecurityPolicyRecaptchaOptionsConfig) *compute.SecurityPolicyRecaptchaOptionsConfig {
	if s == nil {
		return into
	}
	if into == nil {
		into = &compute.SecurityPolicyRecaptchaOptionsConfig{}
	}
	into.RedirectSiteKey = s.RedirectSiteKey
	// An empty key must be sent to clear the old one: GCP merges a PATCH.
	forceIf(&into.ForceSendFields, "RedirectSiteKey", s.RedirectSiteKey == "")
	return into
}

func applyDdosProtection(s *v1beta1.DdosProtectionConfig, into *compute.SecurityPolicyDdosProtectionConfig) *compute.SecurityPolicyDdosProtectionConfig {
	if s == nil {
		return into
	}
	if into == nil {
		into = &compute.SecurityPolicyDdosProtectionConfig{}
	}
	setValue(&into.DdosProtection, s.DdosProtection)
	setValue(&into.DdosAdaptiveProtection, s.DdosAdaptiveProtection)
	setNumber(&into.DdosImpactedBaselineThreshold, s.DdosImpactedBaselineThreshold, &into.ForceSendFields, "DdosImpactedBaselineThreshold")
	return into
}

// applyUserDefinedFields treats the list as a map keyed by name, like
// thresholdConfigs.
func applyUserDefinedFields(s []v1beta1.UserDefinedField, into []*compute.SecurityPolicyUserDefinedField) []*compute.SecurityPolicyUserDefinedField {
	if s == nil {
		return into
	}
	var out []*compute.SecurityPolicyUserDefinedField
	for _, f := range s {
		u := findUserDefinedField(into, f.Name)
		if u == nil {
			u = &compute.SecurityPolicyUserDefinedField{}
		}
		u.Name, u.Base = f.Name, f.Base
		setNumber(&u.Offset, f.Offset, &u.ForceSendFields, "Offset")
		setNumber(&u.Size, f.Size, &u.ForceSendFields, "Size")
		setValue(&u.Mask, f.Mask)
		out = append(out, u)
	}
	return out
}

func findUserDefinedField(in []*compute.SecurityPolicyUserDefinedField, name string) *compute.SecurityPolicyUserDefinedField {
	for _, u := range in {
		if u != nil && u.Name == name {
			return u
		}
	}
	return nil
}

// setValue sets *dst to *src when the spec sets it.
func setValue[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// setBool sets *dst to *src when the spec sets it, forcing false to be sent.
func setBool(dst *bool, src *bool, force *[]string, name string) {
	if src == nil {
		return
	}
	*dst = *src
	forceIf(force, name, !*src)
}

// setNumber sets *dst to *src when the spec sets it, forcing 0 to be sent.
func setNumber[T int64 | float64](dst *T, src *T, force *[]string, name string) {
	if src == nil {
		return
	}
	*dst = *src
	forceIf(force, name, *src == 0)
}

// forceIf adds name to a ForceSendFields list when cond holds.
func forceIf(fields *[]string, name string, cond bool) {
	if cond {
		*fields = append(*fields, name)
	}
}

// clone returns a deep copy of a Compute object. The Compute types have no
// DeepCopy; a JSON round trip copies every field the API knows.
// ForceSendFields are not copied, which is right for observed objects.
func clone[T any](in *T) *T {
	if in == nil {
		return nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Compute types always marshal; nothing sensible to copy otherwise.
		return nil
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil
	}
	return out
}

// cloneSlice deep-copies a list of Compute objects.
func cloneSlice[T any](in []*T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		out[i] = clone(v)
	}
	return out
}
