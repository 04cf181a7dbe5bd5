package v1beta1

// Field names below follow the Compute v1 API's JSON names exactly, so the GCP
// documentation for SecurityPolicyRule applies to them unchanged:
// https://cloud.google.com/compute/docs/reference/rest/v1/securityPolicies

// DefaultRulePriority is the priority of a policy's default rule. GCP keeps
// exactly one rule there; it can be patched but never added or removed.
const DefaultRulePriority = 2147483647

// Rule actions accepted by Cloud Armor.
const (
	ActionAllow        = "allow"
	ActionThrottle     = "throttle"
	ActionRateBasedBan = "rate_based_ban"
	ActionRedirect     = "redirect"
	ActionFairshare    = "fairshare"
)

// An IPRange is a source or destination range: a CIDR such as 203.0.113.0/24
// or 2001:db8::/32, a single address, or "*" for every address.
// +kubebuilder:validation:MaxLength=50
// +kubebuilder:validation:XValidation:rule="self == '*' || isCIDR(self) || isIP(self)",message="must be a CIDR such as 203.0.113.0/24, an IP address, or '*'"
type IPRange string

// RuleParameters are the fields of a Cloud Armor rule other than its priority.
// They are shared by SecurityPolicyRule, the inline rules of a SecurityPolicy
// and its defaultRule.
// +kubebuilder:validation:XValidation:rule="has(self.rateLimitOptions) == (self.action in ['throttle', 'rate_based_ban', 'fairshare'])",message="rateLimitOptions must be set when action is throttle, rate_based_ban or fairshare, and only then"
// +kubebuilder:validation:XValidation:rule="self.action != 'redirect' || has(self.redirectOptions)",message="redirectOptions must be set when action is redirect"
// +kubebuilder:validation:XValidation:rule="!has(self.redirectOptions) || self.action == 'redirect'",message="redirectOptions may only be set when action is redirect"
// +kubebuilder:validation:XValidation:rule="!has(self.rateLimitOptions) || self.action == 'rate_based_ban' || (!has(self.rateLimitOptions.banThreshold) && !has(self.rateLimitOptions.banDurationSec))",message="rateLimitOptions.banThreshold and banDurationSec apply only to rate_based_ban rules"
type RuleParameters struct {
	// Action to take when the rule matches: allow, deny(STATUS) where STATUS
	// is 403, 404, 429 or 502, redirect, throttle, rate_based_ban, or
	// fairshare (preview only, in CLOUD_ARMOR_INTERNAL_SERVICE policies: the
	// status gets a Warning condition). The set is closed here: a new action
	// changes which other fields a rule needs, which admission checks.
	// +kubebuilder:validation:Enum=allow;deny(403);deny(404);deny(429);deny(502);redirect;throttle;rate_based_ban;fairshare
	Action string `json:"action"`

	// Description of the rule: at most 64 characters, Cloud Armor's limit for
	// rule descriptions.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Description *string `json:"description,omitempty"`

	// Preview logs what the rule would do without enforcing it.
	// +optional
	Preview *bool `json:"preview,omitempty"`

	// Match is the Layer 7 condition of the rule.
	// +optional
	Match *RuleMatcher `json:"match,omitempty"`

	// NetworkMatch is the Layer 3/4 condition of rules in CLOUD_ARMOR_NETWORK
	// policies.
	// +optional
	NetworkMatch *RuleNetworkMatcher `json:"networkMatch,omitempty"`

	// RateLimitOptions configure throttle and rate_based_ban rules.
	// +optional
	RateLimitOptions *RateLimitOptions `json:"rateLimitOptions,omitempty"`

	// RedirectOptions configure redirect rules.
	// +optional
	RedirectOptions *RedirectOptions `json:"redirectOptions,omitempty"`

	// HeaderAction adds request headers when the rule allows a request.
	// +optional
	HeaderAction *HTTPHeaderAction `json:"headerAction,omitempty"`

	// PreconfiguredWafConfig tunes the preconfigured WAF rules the rule's
	// expression evaluates.
	// +optional
	PreconfiguredWafConfig *PreconfiguredWafConfig `json:"preconfiguredWafConfig,omitempty"`
}

