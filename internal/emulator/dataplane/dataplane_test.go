package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	networksecurity "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const project = "demo-project"

func ptr[T any](v T) *T { return &v }

// ranges is a basic SRC_IPS_V1 match.
func ranges(cidrs ...string) *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1",
		Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: cidrs}}
}

func expr(e string) *compute.SecurityPolicyRuleMatcher {
	return &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: e}}
}

// webPolicy has a rule for each answer the data plane gives.
var webPolicy = &compute.SecurityPolicy{Name: "web-policy", Rules: []*compute.SecurityPolicyRule{
	{Priority: 100, Action: "deny(404)", Match: expr("request.path.startsWith('/hidden')")},
	{Priority: 200, Action: "redirect", Match: expr("request.path == '/old'"),
		RedirectOptions: &compute.SecurityPolicyRuleRedirectOptions{Type: "EXTERNAL_302", Target: "https://example.com/new"}},
	{Priority: 250, Action: "deny(403)", Match: expr("request.path == '/geo' && origin.region_code == 'FR'")},
	{Priority: 300, Action: "throttle", Match: ranges("192.0.2.0/24"), RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{
		ConformAction: "allow", ExceedAction: "deny(429)", EnforceOnKey: "IP",
		RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 3, IntervalSec: 60}}},
	{Priority: 350, Action: "allow", Match: expr("evaluateAddressGroup('partners', origin.ip)")},
	{Priority: 400, Action: "allow", Match: ranges("198.51.100.0/24"), HeaderAction: &compute.SecurityPolicyRuleHttpHeaderAction{
		RequestHeadersToAdds: []*compute.SecurityPolicyRuleHttpHeaderActionHttpHeaderOption{{HeaderName: "X-Office", HeaderValue: "yes"}}}},
	{Priority: 450, Action: "deny(502)", Preview: true, Match: ranges("203.0.113.0/24")},
	{Priority: 500, Action: "allow", Match: ranges("203.0.113.0/24")},
	{Priority: 2147483647, Action: "deny(403)", Match: ranges("*")},
}}

// seeded starts an emulator holding webPolicy, the address group it
// names, the backend service "web" that uses it and "plain" that uses
// none, made with the official clients.
func seeded(t *testing.T) *emulator.Running {
	t.Helper()
	em := emulator.Start(t, emulator.Options{DefaultTier: emulator.TierEnterprisePaygo})
	ctx := context.Background()
	ns, err := em.NewNetworkSecurityService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const group = "projects/" + project + "/locations/global/addressGroups/partners"
	if _, err := ns.Projects.Locations.AddressGroups.Create("projects/"+project+"/locations/global", &networksecurity.AddressGroup{
		Type: "IPV4", Capacity: 10, Items: []string{"100.64.0.0/16"}}).AddressGroupId("partners").Do(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := ns.Projects.Locations.AddressGroups.Get(group).Do(); err == nil || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	svc, err := em.NewService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait := func(op *compute.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if op, err = svc.GlobalOperations.Wait(project, op.Name).Do(); err != nil || op.Error != nil {
			t.Fatalf("operation %s: %v %+v", op.Name, err, op.Error)
		}
	}
	wait(svc.SecurityPolicies.Insert(project, webPolicy).Do())
	wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: "web", LoadBalancingScheme: "EXTERNAL_MANAGED",
		SecurityPolicy: "global/securityPolicies/web-policy"}).Do())
	wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: "plain", LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do())
	return em
}

// got is what a test checks of an answer.
type got struct {
	Status       int
	Location     string
	Priority     *int64
	Preview      *previewMatch
	HeadersAdded map[string]string
	NotEvaluable bool
}

// send sends one request through the data plane at url.
func send(t *testing.T, url, host, path, clientIP string, body string) (got, report) {
	t.Helper()
	g, rep, err := sendRequest(url, host, path, clientIP, body)
	if err != nil {
		t.Fatal(err)
	}
	return g, rep
}

