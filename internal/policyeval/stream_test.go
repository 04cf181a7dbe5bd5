package policyeval

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestStream(t *testing.T) {
	rateRule := func(action string, o *v1beta1.RateLimitOptions) Policy {
		return Merge("p", v1beta1.SecurityPolicyParameters{
			DefaultRule: &v1beta1.RuleParameters{Action: "deny(403)"},
			Rules: []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{
				Action: action, Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "request.path.startsWith('/api')"}},
				RateLimitOptions: o}}},
		}, nil)
	}
	threshold := func(count, interval int64) *v1beta1.RateLimitThreshold {
		return &v1beta1.RateLimitThreshold{Count: count, IntervalSec: interval}
	}
	type step struct {
		at  time.Duration
		req Request
	}
	api := func(ip string) Request { return Request{IP: ip, Path: "/api/x"} }
	sec := time.Second
	cases := map[string]struct {
		reason string
		policy Policy
		steps  []step
		want   []string
	}{
		"ThrottlePerIP": {
			reason: "A throttle admits count requests per interval per IP, then applies exceedAction; another IP has its own budget; the window slides.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ConformAction: ptr("allow"), ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("IP"), RateLimitThreshold: threshold(2, 10)}),
			steps:  []step{{0, api("192.0.2.1")}, {1 * sec, api("192.0.2.1")}, {2 * sec, api("192.0.2.1")}, {3 * sec, api("192.0.2.2")}, {10 * sec, api("192.0.2.1")}, {11 * sec, api("192.0.2.1")}},
			want:   []string{"allow", "allow", "deny(429)", "allow", "allow", "allow"},
		},
		"ThrottleAll": {
			reason: "Without enforceOnKey every client shares one budget (ALL).",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), RateLimitThreshold: threshold(1, 60)}),
			steps:  []step{{0, api("192.0.2.1")}, {1 * sec, api("198.51.100.1")}},
			want:   []string{"allow", "deny(429)"},
		},
		"HeaderKey": {
			reason: "HTTP_HEADER keys count per header value.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("HTTP_HEADER"), EnforceOnKeyName: ptr("X-Api-Key"), RateLimitThreshold: threshold(1, 60)}),
			steps: []step{{0, Request{IP: "192.0.2.1", Path: "/api", Headers: map[string]string{"x-api-key": "a"}}},
				{0, Request{IP: "192.0.2.1", Path: "/api", Headers: map[string]string{"x-api-key": "b"}}},
				{0, Request{IP: "192.0.2.9", Path: "/api", Headers: map[string]string{"x-api-key": "a"}}}},
			want: []string{"allow", "allow", "deny(429)"},
		},
		"XFFKey": {
			reason: "XFF_IP keys on the first X-Forwarded-For address.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKeyConfigs: []v1beta1.EnforceOnKeyConfig{{EnforceOnKeyType: "XFF_IP"}}, RateLimitThreshold: threshold(1, 60)}),
			steps: []step{{0, Request{IP: "192.0.2.1", Path: "/api", Headers: map[string]string{"x-forwarded-for": "198.51.100.1, 192.0.2.1"}}},
				{0, Request{IP: "192.0.2.1", Path: "/api", Headers: map[string]string{"x-forwarded-for": "198.51.100.2"}}},
				{0, Request{IP: "192.0.2.7", Path: "/api", Headers: map[string]string{"x-forwarded-for": "198.51.100.1"}}}},
			want: []string{"allow", "allow", "deny(429)"},
		},
		"PathKey": {
			reason: "HTTP_PATH keys on the path.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("HTTP_PATH"), RateLimitThreshold: threshold(1, 60)}),
			steps:  []step{{0, Request{IP: "192.0.2.1", Path: "/api/a"}}, {0, Request{IP: "192.0.2.1", Path: "/api/b"}}, {0, Request{IP: "192.0.2.2", Path: "/api/a"}}},
			want:   []string{"allow", "allow", "deny(429)"},
		},
		"BanWithoutBanThreshold": {
			reason: "Without banThreshold a key over the rate is banned for banDurationSec, then starts afresh.",
			policy: rateRule("rate_based_ban", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(403)"), EnforceOnKey: ptr("IP"), RateLimitThreshold: threshold(1, 1), BanDurationSec: ptr[int64](30)}),
			steps:  []step{{0, api("192.0.2.1")}, {500 * time.Millisecond, api("192.0.2.1")}, {20 * sec, api("192.0.2.1")}, {31 * sec, api("192.0.2.1")}},
			want:   []string{"allow", "deny(403), banned", "deny(403), banned", "allow"},
		},
		"BanThreshold": {
			reason: "With banThreshold the rate's exceedAction applies first; over banThreshold the key is banned.",
			policy: rateRule("rate_based_ban", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("IP"),
				RateLimitThreshold: threshold(1, 10), BanThreshold: threshold(3, 60), BanDurationSec: ptr[int64](100)}),
			steps: []step{{0, api("192.0.2.1")}, {1 * sec, api("192.0.2.1")}, {2 * sec, api("192.0.2.1")}, {3 * sec, api("192.0.2.1")}, {50 * sec, api("192.0.2.1")}, {104 * sec, api("192.0.2.1")}},
			want:  []string{"allow", "deny(429)", "deny(429)", "deny(429), banned", "deny(429), banned", "allow"},
		},
		"NotRateLimited": {
			reason: "Requests other rules decide are not counted.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), RateLimitThreshold: threshold(1, 60)}),
			steps:  []step{{0, Request{IP: "192.0.2.1", Path: "/"}}, {0, api("192.0.2.1")}},
			want:   []string{"deny(403)", "allow"},
		},
		"RegionKeyUnknown": {
			reason: "A REGION_CODE key without a region code is not evaluable.",
			policy: rateRule("throttle", &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("REGION_CODE"), RateLimitThreshold: threshold(1, 60)}),
			steps:  []step{{0, api("192.0.2.1")}},
			want:   []string{"not evaluable offline: rate-limit key REGION_CODE (give regionCode in the request)"},
		},
	}
	e, _ := New()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := e.NewStream(tc.policy)
			var got []string
			for _, st := range tc.steps {
				v, err := s.Evaluate(st.at, st.req)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case v.NotEvaluable != "":
					got = append(got, v.NotEvaluable)
				case v.Effective == "":
					got = append(got, v.Action)
				case v.Banned:
					got = append(got, fmt.Sprintf("%s, banned", v.Effective))
				default:
					got = append(got, v.Effective)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nStream.Evaluate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if _, err := e.NewStream(rateRule("allow", nil)).Evaluate(-1, api("192.0.2.1")); err == nil {
		t.Errorf("Stream.Evaluate(time before the last): want an error")
	}
}