// RuleMatcher is a rule's Layer 7 condition: either a basic source-IP match
// (versionedExpr with config) or an advanced CEL expression (expr).
// +kubebuilder:validation:XValidation:rule="has(self.versionedExpr) == has(self.config)",message="versionedExpr and config must be set together"
// +kubebuilder:validation:XValidation:rule="has(self.versionedExpr) != has(self.expr)",message="set either versionedExpr with config (basic match) or expr (advanced match), not both"
type RuleMatcher struct {
	// VersionedExpr selects a preconfigured expression; SRC_IPS_V1 matches on
	// config.srcIpRanges.
	// +optional
	// +kubebuilder:validation:Enum=SRC_IPS_V1
	VersionedExpr *string `json:"versionedExpr,omitempty"`

	// Config of the versioned expression.
	// +optional
	Config *RuleMatcherConfig `json:"config,omitempty"`

	// Expr is an advanced match condition in the Common Expression Language,
	// for example "inIpRange(origin.ip, '203.0.113.0/24')".
	// +optional
	Expr *Expr `json:"expr,omitempty"`

	// ExprOptions add reCAPTCHA Enterprise keys to an advanced match.
	// +optional
	ExprOptions *RuleMatcherExprOptions `json:"exprOptions,omitempty"`
}

// RuleMatcherConfig lists the source ranges of a basic match.
type RuleMatcherConfig struct {
	// SrcIpRanges are at most 10 CIDRs, addresses or "*". Order is kept as
	// written.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	SrcIpRanges []IPRange `json:"srcIpRanges"` //nolint:revive // GCP's JSON name.
}

// Expr is a CEL expression.
type Expr struct {
	// Expression text in the Cloud Armor rules language.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Expression string `json:"expression"`

	// Title of the expression, for display.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title *string `json:"title,omitempty"`

	// Description of the expression.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description *string `json:"description,omitempty"`

	// Location of the expression, for error reporting.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Location *string `json:"location,omitempty"`
}

// RuleMatcherExprOptions are options for advanced matches.
type RuleMatcherExprOptions struct {
	// RecaptchaOptions lists reCAPTCHA Enterprise site keys.
	// +optional
	RecaptchaOptions *RecaptchaOptions `json:"recaptchaOptions,omitempty"`
}

// RecaptchaOptions lists reCAPTCHA Enterprise site keys whose tokens the
// expression may evaluate.
type RecaptchaOptions struct {
	// ActionTokenSiteKeys are action-token site keys.
	// +optional
	// +listType=atomic
	ActionTokenSiteKeys []string `json:"actionTokenSiteKeys,omitempty"`

	// SessionTokenSiteKeys are session-token site keys.
	// +optional
	// +listType=atomic
	SessionTokenSiteKeys []string `json:"sessionTokenSiteKeys,omitempty"`
}

// RuleNetworkMatcher is a Layer 3/4 condition. A request matches when it
// matches every field that is set.
type RuleNetworkMatcher struct {
	// SrcIpRanges are source ranges.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	SrcIpRanges []IPRange `json:"srcIpRanges,omitempty"` //nolint:revive // GCP's JSON name.

	// DestIpRanges are destination ranges.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	DestIpRanges []IPRange `json:"destIpRanges,omitempty"` //nolint:revive // GCP's JSON name.

	// IpProtocols are IPv4 protocol names or numbers.
	// +optional
	// +listType=atomic
	IpProtocols []string `json:"ipProtocols,omitempty"` //nolint:revive // GCP's JSON name.

	// SrcPorts are source ports or port ranges such as 8000-8080.
	// +optional
	// +listType=atomic
	SrcPorts []string `json:"srcPorts,omitempty"`

	// DestPorts are destination ports or port ranges.
	// +optional
	// +listType=atomic
	DestPorts []string `json:"destPorts,omitempty"`

	// SrcRegionCodes are two-letter ISO 3166-1 region codes.
	// +optional
	// +listType=atomic
	SrcRegionCodes []string `json:"srcRegionCodes,omitempty"`

	// SrcAsns are autonomous system numbers.
	// +optional
	// +listType=atomic
	SrcAsns []int64 `json:"srcAsns,omitempty"`

	// UserDefinedFields match values of the policy's user-defined fields.
	// +optional
	// +listType=atomic
	UserDefinedFields []UserDefinedFieldMatch `json:"userDefinedFields,omitempty"`
}

