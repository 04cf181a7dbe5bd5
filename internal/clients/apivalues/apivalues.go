// Package apivalues keeps the API drift policy: which values of GCP's
// enum-like fields the provider knows, and what it says about a value it
// does not know, or one GCP offers only in preview or only with Cloud Armor
// Enterprise.
//
// A field whose set of values GCP grows (policy types, rate-limit keys,
// DDoS protection levels, JSON parsing modes, inspection sizes) takes any
// value of GCP's form at admission: refusing the value Google added last
// month is what makes other tools lag GCP. Such a value, and a preview or
// Enterprise value of any field, is passed to GCP as written and reported in
// a Warning condition and an event; if GCP refuses it, Synced=False carries
// GCP's message, as for any other refusal. A field whose set is closed keeps
// its CRD enum.
package apivalues

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// A Stage is what GCP says about a value the provider knows.
type Stage int

// Stages of known values.
const (
	// GA values need nothing said.
	GA Stage = iota
	// Preview values are offered by GCP before general availability: they
	// may be refused, or change, without notice.
	Preview
	// Enterprise values work only in projects enrolled in Cloud Armor
	// Enterprise.
	Enterprise
)

// A Field is an enum-like field and the values of it the provider knows.
type Field struct {
	// Name of the field, for messages: its path below spec.forProvider.
	Name string
	// Open is true when GCP grows the field's set of values, so the CRD
	// accepts any value of GCP's form and an unknown one is a warning. A
	// closed field's CRD enum lists Known, so an unknown value never
	// reaches the provider.
	Open bool
	// Known are the values the provider knows, with their stage.
	Known map[string]Stage
}

func ga(vs ...string) map[string]Stage {
	m := make(map[string]Stage, len(vs))
	for _, v := range vs {
		m[v] = GA
	}
	return m
}

func with(m map[string]Stage, v string, s Stage) map[string]Stage {
	m[v] = s
	return m
}

// rateLimitKeys are the values of enforceOnKey and enforceOnKeyType. GCP
// has added ASN, JA3, JA4 and USER_IP over the years.
var rateLimitKeys = []string{"ALL", "ASN", "HTTP_COOKIE", "HTTP_HEADER", "HTTP_PATH", "IP", "REGION_CODE", "SNI",
	"TLS_JA3_FINGERPRINT", "TLS_JA4_FINGERPRINT", "USER_IP", "XFF_IP"}

// The enum-like fields of SecurityPolicy and SecurityPolicyRule that are
// open, or closed but with a value worth a warning.
var (
	PolicyType = Field{Name: "type", Open: true,
		Known: with(ga("CLOUD_ARMOR", "CLOUD_ARMOR_EDGE", "CLOUD_ARMOR_NETWORK"), "CLOUD_ARMOR_INTERNAL_SERVICE", Preview)}
	JSONParsing = Field{Name: "advancedOptionsConfig.jsonParsing", Open: true,
		Known: ga("DISABLED", "STANDARD", "STANDARD_WITH_GRAPHQL")}
	RequestBodyInspectionSize = Field{Name: "advancedOptionsConfig.requestBodyInspectionSize", Open: true,
		Known: ga("8KB", "16KB", "32KB", "48KB", "64KB")}
	DdosProtection = Field{Name: "ddosProtectionConfig.ddosProtection", Open: true,
		Known: with(with(ga("STANDARD"), "ADVANCED", Enterprise), "ADVANCED_PREVIEW", Enterprise)}
	DdosAdaptiveProtection = Field{Name: "ddosProtectionConfig.ddosAdaptiveProtection", Open: true,
		Known: ga("ENABLED", "DISABLED", "PREVIEW")}
	Action = Field{Name: "action",
		Known: with(ga("allow", "deny(403)", "deny(404)", "deny(429)", "deny(502)", "redirect", "throttle", "rate_based_ban"), v1beta1.ActionFairshare, Preview)}
	EnforceOnKey     = Field{Name: "rateLimitOptions.enforceOnKey", Open: true, Known: ga(rateLimitKeys...)}
	EnforceOnKeyType = Field{Name: "rateLimitOptions.enforceOnKeyConfigs[].enforceOnKeyType", Open: true,
		Known: ga(rateLimitKeys...)}
)

// Fields are every field above.
var Fields = []Field{PolicyType, JSONParsing, RequestBodyInspectionSize, DdosProtection, DdosAdaptiveProtection,
	Action, EnforceOnKey, EnforceOnKeyType}

// A Kind is what a Finding says about a value.
type Kind int

// Kinds of findings, most severe first.
const (
	Unknown Kind = iota
	PreviewOnly
	EnterpriseOnly
)

// A Finding is a value of an object's spec worth a warning.
type Finding struct {
	// Path of the field in the object, e.g. spec.forProvider.type.
	Path  string
	Value string
	Kind  Kind
}

// String says what the finding means for the user.
func (f Finding) String() string {
	switch f.Kind {
	case PreviewOnly:
		return fmt.Sprintf("%s %q is preview only in GCP: GCP may refuse it or change what it does without notice", f.Path, f.Value)
	case EnterpriseOnly:
		return fmt.Sprintf("%s %q needs Cloud Armor Enterprise: GCP refuses it in a project on the Standard tier", f.Path, f.Value)
	default:
		return fmt.Sprintf("%s %q is not a value this provider knows: it is sent to GCP as written, and GCP's refusal, if any, is reported in Synced", f.Path, f.Value)
	}
}

