package dataplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
)

func TestDecide(t *testing.T) {
	throttle := &v1beta1.RateLimitOptions{ExceedRedirectOptions: &v1beta1.RedirectOptions{Type: "EXTERNAL_302", Target: ptr("https://x/slow")}}
	cases := map[string]struct {
		reason string
		v      policyeval.Verdict
		want   answer
	}{
		"Allow":        {reason: "allow passes to the backend.", v: policyeval.Verdict{Action: "allow"}, want: answer{status: 200, forward: true}},
		"Deny502":      {reason: "deny(502) answers 502.", v: policyeval.Verdict{Action: "deny(502)"}, want: answer{status: 502}},
		"Redirect":     {reason: "EXTERNAL_302 answers 302 to the target.", v: policyeval.Verdict{Action: "redirect", Redirect: &v1beta1.RedirectOptions{Type: "EXTERNAL_302", Target: ptr("https://x")}}, want: answer{status: 302, location: "https://x"}},
		"Recaptcha":    {reason: "A reCAPTCHA challenge cannot be answered offline.", v: policyeval.Verdict{Action: "redirect", Redirect: &v1beta1.RedirectOptions{Type: "GOOGLE_RECAPTCHA"}}, want: answer{status: 501, reason: "not evaluable offline: a GOOGLE_RECAPTCHA redirect challenges the client with reCAPTCHA"}},
		"Conform":      {reason: "A throttle under its rate answers as its conformAction.", v: policyeval.Verdict{Action: "throttle", RateLimit: throttle, Effective: "allow"}, want: answer{status: 200, forward: true}},
		"Exceed429":    {reason: "A throttle over its rate answers as its exceedAction.", v: policyeval.Verdict{Action: "rate_based_ban", RateLimit: throttle, Effective: "deny(429)"}, want: answer{status: 429}},
		"ExceedRedir":  {reason: "An exceed redirect uses exceedRedirectOptions.", v: policyeval.Verdict{Action: "throttle", RateLimit: throttle, Effective: "redirect"}, want: answer{status: 302, location: "https://x/slow"}},
		"NotEvaluable": {reason: "An undecided verdict is 501 with its reason.", v: policyeval.Verdict{NotEvaluable: "not evaluable offline: origin.asn"}, want: answer{status: 501, reason: "not evaluable offline: origin.asn"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decide(tc.v), cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("\n%s\ndecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBackendPath(t *testing.T) {
	cases := map[string]struct {
		host string
		want string
	}{
		"Global":      {host: "web-frontend.demo-project.backend.local", want: "projects/demo-project/global/backendServices/web-frontend"},
		"WithPort":    {host: "Web.P.backend.local:8788", want: "projects/p/global/backendServices/web"},
		"Regional":    {host: "api.us-central1.p.backend.local", want: "projects/p/regions/us-central1/backendServices/api"},
		"OtherDomain": {host: "web.p.example.com"},
		"TooShort":    {host: "p.backend.local"},
		"EmptyLabel":  {host: "web..p.backend.local"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := BackendPath(tc.host)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("BackendPath(%q): -want, +got:\n%s", tc.host, diff)
			}
		})
	}
}

func TestAddressGroups(t *testing.T) {
	groups := []*networksecurity.AddressGroup{
		{Parent: "projects/p", Location: "global", Name: "offices", Items: []string{"203.0.113.0/24"}},
		{Parent: "projects/other", Location: "global", Name: "theirs", Items: []string{"10.0.0.0/8"}},
		{Parent: "projects/p", Location: "europe-west1", Name: "eu", Items: []string{"10.1.0.0/16"}},
		{Parent: "organizations/9", Location: "global", Name: "corp", Items: []string{"192.0.2.0/24"}},
	}
	want := []policyeval.AddressGroup{
		{Name: "offices", Items: []string{"203.0.113.0/24"}},
		{Name: "projects/p/locations/global/addressGroups/offices", Items: []string{"203.0.113.0/24"}},
		{Name: "corp", Organization: true, Items: []string{"192.0.2.0/24"}},
		{Name: "organizations/9/locations/global/addressGroups/corp", Organization: true, Items: []string{"192.0.2.0/24"}},
	}
	got := addressGroups("projects/p/global/backendServices/web", groups)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("\nA global backend's policy sees its project's and the organizations' global groups.\naddressGroups(...): -want, +got:\n%s", diff)
	}
}