// UserDefinedFieldMatch matches a user-defined field against values.
type UserDefinedFieldMatch struct {
	// Name of the user-defined field, as declared by the policy.
	Name string `json:"name"`

	// Values (or ranges such as 0x10-0x20) the field must take.
	// +optional
	// +listType=atomic
	Values []string `json:"values,omitempty"`
}

// RateLimitOptions configure throttle and rate_based_ban rules.
// +kubebuilder:validation:XValidation:rule="!has(self.enforceOnKeyConfigs) || !(has(self.enforceOnKey) || has(self.enforceOnKeyName))",message="set enforceOnKey/enforceOnKeyName or enforceOnKeyConfigs, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.exceedAction) || self.exceedAction != 'redirect' || has(self.exceedRedirectOptions)",message="exceedRedirectOptions must be set when exceedAction is redirect"
// +kubebuilder:validation:XValidation:rule="!has(self.exceedRedirectOptions) || (has(self.exceedAction) && self.exceedAction == 'redirect')",message="exceedRedirectOptions may only be set when exceedAction is redirect"
type RateLimitOptions struct {
	// RateLimitThreshold is the rate above which exceedAction applies.
	// GCP requires it.
	RateLimitThreshold *RateLimitThreshold `json:"rateLimitThreshold"`

	// ConformAction for requests under the threshold; only "allow".
	// +optional
	// +kubebuilder:validation:Enum=allow
	ConformAction *string `json:"conformAction,omitempty"`

	// ExceedAction for requests over the threshold: deny(STATUS) where
	// STATUS is 403, 404, 429 or 502, or redirect (with
	// exceedRedirectOptions, which admission ties to it).
	// +optional
	// +kubebuilder:validation:Enum=deny(403);deny(404);deny(429);deny(502);redirect
	ExceedAction *string `json:"exceedAction,omitempty"`

	// ExceedRedirectOptions configure the redirect of exceedAction redirect.
	// +optional
	ExceedRedirectOptions *RedirectOptions `json:"exceedRedirectOptions,omitempty"`

	// EnforceOnKey selects what a client is: ALL, ASN, HTTP_COOKIE,
	// HTTP_HEADER, HTTP_PATH, IP, REGION_CODE, SNI, TLS_JA3_FINGERPRINT,
	// TLS_JA4_FINGERPRINT, USER_IP or XFF_IP. GCP adds keys, so another
	// value in GCP's form is passed to GCP with a Warning condition.
	// Mutually exclusive with enforceOnKeyConfigs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	EnforceOnKey *string `json:"enforceOnKey,omitempty"`

	// EnforceOnKeyName is the header or cookie name for HTTP_HEADER and
	// HTTP_COOKIE keys.
	// +optional
	EnforceOnKeyName *string `json:"enforceOnKeyName,omitempty"`

	// EnforceOnKeyConfigs combine up to 3 keys. Mutually exclusive with
	// enforceOnKey and enforceOnKeyName.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	EnforceOnKeyConfigs []EnforceOnKeyConfig `json:"enforceOnKeyConfigs,omitempty"`

	// BanThreshold is the rate above which rate_based_ban bans a client.
	// +optional
	BanThreshold *RateLimitThreshold `json:"banThreshold,omitempty"`

	// BanDurationSec is how long a rate_based_ban lasts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BanDurationSec *int64 `json:"banDurationSec,omitempty"`
}

// RateLimitThreshold is a request count per interval.
type RateLimitThreshold struct {
	// Count of requests.
	// +kubebuilder:validation:Minimum=1
	Count int64 `json:"count"`

	// IntervalSec is the interval length in seconds.
	// +kubebuilder:validation:Minimum=1
	IntervalSec int64 `json:"intervalSec"`
}

