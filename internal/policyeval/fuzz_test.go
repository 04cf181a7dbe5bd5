package policyeval

import (
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// FuzzEvaluate evaluates arbitrary expressions against arbitrary requests:
// it must never panic, and a verdict is always decided or says why not.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []struct{ expr, ip, path, header string }{
		{"inIpRange(origin.ip, '203.0.113.0/24')", "203.0.113.7", "/", "curl"},
		{"request.headers['user-agent'].lower().contains('bot')", "2001:db8::1", "/a", "Bot"},
		{"request.path.urlDecodeUni().matches('^/a[0-9]+')", "10.0.0.1", "/a%u0031", ""},
		{"evaluateAddressGroup('g', origin.ip) || evaluatePreconfiguredWaf('sqli-v33-stable')", "192.0.2.1", "/", "x"},
		{"request.headers['x'].base64Decode().utf8ToUnicode() == 'a'", "192.0.2.1", "/", "YQ=="},
		{"origin.region_code == 'FR' && origin.asn > 10", "::ffff:1.2.3.4", "/", ""},
		{"has(request.headers['x']) && size(request.query) < 3", "1.1.1.1", "", ""},
		{"evaluatePreconfiguredWaf('xss-v33-stable', {'sensitivity': 2, 'opt_out_rule_ids': ['owasp-crs-v030301-id941100-xss']})", "192.0.2.1", "/a/../b", "q=<script>alert(1)</script>"},
		{"evaluatePreconfiguredExpr('sqli-stable', ['owasp-crs-v030001-id942100-sqli']) || evaluatePreconfiguredWaf('rce-v33-canary')", "192.0.2.1", "/%00", "id=1' OR '1'='1;cat /etc/passwd"},
	} {
		f.Add(s.expr, s.ip, s.path, s.header)
	}
	e, err := New(AddressGroup{Name: "g", Items: []string{"192.0.2.0/24", "2001:db8::/32"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr, ip, path, header string) {
		p := exprPolicy(expr)
		v, err := e.Evaluate(p, Request{IP: ip, Path: path, Query: header, Headers: map[string]string{"user-agent": header, "x": header}})
		if err != nil {
			return
		}
		if v.NotEvaluable == "" && v.Action == "" {
			t.Fatalf("Evaluate(%q): neither an action nor a reason", expr)
		}
		// The same request twice through a stream whose rule is
		// rate-limited on keys the request's fields make.
		p.Rules[0].Action = v1beta1.ActionRateBasedBan
		p.Rules[0].RateLimitOptions = &v1beta1.RateLimitOptions{
			EnforceOnKeyConfigs: []v1beta1.EnforceOnKeyConfig{{EnforceOnKeyType: "XFF_IP"}, {EnforceOnKeyType: "HTTP_HEADER", EnforceOnKeyName: &header}, {EnforceOnKeyType: "HTTP_COOKIE", EnforceOnKeyName: &path}},
			RateLimitThreshold:  &v1beta1.RateLimitThreshold{Count: 1, IntervalSec: 1},
		}
		s := e.NewStream(p)
		req := Request{IP: ip, Path: path, Headers: map[string]string{"x-forwarded-for": header, header: path, "cookie": header}}
		for i := range 2 {
			if _, err := s.Evaluate(time.Duration(i)*time.Second, req); err != nil {
				return
			}
		}
	})
}
