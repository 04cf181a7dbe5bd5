package gcppolicy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

type l7 = compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig
type granularity = compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfigThresholdConfigTrafficGranularityConfig

// policy builds an observed Compute policy from modifiers.
func policy(mods ...func(*compute.SecurityPolicy)) *compute.SecurityPolicy {
	p := &compute.SecurityPolicy{
		Kind: "compute#securityPolicy", Name: "edge", Id: 2953638056173439792, Type: "CLOUD_ARMOR",
		Fingerprint: "C80RqDu3TxA=", LabelFingerprint: "42WmSpB8rSM=",
		SelfLink: "https://www.googleapis.com/compute/v1/projects/p/global/securityPolicies/edge",
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withRules(rs ...*compute.SecurityPolicyRule) func(*compute.SecurityPolicy) {
	return func(p *compute.SecurityPolicy) { p.Rules = rs }
}

func TestGeneratePolicy(t *testing.T) {
	type args struct {
		name string
		p    v1beta1.SecurityPolicyParameters
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *compute.SecurityPolicy
	}{
		"Minimal": {
			reason: "A policy with nothing set is only its name; GCP adds type and the default rule.",
			args:   args{name: "edge"},
			want:   &compute.SecurityPolicy{Name: "edge"},
		},
		"Everything": {
			reason: "Every top-level field, the inline rules and the default rule are in the insert body; region is not.",
			args: args{name: "edge", p: v1beta1.SecurityPolicyParameters{
				Region: ptr("us-central1"), Type: ptr("CLOUD_ARMOR"), Description: ptr("d"),
				Labels: map[string]string{"team": "a"},
				AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
					Enable: ptr(true), RuleVisibility: ptr("STANDARD"),
					ThresholdConfigs: []v1beta1.ThresholdConfig{{
						Name: "t1", AutoDeployLoadThreshold: ptr(0.8), AutoDeployConfidenceThreshold: ptr(0.5),
						AutoDeployImpactedBaselineThreshold: ptr(0.01), AutoDeployExpirationSec: ptr(int64(7200)),
						DetectionLoadThreshold: ptr(0.0), DetectionAbsoluteQps: ptr(100.0), DetectionRelativeToBaselineQps: ptr(2.0),
						TrafficGranularityConfigs: []v1beta1.TrafficGranularityConfig{
							{Type: "HTTP_HEADER_HOST", Value: ptr("example.com")}, {Type: "HTTP_PATH", EnableEachUniqueValue: ptr(true)}},
					}},
				}},
				AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{
					JsonParsing: ptr("STANDARD"), JsonCustomConfig: &v1beta1.JSONCustomConfig{ContentTypes: []string{"application/x"}},
					LogLevel: ptr("VERBOSE"), UserIpRequestHeaders: []string{"X-Real-IP"}, RequestBodyInspectionSize: ptr("8KB"),
				},
				RecaptchaOptionsConfig: &v1beta1.RecaptchaOptionsConfig{RedirectSiteKey: "key"},
				DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED"), DdosAdaptiveProtection: ptr("ENABLED"),
					DdosImpactedBaselineThreshold: ptr(0.25)},
				UserDefinedFields: []v1beta1.UserDefinedField{{Name: "ttl", Base: "IPV4", Offset: ptr(int64(8)), Size: ptr(int64(1)), Mask: ptr("0xff")}},
				DefaultRule:       &v1beta1.RuleParameters{Action: "deny(403)"},
				Rules: []v1beta1.PolicyRule{
					{Priority: 1000, RuleParameters: v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("10.0.0.0/8")}},
					{Priority: 0, RuleParameters: v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("192.0.2.1")}},
				},
			}},
			want: &compute.SecurityPolicy{
				Name: "edge", Type: "CLOUD_ARMOR", Description: "d", Labels: map[string]string{"team": "a"},
				AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
					Enable: true, RuleVisibility: "STANDARD",
					ThresholdConfigs: []*thresholdConfig{{
						Name: "t1", AutoDeployLoadThreshold: 0.8, AutoDeployConfidenceThreshold: 0.5,
						AutoDeployImpactedBaselineThreshold: 0.01, AutoDeployExpirationSec: 7200,
						DetectionAbsoluteQps: 100, DetectionRelativeToBaselineQps: 2,
						TrafficGranularityConfigs: []*granularity{
							{Type: "HTTP_HEADER_HOST", Value: "example.com"}, {Type: "HTTP_PATH", EnableEachUniqueValue: true}},
						ForceSendFields: []string{"DetectionLoadThreshold"},
					}},
				}},
				AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{
					JsonParsing: "STANDARD", JsonCustomConfig: &compute.SecurityPolicyAdvancedOptionsConfigJsonCustomConfig{ContentTypes: []string{"application/x"}},
					LogLevel: "VERBOSE", UserIpRequestHeaders: []string{"X-Real-IP"}, RequestBodyInspectionSize: "8KB",
				},
				RecaptchaOptionsConfig: &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "key"},
				DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED",
					DdosImpactedBaselineThreshold: 0.25},
				UserDefinedFields: []*compute.SecurityPolicyUserDefinedField{{Name: "ttl", Base: "IPV4", Offset: 8, Size: 1, Mask: "0xff"}},
				Rules: []*compute.SecurityPolicyRule{
					{Priority: 1000, Action: "allow", Match: srcIPs("10.0.0.0/8")},
					{Priority: 0, Action: "allow", Match: srcIPs("192.0.2.1"), ForceSendFields: []string{"Priority"}},
					{Priority: v1beta1.DefaultRulePriority, Action: "deny(403)", Match: srcIPs("*")},
				},
			},
		},
		"ExplicitZeros": {
			reason: "Explicit false and 0 values are force-sent.",
			args: args{name: "edge", p: v1beta1.SecurityPolicyParameters{
				AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
					Enable: ptr(false), ThresholdConfigs: []v1beta1.ThresholdConfig{{Name: "t",
						TrafficGranularityConfigs: []v1beta1.TrafficGranularityConfig{{Type: "HTTP_PATH", EnableEachUniqueValue: ptr(false)}}}}}},
				UserDefinedFields:    []v1beta1.UserDefinedField{{Name: "f", Base: "TCP", Offset: ptr(int64(0))}},
				DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosImpactedBaselineThreshold: ptr(0.0)},
				Labels:               map[string]string{},
			}},
			want: &compute.SecurityPolicy{Name: "edge",
				AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
					ForceSendFields: []string{"Enable"},
					ThresholdConfigs: []*thresholdConfig{{Name: "t", TrafficGranularityConfigs: []*granularity{
						{Type: "HTTP_PATH", ForceSendFields: []string{"EnableEachUniqueValue"}}}}},
				}},
				UserDefinedFields:    []*compute.SecurityPolicyUserDefinedField{{Name: "f", Base: "TCP", ForceSendFields: []string{"Offset"}}},
				DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{ForceSendFields: []string{"DdosImpactedBaselineThreshold"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GeneratePolicy(tc.args.name, tc.args.p)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGeneratePolicy(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGeneratePolicyPatch(t *testing.T) {
	type args struct {
		p        v1beta1.SecurityPolicyParameters
		observed *compute.SecurityPolicy
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *compute.SecurityPolicy
	}{
		"NothingSet": {
			reason: "With nothing set the patch is only the fingerprint.",
			args:   args{observed: policy()},
			want:   &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA="},
		},
		"NilObserved": {
			reason: "A nil observed policy patches from nothing.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("")}},
			want:   &compute.SecurityPolicy{ForceSendFields: []string{"Description"}},
		},
		"NeverRulesLabelsOrType": {
			reason: "Rules, labels and type are never in the patch body.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR_EDGE"), Labels: map[string]string{"a": "b"},
					DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"},
					Rules:       []v1beta1.PolicyRule{{Priority: 1, RuleParameters: v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs("*")}}}},
				observed: policy(withRules(rule(1, "deny(403)"))),
			},
			want: &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA="},
		},
		"OverlayKeepsServerValues": {
			reason: "Sub-fields the spec leaves unset keep GCP's values; set ones are replaced.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{
					Description:           ptr("new"),
					AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{LogLevel: ptr("VERBOSE")},
					DdosProtectionConfig:  &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED")},
					AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
						ThresholdConfigs: []v1beta1.ThresholdConfig{{Name: "b", DetectionAbsoluteQps: ptr(5.0)}}}},
				},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.Description = "old"
					p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "DISABLED", LogLevel: "NORMAL"}
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "STANDARD", DdosAdaptiveProtection: "ENABLED",
						DdosImpactedBaselineThreshold: 0.5}
					p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
						Enable: true, RuleVisibility: "STANDARD",
						ThresholdConfigs: []*thresholdConfig{{Name: "a", DetectionAbsoluteQps: 1}, {Name: "b", DetectionLoadThreshold: 0.5}}}}
				}),
			},
			want: &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA=", Description: "new",
				AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "DISABLED", LogLevel: "VERBOSE"},
				DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED",
					DdosImpactedBaselineThreshold: 0.5},
				AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
					Enable: true, RuleVisibility: "STANDARD",
					ThresholdConfigs: []*thresholdConfig{{Name: "b", DetectionLoadThreshold: 0.5, DetectionAbsoluteQps: 5}}}},
			},
		},
		"ClearSiteKeyAndContentTypes": {
			reason: "GCP merges a PATCH into what it holds, so an empty reCAPTCHA site key and an empty contentTypes list are force-sent: left out, they would keep the old values.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{
					RecaptchaOptionsConfig: &v1beta1.RecaptchaOptionsConfig{},
					AdvancedOptionsConfig:  &v1beta1.AdvancedOptionsConfig{JsonCustomConfig: &v1beta1.JSONCustomConfig{}},
				},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.RecaptchaOptionsConfig = &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "old-key"}
					p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{
						JsonCustomConfig: &compute.SecurityPolicyAdvancedOptionsConfigJsonCustomConfig{ContentTypes: []string{"application/json"}}}
				}),
			},
			want: &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA=",
				RecaptchaOptionsConfig: &compute.SecurityPolicyRecaptchaOptionsConfig{ForceSendFields: []string{"RedirectSiteKey"}},
				AdvancedOptionsConfig: &compute.SecurityPolicyAdvancedOptionsConfig{
					JsonCustomConfig: &compute.SecurityPolicyAdvancedOptionsConfigJsonCustomConfig{ForceSendFields: []string{"ContentTypes"}}}},
		},
		"ClearLists": {
			reason: "Explicitly empty lists are force-sent so that they clear GCP's.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{
					AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{UserIpRequestHeaders: []string{}},
					UserDefinedFields:     []v1beta1.UserDefinedField{},
					AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
						ThresholdConfigs: []v1beta1.ThresholdConfig{{Name: "a", TrafficGranularityConfigs: []v1beta1.TrafficGranularityConfig{}}}}},
					RecaptchaOptionsConfig: &v1beta1.RecaptchaOptionsConfig{RedirectSiteKey: "k2"},
				},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{UserIpRequestHeaders: []string{"X"}}
					p.UserDefinedFields = []*compute.SecurityPolicyUserDefinedField{{Name: "f", Base: "TCP"}}
					p.RecaptchaOptionsConfig = &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "k1"}
					p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
						ThresholdConfigs: []*thresholdConfig{{Name: "a", TrafficGranularityConfigs: []*granularity{{Type: "HTTP_PATH"}}}}}}
				}),
			},
			want: &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA=",
				AdvancedOptionsConfig:  &compute.SecurityPolicyAdvancedOptionsConfig{ForceSendFields: []string{"UserIpRequestHeaders"}},
				ForceSendFields:        []string{"UserDefinedFields"},
				RecaptchaOptionsConfig: &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "k2"},
				AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
					ThresholdConfigs: []*thresholdConfig{{Name: "a", ForceSendFields: []string{"TrafficGranularityConfigs"}}}}},
			},
		},
		"EmptyThresholdConfigs": {
			reason: "thresholdConfigs [] clears GCP's entries.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{
					Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{ThresholdConfigs: []v1beta1.ThresholdConfig{}}}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
						Enable: true, ThresholdConfigs: []*thresholdConfig{{Name: "a"}}}}
				}),
			},
			want: &compute.SecurityPolicy{Fingerprint: "C80RqDu3TxA=",
				AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
					Enable: true, ForceSendFields: []string{"ThresholdConfigs"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := GeneratePolicyPatch(tc.args.p, tc.args.observed)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nGeneratePolicyPatch(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGeneratePolicyPatchDoesNotModifyObserved(t *testing.T) {
	observed := policy(func(p *compute.SecurityPolicy) {
		p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "NORMAL"}
	})
	_ = GeneratePolicyPatch(v1beta1.SecurityPolicyParameters{AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{LogLevel: ptr("VERBOSE")}}, observed)
	if got := observed.AdvancedOptionsConfig.LogLevel; got != "NORMAL" {
		t.Errorf("\nGeneratePolicyPatch must not modify the (shared) observed policy.\nGeneratePolicyPatch(...): logLevel became %q", got)
	}
}

// topLevelUpToDate is what the SecurityPolicy controller checks of a
// policy's top-level fields: its type (reported, never written), and the
// patch and labels PlanPolicy plans.
func topLevelUpToDate(p v1beta1.SecurityPolicyParameters, observed *compute.SecurityPolicy) (bool, string) {
	var diffs []string
	if ok, d := TypeUpToDate(p, observed); !ok {
		diffs = append(diffs, d)
	}
	if !LabelsUpToDate(p.Labels, observed) {
		diffs = append(diffs, "labels differ")
	}
	if ok, d := PatchUpToDate(p, observed); !ok {
		diffs = append(diffs, d)
	}
	return len(diffs) == 0, strings.Join(diffs, "\n")
}

func TestTopLevelUpToDate(t *testing.T) {
	type args struct {
		p        v1beta1.SecurityPolicyParameters
		observed *compute.SecurityPolicy
	}
	type want struct {
		upToDate bool
		diffHas  []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NothingSet": {
			reason: "Unset fields are don't care, whatever GCP holds.",
			args: args{observed: policy(func(p *compute.SecurityPolicy) {
				p.Description = "x"
				p.Labels = map[string]string{"a": "b"}
				p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "NORMAL"}
			})},
			want: want{upToDate: true},
		},
		"NilObserved": {
			reason: "Nothing wanted and nothing observed is up to date.",
			want:   want{upToDate: true},
		},
		"ServerDefaultsInsideConfig": {
			reason: "Server-filled sub-fields of a config the spec sets are no drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{
					AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{LogLevel: ptr("VERBOSE")},
					AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
						Enable: ptr(true), ThresholdConfigs: []v1beta1.ThresholdConfig{{Name: "b"}, {Name: "a"}}}},
				},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "DISABLED", LogLevel: "VERBOSE"}
					p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{
						Enable: true, RuleVisibility: "STANDARD", ThresholdConfigs: []*thresholdConfig{{Name: "a"}, {Name: "b"}}}}
				}),
			},
			want: want{upToDate: true},
		},
		"EmptyConfigDropped": {
			reason: "A config set to only false or {} equals GCP dropping it.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{
					Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{Enable: ptr(false)}}},
				observed: policy(),
			},
			want: want{upToDate: true},
		},
		"Description": {
			reason: "A changed description is drift; a wanted \"\" equals an absent one.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("new")}, observed: policy()},
			want:   want{upToDate: false, diffHas: []string{"description", "new"}},
		},
		"EmptyDescription": {
			reason: "description \"\" equals GCP omitting it.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("")}, observed: policy()},
			want:   want{upToDate: true},
		},
		"ConfigChanged": {
			reason: "A changed sub-field of a set config is drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{
					AdvancedOptionsConfig:  &v1beta1.AdvancedOptionsConfig{LogLevel: ptr("VERBOSE")},
					RecaptchaOptionsConfig: &v1beta1.RecaptchaOptionsConfig{RedirectSiteKey: "k"},
					DdosProtectionConfig:   &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED")},
					UserDefinedFields:      []v1beta1.UserDefinedField{{Name: "f", Base: "UDP"}},
					AdaptiveProtectionConfig: &v1beta1.AdaptiveProtectionConfig{Layer7DdosDefenseConfig: &v1beta1.Layer7DdosDefenseConfig{
						Enable: ptr(false)}},
				},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "NORMAL"}
					p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{Layer7DdosDefenseConfig: &l7{Enable: true}}
				}),
			},
			want: want{upToDate: false, diffHas: []string{"advancedOptionsConfig", "recaptchaOptionsConfig", "ddosProtectionConfig",
				"userDefinedFields", "adaptiveProtectionConfig"}},
		},
		"DdosUnsetFieldsAreDontCare": {
			reason: "ddosProtectionConfig fields the spec leaves unset keep GCP's values and are no drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED")}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED",
						DdosAdaptiveProtection: "ENABLED", DdosImpactedBaselineThreshold: 0.3}
				}),
			},
			want: want{upToDate: true},
		},
		"DdosAdaptiveProtectionChanged": {
			reason: "ddosAdaptiveProtection changed in GCP is drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{
					DdosProtection: ptr("ADVANCED"), DdosAdaptiveProtection: ptr("ENABLED")}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "PREVIEW"}
				}),
			},
			want: want{upToDate: false, diffHas: []string{"ddosProtectionConfig", "ENABLED", "PREVIEW"}},
		},
		"DdosThresholdChanged": {
			reason: "A changed ddosImpactedBaselineThreshold is drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosImpactedBaselineThreshold: ptr(0.2)}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosImpactedBaselineThreshold: 0.4}
				}),
			},
			want: want{upToDate: false, diffHas: []string{"ddosProtectionConfig", "0.2", "0.4"}},
		},
		"DdosThresholdZeroVersusAbsent": {
			reason: "A wanted threshold of 0 is not GCP's absent one: GCP omits 0, so 0 is what it holds.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosImpactedBaselineThreshold: ptr(0.0)}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED"}
				}),
			},
			want: want{upToDate: true},
		},
		"FloatsAsGCPStoresThem": {
			reason: "GCP keeps proto floats as float32: 0.1 coming back as 0.10000000149011612 is no drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosImpactedBaselineThreshold: ptr(0.1)}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosImpactedBaselineThreshold: float64(float32(0.1))}
				}),
			},
			want: want{upToDate: true},
		},
		"UserDefinedFieldOrder": {
			reason: "userDefinedFields is keyed by name: order is no drift.",
			args: args{
				p: v1beta1.SecurityPolicyParameters{UserDefinedFields: []v1beta1.UserDefinedField{{Name: "b", Base: "UDP"}, {Name: "a", Base: "TCP"}}},
				observed: policy(func(p *compute.SecurityPolicy) {
					p.UserDefinedFields = []*compute.SecurityPolicyUserDefinedField{{Name: "a", Base: "TCP"}, {Name: "b", Base: "UDP"}}
				}),
			},
			want: want{upToDate: true},
		},
		"LabelsEmptyMeansNone": {
			reason: "labels {} means no labels: GCP's labels are drift.",
			args: args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{}},
				observed: policy(func(p *compute.SecurityPolicy) { p.Labels = map[string]string{"a": "b"} })},
			want: want{upToDate: false, diffHas: []string{"labels"}},
		},
		"LabelsEqual": {
			reason: "Equal labels are up to date; {} equals none.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{}}, observed: policy()},
			want:   want{upToDate: true},
		},
		"TypeDefault": {
			reason: "A spec type CLOUD_ARMOR equals GCP omitting type (its default).",
			args: args{p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR")},
				observed: policy(func(p *compute.SecurityPolicy) { p.Type = "" })},
			want: want{upToDate: true},
		},
		"TypeMismatch": {
			reason: "A type mismatch is reported so the user sees it, though it is never patched.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR_EDGE")}, observed: policy()},
			want:   want{upToDate: false, diffHas: []string{"type is immutable", "CLOUD_ARMOR_EDGE"}},
		},
		"RulesIgnored": {
			reason: "Rules are not compared with the top-level fields.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}},
				observed: policy(withRules(rule(1, "allow")))},
			want: want{upToDate: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, diff := topLevelUpToDate(tc.args.p, tc.args.observed)
			if d := cmp.Diff(tc.want.upToDate, got); d != "" {
				t.Errorf("\n%s\ntopLevelUpToDate(...): -want, +got:\n%s\ndiff was:\n%s", tc.reason, d, diff)
			}
			if got && diff != "" {
				t.Errorf("\n%s\ntopLevelUpToDate(...): an up-to-date policy must have no diff, got:\n%s", tc.reason, diff)
			}
			for _, s := range tc.want.diffHas {
				if !strings.Contains(diff, s) {
					t.Errorf("\n%s\ntopLevelUpToDate(...): diff should mention %q, got:\n%s", tc.reason, s, diff)
				}
			}
		})
	}
}