// EnforceOnKeyConfig is one part of a composite rate-limit key.
type EnforceOnKeyConfig struct {
	// EnforceOnKeyType is the kind of key: ALL, ASN, HTTP_COOKIE,
	// HTTP_HEADER, HTTP_PATH, IP, REGION_CODE, SNI, TLS_JA3_FINGERPRINT,
	// TLS_JA4_FINGERPRINT, USER_IP or XFF_IP. GCP adds keys, so another
	// value in GCP's form is passed to GCP with a Warning condition.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]*$`
	EnforceOnKeyType string `json:"enforceOnKeyType"`

	// EnforceOnKeyName is the header or cookie name for HTTP_HEADER and
	// HTTP_COOKIE keys.
	// +optional
	EnforceOnKeyName *string `json:"enforceOnKeyName,omitempty"`
}

// RedirectOptions say where a redirect goes.
// +kubebuilder:validation:XValidation:rule="self.type != 'EXTERNAL_302' || has(self.target)",message="target is required for EXTERNAL_302 redirects"
// +kubebuilder:validation:XValidation:rule="self.type != 'GOOGLE_RECAPTCHA' || !has(self.target)",message="target may not be set for GOOGLE_RECAPTCHA redirects"
type RedirectOptions struct {
	// Type of redirect.
	// +kubebuilder:validation:Enum=EXTERNAL_302;GOOGLE_RECAPTCHA
	Type string `json:"type"`

	// Target URL of an EXTERNAL_302 redirect.
	// +optional
	Target *string `json:"target,omitempty"`
}

// HTTPHeaderAction adds headers to requests the rule allows.
type HTTPHeaderAction struct {
	// RequestHeadersToAdds are the headers to add.
	// +optional
	// +listType=atomic
	RequestHeadersToAdds []HTTPHeaderOption `json:"requestHeadersToAdds,omitempty"`
}

// HTTPHeaderOption is a header name and value.
type HTTPHeaderOption struct {
	// HeaderName is the header's name.
	// +kubebuilder:validation:MinLength=1
	HeaderName string `json:"headerName"`

	// HeaderValue is the header's value.
	// +optional
	HeaderValue *string `json:"headerValue,omitempty"`
}

// PreconfiguredWafConfig tunes preconfigured WAF rules.
type PreconfiguredWafConfig struct {
	// Exclusions of request fields from WAF inspection.
	// +optional
	// +listType=atomic
	Exclusions []WafExclusion `json:"exclusions,omitempty"`
}

// WafExclusion excludes request fields from some WAF signatures.
type WafExclusion struct {
	// TargetRuleSet is the WAF rule set, for example sqli-v33-stable.
	// +kubebuilder:validation:MinLength=1
	TargetRuleSet string `json:"targetRuleSet"`

	// TargetRuleIds are signature ids within the rule set; empty means all.
	// +optional
	// +listType=atomic
	TargetRuleIds []string `json:"targetRuleIds,omitempty"` //nolint:revive // GCP's JSON name.

	// RequestHeadersToExclude are request headers to skip.
	// +optional
	// +listType=atomic
	RequestHeadersToExclude []WafExclusionFieldParams `json:"requestHeadersToExclude,omitempty"`

	// RequestCookiesToExclude are cookies to skip.
	// +optional
	// +listType=atomic
	RequestCookiesToExclude []WafExclusionFieldParams `json:"requestCookiesToExclude,omitempty"`

	// RequestQueryParamsToExclude are query parameters to skip.
	// +optional
	// +listType=atomic
	RequestQueryParamsToExclude []WafExclusionFieldParams `json:"requestQueryParamsToExclude,omitempty"`

	// RequestUrisToExclude are request URIs to skip.
	// +optional
	// +listType=atomic
	RequestUrisToExclude []WafExclusionFieldParams `json:"requestUrisToExclude,omitempty"`

	// RequestBodiesToExclude are request bodies to skip.
	// +optional
	// +listType=atomic
	RequestBodiesToExclude []WafExclusionFieldParams `json:"requestBodiesToExclude,omitempty"`
}

