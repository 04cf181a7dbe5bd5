package apivalues

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// Cloud Armor features that need the project on an Enterprise tier
// (CA_ENTERPRISE_PAYGO or CA_ENTERPRISE_ANNUAL), by the name a message
// gives them. GCP refuses a write that uses one in a Standard project with
// a message that does not always say why; the Tier condition does.
//
// Sources (Cloud Armor documentation): address groups "need an active Cloud
// Armor Enterprise subscription" (address-groups-using); named IP address
// lists, evaluatePreconfiguredExpr('sourceiplist-…'), need projects enrolled
// in Enterprise (armor-named-ip); threat intelligence,
// evaluateThreatIntelligence, is an Enterprise feature (threat-intelligence);
// Adaptive Protection gives Standard projects alerts only, and its
// auto-deploy is Enterprise (adaptive-protection-overview); advanced network
// DDoS protection is Enterprise (advanced-network-ddos).
const (
	FeatureAddressGroups      = "address groups"
	FeatureNamedIPLists       = "named IP address lists"
	FeatureThreatIntelligence = "threat intelligence"
	FeatureAdaptiveProtection = "Adaptive Protection (Standard gets alerts only)"
	FeatureAutoDeploy         = "Adaptive Protection auto-deploy"
	FeatureAdvancedDdos       = "advanced network DDoS protection"
	FeatureNetworkEdgePolicy  = "a network edge security policy"
)

// A Feature is a part of a spec that needs Cloud Armor Enterprise.
type Feature struct {
	// Path of the field in the object, e.g.
	// spec.forProvider.rules[priority=1000].match.expr.expression.
	Path string
	// Name of the feature, one of the Feature constants.
	Name string
}

// String is the feature and where the spec uses it.
func (f Feature) String() string { return f.Name + " (" + f.Path + ")" }

// PolicyFeatures returns the Enterprise features a SecurityPolicy's
// spec.forProvider uses.
func PolicyFeatures(p v1beta1.SecurityPolicyParameters) []Feature {
	const prefix = "spec.forProvider."
	var fs []Feature
	if a := p.AdaptiveProtectionConfig; a != nil && a.Layer7DdosDefenseConfig != nil {
		l7 := a.Layer7DdosDefenseConfig
		if l7.Enable != nil && *l7.Enable {
			fs = append(fs, Feature{Path: prefix + "adaptiveProtectionConfig.layer7DdosDefenseConfig.enable", Name: FeatureAdaptiveProtection})
		}
		for i, t := range l7.ThresholdConfigs {
			if t.AutoDeployLoadThreshold != nil || t.AutoDeployConfidenceThreshold != nil || t.AutoDeployImpactedBaselineThreshold != nil || t.AutoDeployExpirationSec != nil {
				fs = append(fs, Feature{Path: fmt.Sprintf("%sadaptiveProtectionConfig.layer7DdosDefenseConfig.thresholdConfigs[%d]", prefix, i), Name: FeatureAutoDeploy})
			}
		}
	}
	if d := p.DdosProtectionConfig; d != nil && d.DdosProtection != nil && strings.HasPrefix(*d.DdosProtection, "ADVANCED") {
		fs = append(fs, Feature{Path: prefix + "ddosProtectionConfig.ddosProtection", Name: FeatureAdvancedDdos})
	}
	if p.DefaultRule != nil {
		fs = append(fs, RuleFeatures(*p.DefaultRule, prefix+"defaultRule.")...)
	}
	for _, r := range p.Rules {
		fs = append(fs, RuleFeatures(r.RuleParameters, fmt.Sprintf("%srules[priority=%d].", prefix, r.Priority))...)
	}
	return fs
}

// RuleFeatures returns the Enterprise features a rule's fields use, with
// paths starting with prefix ("spec.forProvider." for a
// SecurityPolicyRule).
func RuleFeatures(p v1beta1.RuleParameters, prefix string) []Feature {
	if p.Match == nil || p.Match.Expr == nil {
		return nil
	}
	path := prefix + "match.expr.expression"
	x := p.Match.Expr.Expression
	var fs []Feature
	if strings.Contains(x, "evaluateAddressGroup(") || strings.Contains(x, "evaluateOrganizationAddressGroup(") {
		fs = append(fs, Feature{Path: path, Name: FeatureAddressGroups})
	}
	if strings.Contains(x, "'sourceiplist-") || strings.Contains(x, `"sourceiplist-`) {
		fs = append(fs, Feature{Path: path, Name: FeatureNamedIPLists})
	}
	if strings.Contains(x, "evaluateThreatIntelligence(") {
		fs = append(fs, Feature{Path: path, Name: FeatureThreatIntelligence})
	}
	return fs
}

