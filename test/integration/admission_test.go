package integration

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
)

// TestAdmission applies valid and invalid objects to the real API server with
// our CRDs and asserts what admission accepts, and the message a person sees
// when it does not.
func TestAdmission(t *testing.T) {
	env := startControlPlane(t)

	cases := map[string]struct {
		reason  string
		object  string
		wantErr string // "" means accepted
	}{
		"ValidPolicy": {
			reason: "A policy with a default rule and inline rules is accepted.",
			object: policyYAML("valid", `
    defaultRule: {action: "deny(403)"}
    rules:
    - {priority: 0, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.0.0.0/8", "2001:db8::/32", "192.0.2.1", "*"]}}}`),
		},
		"PriorityTooLarge": {
			reason:  "A rule priority above 2147483647 is rejected.",
			object:  ruleYAML("too-large", `priority: 2147483648`, `action: allow`, srcRanges("10.0.0.0/8")),
			wantErr: "spec.forProvider.priority: Invalid value: 2147483648: spec.forProvider.priority in body should be less than or equal to 2147483647",
		},
		"PriorityNegative": {
			reason:  "A negative priority is rejected.",
			object:  ruleYAML("negative", `priority: -1`, `action: allow`, srcRanges("10.0.0.0/8")),
			wantErr: "spec.forProvider.priority in body should be greater than or equal to 0",
		},
		"ElevenRanges": {
			reason:  "GCP allows at most 10 srcIpRanges per rule.",
			object:  ruleYAML("eleven", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16", "10.5.0.0/16", "10.6.0.0/16", "10.7.0.0/16", "10.8.0.0/16", "10.9.0.0/16", "10.10.0.0/16")),
			wantErr: "spec.forProvider.match.config.srcIpRanges: Too many: 11: must have at most 10 items",
		},
		"BadCIDR": {
			reason:  "A range that is neither a CIDR, an address nor * is rejected.",
			object:  ruleYAML("bad-cidr", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/33")),
			wantErr: "must be a CIDR such as 203.0.113.0/24, an IP address, or '*'",
		},
		"UnknownAction": {
			reason:  "An action outside GCP's enum is rejected.",
			object:  ruleYAML("bad-action", `priority: 1`, `action: permit`, srcRanges("10.0.0.0/8")),
			wantErr: `spec.forProvider.action: Unsupported value: "permit": supported values: "allow", "deny(403)"`,
		},
		"RateLimitWithoutThrottle": {
			reason:  "rateLimitOptions on an allow rule is rejected, as GCP would.",
			object:  ruleYAML("rl-allow", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}}`),
			wantErr: "rateLimitOptions must be set when action is throttle, rate_based_ban or fairshare, and only then",
		},
		"ThrottleWithoutRateLimit": {
			reason:  "A throttle rule needs rateLimitOptions.",
			object:  ruleYAML("throttle", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8")),
			wantErr: "rateLimitOptions must be set when action is throttle, rate_based_ban or fairshare, and only then",
		},
		"RateLimitWithoutThreshold": {
			reason:  "GCP requires rateLimitThreshold.",
			object:  ruleYAML("rl-no-threshold", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", enforceOnKey: IP}`),
			wantErr: "spec.forProvider.rateLimitOptions.rateLimitThreshold: Required value",
		},
		"BanOnThrottle": {
			reason:  "banThreshold and banDurationSec belong to rate_based_ban.",
			object:  ruleYAML("ban-on-throttle", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, banDurationSec: 600}`),
			wantErr: "rateLimitOptions.banThreshold and banDurationSec apply only to rate_based_ban rules",
		},
		"ExceedRedirectWithoutOptions": {
			reason:  "exceedAction redirect needs exceedRedirectOptions.",
			object:  ruleYAML("exceed-redirect", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: redirect, rateLimitThreshold: {count: 1, intervalSec: 60}}`),
			wantErr: "exceedRedirectOptions must be set when exceedAction is redirect",
		},
		"ExceedRedirectOptionsOnDeny": {
			reason:  "exceedRedirectOptions only go with exceedAction redirect.",
			object:  ruleYAML("exceed-deny", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, exceedRedirectOptions: {type: GOOGLE_RECAPTCHA}}`),
			wantErr: "exceedRedirectOptions may only be set when exceedAction is redirect",
		},
		"DefaultRuleNarrowMatch": {
			reason:  "The default rule matches everything; GCP refuses any other match.",
			object:  ruleYAML("default-narrow", `priority: 2147483647`, `action: "deny(403)"`, srcRanges("10.0.0.0/8")),
			wantErr: "the default rule (priority 2147483647) matches every request",
		},
		"DefaultRuleMatchAll": {
			reason: "A default rule may spell out its match-all.",
			object: ruleYAML("default-all", `priority: 2147483647`, `action: "deny(403)"`, srcRanges("*")),
		},
		"PolicyDefaultRuleNarrowMatch": {
			reason:  "spec.forProvider.defaultRule matches everything too.",
			object:  policyYAML("default-narrow", "\n    defaultRule: {action: \"deny(403)\", match: {expr: {expression: \"origin.region_code == 'FR'\"}}}"),
			wantErr: "defaultRule matches every request",
		},
		"EdgePolicyRegional": {
			reason:  "CLOUD_ARMOR_EDGE policies are global only.",
			object:  policyYAML("edge-regional", "\n    type: CLOUD_ARMOR_EDGE\n    region: europe-west1"),
			wantErr: "CLOUD_ARMOR_EDGE policies are global: remove region",
		},
		"NetworkPolicyGlobal": {
			reason:  "CLOUD_ARMOR_NETWORK policies are regional only.",
			object:  policyYAML("network-global", "\n    type: CLOUD_ARMOR_NETWORK"),
			wantErr: "CLOUD_ARMOR_NETWORK policies are regional: set region",
		},
		"NetworkPolicyRegional": {
			reason: "A regional CLOUD_ARMOR_NETWORK policy is accepted.",
			object: policyYAML("network-regional", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1"),
		},
		"RedirectInRegionalInline": {
			reason:  "An inline redirect rule in a regional policy: GCP supports redirect only in global CLOUD_ARMOR policies.",
			object:  policyYAML("redirect-regional", "\n    region: europe-west1\n    rules:\n    - {priority: 1, action: redirect, redirectOptions: {type: EXTERNAL_302, target: \"https://example.com\"}, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [\"*\"]}}}"),
			wantErr: "redirect rules and headerAction are only supported in global policies of type CLOUD_ARMOR",
		},
		"HeaderActionInEdgeInline": {
			reason:  "headerAction with headers in an edge policy.",
			object:  policyYAML("header-edge", "\n    type: CLOUD_ARMOR_EDGE\n    rules:\n    - {priority: 1, action: allow, headerAction: {requestHeadersToAdds: [{headerName: x-a, headerValue: b}]}, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [\"*\"]}}}"),
			wantErr: "redirect rules and headerAction are only supported in global policies of type CLOUD_ARMOR",
		},
		"RedirectInGlobalInline": {
			reason: "An inline redirect rule in a global CLOUD_ARMOR policy is accepted.",
			object: policyYAML("redirect-global", "\n    rules:\n    - {priority: 1, action: redirect, redirectOptions: {type: EXTERNAL_302, target: \"https://example.com\"}, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [\"*\"]}}}"),
		},
		"FairshareOutsideInternalService": {
			reason:  "fairshare belongs to CLOUD_ARMOR_INTERNAL_SERVICE policies.",
			object:  policyYAML("fairshare", "\n    rules:\n    - {priority: 1, action: fairshare, rateLimitOptions: {enforceOnKey: ALL, rateLimitThreshold: {count: 1, intervalSec: 60}}, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [\"*\"]}}}"),
			wantErr: "fairshare rules are only supported in policies of type CLOUD_ARMOR_INTERNAL_SERVICE",
		},
		"AdaptiveProtectionRegional": {
			reason:  "Adaptive Protection is only for global CLOUD_ARMOR policies.",
			object:  policyYAML("adaptive-regional", "\n    region: europe-west1\n    adaptiveProtectionConfig: {layer7DdosDefenseConfig: {enable: true}}"),
			wantErr: "adaptiveProtectionConfig and recaptchaOptionsConfig are only supported in global policies of type CLOUD_ARMOR",
		},
		"DdosProtectionNetwork": {
			reason: "A regional CLOUD_ARMOR_NETWORK policy takes every ddosProtectionConfig field.",
			object: policyYAML("ddos-network", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1\n    ddosProtectionConfig: {ddosProtection: ADVANCED, ddosAdaptiveProtection: PREVIEW, ddosImpactedBaselineThreshold: 0.05}"),
		},
		"DdosAdaptiveProtectionAlone": {
			reason: "ddosProtection is optional: a field left unset keeps GCP's value.",
			object: policyYAML("ddos-adaptive-alone", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1\n    ddosProtectionConfig: {ddosAdaptiveProtection: ENABLED}"),
		},
		"DdosProtectionOutsideNetwork": {
			reason:  "Network DDoS protection belongs to CLOUD_ARMOR_NETWORK policies; GCP would refuse it on a CLOUD_ARMOR one.",
			object:  policyYAML("ddos-armor", "\n    region: europe-west1\n    ddosProtectionConfig: {ddosProtection: ADVANCED}"),
			wantErr: "ddosProtectionConfig is only supported in regional policies of type CLOUD_ARMOR_NETWORK",
		},
		"DdosProtectionEmpty": {
			reason:  "An empty ddosProtectionConfig says nothing; it is refused rather than silently ignored.",
			object:  policyYAML("ddos-empty", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1\n    ddosProtectionConfig: {}"),
			wantErr: "spec.forProvider.ddosProtectionConfig: Invalid value: 0: spec.forProvider.ddosProtectionConfig in body should have at least 1 properties",
		},
		"DdosAdaptiveProtectionUnspecified": {
			reason:  "GCP's UNSPECIFIED values are not settings: leave the field unset instead.",
			object:  policyYAML("ddos-unspecified", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1\n    ddosProtectionConfig: {ddosAdaptiveProtection: DDOS_ADAPTIVE_PROTECTION_UNSPECIFIED}"),
			wantErr: "leave ddosAdaptiveProtection unset instead of setting GCP's unspecified value",
		},
		"DdosThresholdAboveOne": {
			reason:  "ddosImpactedBaselineThreshold is a fraction of the baseline.",
			object:  policyYAML("ddos-threshold", "\n    type: CLOUD_ARMOR_NETWORK\n    region: europe-west1\n    ddosProtectionConfig: {ddosImpactedBaselineThreshold: 1.5}"),
			wantErr: "spec.forProvider.ddosProtectionConfig.ddosImpactedBaselineThreshold: Invalid value: 1.5: spec.forProvider.ddosProtectionConfig.ddosImpactedBaselineThreshold in body should be less than or equal to 1",
		},
		"UserDefinedFieldsOutsideNetwork": {
			reason:  "userDefinedFields belong to CLOUD_ARMOR_NETWORK policies.",
			object:  policyYAML("udf", "\n    region: europe-west1\n    userDefinedFields: [{name: f, base: IPV4, offset: 0, size: 1}]"),
			wantErr: "userDefinedFields and networkMatch are only supported in policies of type CLOUD_ARMOR_NETWORK",
		},
		"RecaptchaRedirectWithTarget": {
			reason:  "A GOOGLE_RECAPTCHA redirect has no target.",
			object:  ruleYAML("recaptcha-target", `priority: 1`, `action: redirect`, srcRanges("*"), `redirectOptions: {type: GOOGLE_RECAPTCHA, target: "https://example.com"}`),
			wantErr: "target may not be set for GOOGLE_RECAPTCHA redirects",
		},
		"BothEnforceOnKeyForms": {
			reason:  "enforceOnKey and enforceOnKeyConfigs are mutually exclusive.",
			object:  ruleYAML("both-keys", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, enforceOnKey: IP, enforceOnKeyConfigs: [{enforceOnKeyType: IP}]}`),
			wantErr: "set enforceOnKey/enforceOnKeyName or enforceOnKeyConfigs, not both",
		},
		"NewEnforceOnKeyAdmitted": {
			reason: "A rate-limit key GCP added after this provider was built is admitted: the provider warns and GCP decides.",
			object: ruleYAML("new-key", `priority: 1`, `action: throttle`, srcRanges("10.0.0.0/8"), `rateLimitOptions: {conformAction: allow, exceedAction: "deny(429)", rateLimitThreshold: {count: 1, intervalSec: 60}, enforceOnKeyConfigs: [{enforceOnKeyType: TLS_JA5_FINGERPRINT}]}`),
		},
		"NewPolicyTypeAdmitted": {
			reason: "A policy type GCP added after this provider was built is admitted.",
			object: policyYAML("new-type", "\n    type: CLOUD_ARMOR_FIREWALL"),
		},
		"ProvenanceLabelRefused": {
			reason:  "The labels the provider sets are not the user's to set.",
			object:  policyYAML("provenance", "\n    labels: {team: a, crossplane-name: other}"),
			wantErr: "labels are set by the provider: remove them from labels",
		},
		"DuplicateInlinePriority": {
			reason: "Two inline rules with one priority are rejected.",
			object: policyYAML("dupes", `
    rules:
    - {priority: 5, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.0.0.0/8"]}}}
    - {priority: 5, action: "deny(403)", match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.0.0.0/8"]}}}`),
			wantErr: `spec.forProvider.rules[1]: Duplicate value: {"priority":5}`,
		},
		"BadPolicyName": {
			reason:  "A metadata.name GCP would not accept as a policy name is rejected.",
			object:  policyYAML("1-starts-with-digit", ""),
			wantErr: "metadata.name must be a valid Cloud Armor policy name",
		},
		"InlineDefaultPriority": {
			reason:  "The default rule is set through defaultRule, not inline.",
			object:  policyYAML("inline-default", "\n    rules:\n    - {priority: 2147483647, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: [\"*\"]}}}"),
			wantErr: "spec.forProvider.rules[0].priority in body should be less than or equal to 2147483646",
		},
		"RuleWithoutMatch": {
			reason:  "A non-default rule must say what it matches.",
			object:  ruleYAML("no-match", `priority: 1`, `action: allow`),
			wantErr: "a rule needs match or networkMatch",
		},
		"BasicAndAdvancedMatch": {
			reason:  "versionedExpr and expr cannot be combined.",
			object:  ruleYAML("both-match", `priority: 1`, `action: allow`, `match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.0.0.0/8"]}, expr: {expression: "true"}}`),
			wantErr: "set either versionedExpr with config (basic match) or expr (advanced match), not both",
		},
		"CrossNamespaceRef": {
			reason:  "A rule can only reference a policy in its own namespace.",
			object:  strings.Replace(ruleYAML("cross-ns", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/8")), "securityPolicy: some-policy", "securityPolicyRef: {name: p, namespace: other}", 1),
			wantErr: "securityPolicyRef must name a SecurityPolicy in this rule's namespace",
		},
		"AllowedRulesFromAll": {
			reason: "A policy may open its priorities to rules from every namespace.",
			object: policyYAML("open-all", "") + "  allowedRules: {namespaces: {from: All}}\n",
		},
		"AllowedRulesSelector": {
			reason: "A policy may open its priorities to rules from selected namespaces.",
			object: policyYAML("open-some", "") + "  allowedRules: {namespaces: {from: Selector, selector: {matchLabels: {team: edge}}}}\n",
		},
		"AllowedRulesSelectorMissing": {
			reason:  "from: Selector without a selector would admit nothing it says.",
			object:  policyYAML("open-nothing", "") + "  allowedRules: {namespaces: {from: Selector}}\n",
			wantErr: "selector is required when from is Selector, and only then",
		},
		"AllowedRulesSelectorWithSame": {
			reason:  "A selector with from: Same would be ignored: refused rather than misread.",
			object:  policyYAML("open-same", "") + "  allowedRules: {namespaces: {from: Same, selector: {matchLabels: {team: edge}}}}\n",
			wantErr: "selector is required when from is Selector, and only then",
		},
		"AllowedRulesUnknownFrom": {
			reason:  "from is Same, All or Selector.",
			object:  policyYAML("open-typo", "") + "  allowedRules: {namespaces: {from: Everyone}}\n",
			wantErr: `Unsupported value: "Everyone"`,
		},
		"ProviderConfigInjectedIdentity": {
			reason: "A namespaced ProviderConfig may not act with the provider's own identity.",
			object: `apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: ambient, namespace: default}
spec: {projectID: p, credentials: {source: InjectedIdentity}}`,
			wantErr: "a namespaced ProviderConfig may only use credentials.source Secret or AccessToken",
		},
		"ClusterProviderConfigInjectedIdentity": {
			reason: "A ClusterProviderConfig, which only the platform team can write, keeps every source, and may limit the namespaces it serves.",
			object: `apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: ambient}
spec: {projectID: p, credentials: {source: InjectedIdentity}, namespaceSelector: {matchLabels: {tenant: platform}}}`,
		},
		"ValidEdgeService": {
			reason: "A network edge security service naming its policy by reference is accepted.",
			object: edgeYAML("edge", "region: us-central1", "securityPolicyRef: {name: net}"),
		},
		"EdgeServicePolicyByURL": {
			reason: "A policy's URL is accepted as well as its name.",
			object: edgeYAML("edge-url", "region: us-central1", "securityPolicy: https://www.googleapis.com/compute/v1/projects/p/regions/us-central1/securityPolicies/net"),
		},
		"EdgeServiceName": {
			reason:  "The external name defaults to metadata.name, which must be a GCP name.",
			object:  edgeYAML("edge.eu", "region: us-central1"),
			wantErr: "metadata.name must be a valid network edge security service name",
		},
		"EdgeServiceWithoutRegion": {
			reason:  "A network edge security service is regional.",
			object:  edgeYAML("edge-nowhere", "description: d"),
			wantErr: "spec.forProvider.region: Required value",
		},
		"EdgeServiceRefOtherNamespace": {
			reason:  "A reference resolves in the object's own namespace only.",
			object:  edgeYAML("edge-cross", "region: us-central1", "securityPolicyRef: {name: net, namespace: other}"),
			wantErr: "securityPolicyRef must name a SecurityPolicy in this object's namespace",
		},
		"ValidTier": {
			reason: "A project's tier, Enterprise pay-as-you-go, is accepted.",
			object: tierYAML("tier", "cloudArmorTier: CA_ENTERPRISE_PAYGO"),
		},
		"TierUnknown": {
			reason:  "A tier GCP does not have is refused, naming the three it has.",
			object:  tierYAML("tier-gold", "cloudArmorTier: CA_GOLD"),
			wantErr: "cloudArmorTier must be CA_STANDARD, CA_ENTERPRISE_PAYGO or CA_ENTERPRISE_ANNUAL",
		},
		"TierMissing": {
			reason:  "A tier object must say which tier.",
			object:  tierYAML("tier-none", "project: demo-project"),
			wantErr: "spec.forProvider.cloudArmorTier: Required value",
		},
		"TierBadProject": {
			reason:  "A project id of GCP's form only.",
			object:  tierYAML("tier-project", "project: Demo_Project", "cloudArmorTier: CA_STANDARD"),
			wantErr: "spec.forProvider.project in body should match",
		},
		"EdgeServiceGlobalPolicy": {
			reason:  "The policy must be regional: a global policy's path is refused before GCP is asked.",
			object:  edgeYAML("edge-global", "region: us-central1", "securityPolicy: projects/p/global/securityPolicies/net"),
			wantErr: "spec.forProvider.securityPolicy in body should match",
		},
		"AttachmentValid": {
			reason: "An attachment of a policy to a global backend service's securityPolicy is accepted; field defaults.",
			object: attachmentYAML("attach-ok", "securityPolicy: armor", "target: {kind: BackendService, name: web}"),
		},
		"AttachmentBucketSecurityPolicy": {
			reason:  "A backend bucket has only edgeSecurityPolicy.",
			object:  attachmentYAML("attach-bucket", "securityPolicy: edge", "target: {kind: BackendBucket, name: static}", "field: securityPolicy"),
			wantErr: "a backend bucket has only edgeSecurityPolicy: set field to edgeSecurityPolicy",
		},
		"AttachmentRegionalEdge": {
			reason:  "A regional backend service has no edgeSecurityPolicy.",
			object:  attachmentYAML("attach-regional-edge", "securityPolicy: edge", "target: {kind: BackendService, name: api, region: us-central1}", "field: edgeSecurityPolicy"),
			wantErr: "regional backend services have no edgeSecurityPolicy: set field to securityPolicy",
		},
		"AttachmentNoPolicy": {
			reason:  "An attachment must name its policy somehow.",
			object:  attachmentYAML("attach-none", "target: {kind: BackendService, name: web}"),
			wantErr: "set securityPolicy, securityPolicyRef or securityPolicySelector",
		},
		"AttachmentNotAPolicyURL": {
			reason:  "A URL of anything but a security policy is refused before GCP is asked.",
			object:  attachmentYAML("attach-url", "securityPolicy: projects/p/global/backendServices/web", "target: {kind: BackendService, name: web}"),
			wantErr: "spec.forProvider.securityPolicy in body should match",
		},
		"AttachmentRefOtherNamespace": {
			reason:  "A reference resolves in the object's own namespace only.",
			object:  attachmentYAML("attach-ref-ns", "securityPolicyRef: {name: armor, namespace: other}", "target: {kind: BackendService, name: web}"),
			wantErr: "securityPolicyRef must name a SecurityPolicy in this object's namespace",
		},
		"AssociationExclusions": {
			reason: "An organization association may exclude folders and projects.",
			object: associationYAML("assoc-excl", "attachmentId: organizations/123", "securityPolicy: \"1\"",
				"excludedFolders: [folders/7]", "excludedProjects: [projects/sandbox]"),
		},
		"AssociationProjectExclusions": {
			reason:  "A project has nothing below it to exclude.",
			object:  associationYAML("assoc-proj-excl", "attachmentId: projects/demo", "securityPolicy: \"1\"", "excludedProjects: [projects/sandbox]"),
			wantErr: "an association attached to a project has nothing below it to exclude",
		},
		"AssociationBadExcludedFolder": {
			reason:  "An excluded folder is folders/N.",
			object:  associationYAML("assoc-bad-folder", "attachmentId: organizations/123", "securityPolicy: \"1\"", "excludedFolders: [sandbox]"),
			wantErr: "spec.forProvider.excludedFolders[0] in body should match",
		},
		"ProviderConfigSecretWithoutRef": {
			reason: "A Secret credentials source needs a secretRef.",
			object: `apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: no-ref, namespace: default}
spec: {projectID: p, credentials: {source: Secret}}`,
			wantErr: "credentials.secretRef is required when credentials.source is Secret or AccessToken",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.object), &u.Object); err != nil {
				t.Fatalf("bad test object: %v", err)
			}
			err := env.kube.Create(context.Background(), u)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("\n%s\nCreate: want accepted, got: %v", tc.reason, err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("\n%s\nCreate: want rejected with %q, got accepted", tc.reason, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("\n%s\nCreate: want error containing\n  %q\ngot\n  %q", tc.reason, tc.wantErr, err.Error())
			}
		})
	}
}