// WafExclusionFieldParams selects request fields by comparison.
type WafExclusionFieldParams struct {
	// Op compares the field: EQUALS, STARTS_WITH, ENDS_WITH, CONTAINS or
	// EQUALS_ANY (val is ignored).
	// +kubebuilder:validation:Enum=EQUALS;STARTS_WITH;ENDS_WITH;CONTAINS;EQUALS_ANY
	Op string `json:"op"`

	// Val is the value compared against.
	// +optional
	Val *string `json:"val,omitempty"`
}

// RuleObservation is a rule as GCP reports it, in the normalised form the
// provider compares with the spec: GCP's fill-ins (description "", preview
// false, empty messages and lists) are left out, IP ranges are canonical
// CIDRs sorted and de-duplicated, and the other networkMatch lists are
// sorted. A default rule without a condition shows the "*" match GCP gives
// it. These types carry no validation: status reports what GCP holds, even
// what the spec would refuse.
type RuleObservation struct {
	// Priority of the rule.
	Priority int64 `json:"priority"`

	// Action of the rule.
	// +optional
	Action string `json:"action,omitempty"`

	// Description of the rule.
	// +optional
	Description string `json:"description,omitempty"`

	// Preview is true when the rule only logs.
	// +optional
	Preview bool `json:"preview,omitempty"`

	// Match is the Layer 7 condition.
	// +optional
	Match *RuleMatcherObservation `json:"match,omitempty"`

	// NetworkMatch is the Layer 3/4 condition.
	// +optional
	NetworkMatch *RuleNetworkMatcherObservation `json:"networkMatch,omitempty"`

	// RateLimitOptions of throttle, rate_based_ban and fairshare rules.
	// +optional
	RateLimitOptions *RateLimitOptionsObservation `json:"rateLimitOptions,omitempty"`

	// RedirectOptions of redirect rules.
	// +optional
	RedirectOptions *RedirectOptionsObservation `json:"redirectOptions,omitempty"`

	// HeaderAction adds request headers.
	// +optional
	HeaderAction *HTTPHeaderActionObservation `json:"headerAction,omitempty"`

	// PreconfiguredWafConfig tunes preconfigured WAF rules.
	// +optional
	PreconfiguredWafConfig *PreconfiguredWafConfigObservation `json:"preconfiguredWafConfig,omitempty"`
}

// RuleMatcherObservation is a rule's Layer 7 condition as GCP reports it.
type RuleMatcherObservation struct {
	// VersionedExpr of a basic match.
	// +optional
	VersionedExpr string `json:"versionedExpr,omitempty"`

	// Config of a basic match.
	// +optional
	Config *RuleMatcherConfigObservation `json:"config,omitempty"`

	// Expr of an advanced match.
	// +optional
	Expr *ExprObservation `json:"expr,omitempty"`

	// ExprOptions of an advanced match.
	// +optional
	ExprOptions *RuleMatcherExprOptionsObservation `json:"exprOptions,omitempty"`
}

// RuleMatcherConfigObservation lists the source ranges of a basic match.
type RuleMatcherConfigObservation struct {
	// SrcIpRanges are the source ranges.
	// +optional
	// +listType=atomic
	SrcIpRanges []string `json:"srcIpRanges,omitempty"` //nolint:revive // GCP's JSON name.
}

// RuleMatcherExprOptionsObservation are the options of an advanced match.
type RuleMatcherExprOptionsObservation struct {
	// RecaptchaOptions lists reCAPTCHA Enterprise site keys.
	// +optional
	RecaptchaOptions *RecaptchaOptionsObservation `json:"recaptchaOptions,omitempty"`
}

// ExprObservation is a CEL expression as GCP reports it.
type ExprObservation struct {
	// Expression text.
	// +optional
	Expression string `json:"expression,omitempty"`

	// Title of the expression.
	// +optional
	Title string `json:"title,omitempty"`

	// Description of the expression.
	// +optional
	Description string `json:"description,omitempty"`

	// Location of the expression.
	// +optional
	Location string `json:"location,omitempty"`
}

