package emulator

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

// Evidence classes of a validation case: what shows that GCP refuses the
// request, and where the message's wording comes from. "documented" is the
// compute v1 field descriptions (google.golang.org/api/compute/v1) or the
// Cloud Armor documentation; "observed" is a real GCP answer quoted in a
// public issue; "chosen" is the emulator's own wording. No recording (R1–R4)
// contains a validation error.
const (
	evDocumented = "refusal documented, wording chosen"
	evObserved   = "refusal documented, wording observed"
	evLikeGCP    = "refusal documented, wording chosen after GCP's for rateLimitOptions"
	evChosen     = "refusal and wording chosen"
)

// Rule builders for the table.

func vRule(prio int64, action string, mods ...func(*compute.SecurityPolicyRule)) *compute.SecurityPolicyRule {
	r := ipRule(prio, action, "10.0.0.0/8")
	for _, m := range mods {
		m(r)
	}
	return r
}

func vExpr(e string) func(*compute.SecurityPolicyRule) {
	return func(r *compute.SecurityPolicyRule) {
		r.Match = &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: e}}
	}
}

func vRate(mod func(o *compute.SecurityPolicyRuleRateLimitOptions)) func(*compute.SecurityPolicyRule) {
	return func(r *compute.SecurityPolicyRule) {
		r.RateLimitOptions = &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow", ExceedAction: "deny(429)",
			RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 10, IntervalSec: 60}}
		if mod != nil {
			mod(r.RateLimitOptions)
		}
	}
}

func vRedirect(typ, target string) func(*compute.SecurityPolicyRule) {
	return func(r *compute.SecurityPolicyRule) {
		r.RedirectOptions = &compute.SecurityPolicyRuleRedirectOptions{Type: typ, Target: target}
	}
}

func vExclusion(ex *compute.SecurityPolicyRulePreconfiguredWafConfigExclusion) func(*compute.SecurityPolicyRule) {
	return func(r *compute.SecurityPolicyRule) {
		r.PreconfiguredWafConfig = &compute.SecurityPolicyRulePreconfiguredWafConfig{
			Exclusions: []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{ex}}
	}
}

func fieldParams(op string, n int) []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams {
	out := make([]*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams, n)
	for i := range out {
		out[i] = &compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{Op: op, Val: "v" + strconv.Itoa(i)}
	}
	return out
}

func inv(msg string) apiErr { return apiErr{400, "invalid", msg} }

// validationFixtures are the policies every validation case runs against.
// They must not change: every case is refused.
func validationFixtures() (global, regional []*compute.SecurityPolicy) {
	base := func(name, typ string) *compute.SecurityPolicy {
		p := policyWith(name, vRule(100, "throttle", vRate(nil)), vRule(1000, "allow"))
		p.Type = typ
		return p
	}
	network := &compute.SecurityPolicy{Name: "net", Type: "CLOUD_ARMOR_NETWORK"}
	return []*compute.SecurityPolicy{base("p", ""), base("edge", "CLOUD_ARMOR_EDGE"), base("internal", "CLOUD_ARMOR_INTERNAL_SERVICE")},
		[]*compute.SecurityPolicy{base("p", ""), network}
}

// A validationCase is a request GCP refuses, the answer and its evidence.
type validationCase struct {
	evidence string
	args     validationArgs
	want     apiErr
}

type validationArgs struct {
	regional bool
	call     func(api policyAPI) error
}