// TestAdmissionStatusUnvalidated checks that status.atProvider takes what GCP
// holds even where the spec would refuse it (an action, a range or a
// description outside the spec's rules): a status write the schema refused
// would lose the conditions written with it.
func TestAdmissionStatusUnvalidated(t *testing.T) {
	env := startControlPlane(t)
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(policyYAML("status-unvalidated", "")), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.kube.Create(ctx, u); err != nil {
		t.Fatalf("Create: %v", err)
	}
	ranges := make([]any, 11)
	for i := range ranges {
		ranges[i] = "not-a-range-" + strings.Repeat("x", i)
	}
	rule := map[string]any{
		"priority": int64(7), "action": "deny(418)", "description": strings.Repeat("d", 100),
		"match":            map[string]any{"versionedExpr": "SRC_IPS_V2", "config": map[string]any{"srcIpRanges": ranges}},
		"rateLimitOptions": map[string]any{"enforceOnKey": "NEW_KEY", "rateLimitThreshold": map[string]any{"count": int64(0)}},
	}
	if err := unstructured.SetNestedField(u.Object, map[string]any{"ruleCount": int64(1), "rules": []any{rule}}, "status", "atProvider"); err != nil {
		t.Fatal(err)
	}
	if err := env.kube.Status().Update(ctx, u); err != nil {
		t.Fatalf("status update with what the spec would refuse: want accepted, got %v", err)
	}
	got := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	if err := env.kube.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(got.Object, "status", "atProvider", "rules")
	if len(rules) != 1 || !reflect.DeepEqual(rules[0], rule) {
		t.Errorf("status.atProvider.rules: want the rule as written, got %v", rules)
	}
}