// RecaptchaOptionsObservation lists reCAPTCHA Enterprise site keys.
type RecaptchaOptionsObservation struct {
	// ActionTokenSiteKeys are action-token site keys.
	// +optional
	// +listType=atomic
	ActionTokenSiteKeys []string `json:"actionTokenSiteKeys,omitempty"`

	// SessionTokenSiteKeys are session-token site keys.
	// +optional
	// +listType=atomic
	SessionTokenSiteKeys []string `json:"sessionTokenSiteKeys,omitempty"`
}

// RuleNetworkMatcherObservation is a Layer 3/4 condition as GCP reports it.
type RuleNetworkMatcherObservation struct {
	// SrcIpRanges are source ranges.
	// +optional
	// +listType=atomic
	SrcIpRanges []string `json:"srcIpRanges,omitempty"` //nolint:revive // GCP's JSON name.

	// DestIpRanges are destination ranges.
	// +optional
	// +listType=atomic
	DestIpRanges []string `json:"destIpRanges,omitempty"` //nolint:revive // GCP's JSON name.

	// IpProtocols are IPv4 protocol names or numbers.
	// +optional
	// +listType=atomic
	IpProtocols []string `json:"ipProtocols,omitempty"` //nolint:revive // GCP's JSON name.

	// SrcPorts are source ports or port ranges.
	// +optional
	// +listType=atomic
	SrcPorts []string `json:"srcPorts,omitempty"`

	// DestPorts are destination ports or port ranges.
	// +optional
	// +listType=atomic
	DestPorts []string `json:"destPorts,omitempty"`

	// SrcRegionCodes are region codes.
	// +optional
	// +listType=atomic
	SrcRegionCodes []string `json:"srcRegionCodes,omitempty"`

	// SrcAsns are autonomous system numbers.
	// +optional
	// +listType=atomic
	SrcAsns []int64 `json:"srcAsns,omitempty"`

	// UserDefinedFields match values of user-defined fields.
	// +optional
	// +listType=atomic
	UserDefinedFields []UserDefinedFieldMatchObservation `json:"userDefinedFields,omitempty"`
}

// UserDefinedFieldMatchObservation matches a user-defined field.
type UserDefinedFieldMatchObservation struct {
	// Name of the user-defined field.
	// +optional
	Name string `json:"name,omitempty"`

	// Values the field must take.
	// +optional
	// +listType=atomic
	Values []string `json:"values,omitempty"`
}

// RateLimitOptionsObservation are a rule's rate-limit options as GCP reports
// them.
type RateLimitOptionsObservation struct {
	// RateLimitThreshold is the rate above which exceedAction applies.
	// +optional
	RateLimitThreshold *RateLimitThresholdObservation `json:"rateLimitThreshold,omitempty"`

	// ConformAction for requests under the threshold.
	// +optional
	ConformAction string `json:"conformAction,omitempty"`

	// ExceedAction for requests over the threshold.
	// +optional
	ExceedAction string `json:"exceedAction,omitempty"`

	// ExceedRedirectOptions of exceedAction redirect.
	// +optional
	ExceedRedirectOptions *RedirectOptionsObservation `json:"exceedRedirectOptions,omitempty"`

	// EnforceOnKey selects what a client is.
	// +optional
	EnforceOnKey string `json:"enforceOnKey,omitempty"`

	// EnforceOnKeyName is the header or cookie name of the key.
	// +optional
	EnforceOnKeyName string `json:"enforceOnKeyName,omitempty"`

	// EnforceOnKeyConfigs combine keys.
	// +optional
	// +listType=atomic
	EnforceOnKeyConfigs []EnforceOnKeyConfigObservation `json:"enforceOnKeyConfigs,omitempty"`

	// BanThreshold is the rate above which rate_based_ban bans a client.
	// +optional
	BanThreshold *RateLimitThresholdObservation `json:"banThreshold,omitempty"`

	// BanDurationSec is how long a ban lasts.
	// +optional
	BanDurationSec int64 `json:"banDurationSec,omitempty"`
}