func TestLabelsUpToDate(t *testing.T) {
	cases := map[string]struct {
		reason   string
		labels   map[string]string
		observed *compute.SecurityPolicy
		want     bool
	}{
		"DontCare":     {reason: "nil labels are don't care.", observed: policy(func(p *compute.SecurityPolicy) { p.Labels = map[string]string{"a": "b"} }), want: true},
		"NilObserved":  {reason: "Wanting no labels of a missing policy is up to date.", labels: map[string]string{}, want: true},
		"Equal":        {reason: "Equal maps are up to date.", labels: map[string]string{"a": "b"}, observed: policy(func(p *compute.SecurityPolicy) { p.Labels = map[string]string{"a": "b"} }), want: true},
		"ValueChanged": {reason: "A changed value is drift.", labels: map[string]string{"a": "c"}, observed: policy(func(p *compute.SecurityPolicy) { p.Labels = map[string]string{"a": "b"} })},
		"Missing":      {reason: "A missing label is drift.", labels: map[string]string{"a": "b"}, observed: policy()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LabelsUpToDate(tc.labels, tc.observed)); diff != "" {
				t.Errorf("\n%s\nLabelsUpToDate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDefaultRuleUpToDate(t *testing.T) {
	type args struct {
		p        *v1beta1.RuleParameters
		observed *compute.SecurityPolicy
	}
	type want struct {
		upToDate bool
		diffHas  string
	}
	gcpDefault := func(action string) *compute.SecurityPolicyRule {
		r := rule(v1beta1.DefaultRulePriority, action, withMatch(srcIPs("*")))
		r.Description = "Default rule, higher priority overrides it"
		asGCPReturnsIt(r)
		return r
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"DontCare": {
			reason: "A nil defaultRule leaves GCP's default rule alone.",
			args:   args{observed: policy(withRules(gcpDefault("allow")))},
			want:   want{upToDate: true},
		},
		"Equal": {
			reason: "A matching default rule is up to date, whatever the rule order.",
			args: args{p: &v1beta1.RuleParameters{Action: "deny(403)", Description: ptr("Default rule, higher priority overrides it")},
				observed: policy(withRules(rule(0, "allow"), gcpDefault("deny(403)"), rule(555, "allow")))},
			want: want{upToDate: true},
		},
		"ActionDiffers": {
			reason: "A default allow where deny is wanted is drift.",
			args: args{p: &v1beta1.RuleParameters{Action: "deny(403)", Description: ptr("Default rule, higher priority overrides it")},
				observed: policy(withRules(gcpDefault("allow")))},
			want: want{upToDate: false, diffHas: "deny(403)"},
		},
		"Missing": {
			reason: "A policy without a default rule is drift.",
			args:   args{p: &v1beta1.RuleParameters{Action: "allow"}, observed: policy()},
			want:   want{upToDate: false, diffHas: "missing"},
		},
		"NilPolicy": {
			reason: "A missing policy has no default rule.",
			args:   args{p: &v1beta1.RuleParameters{Action: "allow"}},
			want:   want{upToDate: false, diffHas: "missing"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, diff := DefaultRuleUpToDate(tc.args.p, tc.args.observed)
			if d := cmp.Diff(tc.want.upToDate, got); d != "" {
				t.Errorf("\n%s\nDefaultRuleUpToDate(...): -want, +got:\n%s\ndiff was:\n%s", tc.reason, d, diff)
			}
			if !strings.Contains(diff, tc.want.diffHas) {
				t.Errorf("\n%s\nDefaultRuleUpToDate(...): diff should mention %q, got:\n%s", tc.reason, tc.want.diffHas, diff)
			}
		})
	}
}