// Check returns the finding for value v of f at path, if v is worth one.
func (f Field) Check(path, v string) (Finding, bool) {
	stage, known := f.Known[v]
	switch {
	case v == "":
		return Finding{}, false
	case !known:
		return Finding{Path: path, Value: v, Kind: Unknown}, true
	case stage == Preview:
		return Finding{Path: path, Value: v, Kind: PreviewOnly}, true
	case stage == Enterprise:
		return Finding{Path: path, Value: v, Kind: EnterpriseOnly}, true
	}
	return Finding{}, false
}

// collector gathers findings.
type collector []Finding

func (c *collector) check(f Field, prefix string, v *string) {
	if v == nil {
		return
	}
	if fd, ok := f.Check(prefix+f.Name, *v); ok {
		*c = append(*c, fd)
	}
}

// Policy returns the findings of a SecurityPolicy's spec.forProvider.
func Policy(p v1beta1.SecurityPolicyParameters) []Finding {
	const prefix = "spec.forProvider."
	var c collector
	c.check(PolicyType, prefix, p.Type)
	if a := p.AdvancedOptionsConfig; a != nil {
		c.check(JSONParsing, prefix, a.JsonParsing)
		c.check(RequestBodyInspectionSize, prefix, a.RequestBodyInspectionSize)
	}
	if d := p.DdosProtectionConfig; d != nil {
		c.check(DdosProtection, prefix, d.DdosProtection)
		c.check(DdosAdaptiveProtection, prefix, d.DdosAdaptiveProtection)
	}
	if p.DefaultRule != nil {
		c = append(c, Rule(*p.DefaultRule, prefix+"defaultRule.")...)
	}
	for _, r := range p.Rules {
		c = append(c, Rule(r.RuleParameters, fmt.Sprintf("%srules[priority=%d].", prefix, r.Priority))...)
	}
	return c
}

// Rule returns the findings of a rule's fields, whose paths start with
// prefix: "spec.forProvider." for a SecurityPolicyRule.
func Rule(p v1beta1.RuleParameters, prefix string) []Finding {
	var c collector
	c.check(Action, prefix, &p.Action)
	if r := p.RateLimitOptions; r != nil {
		c.check(EnforceOnKey, prefix, r.EnforceOnKey)
		for i, k := range r.EnforceOnKeyConfigs {
			path := fmt.Sprintf("%srateLimitOptions.enforceOnKeyConfigs[%d].enforceOnKeyType", prefix, i)
			if fd, ok := EnforceOnKeyType.Check(path, k.EnforceOnKeyType); ok {
				c = append(c, fd)
			}
		}
	}
	return c
}

// TypeWarning is the condition that is True while an object's spec holds
// values worth a warning: values the provider does not know, preview-only
// values and Enterprise-only values. It never stops the provider: the values
// are sent to GCP, which decides.
const TypeWarning xpv2.ConditionType = "Warning"

// Reasons of the Warning condition, by its most severe finding.
const (
	ReasonUnknownValue    xpv2.ConditionReason = "UnknownValue"
	ReasonPreviewValue    xpv2.ConditionReason = "PreviewValue"
	ReasonEnterpriseValue xpv2.ConditionReason = "EnterpriseValue"
	ReasonNoWarning       xpv2.ConditionReason = "NoWarning"
)

// reasonEvent is the event recorded when the Warning condition changes to a
// new warning.
const reasonEvent event.Reason = "APIValueWarning"

// maxListed is how many findings a message lists before counting the rest.
const maxListed = 5

// Condition is the Warning condition for findings: False without any.
// The message lists the findings by path, so it changes only when they do.
func Condition(findings []Finding) xpv2.Condition {
	if len(findings) == 0 {
		return xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionFalse, Reason: ReasonNoWarning, LastTransitionTime: metav1.Now()}
	}
	fs := slices.Clone(findings)
	slices.SortFunc(fs, func(a, b Finding) int { return strings.Compare(a.Path, b.Path) })
	worst := slices.MinFunc(fs, func(a, b Finding) int { return int(a.Kind) - int(b.Kind) }).Kind
	reason := map[Kind]xpv2.ConditionReason{Unknown: ReasonUnknownValue, PreviewOnly: ReasonPreviewValue, EnterpriseOnly: ReasonEnterpriseValue}[worst]
	msgs := make([]string, 0, min(len(fs), maxListed)+1)
	for _, f := range fs[:min(len(fs), maxListed)] {
		msgs = append(msgs, f.String())
	}
	if n := len(fs) - maxListed; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	return xpv2.Condition{Type: TypeWarning, Status: corev1.ConditionTrue, Reason: reason,
		Message: strings.Join(msgs, "; "), LastTransitionTime: metav1.Now()}
}

// Report sets o's Warning condition from findings and records a Warning
// event on o when the condition turns to a warning it did not already say.
// An object that never had findings gets no Warning condition at all; one
// whose findings are gone gets Warning=False. A nil rec records no event:
// Create sets the condition again without one, because the managed
// reconciler writes the object before Create and so drops the status that
// Observe set.
func Report(o resource.Managed, rec event.Recorder, findings []Finding) {
	prev := o.GetCondition(TypeWarning)
	if len(findings) == 0 && prev.Reason == "" {
		return
	}
	c := Condition(findings)
	o.SetConditions(c)
	if rec == nil || c.Status != corev1.ConditionTrue || (prev.Status == c.Status && prev.Message == c.Message) {
		return
	}
	rec.Event(o, event.Warning(reasonEvent, errors.New(c.Message)))
}