// RateLimitThresholdObservation is a request count per interval.
type RateLimitThresholdObservation struct {
	// Count of requests.
	// +optional
	Count int64 `json:"count,omitempty"`

	// IntervalSec is the interval length in seconds.
	// +optional
	IntervalSec int64 `json:"intervalSec,omitempty"`
}

// EnforceOnKeyConfigObservation is one part of a composite rate-limit key.
type EnforceOnKeyConfigObservation struct {
	// EnforceOnKeyType is the kind of key.
	// +optional
	EnforceOnKeyType string `json:"enforceOnKeyType,omitempty"`

	// EnforceOnKeyName is the header or cookie name of the key.
	// +optional
	EnforceOnKeyName string `json:"enforceOnKeyName,omitempty"`
}

// RedirectOptionsObservation say where a redirect goes.
type RedirectOptionsObservation struct {
	// Type of redirect.
	// +optional
	Type string `json:"type,omitempty"`

	// Target URL of an EXTERNAL_302 redirect.
	// +optional
	Target string `json:"target,omitempty"`
}

// HTTPHeaderActionObservation lists the headers a rule adds.
type HTTPHeaderActionObservation struct {
	// RequestHeadersToAdds are the headers added.
	// +optional
	// +listType=atomic
	RequestHeadersToAdds []HTTPHeaderOptionObservation `json:"requestHeadersToAdds,omitempty"`
}

// HTTPHeaderOptionObservation is a header name and value.
type HTTPHeaderOptionObservation struct {
	// HeaderName is the header's name.
	// +optional
	HeaderName string `json:"headerName,omitempty"`

	// HeaderValue is the header's value.
	// +optional
	HeaderValue string `json:"headerValue,omitempty"`
}

// PreconfiguredWafConfigObservation is a rule's WAF tuning as GCP reports it.
type PreconfiguredWafConfigObservation struct {
	// Exclusions of request fields from WAF inspection.
	// +optional
	// +listType=atomic
	Exclusions []WafExclusionObservation `json:"exclusions,omitempty"`
}

// WafExclusionObservation excludes request fields from WAF signatures.
type WafExclusionObservation struct {
	// TargetRuleSet is the WAF rule set.
	// +optional
	TargetRuleSet string `json:"targetRuleSet,omitempty"`

	// TargetRuleIds are signature ids within the rule set; empty means all.
	// +optional
	// +listType=atomic
	TargetRuleIds []string `json:"targetRuleIds,omitempty"` //nolint:revive // GCP's JSON name.

	// RequestHeadersToExclude are request headers skipped.
	// +optional
	// +listType=atomic
	RequestHeadersToExclude []WafExclusionFieldParamsObservation `json:"requestHeadersToExclude,omitempty"`

	// RequestCookiesToExclude are cookies skipped.
	// +optional
	// +listType=atomic
	RequestCookiesToExclude []WafExclusionFieldParamsObservation `json:"requestCookiesToExclude,omitempty"`

	// RequestQueryParamsToExclude are query parameters skipped.
	// +optional
	// +listType=atomic
	RequestQueryParamsToExclude []WafExclusionFieldParamsObservation `json:"requestQueryParamsToExclude,omitempty"`

	// RequestUrisToExclude are request URIs skipped.
	// +optional
	// +listType=atomic
	RequestUrisToExclude []WafExclusionFieldParamsObservation `json:"requestUrisToExclude,omitempty"`

	// RequestBodiesToExclude are request bodies skipped.
	// +optional
	// +listType=atomic
	RequestBodiesToExclude []WafExclusionFieldParamsObservation `json:"requestBodiesToExclude,omitempty"`
}

// WafExclusionFieldParamsObservation selects request fields by comparison.
type WafExclusionFieldParamsObservation struct {
	// Op compares the field.
	// +optional
	Op string `json:"op,omitempty"`

	// Val is the value compared against.
	// +optional
	Val string `json:"val,omitempty"`
}
