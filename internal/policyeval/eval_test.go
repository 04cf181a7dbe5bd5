package policyeval

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func ptr[T any](v T) *T { return &v }

// exprPolicy is a policy with one rule at 1000 that allows what expr
// matches, and a default rule that denies with 403.
func exprPolicy(expr string) Policy {
	return Merge("p", v1beta1.SecurityPolicyParameters{
		DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"},
		Rules: []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{
			Action: "allow", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: expr}},
		}}},
	}, nil)
}

func rangesPolicy(ranges ...v1beta1.IPRange) Policy {
	return Merge("p", v1beta1.SecurityPolicyParameters{
		DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"},
		Rules: []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{
			Action: "allow", Match: &v1beta1.RuleMatcher{VersionedExpr: ptr("SRC_IPS_V1"), Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: ranges}},
		}}},
	}, nil)
}

// result is the part of a verdict the tables compare.
type result struct {
	Priority     int64
	Action       string
	NotEvaluable string
}

func summarize(v Verdict) result {
	return result{Priority: v.Priority, Action: v.Action, NotEvaluable: v.NotEvaluable}
}

var (
	allowed = result{Priority: 1000, Action: "allow"}
	denied  = result{Priority: DefaultPriority, Action: "deny(403)"}
)

func notEvaluable(what string) result {
	return result{Priority: 1000, NotEvaluable: "not evaluable offline: " + what}
}