// TestStreamForgetsIdleKeys: a client that changes its key on every request
// (an address, a header value) must not grow a stream's state for ever; the
// state of a key that no longer counts is dropped, and one that still counts
// is kept.
func TestStreamForgetsIdleKeys(t *testing.T) {
	p := Merge("p", v1beta1.SecurityPolicyParameters{
		DefaultRule: &v1beta1.RuleParameters{Action: "allow"},
		Rules: []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{
			Action: "rate_based_ban", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "true"}},
			RateLimitOptions: &v1beta1.RateLimitOptions{ExceedAction: ptr("deny(429)"), EnforceOnKey: ptr("IP"),
				RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 1, IntervalSec: 10}, BanDurationSec: ptr(int64(600))}}}},
	}, nil)
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewStream(p)
	ip := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
	// The banned client: over its rate at once, banned for 600 s.
	for range 2 {
		if _, err := s.Evaluate(0, Request{IP: "192.0.2.1"}); err != nil {
			t.Fatal(err)
		}
	}
	// 20,000 clients, each with a key of its own, once each over 2 s.
	for i := range 20000 {
		if _, err := s.Evaluate(time.Duration(i)*100*time.Microsecond, Request{IP: ip(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// 120 s on every one of them stopped counting; the ban still holds.
	for i := range 2048 {
		if _, err := s.Evaluate(120*time.Second+time.Duration(i)*time.Microsecond, Request{IP: ip(100000 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.rate) + len(s.ban) + len(s.bannedUntil); n > 4096 {
		t.Errorf("the stream holds %d keys' state after 20,000 idle keys and 2,048 live ones; want at most 4,096", n)
	}
	v, err := s.Evaluate(121*time.Second, Request{IP: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("deny(429)", v.Effective); diff != "" || !v.Banned {
		t.Errorf("the banned client 121 s into its 600 s ban: -want, +got effective action:\n%s (banned %t)", diff, v.Banned)
	}
}