// TestAdmissionStatusSize stores a policy of 200 rules with 2048-character
// expressions, the longest the spec allows, in spec and in status as
// GenerateObservation reports them, and logs the object's size: status is
// bounded by ObservedRulesBudget, so the object stays under the API server's
// limit (about 1.5 MiB in etcd) with room for kubectl's last-applied copy.
func TestAdmissionStatusSize(t *testing.T) {
	env := startControlPlane(t)
	ctx := context.Background()
	const n = 200
	expr := "request.path.matches('/" + strings.Repeat("a", 2048-len("request.path.matches('/')")) + "')"
	sp := &v1beta1.SecurityPolicy{}
	sp.SetName("status-size")
	sp.SetNamespace("default")
	observed := &compute.SecurityPolicy{Id: 1}
	for i := range int64(n) {
		p := v1beta1.RuleParameters{Action: "deny(403)", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: expr}}}
		sp.Spec.ForProvider.Rules = append(sp.Spec.ForProvider.Rules, v1beta1.PolicyRule{Priority: i, RuleParameters: p})
		observed.Rules = append(observed.Rules, gcppolicy.GenerateRule(i, p))
	}
	if err := env.kube.Create(ctx, sp); err != nil {
		t.Fatalf("Create: %v", err)
	}
	sp.Status.AtProvider = gcppolicy.GenerateObservation(observed)
	if err := env.kube.Status().Update(ctx, sp); err != nil {
		t.Fatalf("status update: %v", err)
	}
	if err := env.kube.Get(ctx, client.ObjectKeyFromObject(sp), sp); err != nil {
		t.Fatal(err)
	}
	size := func(v any) int {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	at := sp.Status.AtProvider
	t.Logf("%d rules of 2048-character expressions: object %d KiB (spec %d KiB, status %d KiB, managedFields %d KiB); %d rules in full, %d summarised",
		n, size(sp)>>10, size(sp.Spec)>>10, size(sp.Status)>>10, size(sp.ManagedFields)>>10, n-at.RulesSummarized, at.RulesSummarized)
	if at.RuleCount != n || at.RulesSummarized == 0 {
		t.Errorf("want %d rules with some summarised, got ruleCount %d, rulesSummarized %d", n, at.RuleCount, at.RulesSummarized)
	}
	if got, limit := size(sp.Status), gcppolicy.ObservedRulesBudget+64*n; got > limit {
		t.Errorf("status takes %d bytes, over the budget and summaries (%d)", got, limit)
	}
}