// sendRequest is send for goroutines, which may not call t.Fatal.
func sendRequest(url, host, path, clientIP string, body string) (got, report, error) {
	req, err := http.NewRequest(http.MethodGet, url+path, strings.NewReader(body))
	if err != nil {
		return got{}, report{}, err
	}
	req.Host = host
	if clientIP != "" {
		req.Header.Set(ClientIPHeader, clientIP)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return got{}, report{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	var rep report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return got{}, report{}, fmt.Errorf("%s: body is not a report: %w", path, err)
	}
	if resp.Header.Get(VerdictHeader) != rep.Verdict {
		return got{}, report{}, fmt.Errorf("%s header %q, body verdict %q", VerdictHeader, resp.Header.Get(VerdictHeader), rep.Verdict)
	}
	return got{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Priority: rep.Priority,
		Preview: rep.PreviewMatch, HeadersAdded: rep.RequestHeadersAdded, NotEvaluable: rep.NotEvaluable != ""}, rep, nil
}

func TestServeHTTP(t *testing.T) {
	em := seeded(t)
	const web = "web.demo-project.backend.local"
	type args struct {
		trust                bool
		host, path, ip, body string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   got
	}{
		"Allowed": {
			reason: "An office address is allowed at 500 and passed to the echo backend; the preview rule 450 would have matched.",
			args:   args{trust: true, host: web, ip: "203.0.113.5"},
			want:   got{Status: 200, Priority: ptr[int64](500), Preview: &previewMatch{Priority: 450, Action: "deny(502)"}},
		},
		"Denied403": {
			reason: "Anyone else meets the default rule's deny(403).",
			args:   args{trust: true, host: web, ip: "10.0.0.1"},
			want:   got{Status: 403, Priority: ptr[int64](2147483647)},
		},
		"Denied404": {
			reason: "deny(404) answers 404.",
			args:   args{trust: true, host: web, path: "/hidden/x", ip: "203.0.113.5"},
			want:   got{Status: 404, Priority: ptr[int64](100)},
		},
		"Redirect": {
			reason: "An EXTERNAL_302 redirect answers 302 to its target.",
			args:   args{trust: true, host: web, path: "/old", ip: "10.0.0.1"},
			want:   got{Status: 302, Location: "https://example.com/new", Priority: ptr[int64](200)},
		},
		"AddressGroup": {
			reason: "evaluateAddressGroup reads the group the emulator holds.",
			args:   args{trust: true, host: web, ip: "100.64.3.4"},
			want:   got{Status: 200, Priority: ptr[int64](350)},
		},
		"HeaderAction": {
			reason: "The headerAction's headers reach the echo backend.",
			args:   args{trust: true, host: web, ip: "198.51.100.7"},
			want:   got{Status: 200, Priority: ptr[int64](400), HeadersAdded: map[string]string{"X-Office": "yes"}},
		},
		"NotEvaluable": {
			reason: "A rule that needs origin.region_code cannot be decided offline: 501.",
			args:   args{trust: true, host: web, path: "/geo", ip: "10.0.0.1"},
			want:   got{Status: 501, Priority: ptr[int64](250), NotEvaluable: true},
		},
		"RegionalHostUnknown": {
			reason: "Three labels name a regional backend service, here one that does not exist.",
			args:   args{host: "web.us-central1.demo-project.backend.local"},
			want:   got{Status: 404},
		},
		"UnknownBackend": {
			reason: "A backend service the emulator does not hold is a 404.",
			args:   args{host: "nope.demo-project.backend.local"},
			want:   got{Status: 404},
		},
		"NoPolicy": {
			reason: "A backend service without a policy passes everything.",
			args:   args{host: "plain.demo-project.backend.local:8788"},
			want:   got{Status: 200},
		},
		"ClientIPHeaderIgnored": {
			reason: "Without the trust option the header is ignored: the client is 127.0.0.1, denied.",
			args:   args{host: web, ip: "203.0.113.5"},
			want:   got{Status: 403, Priority: ptr[int64](2147483647)},
		},
		"BadClientIPHeader": {
			reason: "A trusted header that holds no address is a bad request.",
			args:   args{trust: true, host: web, ip: "office"},
			want:   got{Status: 400},
		},
		"BadHost": {
			reason: "A Host outside .backend.local names no backend service.",
			args:   args{host: "example.com"},
			want:   got{Status: 400},
		},
		"BodyTooLarge": {
			reason: "A body over the bound is refused before evaluation.",
			args:   args{trust: true, host: web, ip: "203.0.113.5", body: strings.Repeat("x", 2048)},
			want:   got{Status: 413},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(New(em.Server, Options{TrustClientIPHeader: tc.args.trust, MaxBodyBytes: 1024}))
			defer srv.Close()
			g, _ := send(t, srv.URL, tc.args.host, "/"+strings.TrimPrefix(tc.args.path, "/"), tc.args.ip, tc.args.body)
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("\n%s\nServeHTTP(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestThrottle(t *testing.T) {
	em := seeded(t)
	clock := &fakeClock{now: time.Unix(0, 0)}
	srv := httptest.NewServer(New(em.Server, Options{TrustClientIPHeader: true, Now: clock.Now}))
	defer srv.Close()
	const web = "web.demo-project.backend.local"
	var statuses []int
	for range 4 {
		g, _ := send(t, srv.URL, web, "/", "192.0.2.9", "")
		statuses = append(statuses, g.Status)
		clock.Add(time.Second)
	}
	// Another key has its own count; the first key conforms again once its
	// requests leave the 60s window.
	g, _ := send(t, srv.URL, web, "/", "192.0.2.10", "")
	statuses = append(statuses, g.Status)
	clock.Add(time.Minute)
	g, rep := send(t, srv.URL, web, "/", "192.0.2.9", "")
	statuses = append(statuses, g.Status)
	if diff := cmp.Diff([]int{200, 200, 200, 429, 200, 200}, statuses); diff != "" {
		t.Errorf("\nThree requests a minute per IP, the fourth 429.\nstatuses: -want, +got:\n%s", diff)
	}
	if rep.Effective != "allow" || rep.RateKey != "IP=192.0.2.9" {
		t.Errorf("last report: effective %q key %q", rep.Effective, rep.RateKey)
	}
}

func TestPolicyChange(t *testing.T) {
	em := seeded(t)
	srv := httptest.NewServer(New(em.Server, Options{TrustClientIPHeader: true}))
	defer srv.Close()
	const web = "web.demo-project.backend.local"
	if g, _ := send(t, srv.URL, web, "/", "10.0.0.1", ""); g.Status != 403 {
		t.Fatalf("before: status %d, want 403", g.Status)
	}
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.SecurityPolicies.AddRule(project, "web-policy", &compute.SecurityPolicyRule{Priority: 600, Action: "allow",
		Match: ranges("10.0.0.0/8")}).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GlobalOperations.Wait(project, op.Name).Do(); err != nil {
		t.Fatal(err)
	}
	// The next request meets the policy as it is now.
	if g, _ := send(t, srv.URL, web, "/", "10.0.0.1", ""); g.Status != 200 || *g.Priority != 600 {
		t.Errorf("after addRule: %+v, want 200 at 600", g)
	}
}

func TestThrottleConcurrent(t *testing.T) {
	em := seeded(t)
	clock := &fakeClock{now: time.Unix(0, 0)}
	srv := httptest.NewServer(New(em.Server, Options{TrustClientIPHeader: true, Now: clock.Now}))
	defer srv.Close()
	var mu sync.Mutex
	counts := map[int]int{}
	var errs []error
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, _, err := sendRequest(srv.URL, "web.demo-project.backend.local", "/", "192.0.2.9", "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			counts[g.Status]++
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if diff := cmp.Diff(map[int]int{200: 3, 429: 17}, counts); diff != "" {
		t.Errorf("\nConcurrent requests of one key share its count.\nstatuses: -want, +got:\n%s", diff)
	}
}