// validationCases is the conformance table of the requests GCP refuses with
// 400 invalid. It runs against validationFixtures both as real writes and as
// validateOnly dry runs.
func validationCases() map[string]validationCase {
	type args = validationArgs
	add := func(policy string, r *compute.SecurityPolicyRule) func(api policyAPI) error {
		return func(api policyAPI) error { _, err := api.AddRule(policy, r); return err }
	}
	insert := func(p *compute.SecurityPolicy) func(api policyAPI) error {
		return func(api policyAPI) error { _, err := api.Insert(p); return err }
	}
	named := func(name string, mod func(p *compute.SecurityPolicy)) *compute.SecurityPolicy {
		p := policyWith(name)
		mod(p)
		return p
	}
	// The emulator limits an expression to 2048 characters (chosen, as the
	// provider's CRD: GCP documents none).
	longExpr := "request.path == '" + strings.Repeat("a", 2048) + "'"
	return map[string]validationCase{
		// rateLimitOptions
		"RateLimitOnDeny": {
			evidence: evObserved + " (pulumi/pulumi-gcp#1432); kept as it was",
			args:     args{call: add("p", vRule(10, "deny(403)", vRate(nil)))},
			want:     inv("Invalid value for field 'resource.rateLimitOptions': ''. Rate limit options must be specified if the action is 'fairshare', 'rate_based_ban' or 'throttle'. It cannot be specified for any other actions"),
		},
		"ConformActionNotAllow": {
			evidence: evDocumented + ` ("Valid option is "allow" only.")`,
			args:     args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.ConformAction = "deny(403)" })))},
			want:     inv("Invalid value for field 'resource.rateLimitOptions.conformAction': 'deny(403)'. Must be one of [allow]."),
		},
		"ExceedActionUnknown": {
			evidence: evDocumented + " (deny(STATUS) with 403, 404, 429, 502, or redirect)",
			args:     args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.ExceedAction = "allow" })))},
			want:     inv("Invalid value for field 'resource.rateLimitOptions.exceedAction': 'allow'. Must be one of [deny(403), deny(404), deny(429), deny(502), redirect]."),
		},
		"ExceedRedirectWithoutOptions": {
			evidence: evObserved + " (hashicorp/terraform-provider-google#11471; key order chosen)",
			args:     args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.ExceedAction = "redirect" })))},
			want:     inv(`Invalid value for field 'resource.rateLimitOptions': '{  "conformAction": "allow",  "exceedAction": "redirect",  "rateLimitThreshold": {    "count": 10,  ...'. Exceed redirect options must be specified if the exceed action is 'redirect'. It cannot be specified for any other exceed actions.`),
		},
		"ExceedRedirectRegional": {
			evidence: evDocumented + " (the exceed redirect is only supported in Global Security Policies of type CLOUD_ARMOR)",
			args: args{regional: true, call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.ExceedAction, o.ExceedRedirectOptions = "redirect", &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"}
			})))},
			want: inv("Invalid value for field 'resource.rateLimitOptions.exceedAction': 'redirect'. The redirect action is only supported in Global Security Policies of type CLOUD_ARMOR."),
		},
		"NoThreshold": {
			evidence: evDocumented + " (rateLimitThreshold: the threshold at which to begin rate limiting)",
			args:     args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.RateLimitThreshold = nil })))},
			want:     inv("Invalid value for field 'resource.rateLimitOptions.rateLimitThreshold': ''. Rate limit threshold must be specified."),
		},
		"BanOnThrottle": {
			evidence: evDocumented + ` (banThreshold, banDurationSec: "Can only be specified if the action for the rule is rate_based_ban")`,
			args:     args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.BanDurationSec = 600 })))},
			want:     inv(`Invalid value for field 'resource.rateLimitOptions': '{  "banDurationSec": 600,  "conformAction": "allow",  "exceedAction": "deny(429)",  "rateLimitThresh...'. Ban threshold and ban duration can only be specified if the action is 'rate_based_ban'.`),
		},
		"FourKeyConfigs": {
			evidence: evDocumented + ` ("You can specify up to 3 enforce_on_key_configs")`,
			args: args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				for _, k := range []string{"IP", "HTTP_PATH", "REGION_CODE", "ASN"} {
					o.EnforceOnKeyConfigs = append(o.EnforceOnKeyConfigs, &compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{EnforceOnKeyType: k})
				}
			})))},
			want: inv("Invalid value for field 'resource.rateLimitOptions.enforceOnKeyConfigs': '4'. Maximum number of enforce_on_key_configs allowed is 3."),
		},
		"FairshareOnCloudArmor": {
			evidence: evDocumented + ` ("This action is only allowed in security policies of type CLOUD_ARMOR_INTERNAL_SERVICE")`,
			args:     args{call: add("p", vRule(10, "fairshare", vRate(nil)))},
			want:     inv("Invalid value for field 'resource.action': 'fairshare'. This action is only allowed in security policies of type CLOUD_ARMOR_INTERNAL_SERVICE."),
		},
		"FairshareKeyNotAll": {
			evidence: evDocumented + ` ("For "fairshare" action, this value is limited to ALL")`,
			args:     args{call: add("internal", vRule(10, "fairshare", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) { o.EnforceOnKey = "IP" })))},
			want:     inv("Invalid value for field 'resource.rateLimitOptions.enforceOnKey': 'IP'. For the 'fairshare' action, enforceOnKey is limited to ALL."),
		},
		// Enumerations
		"EnforceOnKeyType": {
			evidence: evDocumented,
			args: args{call: add("p", vRule(10, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.EnforceOnKeyConfigs = []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{{EnforceOnKeyType: "COOKIE"}}
			})))},
			want: inv("Invalid value for field 'resource.rateLimitOptions.enforceOnKeyConfigs[0].enforceOnKeyType': 'COOKIE'. Must be one of [ALL, ASN, HTTP_COOKIE, HTTP_HEADER, HTTP_PATH, IP, REGION_CODE, SNI, TLS_JA3_FINGERPRINT, TLS_JA4_FINGERPRINT, USER_IP, XFF_IP]."),
		},
		"RedirectType": {
			evidence: evDocumented,
			args:     args{call: add("p", vRule(10, "redirect", vRedirect("EXTERNAL_301", "https://example.com/")))},
			want:     inv("Invalid value for field 'resource.redirectOptions.type': 'EXTERNAL_301'. Must be one of [EXTERNAL_302, GOOGLE_RECAPTCHA]."),
		},
		"JSONParsing": {
			evidence: evDocumented,
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "YAML"}
			}))},
			want: inv("Invalid value for field 'resource.advancedOptionsConfig.jsonParsing': 'YAML'. Must be one of [DISABLED, STANDARD, STANDARD_WITH_GRAPHQL]."),
		},
		"LogLevel": {
			evidence: evDocumented,
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{LogLevel: "DEBUG"}
			}))},
			want: inv("Invalid value for field 'resource.advancedOptionsConfig.logLevel': 'DEBUG'. Must be one of [NORMAL, VERBOSE]."),
		},
		"RequestBodyInspectionSize": {
			evidence: evDocumented + ` ("Values supported are "8KB", "16KB, "32KB", "48KB" and "64KB".")`,
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{RequestBodyInspectionSize: "128KB"}
			}))},
			want: inv("Invalid value for field 'resource.advancedOptionsConfig.requestBodyInspectionSize': '128KB'. Must be one of [16KB, 32KB, 48KB, 64KB, 8KB]."),
		},
		"RuleVisibility": {
			evidence: evDocumented,
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{
					Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{Enable: true, RuleVisibility: "SECRET"}}
			}))},
			want: inv("Invalid value for field 'resource.adaptiveProtectionConfig.layer7DdosDefenseConfig.ruleVisibility': 'SECRET'. Must be one of [PREMIUM, STANDARD]."),
		},
		"WafExclusionOp": {
			evidence: evDocumented,
			args: args{call: add("p", vRule(10, "deny(403)", vExpr("evaluatePreconfiguredWaf('sqli-v33-stable')"),
				vExclusion(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{TargetRuleSet: "sqli-v33-stable",
					RequestHeadersToExclude: fieldParams("LIKE", 1)})))},
			want: inv("Invalid value for field 'resource.preconfiguredWafConfig.exclusions[0].requestHeadersToExclude[0].op': 'LIKE'. Must be one of [CONTAINS, ENDS_WITH, EQUALS, EQUALS_ANY, STARTS_WITH]."),
		},
		"WafExclusionTarget": {
			evidence: evDocumented + " (targetRuleSet: the target WAF rule set)",
			args: args{call: add("p", vRule(10, "deny(403)", vExpr("evaluatePreconfiguredWaf('sqli-v33-stable')"),
				vExclusion(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{TargetRuleSet: "sqli-v99-stable"})))},
			want: inv("Invalid value for field 'resource.preconfiguredWafConfig.exclusions[0].targetRuleSet': 'sqli-v99-stable'. Must be the name of a preconfigured WAF rule set."),
		},
		"WafExclusionTooMany": {
			evidence: evObserved + " (GoogleCloudPlatform/terraform-google-cloud-armor#134; key order chosen)",
			args: args{call: add("p", vRule(10, "deny(403)", vExpr("evaluatePreconfiguredWaf('rce-v33-stable')"),
				vExclusion(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{TargetRuleSet: "rce-v33-stable",
					TargetRuleIds: []string{"owasp-crs-v030301-id932150-rce"}, RequestQueryParamsToExclude: fieldParams("EQUALS", 11)})))},
			want: inv(`Invalid value for field 'resource.preconfiguredWafConfig': '{  "exclusions": [    {      "requestQueryParamsToExclude": [        {          "op": "EQUALS",     ...'. The number of request query parameters to exclude for the target rce-v33-stable:owasp-crs-v030301-id932150-rce exceeds the limit of 10.`),
		},
		// Expressions
		"BrokenCEL": {
			evidence: evDocumented + " (the rules language is a subset of CEL)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("this is ((( not CEL")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'this is ((( not CEL'. The expression is not valid: Syntax error: mismatched input 'is' expecting <EOF> (line 1, column 6)."),
		},
		"EmptyExpression": {
			evidence: evChosen,
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': ''. An expression must be specified."),
		},
		"VersionedExprAndExpr": {
			evidence: evDocumented + ` (Matcher: "Exactly one field must be specified.")`,
			args: args{call: add("p", vRule(10, "deny(403)", func(r *compute.SecurityPolicyRule) {
				r.Match.Expr = &compute.Expr{Expression: "true"}
			}))},
			want: inv(`Invalid value for field 'resource.match': '{  "config": {    "srcIpRanges": [      "10.0.0.0/8"    ]  },  "expr": {    "expression": "true"  },...'. Exactly one of versionedExpr and expr must be specified.`),
		},
		"SixSubexpressions": {
			evidence: evDocumented + ` ("an expression with up to five subexpressions")`,
			args: args{call: add("p", vRule(10, "deny(403)", vExpr(
				"origin.region_code == 'A' || origin.region_code == 'B' || origin.region_code == 'C' || origin.region_code == 'D' || (origin.region_code == 'E' && request.method == 'POST')")))},
			want: inv("Invalid value for field 'resource.match.expr.expression': 'origin.region_code == 'A' || origin.region_code == 'B' || origin.region_code == 'C' || origin.region...'. The expression has 6 subexpressions; the limit is 5."),
		},
		"ExpressionTooLong": {
			evidence: evChosen + " (2048, the provider's limit)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr(longExpr)))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'request.path == '" + strings.Repeat("a", 83) + "...'. The expression has 2066 characters; the limit is 2048."),
		},
		"UnknownWafSet": {
			evidence: evDocumented + " (the preconfigured WAF rules overview lists the sets)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("evaluatePreconfiguredWaf('sqli-v99-stable', {'sensitivity': 1})")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'evaluatePreconfiguredWaf('sqli-v99-stable', {'sensitivity': 1})'. evaluatePreconfiguredWaf: unknown preconfigured WAF rule set 'sqli-v99-stable'."),
		},
		"UnknownExprSet": {
			evidence: evDocumented + " (the preconfigured WAF rules overview lists the sets)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("evaluatePreconfiguredExpr('xss-unstable')")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'evaluatePreconfiguredExpr('xss-unstable')'. evaluatePreconfiguredExpr: unknown preconfigured WAF rule set 'xss-unstable'."),
		},
		"UnknownAttribute": {
			evidence: evDocumented + " (attributes of the rules language reference)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("origin.country == 'FR'")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'origin.country == 'FR''. The expression is not valid: undeclared reference to 'origin' (in container '') (line 1, column 1)."),
		},
		"UnknownFunction": {
			evidence: evDocumented + " (operations of the rules language reference)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("request.path.trim() == '/'")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'request.path.trim() == '/''. The expression is not valid: undeclared reference to 'trim' (in container '') (line 1, column 18)."),
		},
		"NotBoolean": {
			evidence: evChosen + " (a match condition is true or false)",
			args:     args{call: add("p", vRule(10, "deny(403)", vExpr("request.path")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'request.path'. The expression must evaluate to a boolean, not string."),
		},
		"ThreatIntelligenceRegional": {
			evidence: evDocumented + " (Matcher.expr)",
			args:     args{regional: true, call: add("p", vRule(10, "deny(403)", vExpr("evaluateThreatIntelligence('iplist-known-malicious-ips')")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'evaluateThreatIntelligence('iplist-known-malicious-ips')'. Expressions containing evaluateThreatIntelligence are not supported in Edge Policies nor in Regional Policies."),
		},
		"ThreatIntelligenceEdge": {
			evidence: evDocumented + " (Matcher.expr)",
			args:     args{call: add("edge", vRule(10, "deny(403)", vExpr("evaluateThreatIntelligence('iplist-known-malicious-ips')")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'evaluateThreatIntelligence('iplist-known-malicious-ips')'. Expressions containing evaluateThreatIntelligence are not supported in Edge Policies nor in Regional Policies."),
		},
		"SourceIPListRegional": {
			evidence: evDocumented + " (Matcher.expr)",
			args:     args{regional: true, call: add("p", vRule(10, "allow", vExpr("evaluatePreconfiguredExpr('sourceiplist-fastly')")))},
			want:     inv("Invalid value for field 'resource.match.expr.expression': 'evaluatePreconfiguredExpr('sourceiplist-fastly')'. Expressions containing evaluatePreconfiguredExpr('sourceiplist-*') are only supported in Global Security Policies."),
		},
		// The default rule, on every path that writes it.
		"DefaultRuleInsert": {
			evidence: evDocumented + " (SecurityPolicy.rules: the default rule has the match all condition)",
			args: args{call: insert(&compute.SecurityPolicy{Name: "q", Rules: []*compute.SecurityPolicyRule{
				vRule(defaultPriority, "deny(403)", vExpr("origin.region_code == 'FR'"))}})},
			want: inv(`Invalid value for field 'resource.rules[0].match': '{  "expr": {    "expression": "origin.region_code == 'FR'"  }}'. The default rule (priority 2147483647) must match all requests: srcIpRanges ['*'] or the expression 'true'.`),
		},
		"DefaultRulePatch": {
			evidence: evDocumented,
			args: args{call: func(api policyAPI) error {
				_, err := api.Patch("p", &compute.SecurityPolicy{Rules: []*compute.SecurityPolicyRule{vRule(defaultPriority, "allow")}})
				return err
			}},
			want: inv(`Invalid value for field 'resource.rules[0].match': '{  "config": {    "srcIpRanges": [      "10.0.0.0/8"    ]  },  "versionedExpr": "SRC_IPS_V1"}'. The default rule (priority 2147483647) must match all requests: srcIpRanges ['*'] or the expression 'true'.`),
		},
		"DefaultRulePatchRule": {
			evidence: evDocumented,
			args: args{call: func(api policyAPI) error {
				_, err := api.PatchRule("p", defaultPriority, "", vRule(defaultPriority, "allow"))
				return err
			}},
			want: inv(`Invalid value for field 'resource.match': '{  "config": {    "srcIpRanges": [      "10.0.0.0/8"    ]  },  "versionedExpr": "SRC_IPS_V1"}'. The default rule (priority 2147483647) must match all requests: srcIpRanges ['*'] or the expression 'true'.`),
		},
		"DefaultRulePatchRuleMask": {
			evidence: evDocumented + " (the merged rule is checked)",
			args: args{call: func(api policyAPI) error {
				_, err := api.PatchRule("p", defaultPriority, "match", vRule(defaultPriority, "", func(r *compute.SecurityPolicyRule) { r.Action = "" }))
				return err
			}},
			want: inv(`Invalid value for field 'resource.match': '{  "config": {    "srcIpRanges": [      "10.0.0.0/8"    ]  },  "versionedExpr": "SRC_IPS_V1"}'. The default rule (priority 2147483647) must match all requests: srcIpRanges ['*'] or the expression 'true'.`),
		},
		"MergedRuleRateLimitOnAllow": {
			evidence: evObserved + " (the merged rule keeps its rateLimitOptions)",
			args: args{call: func(api policyAPI) error {
				_, err := api.PatchRule("p", 100, "action", &compute.SecurityPolicyRule{Action: "allow"})
				return err
			}},
			want: inv("Invalid value for field 'resource.rateLimitOptions': ''. Rate limit options must be specified if the action is 'fairshare', 'rate_based_ban' or 'throttle'. It cannot be specified for any other actions"),
		},
		// Type, scope and action constraints
		"RedirectRegional": {
			evidence: evDocumented + ` (action redirect: "This action is only supported in Global Security Policies of type CLOUD_ARMOR.")`,
			args:     args{regional: true, call: add("p", vRule(10, "redirect", vRedirect("GOOGLE_RECAPTCHA", "")))},
			want:     inv("Invalid value for field 'resource.action': 'redirect'. This action is only supported in Global Security Policies of type CLOUD_ARMOR."),
		},
		"RedirectEdge": {
			evidence: evDocumented,
			args:     args{call: add("edge", vRule(10, "redirect", vRedirect("GOOGLE_RECAPTCHA", "")))},
			want:     inv("Invalid value for field 'resource.action': 'redirect'. This action is only supported in Global Security Policies of type CLOUD_ARMOR."),
		},
		"HeaderActionRegional": {
			evidence: evDocumented + " (headerAction: only supported in Global Security Policies of type CLOUD_ARMOR)",
			args: args{regional: true, call: add("p", vRule(10, "allow", func(r *compute.SecurityPolicyRule) {
				r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "x-a", HeaderValue: "1"}}}
			}))},
			want: inv(`Invalid value for field 'resource.headerAction': '{  "requestHeadersToAdds": [    {      "headerName": "x-a",      "headerValue": "1"    }  ]}'. This field is only supported in Global Security Policies of type CLOUD_ARMOR.`),
		},
		"EdgeRegional": {
			evidence: evDocumented + " (edge security policies are global)",
			args:     args{regional: true, call: insert(named("q", func(p *compute.SecurityPolicy) { p.Type = "CLOUD_ARMOR_EDGE" }))},
			want:     inv("Invalid value for field 'resource.type': 'CLOUD_ARMOR_EDGE'. Security policies of type CLOUD_ARMOR_EDGE are global; they cannot be created in a region."),
		},
		"NetworkGlobal": {
			evidence: evDocumented + " (network edge security policies are regional)",
			args:     args{call: insert(named("q", func(p *compute.SecurityPolicy) { p.Type = "CLOUD_ARMOR_NETWORK" }))},
			want:     inv("Invalid value for field 'resource.type': 'CLOUD_ARMOR_NETWORK'. Security policies of type CLOUD_ARMOR_NETWORK are regional; they cannot be created globally."),
		},
		"RedirectWithoutOptions": {
			evidence: evLikeGCP,
			args:     args{call: add("p", vRule(10, "redirect"))},
			want:     inv("Invalid value for field 'resource.redirectOptions': ''. Redirect options must be specified if the action is 'redirect'. It cannot be specified for any other actions."),
		},
		"RedirectOptionsOnDeny": {
			evidence: evLikeGCP,
			args:     args{call: add("p", vRule(10, "deny(403)", vRedirect("GOOGLE_RECAPTCHA", "")))},
			want:     inv(`Invalid value for field 'resource.redirectOptions': '{  "type": "GOOGLE_RECAPTCHA"}'. Redirect options must be specified if the action is 'redirect'. It cannot be specified for any other actions.`),
		},
		"External302WithoutTarget": {
			evidence: evDocumented + ` (target: "required if the type is EXTERNAL_302 and cannot be specified for GOOGLE_RECAPTCHA")`,
			args:     args{call: add("p", vRule(10, "redirect", vRedirect("EXTERNAL_302", "")))},
			want:     inv(`Invalid value for field 'resource.redirectOptions': '{  "type": "EXTERNAL_302"}'. Redirect target must be specified if the redirect type is 'EXTERNAL_302'. It cannot be specified for 'GOOGLE_RECAPTCHA'.`),
		},
		"RecaptchaWithTarget": {
			evidence: evDocumented,
			args:     args{call: add("p", vRule(10, "redirect", vRedirect("GOOGLE_RECAPTCHA", "https://example.com/")))},
			want:     inv(`Invalid value for field 'resource.redirectOptions': '{  "target": "https://example.com/",  "type": "GOOGLE_RECAPTCHA"}'. Redirect target must be specified if the redirect type is 'EXTERNAL_302'. It cannot be specified for 'GOOGLE_RECAPTCHA'.`),
		},
		"AdaptiveProtectionRegional": {
			evidence: evDocumented + " (layer7DdosDefenseConfig: only supported in Global Security Policies of type CLOUD_ARMOR)",
			args: args{regional: true, call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{
					Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{Enable: true, RuleVisibility: "STANDARD"}}
			}))},
			want: inv(`Invalid value for field 'resource.adaptiveProtectionConfig.layer7DdosDefenseConfig': '{  "enable": true,  "ruleVisibility": "STANDARD"}'. This field is only supported in Global Security Policies of type CLOUD_ARMOR.`),
		},
		"AdaptiveProtectionPatchRegional": {
			evidence: evDocumented + " (PATCH: the merged fields are checked)",
			args: args{regional: true, call: func(api policyAPI) error {
				_, err := api.Patch("p", &compute.SecurityPolicy{AdaptiveProtectionConfig: &compute.SecurityPolicyAdaptiveProtectionConfig{
					Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{Enable: true}}})
				return err
			}},
			want: inv(`Invalid value for field 'resource.adaptiveProtectionConfig.layer7DdosDefenseConfig': '{  "enable": true}'. This field is only supported in Global Security Policies of type CLOUD_ARMOR.`),
		},
		"RecaptchaSiteKeyEdge": {
			evidence: evDocumented + " (redirectSiteKey: only supported in Global Security Policies of type CLOUD_ARMOR)",
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.Type, p.RecaptchaOptionsConfig = "CLOUD_ARMOR_EDGE", &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "key"}
			}))},
			want: inv("Invalid value for field 'resource.recaptchaOptionsConfig.redirectSiteKey': 'key'. This field is only supported in Global Security Policies of type CLOUD_ARMOR."),
		},
		"NetworkMatchOnCloudArmor": {
			evidence: evDocumented + " (networkMatch: for CLOUD_ARMOR_NETWORK security policies)",
			args: args{call: add("p", vRule(10, "allow", func(r *compute.SecurityPolicyRule) {
				r.Match, r.NetworkMatch = nil, &compute.SecurityPolicyRuleNetworkMatcher{SrcIpRanges: []string{"10.0.0.0/8"}}
			}))},
			want: inv(`Invalid value for field 'resource.networkMatch': '{  "srcIpRanges": [    "10.0.0.0/8"  ]}'. This field is only supported in security policies of type CLOUD_ARMOR_NETWORK.`),
		},
		"UserDefinedFieldsOnCloudArmor": {
			evidence: evDocumented + " (userDefinedFields: for CLOUD_ARMOR_NETWORK policies)",
			args: args{call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.UserDefinedFields = []*compute.SecurityPolicyUserDefinedField{{Name: "f", Base: "IPV4", Offset: 6, Size: 2}}
			}))},
			want: inv(`Invalid value for field 'resource.userDefinedFields': '[  {    "base": "IPV4",    "name": "f",    "offset": 6,    "size": 2  }]'. This field is only supported in security policies of type CLOUD_ARMOR_NETWORK.`),
		},
		"DdosProtectionOnCloudArmor": {
			evidence: evDocumented + " (network DDoS protection is configured on regional CLOUD_ARMOR_NETWORK policies: gcloud --network-ddos-protection, Terraform ddos_protection_config)",
			args: args{regional: true, call: insert(named("q", func(p *compute.SecurityPolicy) {
				p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED"}
			}))},
			want: inv(`Invalid value for field 'resource.ddosProtectionConfig': '{  "ddosProtection": "ADVANCED"}'. This field is only supported in security policies of type CLOUD_ARMOR_NETWORK.`),
		},
		"DdosAdaptivePatchOnGlobal": {
			evidence: evDocumented + " (PATCH: the merged fields are checked)",
			args: args{call: func(api policyAPI) error {
				_, err := api.Patch("p", &compute.SecurityPolicy{DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosAdaptiveProtection: "ENABLED"}})
				return err
			}},
			want: inv(`Invalid value for field 'resource.ddosProtectionConfig': '{  "ddosAdaptiveProtection": "ENABLED"}'. This field is only supported in security policies of type CLOUD_ARMOR_NETWORK.`),
		},
		"DdosAdaptiveUnknown": {
			evidence: evDocumented + " (enum)",
			args: args{regional: true, call: func(api policyAPI) error {
				_, err := api.Patch("net", &compute.SecurityPolicy{DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosAdaptiveProtection: "ON"}})
				return err
			}},
			want: inv("Invalid value for field 'resource.ddosProtectionConfig.ddosAdaptiveProtection': 'ON'. Must be one of [DDOS_ADAPTIVE_PROTECTION_UNSPECIFIED, DISABLED, ENABLED, PREVIEW, UNSPECIFIED_ADAPTIVE_PROTECTION]."),
		},
		"DdosThresholdAboveOne": {
			evidence: evDocumented + ` (ddosImpactedBaselineThreshold: "the fraction of a non-abuse baseline"); bounds chosen`,
			args: args{regional: true, call: func(api policyAPI) error {
				_, err := api.Patch("net", &compute.SecurityPolicy{DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosImpactedBaselineThreshold: 1.5}})
				return err
			}},
			want: inv("Invalid value for field 'resource.ddosProtectionConfig.ddosImpactedBaselineThreshold': '1.5'. Must be a fraction between 0 and 1."),
		},
		"DdosThresholdNegative": {
			evidence: evDocumented + "; bounds chosen",
			args: args{regional: true, call: insert(named("net2", func(p *compute.SecurityPolicy) {
				p.Type, p.Rules = "CLOUD_ARMOR_NETWORK", nil
				p.DdosProtectionConfig = &compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosImpactedBaselineThreshold: -0.1}
			}))},
			want: inv("Invalid value for field 'resource.ddosProtectionConfig.ddosImpactedBaselineThreshold': '-0.1'. Must be a fraction between 0 and 1."),
		},
		"RuleDescriptionTooLong": {
			evidence: evDocumented + ` (best practices: "The description field is limited to 64 characters")`,
			args:     args{call: add("p", vRule(10, "allow", func(r *compute.SecurityPolicyRule) { r.Description = strings.Repeat("d", 65) }))},
			want:     inv("Invalid value for field 'resource.description': '" + strings.Repeat("d", 65) + "'. The description must be at most 64 characters long."),
		},
		"PolicyDescriptionTooLong": {
			evidence: evChosen + " (2048, the provider's limit)",
			args:     args{call: insert(named("q", func(p *compute.SecurityPolicy) { p.Description = strings.Repeat("d", 2049) }))},
			want:     inv("Invalid value for field 'resource.description': '" + strings.Repeat("d", 100) + "...'. The description must be at most 2048 characters long."),
		},
	}
}

