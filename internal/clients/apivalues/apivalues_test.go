package apivalues

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func ptr[T any](v T) *T { return &v }

func rateLimited(action string, key *string, types ...string) v1beta1.RuleParameters {
	r := v1beta1.RuleParameters{Action: action, RateLimitOptions: &v1beta1.RateLimitOptions{EnforceOnKey: key}}
	for _, t := range types {
		r.RateLimitOptions.EnforceOnKeyConfigs = append(r.RateLimitOptions.EnforceOnKeyConfigs, v1beta1.EnforceOnKeyConfig{EnforceOnKeyType: t})
	}
	return r
}

func TestPolicy(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1beta1.SecurityPolicyParameters
		want   []Finding
	}{
		"Empty": {
			reason: "A spec without enum-like values has nothing to say.",
		},
		"KnownGA": {
			reason: "Known GA values need no warning.",
			p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR"),
				AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{JsonParsing: ptr("STANDARD_WITH_GRAPHQL"), RequestBodyInspectionSize: ptr("64KB")},
				DefaultRule:           &v1beta1.RuleParameters{Action: "deny(403)"},
				Rules:                 []v1beta1.PolicyRule{{Priority: 10, RuleParameters: rateLimited("throttle", ptr("ASN"))}}},
		},
		"PreviewType": {
			reason: "CLOUD_ARMOR_INTERNAL_SERVICE and fairshare are preview only.",
			p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR_INTERNAL_SERVICE"),
				Rules: []v1beta1.PolicyRule{{Priority: 10, RuleParameters: rateLimited("fairshare", ptr("ALL"))}}},
			want: []Finding{
				{Path: "spec.forProvider.type", Value: "CLOUD_ARMOR_INTERNAL_SERVICE", Kind: PreviewOnly},
				{Path: "spec.forProvider.rules[priority=10].action", Value: "fairshare", Kind: PreviewOnly},
			},
		},
		"Enterprise": {
			reason: "Advanced network DDoS protection needs Cloud Armor Enterprise.",
			p:      v1beta1.SecurityPolicyParameters{DdosProtectionConfig: &v1beta1.DdosProtectionConfig{DdosProtection: ptr("ADVANCED"), DdosAdaptiveProtection: ptr("ENABLED")}},
			want:   []Finding{{Path: "spec.forProvider.ddosProtectionConfig.ddosProtection", Value: "ADVANCED", Kind: EnterpriseOnly}},
		},
		"Unknown": {
			reason: "Values GCP may have added since this provider was built are named, wherever they are.",
			p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR_FIREWALL"),
				AdvancedOptionsConfig: &v1beta1.AdvancedOptionsConfig{JsonParsing: ptr("STANDARD_WITH_PROTOBUF"), RequestBodyInspectionSize: ptr("128KB")},
				DdosProtectionConfig:  &v1beta1.DdosProtectionConfig{DdosAdaptiveProtection: ptr("AUTO")},
				DefaultRule:           ptr(rateLimited("throttle", nil, "TLS_JA5_FINGERPRINT")),
				Rules:                 []v1beta1.PolicyRule{{Priority: 7, RuleParameters: rateLimited("rate_based_ban", ptr("HTTP_QUERY"))}}},
			want: []Finding{
				{Path: "spec.forProvider.type", Value: "CLOUD_ARMOR_FIREWALL", Kind: Unknown},
				{Path: "spec.forProvider.advancedOptionsConfig.jsonParsing", Value: "STANDARD_WITH_PROTOBUF", Kind: Unknown},
				{Path: "spec.forProvider.advancedOptionsConfig.requestBodyInspectionSize", Value: "128KB", Kind: Unknown},
				{Path: "spec.forProvider.ddosProtectionConfig.ddosAdaptiveProtection", Value: "AUTO", Kind: Unknown},
				{Path: "spec.forProvider.defaultRule.rateLimitOptions.enforceOnKeyConfigs[0].enforceOnKeyType", Value: "TLS_JA5_FINGERPRINT", Kind: Unknown},
				{Path: "spec.forProvider.rules[priority=7].rateLimitOptions.enforceOnKey", Value: "HTTP_QUERY", Kind: Unknown},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Policy(tc.p)); diff != "" {
				t.Errorf("\n%s\nPolicy(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRule(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1beta1.RuleParameters
		want   []Finding
	}{
		"Allow": {
			reason: "A plain allow rule has nothing to say.",
			p:      v1beta1.RuleParameters{Action: "allow"},
		},
		"Keys": {
			reason: "Each key of a composite rate-limit key is checked, by index.",
			p:      rateLimited("throttle", nil, "IP", "TLS_JA5_FINGERPRINT"),
			want:   []Finding{{Path: "spec.forProvider.rateLimitOptions.enforceOnKeyConfigs[1].enforceOnKeyType", Value: "TLS_JA5_FINGERPRINT", Kind: Unknown}},
		},
		"Fairshare": {
			reason: "fairshare is preview only.",
			p:      rateLimited("fairshare", ptr("ALL")),
			want:   []Finding{{Path: "spec.forProvider.action", Value: "fairshare", Kind: PreviewOnly}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Rule(tc.p, "spec.forProvider.")); diff != "" {
				t.Errorf("\n%s\nRule(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	unknown := Finding{Path: "spec.forProvider.type", Value: "X", Kind: Unknown}
	preview := Finding{Path: "spec.forProvider.rules[priority=1].action", Value: "fairshare", Kind: PreviewOnly}
	enterprise := Finding{Path: "spec.forProvider.ddosProtectionConfig.ddosProtection", Value: "ADVANCED", Kind: EnterpriseOnly}
	many := make([]Finding, 7)
	for i := range many {
		many[i] = Finding{Path: "spec.forProvider.rules[priority=" + string(rune('1'+i)) + "].action", Value: "fairshare", Kind: PreviewOnly}
	}
	cases := map[string]struct {
		reason   string
		findings []Finding
		want     xpv2.Condition
	}{
		"None": {
			reason: "No findings: Warning=False.",
			want:   xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionFalse, Reason: ReasonNoWarning},
		},
		"MostSevereReason": {
			reason:   "The reason is the most severe finding's; the message lists all, sorted by path.",
			findings: []Finding{enterprise, unknown, preview},
			want: xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionTrue, Reason: ReasonUnknownValue,
				Message: enterprise.String() + "; " + preview.String() + "; " + unknown.String()},
		},
		"Enterprise": {
			reason:   "Enterprise values alone say so.",
			findings: []Finding{enterprise},
			want: xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionTrue, Reason: ReasonEnterpriseValue,
				Message: `spec.forProvider.ddosProtectionConfig.ddosProtection "ADVANCED" needs Cloud Armor Enterprise: GCP refuses it in a project on the Standard tier`},
		},
		"Capped": {
			reason:   "A message lists at most five findings and counts the rest.",
			findings: many,
			want: xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionTrue, Reason: ReasonPreviewValue,
				Message: many[0].String() + "; " + many[1].String() + "; " + many[2].String() + "; " + many[3].String() + "; " + many[4].String() + "; and 2 more"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Condition(tc.findings), test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// recorder records the events it is given.
type recorder struct{ events []event.Event }

func (r *recorder) Event(_ runtime.Object, e event.Event)    { r.events = append(r.events, e) }
func (r *recorder) WithAnnotations(...string) event.Recorder { return r }

func TestReport(t *testing.T) {
	unknown := []Finding{{Path: "spec.forProvider.type", Value: "X", Kind: Unknown}}
	other := []Finding{{Path: "spec.forProvider.type", Value: "Y", Kind: Unknown}}
	cases := map[string]struct {
		reason     string
		before     []xpv2.Condition
		findings   []Finding
		want       []xpv2.Condition
		wantEvents int
	}{
		"NeverWarned": {
			reason: "An object that never had findings gets no Warning condition and no event.",
		},
		"NewWarning": {
			reason:     "A first warning sets the condition and records one event.",
			findings:   unknown,
			want:       []xpv2.Condition{Condition(unknown)},
			wantEvents: 1,
		},
		"SameWarning": {
			reason:   "The same warning at the next poll records no second event.",
			before:   []xpv2.Condition{Condition(unknown)},
			findings: unknown,
			want:     []xpv2.Condition{Condition(unknown)},
		},
		"ChangedWarning": {
			reason:     "A different warning records an event.",
			before:     []xpv2.Condition{Condition(unknown)},
			findings:   other,
			want:       []xpv2.Condition{Condition(other)},
			wantEvents: 1,
		},
		"NoRecorder": {
			reason:   "Without a recorder the condition is set and no event recorded (Create restoring Observe's condition).",
			findings: unknown,
			want:     []xpv2.Condition{Condition(unknown)},
		},
		"Cleared": {
			reason: "Findings gone: Warning=False, no event.",
			before: []xpv2.Condition{Condition(unknown)},
			want:   []xpv2.Condition{Condition(nil)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1beta1.SecurityPolicy{}
			cr.SetConditions(tc.before...)
			rec := &recorder{}
			if name == "NoRecorder" {
				Report(cr, nil, tc.findings)
			} else {
				Report(cr, rec, tc.findings)
			}
			if diff := cmp.Diff(tc.want, cr.Status.Conditions, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nReport(...): conditions -want, +got:\n%s", tc.reason, diff)
			}
			if len(rec.events) != tc.wantEvents {
				t.Errorf("\n%s\nReport(...): %d events, want %d: %v", tc.reason, len(rec.events), tc.wantEvents, rec.events)
			}
			for _, e := range rec.events {
				if e.Type != event.TypeWarning || e.Reason != reasonEvent {
					t.Errorf("\n%s\nReport(...): event %+v, want a Warning %s", tc.reason, e, reasonEvent)
				}
			}
		})
	}
}