func TestExpressions(t *testing.T) {
	base := Request{IP: "203.0.113.7", Method: "GET", Path: "/api/v1/items", Query: "a=1&b=two",
		Headers:    map[string]string{"User-Agent": "curl/8.5", "X-Token": "c2VjcmV0", "Cookie": "session=abc; theme=dark"},
		RegionCode: "fr", ASN: ptr[int64](64500)}
	type args struct {
		expr string
		req  Request
	}
	cases := map[string]struct {
		reason string
		args   args
		want   result
	}{
		"OriginIP":           {"origin.ip is the request's address.", args{"origin.ip == '203.0.113.7'", base}, allowed},
		"OriginIPv6":         {"IPv6 addresses are canonical.", args{"origin.ip == '2001:db8::1'", Request{IP: "2001:DB8:0::1"}}, allowed},
		"RegionCode":         {"origin.region_code is upper case.", args{"origin.region_code == 'FR'", base}, allowed},
		"RegionCodeOther":    {"Another region does not match.", args{"origin.region_code == 'US'", base}, denied},
		"RegionCodeMissing":  {"A region code the request leaves out is unknown.", args{"origin.region_code == 'FR'", Request{IP: "203.0.113.7"}}, notEvaluable("origin.region_code (give regionCode in the request)")},
		"ASN":                {"origin.asn is an int.", args{"origin.asn == 64500", base}, allowed},
		"ASNMissing":         {"An ASN the request leaves out is unknown.", args{"origin.asn == 64500", Request{IP: "203.0.113.7"}}, notEvaluable("origin.asn (give asn in the request)")},
		"UserIPDefault":      {"origin.user_ip is origin.ip without userIpRequestHeaders.", args{"origin.user_ip == '203.0.113.7'", base}, allowed},
		"HeaderLowerCase":    {"Header names are lower case.", args{"request.headers['user-agent'].startsWith('curl')", base}, allowed},
		"HeaderHas":          {"has() tests a header's presence.", args{"has(request.headers['x-token'])", base}, allowed},
		"HeaderHasNot":       {"has() of a missing header is false.", args{"has(request.headers['x-missing'])", base}, denied},
		"HeaderMissingError": {"Indexing a missing header is an error, counted as no match.", args{"request.headers['x-missing'] == 'a'", base}, denied},
		"Method":             {"request.method.", args{"request.method == 'GET'", base}, allowed},
		"MethodDefault":      {"request.method defaults to GET.", args{"request.method == 'GET'", Request{IP: "192.0.2.1"}}, allowed},
		"Path":               {"request.path.", args{"request.path.endsWith('/items')", base}, allowed},
		"PathDefault":        {"request.path defaults to /.", args{"request.path == '/'", Request{IP: "192.0.2.1"}}, allowed},
		"Query":              {"request.query has no '?'.", args{"request.query.contains('b=two')", base}, allowed},
		"Scheme":             {"request.scheme defaults to https.", args{"request.scheme == 'https'", base}, allowed},
		"SchemeHTTP":         {"request.scheme as given.", args{"request.scheme == 'http'", Request{IP: "192.0.2.1", Scheme: "http"}}, allowed},
		"JA3":                {"origin.tls_ja3_fingerprint as given.", args{"origin.tls_ja3_fingerprint == 'abc'", Request{IP: "192.0.2.1", TLSJA3Fingerprint: "abc"}}, allowed},
		"JA4Missing": {"A TLS fingerprint the request leaves out is unknown.", args{"origin.tls_ja4_fingerprint == 'abc'", Request{IP: "192.0.2.1"}},
			notEvaluable("origin.tls_ja4_fingerprint (give tlsJa4Fingerprint in the request)")},
		"HeaderJoined":     {"Several values of a header are joined with commas.", args{"request.headers['x-a'] == '1,2'", Request{IP: "192.0.2.1", Headers: map[string]string{"X-A": "1", "x-a": "2"}}}, allowed},
		"Body":             {"request.body is not evaluable.", args{"request.body.contains('x')", base}, notEvaluable("request.body")},
		"Cookies":          {"request.cookies come from the Cookie header.", args{"request.cookies['theme'] == 'dark'", base}, allowed},
		"InIPRange":        {"inIpRange with a CIDR.", args{"inIpRange(origin.ip, '203.0.113.0/24')", base}, allowed},
		"InIPRangeAddress": {"inIpRange with a single address.", args{"inIpRange(origin.ip, '203.0.113.7')", base}, allowed},
		"InIPRangeOutside": {"An address outside the range.", args{"inIpRange(origin.ip, '198.51.100.0/24')", base}, denied},
		"InIPRangeV6":      {"inIpRange with IPv6.", args{"inIpRange(origin.ip, '2001:db8::/32')", Request{IP: "2001:db8:1::5"}}, allowed},
		"InIPRangeFamily":  {"An IPv4 address is in no IPv6 range.", args{"inIpRange(origin.ip, '::/0')", base}, denied},
		"InIPRangeBad":     {"A bad range is an error, no match.", args{"inIpRange(origin.ip, 'nope')", base}, denied},
		"Contains":         {"contains().", args{"request.path.contains('/v1/')", base}, allowed},
		"Matches":          {"matches() is RE2.", args{"request.path.matches('^/api/v[0-9]+/')", base}, allowed},
		"Lower":            {"lower().", args{"request.headers['user-agent'].lower() == 'curl/8.5'", Request{IP: "192.0.2.1", Headers: map[string]string{"user-agent": "CURL/8.5"}}}, allowed},
		"Upper":            {"upper().", args{"request.method.upper() == 'POST'", Request{IP: "192.0.2.1", Method: "post"}}, allowed},
		"Size":             {"size().", args{"size(request.path) > 5", base}, allowed},
		"Base64Decode":     {"base64Decode().", args{"request.headers['x-token'].base64Decode() == 'secret'", base}, allowed},
		"Base64DecodeBad":  {"Not base64: an error, no match.", args{"request.path.base64Decode() == 'x'", base}, denied},
		"URLDecode":        {"urlDecode() decodes %XX and +.", args{"request.query.urlDecode() == 'q=a b/c'", Request{IP: "192.0.2.1", Query: "q=a+b%2Fc"}}, allowed},
		"URLDecodeUni":     {"urlDecodeUni() decodes %uXXXX.", args{"request.query.urlDecodeUni() == 'q=é'", Request{IP: "192.0.2.1", Query: "q=%u00e9"}}, allowed},
		"UTF8ToUnicode":    {"utf8ToUnicode() writes %uXXXX.", args{"request.path.utf8ToUnicode() == '/%u00e9'", Request{IP: "192.0.2.1", Path: "/é"}}, allowed},
		"AddressGroupIn":   {"evaluateAddressGroup with a known group.", args{"evaluateAddressGroup('partners', origin.ip)", base}, allowed},
		"AddressGroupOut":  {"An address outside the group.", args{"evaluateAddressGroup('partners', origin.ip)", Request{IP: "192.0.2.1"}}, denied},
		"AddressGroupMissing": {"A group not given cannot be evaluated.", args{"evaluateAddressGroup('nobody', origin.ip)", base},
			notEvaluable("an address group that is not among the inputs (evaluateAddressGroup)")},
		"OrgAddressGroup": {"Organization groups are separate.", args{"evaluateOrganizationAddressGroup('org-partners', origin.ip)", base}, allowed},
		"WAF": {"Preconfigured WAF rules with no CRS counterpart are not evaluable (waf_test.go has the rest).", args{"evaluatePreconfiguredWaf('cve-canary')", base},
			notEvaluable("preconfigured WAF rules (evaluatePreconfiguredWaf); cve-canary has no OWASP CRS counterpart")},
		"WAFShortCircuit": {"false && unknown is false, as in CEL.", args{"request.path == '/nope' && evaluatePreconfiguredWaf('sqli-v33-stable')", base}, denied},
		"WAFOr":           {"true || unknown is true.", args{"request.method == 'GET' || evaluatePreconfiguredExpr('xss-v33-stable')", base}, allowed},
		"ThreatIntel": {"Threat intelligence is not evaluable.", args{"evaluateThreatIntelligence('iplist-known-malicious-ips')", base},
			notEvaluable("threat intelligence (evaluateThreatIntelligence)")},
		"Recaptcha": {"reCAPTCHA tokens are not evaluable.", args{"request.path.startsWith('/api') && token.recaptcha_exemption.valid", base},
			notEvaluable("reCAPTCHA tokens (token.*)")},
		"Adaptive": {"Adaptive Protection is not evaluable.", args{"evaluateAdaptiveProtectionAutoDeploy()", base},
			notEvaluable("Adaptive Protection (evaluateAdaptiveProtectionAutoDeploy)")},
		"UnknownFunction": {"A function the language lacks is not evaluable.", args{"frobnicate(origin.ip)", base},
			notEvaluable("the expression is not in the rules language this evaluator knows: undeclared reference to 'frobnicate' (in container '') (line 1, column 11)")},
		"NotBool": {"A non-bool expression is not evaluable.", args{"request.path", base},
			notEvaluable("the expression is of type string, not bool")},
		"NoExistsMacro": {"Cloud Armor has no exists() macro.", args{"[1].exists(x, x == 1)", base},
			notEvaluable("the expression is not in the rules language this evaluator knows: undeclared reference to 'exists' (in container '') (line 1, column 11)")},
	}
	e, err := New(
		AddressGroup{Name: "partners", Items: []string{"198.51.100.0/24", "203.0.113.7"}},
		AddressGroup{Name: "org-partners", Organization: true, Items: []string{"203.0.113.0/24"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := e.Evaluate(exprPolicy(tc.args.expr), tc.args.req)
			if err != nil {
				t.Fatalf("\n%s\nEvaluate(...): unexpected error %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, summarize(v)); diff != "" {
				t.Errorf("\n%s\nEvaluate(%q): -want, +got:\n%s", tc.reason, tc.args.expr, diff)
			}
		})
	}
}

func TestSrcIPRanges(t *testing.T) {
	type args struct {
		ranges []v1beta1.IPRange
		ip     string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   result
	}{
		"CIDR":          {"An address in a CIDR matches.", args{[]v1beta1.IPRange{"203.0.113.0/24"}, "203.0.113.7"}, allowed},
		"Single":        {"A single address matches itself.", args{[]v1beta1.IPRange{"198.51.100.10"}, "198.51.100.10"}, allowed},
		"SingleSlash32": {"A /32 matches its address.", args{[]v1beta1.IPRange{"198.51.100.10/32"}, "198.51.100.11"}, denied},
		"Star":          {"* matches every address.", args{[]v1beta1.IPRange{"*"}, "2001:db8::1"}, allowed},
		"Outside":       {"An address outside every range.", args{[]v1beta1.IPRange{"203.0.113.0/24", "10.0.0.0/8"}, "192.0.2.1"}, denied},
		"SecondRange":   {"Any range of the list matches.", args{[]v1beta1.IPRange{"203.0.113.0/24", "10.0.0.0/8"}, "10.200.0.1"}, allowed},
		"IPv6":          {"IPv6 CIDRs.", args{[]v1beta1.IPRange{"2001:db8::/32"}, "2001:db8:ffff::1"}, allowed},
		"IPv6Outside":   {"IPv6 outside.", args{[]v1beta1.IPRange{"2001:db8::/32"}, "2001:db9::1"}, denied},
		"Mapped":        {"An IPv4-mapped IPv6 address is its IPv4 address.", args{[]v1beta1.IPRange{"203.0.113.0/24"}, "::ffff:203.0.113.9"}, allowed},
		"FamilyApart":   {"An IPv4 address is in no IPv6 range.", args{[]v1beta1.IPRange{"::/0"}, "203.0.113.9"}, denied},
		"Bad":           {"A bad range cannot be evaluated.", args{[]v1beta1.IPRange{"nope"}, "203.0.113.9"}, notEvaluable(`srcIpRanges: "nope" is neither a CIDR nor an IP address`)},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := e.Evaluate(rangesPolicy(tc.args.ranges...), Request{IP: tc.args.ip})
			if err != nil {
				t.Fatalf("\n%s\nEvaluate(...): unexpected error %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, summarize(v)); diff != "" {
				t.Errorf("\n%s\nEvaluate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestActions(t *testing.T) {
	rule := func(priority int64, action string, preview bool, expr string, mod func(*v1beta1.RuleParameters)) v1beta1.PolicyRule {
		r := v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{
			Action: action, Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: expr}}}}
		if preview {
			r.Preview = ptr(true)
		}
		if mod != nil {
			mod(&r.RuleParameters)
		}
		return r
	}
	rl := &v1beta1.RateLimitOptions{ConformAction: ptr("allow"), ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("IP"),
		RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 100, IntervalSec: 60}}
	ban := &v1beta1.RateLimitOptions{ConformAction: ptr("allow"), ExceedAction: ptr("deny(403)"),
		EnforceOnKeyConfigs: []v1beta1.EnforceOnKeyConfig{{EnforceOnKeyType: "HTTP_HEADER", EnforceOnKeyName: ptr("x-api-key")}, {EnforceOnKeyType: "HTTP_PATH"}},
		RateLimitThreshold:  &v1beta1.RateLimitThreshold{Count: 10, IntervalSec: 60},
		BanThreshold:        &v1beta1.RateLimitThreshold{Count: 50, IntervalSec: 300}, BanDurationSec: ptr[int64](600)}
	redirect := &v1beta1.RedirectOptions{Type: "EXTERNAL_302", Target: ptr("https://example.com/blocked")}
	headers := []v1beta1.HTTPHeaderOption{{HeaderName: "X-Rule", HeaderValue: ptr("1000")}}
	type want struct {
		Summary  string
		Status   int
		Preview  int64
		Warnings []string
	}
	cases := map[string]struct {
		reason string
		rules  []v1beta1.PolicyRule
		deflt  *v1beta1.RuleParameters
		want   want
	}{
		"Allow": {"allow.", []v1beta1.PolicyRule{rule(1000, "allow", false, "true", nil)}, nil,
			want{Summary: "allow at priority 1000"}},
		"Deny404": {"deny(404) has status 404.", []v1beta1.PolicyRule{rule(1000, "deny(404)", false, "true", nil)}, nil,
			want{Summary: "deny(404) at priority 1000", Status: 404}},
		"Deny502": {"deny(502).", []v1beta1.PolicyRule{rule(1000, "deny(502)", false, "true", nil)}, nil,
			want{Summary: "deny(502) at priority 1000", Status: 502}},
		"Redirect": {"redirect says where.", []v1beta1.PolicyRule{rule(1000, "redirect", false, "true", func(r *v1beta1.RuleParameters) { r.RedirectOptions = redirect })}, nil,
			want{Summary: "redirect at priority 1000 (EXTERNAL_302 to https://example.com/blocked)"}},
		"Throttle": {"throttle reports its configuration.", []v1beta1.PolicyRule{rule(1000, "throttle", false, "true", func(r *v1beta1.RuleParameters) { r.RateLimitOptions = rl })}, nil,
			want{Summary: "throttle at priority 1000 (conforming: allow; over 100 per 60s per IP: deny(429))"}},
		"RateBasedBan": {"rate_based_ban reports its ban.", []v1beta1.PolicyRule{rule(1000, "rate_based_ban", false, "true", func(r *v1beta1.RuleParameters) { r.RateLimitOptions = ban })}, nil,
			want{Summary: "rate_based_ban at priority 1000 (conforming: allow; over 10 per 60s per HTTP_HEADER x-api-key + HTTP_PATH: deny(403); over 50 per 300s: banned for 600s)"}},
		"FirstMatchWins": {"The lowest priority number that matches wins, whatever the order written.",
			[]v1beta1.PolicyRule{rule(2000, "deny(404)", false, "true", nil), rule(1000, "allow", false, "true", nil)}, nil,
			want{Summary: "allow at priority 1000"}},
		"SkipNoMatch": {"A rule that does not match passes the request on.",
			[]v1beta1.PolicyRule{rule(1000, "allow", false, "false", nil), rule(2000, "deny(404)", false, "true", nil)}, nil,
			want{Summary: "deny(404) at priority 2000", Status: 404}},
		"Default": {"Without a match the default rule applies.", []v1beta1.PolicyRule{rule(1000, "allow", false, "false", nil)}, &v1beta1.RuleParameters{Action: "deny(502)"},
			want{Summary: "deny(502) at priority 2147483647", Status: 502}},
		"DefaultAssumed": {"Without a default rule in the manifests GCP's allow is assumed.", nil, nil,
			want{Summary: "allow at priority 2147483647", Warnings: []string{"no manifest sets the default rule: assumed allow, the default rule GCP creates"}}},
		"Preview": {"A preview rule is reported, not enforced.",
			[]v1beta1.PolicyRule{rule(500, "deny(403)", true, "true", nil), rule(1000, "allow", false, "true", nil)}, nil,
			want{Summary: "allow at priority 1000; preview rule 500 (deny(403)) would have matched", Preview: 500}},
		"PreviewNotEvaluable": {"A preview rule that cannot be evaluated does not stop evaluation.",
			[]v1beta1.PolicyRule{rule(500, "deny(403)", true, "evaluatePreconfiguredWaf('cve-canary')", nil), rule(1000, "allow", false, "true", nil)}, nil,
			want{Summary: "allow at priority 1000", Warnings: []string{"preview rule 500: not evaluable offline: preconfigured WAF rules (evaluatePreconfiguredWaf); cve-canary has no OWASP CRS counterpart"}}},
		"HeaderAction": {"headerAction is part of the verdict (see HeadersToAdd).",
			[]v1beta1.PolicyRule{rule(1000, "allow", false, "true", func(r *v1beta1.RuleParameters) {
				r.HeaderAction = &v1beta1.HTTPHeaderAction{RequestHeadersToAdds: headers}
			})}, nil,
			want{Summary: "allow at priority 1000"}},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Merge("p", v1beta1.SecurityPolicyParameters{DefaultRule: tc.deflt, Rules: tc.rules}, nil)
			v, err := e.Evaluate(p, Request{IP: "192.0.2.1"})
			if err != nil {
				t.Fatal(err)
			}
			got := want{Summary: v.Summary(), Status: v.Status, Warnings: v.Warnings}
			if v.Preview != nil {
				got.Preview = v.Preview.Priority
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nEvaluate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	inline := func(priority int64, action string) v1beta1.PolicyRule {
		return v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: action}}
	}
	object := func(name string, priority int64, action string) RuleObject {
		return RuleObject{Name: name, Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: action}}
	}
	type rule struct {
		Priority int64
		Action   string
		Source   string
	}
	type want struct {
		Rules   []rule
		Ignored []string
	}
	cases := map[string]struct {
		reason  string
		params  v1beta1.SecurityPolicyParameters
		objects []RuleObject
		want    want
	}{
		"Sorted": {"Inline rules come out by priority, the default rule last.",
			v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"}, Rules: []v1beta1.PolicyRule{inline(20, "allow"), inline(10, "deny(404)")}}, nil,
			want{Rules: []rule{{10, "deny(404)", "inline"}, {20, "allow", "inline"}, {DefaultPriority, "deny(403)", "defaultRule"}}}},
		"ObjectWins": {"A SecurityPolicyRule wins over an inline rule at its priority.",
			v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{inline(10, "allow")}}, []RuleObject{object("default/r", 10, "deny(404)"), object("default/s", 5, "allow")},
			want{Rules: []rule{{5, "allow", "SecurityPolicyRule default/s"}, {10, "deny(404)", "SecurityPolicyRule default/r"}, {DefaultPriority, "allow", "assumed"}},
				Ignored: []string{"inline rule 10 is ignored: SecurityPolicyRule default/r claims priority 10"}}},
		"ObjectDefault": {"A SecurityPolicyRule at 2147483647 wins over defaultRule.",
			v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: "allow"}}, []RuleObject{object("default/d", DefaultPriority, "deny(403)")},
			want{Rules: []rule{{DefaultPriority, "deny(403)", "SecurityPolicyRule default/d"}},
				Ignored: []string{"defaultRule is ignored: SecurityPolicyRule default/d claims priority 2147483647"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Merge("p", tc.params, tc.objects)
			got := want{Ignored: p.Ignored}
			for _, r := range p.Rules {
				got.Rules = append(got.Rules, rule{r.Priority, r.Action, r.Source})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nMerge(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUserIP(t *testing.T) {
	p := exprPolicy("origin.user_ip == '198.51.100.4'")
	p.UserIPHeaders = []string{"X-Client-IP", "X-Forwarded-For"}
	cases := map[string]struct {
		reason string
		req    Request
		want   result
	}{
		"FromHeader": {"The first configured header holding an address.", Request{IP: "203.0.113.1", Headers: map[string]string{"x-forwarded-for": "198.51.100.4, 203.0.113.1"}}, allowed},
		"Given":      {"The request's userIp wins.", Request{IP: "203.0.113.1", UserIP: "198.51.100.4"}, allowed},
		"Fallback":   {"Without the headers origin.user_ip is origin.ip.", Request{IP: "203.0.113.1"}, denied},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := e.Evaluate(p, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(v)); diff != "" {
				t.Errorf("\n%s\nEvaluate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	e, _ := New()
	_, err := e.Evaluate(exprPolicy("true"), Request{IP: "not-an-ip"})
	if err == nil || !strings.Contains(err.Error(), "not-an-ip") {
		t.Errorf("Evaluate(bad ip): want an error naming the address, got %v", err)
	}
	if _, err := New(AddressGroup{Name: "g", Items: []string{"x"}}); err == nil {
		t.Errorf("New(bad item): want an error")
	}
}

func TestNetworkMatch(t *testing.T) {
	p := Merge("p", v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{
		Action: "allow", NetworkMatch: &v1beta1.RuleNetworkMatcher{SrcPorts: []string{"53"}}}}}}, nil)
	e, _ := New()
	v, _ := e.Evaluate(p, Request{IP: "192.0.2.1"})
	want := notEvaluable("networkMatch (Layer 3/4 conditions of CLOUD_ARMOR_NETWORK policies)")
	if diff := cmp.Diff(want, summarize(v)); diff != "" {
		t.Errorf("Evaluate(networkMatch): -want, +got:\n%s", diff)
	}
}