// TestAdmissionImmutable checks the transition rules: fields GCP cannot
// change are refused on update with a message saying so.
func TestAdmissionImmutable(t *testing.T) {
	env := startControlPlane(t)
	ctx := context.Background()

	cases := map[string]struct {
		object  string
		path    []string
		value   any
		wantErr string
	}{
		"RulePriority": {
			object: ruleYAML("imm-priority", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/8")),
			path:   []string{"spec", "forProvider", "priority"}, value: int64(2),
			wantErr: "priority is immutable: create a new rule at the other priority",
		},
		"RulePolicy": {
			object: ruleYAML("imm-policy", `priority: 1`, `action: allow`, srcRanges("10.0.0.0/8")),
			path:   []string{"spec", "forProvider", "securityPolicy"}, value: "another-policy",
			wantErr: "securityPolicy is immutable",
		},
		"PolicyRegion": {
			object: policyYAML("imm-region", "\n    region: us-central1"),
			path:   []string{"spec", "forProvider", "region"}, value: "europe-west1",
			wantErr: "region is immutable",
		},
		"PolicyRegionAdded": {
			object: policyYAML("imm-region-added", ""),
			path:   []string{"spec", "forProvider", "region"}, value: "europe-west1",
			wantErr: "region is immutable: a policy cannot move between global and regional",
		},
		"EdgeServiceRegion": {
			object: edgeYAML("imm-edge-region", "region: us-central1"),
			path:   []string{"spec", "forProvider", "region"}, value: "europe-west1",
			wantErr: "region is immutable: create a service in the other region",
		},
		"TierProject": {
			object: tierYAML("imm-tier-project", "project: demo-project", "cloudArmorTier: CA_STANDARD"),
			path:   []string{"spec", "forProvider", "project"}, value: "other-project",
			wantErr: "project is immutable: create a ProjectCloudArmorTier for the other project",
		},
		"TierProjectAdded": {
			object: tierYAML("imm-tier-project-added", "cloudArmorTier: CA_STANDARD"),
			path:   []string{"spec", "forProvider", "project"}, value: "other-project",
			wantErr: "project is immutable: create a ProjectCloudArmorTier for the other project",
		},
		"EdgeServiceProjectAdded": {
			object: edgeYAML("imm-edge-project", "region: us-central1"),
			path:   []string{"spec", "forProvider", "project"}, value: "other-project",
			wantErr: "project is immutable",
		},
		"PolicyType": {
			object: policyYAML("imm-type", "\n    type: CLOUD_ARMOR"),
			path:   []string{"spec", "forProvider", "type"}, value: "CLOUD_ARMOR_EDGE",
			wantErr: "type is immutable",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.object), &u.Object); err != nil {
				t.Fatalf("bad test object: %v", err)
			}
			if err := env.kube.Create(ctx, u); err != nil {
				t.Fatalf("Create: %v", err)
			}
			if err := unstructured.SetNestedField(u.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			err := env.kube.Update(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Update: want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func policyYAML(name, forProvider string) string {
	return `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: ` + name + `, namespace: default}
spec:
  forProvider:
    description: test` + forProvider + "\n"
}

func ruleYAML(name string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: ` + name + `, namespace: default}
spec:
  forProvider:
    securityPolicy: some-policy
`
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}

func srcRanges(ranges ...string) string {
	return `match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["` + strings.Join(ranges, `", "`) + `"]}}`
}

func edgeYAML(name string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: NetworkEdgeSecurityService
metadata: {name: ` + name + `, namespace: default}
spec:
  forProvider:
`
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}

func tierYAML(name string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: ProjectCloudArmorTier
metadata: {name: ` + name + `, namespace: default}
spec:
  forProvider:
`
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}

func attachmentYAML(name string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: SecurityPolicyAttachment
metadata: {name: ` + name + `, namespace: default}
spec:
  forProvider:
`
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}

func associationYAML(name string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: OrganizationSecurityPolicyAssociation
metadata: {name: ` + name + `, namespace: default}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: default}
  forProvider:
`
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}