// TypeTier is the condition of an object whose spec uses Cloud Armor
// Enterprise features: True when the project is on an Enterprise tier, False
// when it is on Standard (GCP refuses or limits those features), Unknown
// when the tier could not be read. An object whose spec uses none has no
// Tier condition (or, once it had one, True with NoEnterpriseFeature). It never stops the provider: the spec is sent to GCP,
// which decides, and a refusal is in Synced as GCP words it.
const TypeTier xpv2.ConditionType = "Tier"

// Reasons of the Tier condition.
const (
	ReasonEnterpriseTier  xpv2.ConditionReason = "EnterpriseTier"
	ReasonNeedsEnterprise xpv2.ConditionReason = "NeedsEnterprise"
	ReasonTierUnknown     xpv2.ConditionReason = "TierUnknown"
	// ReasonNoEnterpriseFeature: the spec used Enterprise features and no
	// longer does.
	ReasonNoEnterpriseFeature xpv2.ConditionReason = "NoEnterpriseFeature"
)

// TierCondition is the Tier condition of an object whose spec uses fs in
// project, which is on tier (or whose tier could not be read: readErr).
// The message lists the features by path, sorted, so it changes only when
// they or the tier do.
func TierCondition(project, tier string, readErr error, fs []Feature) xpv2.Condition {
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b Feature) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	msgs := make([]string, 0, min(len(fs), maxListed)+1)
	for _, f := range fs[:min(len(fs), maxListed)] {
		msgs = append(msgs, f.String())
	}
	if n := len(fs) - maxListed; n > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", n))
	}
	uses := strings.Join(msgs, ", ")
	c := xpv2.Condition{Type: TypeTier, LastTransitionTime: metav1.Now()}
	switch {
	case readErr != nil:
		c.Status, c.Reason = corev1.ConditionUnknown, ReasonTierUnknown
		c.Message = fmt.Sprintf("The spec uses Cloud Armor Enterprise features: %s. Cannot read the Cloud Armor tier of project %s to say whether it has them: %s",
			uses, project, strings.Join(strings.Fields(readErr.Error()), " "))
	case isEnterprise(tier):
		c.Status, c.Reason = corev1.ConditionTrue, ReasonEnterpriseTier
		c.Message = fmt.Sprintf("Project %s is on %s, which the spec's Cloud Armor Enterprise features need: %s", project, tier, uses)
	default:
		c.Status, c.Reason = corev1.ConditionFalse, ReasonNeedsEnterprise
		c.Message = fmt.Sprintf("The spec uses Cloud Armor Enterprise features: %s. Project %s is on %s, so GCP refuses or limits them. "+
			"Enroll the project in Cloud Armor Enterprise: a ProjectCloudArmorTier with spec.forProvider.cloudArmorTier CA_ENTERPRISE_PAYGO (or CA_ENTERPRISE_ANNUAL), "+
			"or gcloud compute project-info update --project %s --cloud-armor-tier CA_ENTERPRISE_PAYGO", uses, project, tier, project)
	}
	return c
}

func isEnterprise(tier string) bool {
	return tier == "CA_ENTERPRISE_PAYGO" || tier == "CA_ENTERPRISE_ANNUAL"
}

// A TierReader reads a project's Cloud Armor tier; gcp.ProjectClient's
// Tier, which keeps what it read for a poll interval.
type TierReader func(project string) (string, error)

// ReportTier sets o's Tier condition for the Enterprise features fs its spec
// uses in project, reading the tier only when there are any: a spec that
// uses no Enterprise feature costs no read. An object that never used one
// gets no Tier condition; one whose spec no longer uses any gets Tier=True,
// NoEnterpriseFeature.
func ReportTier(o resource.Managed, project string, fs []Feature, read TierReader) {
	if len(fs) == 0 {
		if o.GetCondition(TypeTier).Reason != "" {
			o.SetConditions(xpv2.Condition{Type: TypeTier, Status: corev1.ConditionTrue, Reason: ReasonNoEnterpriseFeature,
				Message: "The spec uses no Cloud Armor Enterprise feature", LastTransitionTime: metav1.Now()})
		}
		return
	}
	tier, err := read(project)
	o.SetConditions(TierCondition(project, tier, err, fs))
}