// TestValidationConformance runs each case of validationCases as a write.
func TestValidationConformance(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	apis := map[bool]policyAPI{false: globalAPI{svc}, true: regionalAPI{svc}}
	runValidationCases(t, apis, apis, func() *apiErr { return nil })
}

// runValidationCases inserts validationFixtures through fixtures, runs every
// case through apis and checks that none changed a fixture. override, asked
// after each call, gives the answer that call should have got instead of
// the case's own, if any.
func runValidationCases(t *testing.T, fixtures, apis map[bool]policyAPI, override func() *apiErr) {
	t.Helper()
	global, regional := validationFixtures()
	before := map[bool][]*compute.SecurityPolicy{}
	for isRegional, ps := range map[bool][]*compute.SecurityPolicy{false: global, true: regional} {
		api := fixtures[isRegional]
		for _, p := range ps {
			waiter(t, api)(api.Insert(p))
			got, err := api.Get(p.Name)
			if err != nil {
				t.Fatalf("fixture %s: %v", p.Name, err)
			}
			before[isRegional] = append(before[isRegional], got)
		}
	}
	for name, tc := range validationCases() {
		t.Run(name, func(t *testing.T) {
			t.Logf("evidence: %s", tc.evidence)
			got := asAPIErr(tc.args.call(apis[tc.args.regional]))
			want := &tc.want
			if o := override(); o != nil {
				want = o
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
	for isRegional, ps := range before {
		for _, p := range ps {
			after, err := fixtures[isRegional].Get(p.Name)
			if err != nil || after.Fingerprint != p.Fingerprint {
				t.Errorf("%s changed although every call was refused: %v", p.Name, err)
			}
		}
	}
}

// TestValidationEnvelope checks the whole answer on the wire: 400, reason
// invalid, domain global, no status (compute's own validation, not the front
// end's), the message repeated in errors[0].
func TestValidationEnvelope(t *testing.T) {
	em := Start(t, Options{})
	url := em.Endpoint() + "projects/p/global/securityPolicies"
	body := `{"name":"q","rules":[{"action":"allow","priority":2147483647,"match":{"expr":{"expression":"this is ((( not CEL"}}}]}`
	res, got := rawCall(t, "POST", url, body, nil)
	msg := "Invalid value for field 'resource.rules[0].match.expr.expression': 'this is ((( not CEL'. " +
		"The expression is not valid: Syntax error: mismatched input 'is' expecting <EOF> (line 1, column 6)."
	want := map[string]any{"error": map[string]any{"code": float64(400), "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": "invalid", "message": msg}}}}
	var env map[string]any
	if err := json.Unmarshal([]byte(got), &env); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, env); res.StatusCode != 400 || diff != "" {
		t.Errorf("status %d, envelope -want, +got:\n%s", res.StatusCode, diff)
	}
}

// documentedExpressions are match expressions from the Cloud Armor
// documentation (rules language reference, WAF tuning, threat intelligence,
// address groups, reCAPTCHA, Adaptive Protection auto-deploy) and from the
// provider's own examples and tests. Each must be accepted.
var documentedExpressions = []string{
	"inIpRange(origin.ip, '9.9.9.0/24')",
	"origin.region_code == 'AU'",
	`origin.region_code == "AU" && inIpRange(origin.ip, '1.2.3.0/24')`,
	"inIpRange(origin.ip, '1.2.3.4/32') && has(request.headers['user-agent']) && request.headers['user-agent'].contains('WordPress')",
	"request.path.matches('/example_path/')",
	"request.headers['user-agent'].matches('Chrome')",
	"request.headers['user-agent'].matches('(?i:wordpress)')",
	"request.headers['cookie'].contains('80=BLAH')",
	"has(request.headers['user-id']) && request.headers['user-id'].base64Decode().contains('myValue')",
	"size(request.path) > 10",
	"size(request.headers['x-data']) >= 1024",
	`int(request.headers["content-length"]) == 0`,
	"int(request.headers['content-length']) > 65536",
	"has(request.headers['cookie']) && request.headers['cookie'].urlDecode().contains('<')",
	"has(request.headers['cookie']) && request.headers['cookie'].urlDecodeUni() == 'Match+Value'",
	"has(request.headers['cookie']) && request.headers['cookie'].utf8ToUnicode() == '%u00ac'",
	"origin.tls_ja4_fingerprint == 't13d1516h2_8daaf6152771_b186095e22b6'",
	"origin.tls_ja4_fingerprint == 't00d0000h0_000000000000_000000000000' || origin.tls_ja4_fingerprint == 't13d1516h2_8daaf6152771_b186095e22b6'",
	"origin.tls_ja3_fingerprint == 'e7d705a3286e19ea42f587b344ee6865'",
	"origin.asn == 16509",
	"origin.user_ip == '203.0.113.7'",
	"request.method == 'POST' && request.path.startsWith('/login')",
	"request.path.endsWith('.php')",
	"request.query.contains('_rsc=')",
	"request.scheme == 'http'",
	"request.headers['host'].lower().contains('test.example.com')",
	"request.method.upper() == 'GET'",
	"!inIpRange(origin.ip, '10.0.0.0/8')",
	"(!request.path.startsWith('/search')\n&& !request.path.startsWith('/statements')\n&& !request.path.startsWith('/entities')\n&& !request.path.startsWith('/advancedsearch'))\n|| request.query.contains('_rsc=')",
	"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 1})",
	"evaluatePreconfiguredWaf(\n  'sqli-v33-stable',\n  {\n    'sensitivity': 4,\n    'opt_out_rule_ids': ['owasp-crs-v030301-id942350-sqli', 'owasp-crs-v030301-id942360-sqli']\n  }\n)",
	"evaluatePreconfiguredWaf('xss-v422-stable', {'sensitivity': 0, 'opt_in_rule_ids': ['owasp-crs-v042200-id941150-xss']})",
	"evaluatePreconfiguredWaf('sqli-v422-stable', {'sensitivity': 3})",
	"evaluatePreconfiguredWaf('generic-v422-stable')",
	"evaluatePreconfiguredWaf('sessionfixation-v422-stable', {'sensitivity': 1}) || evaluatePreconfiguredWaf('java-v422-stable', {'sensitivity': 1})",
	"evaluatePreconfiguredExpr('xss-stable', ['owasp-crs-v030001-id941180-xss', 'owasp-crs-v030001-id941340-xss'])",
	"evaluatePreconfiguredExpr('scannerdetection-v33-canary') || evaluatePreconfiguredExpr('sqli-v33-canary') || evaluatePreconfiguredExpr('rce-v33-canary') || evaluatePreconfiguredExpr('cve-canary')",
	"evaluatePreconfiguredExpr('json-sqli-canary')",
	"evaluatePreconfiguredExpr('nodejs-v33-stable')",
	"evaluatePreconfiguredExpr('sourceiplist-fastly') || evaluatePreconfiguredExpr('sourceiplist-cloudflare') || evaluatePreconfiguredExpr('sourceiplist-imperva')",
	"evaluateThreatIntelligence('iplist-known-malicious-ips')",
	"evaluateThreatIntelligence('iplist-known-malicious-ips', ['203.0.113.0/24'])",
	"evaluateAddressGroup('my-own-list-of-bad-ips', origin.user_ip)",
	"evaluateAddressGroup('my-own-list-of-bad-ips', origin.ip)",
	"evaluateOrganizationAddressGroup('org-list', origin.ip)",
	"evaluateAdaptiveProtectionAutoDeploy()",
	"token.recaptcha_session.valid && token.recaptcha_session.score > 0.5",
	"token.recaptcha_action.valid && token.recaptcha_action.action == 'login' && token.recaptcha_action.score >= 0.8",
	"token.recaptcha_action.captcha_status == 'pass'",
	"!token.recaptcha_exemption.valid",
	"token.recaptcha_session.score < 1",
	"has(request.headers.user_agent)",
	"request.headers['x-a'] == \"\\\" || true || \\\"\" && origin.ip == '1.2.3.4' && request.path != '${jndi:ldap://x} /* */'",
	"request.path.startsWith('/api')",
	"true",
}

// TestDocumentedExpressionsAccepted adds one rule per documented expression,
// in an Enterprise project (address groups need one).
func TestDocumentedExpressionsAccepted(t *testing.T) {
	em := Start(t, Options{DefaultTier: TierEnterprisePaygo})
	api := globalAPI{newService(t, em)}
	waiter(t, api)(api.Insert(policyWith("p")))
	for i, e := range documentedExpressions {
		if _, err := api.AddRule("p", vRule(int64(100+i), "deny(403)", vExpr(e))); err != nil {
			t.Errorf("%q refused: %v", e, err)
		}
	}
}

// TestDocumentedBodiesAccepted inserts policies shaped like the GCP
// documentation's examples, in the scope and type each needs, and reads them
// back.
func TestDocumentedBodiesAccepted(t *testing.T) {
	threshold := func(count, interval int64) *compute.SecurityPolicyRuleRateLimitOptionsThreshold {
		return &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: count, IntervalSec: interval}
	}
	keys := func(kv ...string) (out []*compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig) {
		for i := 0; i < len(kv); i += 2 {
			out = append(out, &compute.SecurityPolicyRuleRateLimitOptionsEnforceOnKeyConfig{EnforceOnKeyType: kv[i], EnforceOnKeyName: kv[i+1]})
		}
		return out
	}
	cases := map[string]struct {
		regional bool
		policy   *compute.SecurityPolicy
	}{
		"RateLimiting": {policy: policyWith("rate",
			vRule(100, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.EnforceOnKey, o.RateLimitThreshold = "IP", threshold(100, 60)
			})),
			vRule(200, "throttle", vExpr("request.path.startsWith('/api')"), vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.EnforceOnKeyConfigs = keys("HTTP_PATH", "", "HTTP_HEADER", "x-api-key", "IP", "")
			})),
			vRule(300, "rate_based_ban", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.ExceedAction, o.RateLimitThreshold = "deny(404)", threshold(1000, 60)
				o.BanThreshold, o.BanDurationSec = threshold(5000, 300), 600
				o.EnforceOnKeyConfigs = keys("XFF_IP", "")
			})),
			vRule(400, "throttle", vRate(func(o *compute.SecurityPolicyRuleRateLimitOptions) {
				o.ExceedAction = "redirect"
				o.ExceedRedirectOptions = &compute.SecurityPolicyRuleRedirectOptions{Type: "GOOGLE_RECAPTCHA"}
				o.EnforceOnKey, o.EnforceOnKeyName = "HTTP_COOKIE", "session"
			})),
		)},
		"WAFWithExclusions": {policy: policyWith("waf",
			vRule(1000, "deny(403)", vExpr("evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 4})"),
				vExclusion(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{TargetRuleSet: "sqli-v33-stable",
					TargetRuleIds:               []string{"owasp-crs-v030301-id942110-sqli", "owasp-crs-v030301-id942120-sqli"},
					RequestHeadersToExclude:     fieldParams("STARTS_WITH", 2),
					RequestCookiesToExclude:     []*compute.SecurityPolicyRulePreconfiguredWafConfigExclusionFieldParams{{Op: "EQUALS_ANY"}},
					RequestQueryParamsToExclude: fieldParams("EQUALS", 10),
					RequestUrisToExclude:        fieldParams("CONTAINS", 1),
					RequestBodiesToExclude:      fieldParams("ENDS_WITH", 1)})),
			vRule(1001, "deny(403)", vExpr("evaluatePreconfiguredWaf('lfi-v422-stable')"),
				vExclusion(&compute.SecurityPolicyRulePreconfiguredWafConfigExclusion{TargetRuleSet: "lfi-v422-stable",
					RequestUrisToExclude: fieldParams("CONTAINS", 1)})),
		)},
		"Recaptcha": {policy: func() *compute.SecurityPolicy {
			p := policyWith("recaptcha",
				vRule(100, "redirect", vExpr("request.path.matches('/login.html')"), vRedirect("GOOGLE_RECAPTCHA", "")),
				vRule(200, "allow", vExpr("token.recaptcha_session.valid && token.recaptcha_session.score > 0.5"),
					func(r *compute.SecurityPolicyRule) {
						r.Match.ExprOptions = &compute.SecurityPolicyRuleMatcherExprOptions{RecaptchaOptions: &compute.SecurityPolicyRuleMatcherExprOptionsRecaptchaOptions{
							SessionTokenSiteKeys: []string{"6LcXXXX"}}}
					}))
			p.RecaptchaOptionsConfig = &compute.SecurityPolicyRecaptchaOptionsConfig{RedirectSiteKey: "6LcXXXX"}
			return p
		}()},
		"AdaptiveProtectionAndAdvancedOptions": {policy: func() *compute.SecurityPolicy {
			p := policyWith("adaptive", vRule(900, "deny(403)", vExpr("evaluateAdaptiveProtectionAutoDeploy()")))
			p.AdaptiveProtectionConfig = &compute.SecurityPolicyAdaptiveProtectionConfig{
				Layer7DdosDefenseConfig: &compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfig{Enable: true, RuleVisibility: "PREMIUM",
					ThresholdConfigs: []*compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfigThresholdConfig{{Name: "login",
						AutoDeployLoadThreshold: 0.8, AutoDeployConfidenceThreshold: 0.5,
						TrafficGranularityConfigs: []*compute.SecurityPolicyAdaptiveProtectionConfigLayer7DdosDefenseConfigThresholdConfigTrafficGranularityConfig{
							{Type: "HTTP_PATH", Value: "/login"}}}}}}
			p.AdvancedOptionsConfig = &compute.SecurityPolicyAdvancedOptionsConfig{JsonParsing: "STANDARD_WITH_GRAPHQL", LogLevel: "VERBOSE",
				RequestBodyInspectionSize: "64kb", UserIpRequestHeaders: []string{"True-Client-IP"},
				JsonCustomConfig: &compute.SecurityPolicyAdvancedOptionsConfigJsonCustomConfig{ContentTypes: []string{"application/vnd.api+json"}}}
			return p
		}()},
		"HeaderActionAndRedirect302": {policy: policyWith("headers",
			vRule(100, "allow", func(r *compute.SecurityPolicyRule) {
				r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{
					{HeaderName: "X-Cloud-Armor", HeaderValue: "allowed"}}}
			}),
			vRule(200, "redirect", vExpr("origin.region_code == 'XX'"), vRedirect("EXTERNAL_302", "https://www.example.com/blocked")),
			vRule(300, "deny(403)", vExpr("evaluateThreatIntelligence('iplist-tor-exit-nodes')")),
		)},
		"DefaultRuleTrue": {policy: &compute.SecurityPolicy{Name: "truedefault", Rules: []*compute.SecurityPolicyRule{
			vRule(defaultPriority, "deny(403)", vExpr("true"))}}},
		"Edge": {policy: func() *compute.SecurityPolicy {
			p := policyWith("edge", vRule(100, "deny(403)", vExpr("origin.region_code == 'XX'")))
			p.Type = "CLOUD_ARMOR_EDGE"
			return p
		}()},
		"RegionalBackend": {regional: true, policy: policyWith("regional",
			vRule(100, "throttle", vRate(nil)),
			vRule(1000, "deny(403)", vExpr("evaluatePreconfiguredWaf('rce-v33-stable')")),
			vRule(2000, "allow", func(r *compute.SecurityPolicyRule) { r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{} }),
		)},
		"NetworkEdge": {regional: true, policy: &compute.SecurityPolicy{Name: "network", Type: "CLOUD_ARMOR_NETWORK",
			UserDefinedFields: []*compute.SecurityPolicyUserDefinedField{{Name: "sig1", Base: "UDP", Offset: 8, Size: 2, Mask: "0x8F00"}},
			Rules: []*compute.SecurityPolicyRule{
				{Priority: defaultPriority, Action: "allow", NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{SrcIpRanges: []string{"*"}}},
				{Priority: 100, Action: "allow", NetworkMatch: &compute.SecurityPolicyRuleNetworkMatcher{DestPorts: []string{"53"},
					IpProtocols:       []string{"udp"},
					UserDefinedFields: []*compute.SecurityPolicyRuleNetworkMatcherUserDefinedFieldMatch{{Name: "sig1", Values: []string{"0x8F00"}}}}},
			}}},
	}
	em := Start(t, Options{})
	svc := newService(t, em)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var api policyAPI = globalAPI{svc}
			if tc.regional {
				api = regionalAPI{svc}
			}
			waiter(t, api)(api.Insert(tc.policy))
			got, err := api.Get(tc.policy.Name)
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			if len(got.Rules) != len(tc.policy.Rules) {
				t.Errorf("read back: %d rules, want %d", len(got.Rules), len(tc.policy.Rules))
			}
		})
	}
}
