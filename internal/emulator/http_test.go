package emulator

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	compute "google.golang.org/api/compute/v1"
)

func TestAuth(t *testing.T) {
	missing := `{"error":{"code":401,"message":"Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.","errors":[{"domain":"global","message":"Login Required.","reason":"required","location":"Authorization","locationType":"header"}],"status":"UNAUTHENTICATED"}}`
	cases := map[string]struct {
		reason string
		opts   Options
		header string
		want   int
	}{
		"RequireNoHeader":  {"By default a bearer token is required.", Options{}, "", 401},
		"RequireAnyToken":  {"By default any bearer token is accepted.", Options{}, "Bearer x", 404},
		"RequireBasic":     {"Only the Bearer scheme counts.", Options{}, "Basic eDp5", 401},
		"AnyNoHeader":      {"auth=any accepts no credentials.", Options{Auth: AuthAny}, "", 404},
		"TokenWrong":       {"auth=token refuses other tokens.", Options{Auth: AuthToken, Token: "s3cret"}, "Bearer x", 401},
		"TokenRight":       {"auth=token accepts the pinned token.", Options{Auth: AuthToken, Token: "s3cret"}, "Bearer s3cret", 404},
		"TokenMissingAuth": {"auth=token refuses no credentials.", Options{Auth: AuthToken, Token: "s3cret"}, "", 401},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, tc.opts)
			req, _ := http.NewRequest("GET", em.Endpoint()+"projects/p/global/securityPolicies/x", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body json.RawMessage
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close() //nolint:errcheck,gosec // test
			if res.StatusCode != tc.want {
				t.Errorf("\n%s\nstatus: want %d, got %d", tc.reason, tc.want, res.StatusCode)
			}
			if name == "RequireNoHeader" && string(body) != missing {
				t.Errorf("401 body:\nwant %s\ngot  %s", missing, body)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	cases := map[string]struct {
		reason string
		faults Faults
		method string // the call made: "get" or "insert"
		want   int    // HTTP status of the call
	}{
		"Global429": {"A global error rate of 1 fails every call.",
			Faults{Global: FaultRule{ErrorRate: 1, ErrorCodes: []int{429}}, RetryAfterSeconds: 7}, "get", 429},
		"Global503": {"503 is injectable.", Faults{Global: FaultRule{ErrorRate: 1, ErrorCodes: []int{503}}}, "get", 503},
		"Global500": {"500 is injectable.", Faults{Global: FaultRule{ErrorRate: 1, ErrorCodes: []int{500}}}, "insert", 500},
		"OtherMethod": {"A per-method rule leaves other methods alone.",
			Faults{Methods: map[string]FaultRule{"securityPolicies.insert": {ErrorRate: 1}}}, "get", 404},
		"ThisMethod": {"A per-method rule applies to its method.",
			Faults{Methods: map[string]FaultRule{"securityPolicies.get": {ErrorRate: 1, ErrorCodes: []int{503}}}}, "get", 503},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{Faults: tc.faults})
			url, body, method := em.Endpoint()+"projects/p/global/securityPolicies/x", "", "GET"
			if tc.method == "insert" {
				url, body, method = em.Endpoint()+"projects/p/global/securityPolicies", `{"name":"x"}`, "POST"
			}
			res, _ := rawCall(t, method, url, body, nil)
			if res.StatusCode != tc.want {
				t.Errorf("\n%s\nstatus: want %d, got %d", tc.reason, tc.want, res.StatusCode)
			}
			if tc.want == 429 && res.Header.Get("Retry-After") != "7" {
				t.Errorf("429 without Retry-After 7: %q", res.Header.Get("Retry-After"))
			}
		})
	}
}

// TestFaultsDeterministic: the same seed gives the same fault sequence.
func TestFaultsDeterministic(t *testing.T) {
	seq := func() string {
		em := Start(t, Options{Seed: 7, Faults: Faults{Global: FaultRule{ErrorRate: 0.5}}})
		var b strings.Builder
		for range 40 {
			res, _ := rawCall(t, "GET", em.Endpoint()+"projects/p/global/securityPolicies/x", "", nil)
			b.WriteString(res.Status[:3] + " ")
		}
		return b.String()
	}
	a, b := seq(), seq()
	if a != b || !strings.Contains(a, "404") || strings.Count(a, "404") == 40 {
		t.Errorf("want the same mixed sequence twice:\n%s\n%s", a, b)
	}
}

// TestFaultsAtRuntime: POST /_emulator/faults, an operation that finishes
// with an error, and added latency.
func TestFaultsAtRuntime(t *testing.T) {
	em := Start(t, Options{})
	api := globalAPI{newService(t, em)}
	res, body := rawCall(t, "POST", em.URL()+"/_emulator/faults",
		`{"global":{"opErrorRate":1,"latency":"60ms"}}`, nil)
	if res.StatusCode != 200 {
		t.Fatalf("set faults: %d %s", res.StatusCode, body)
	}
	start := time.Now()
	op, err := api.Insert(policyWith("p"))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 60*time.Millisecond {
		t.Error("no latency added")
	}
	op, _ = api.GetOp(op.Name)
	if op.Status != "DONE" || op.Error == nil || op.Error.Errors[0].Code != "INTERNAL_ERROR" || op.HttpErrorStatusCode != 500 {
		t.Errorf("want a failed operation, got %+v", op)
	}
	if _, err := api.Get("p"); asAPIErr(err).Code != 404 {
		t.Errorf("a failed insert must not create the policy: %v", err)
	}
	if res, _ := rawCall(t, "POST", em.URL()+"/_emulator/faults", `{"global":{"errorRate":2}}`, nil); res.StatusCode != 400 {
		t.Errorf("invalid faults: want 400, got %d", res.StatusCode)
	}
}

func TestStatsAndReset(t *testing.T) {
	em := Start(t, Options{})
	g, r := globalAPI{newService(t, em)}, regionalAPI{newService(t, em)}
	waiter(t, g)(g.Insert(policyWith("p")))
	waiter(t, r)(r.Insert(policyWith("p")))
	_, _ = g.Get("p")
	_, _ = r.PatchRule("p", 9, "", ipRule(9, "allow", "*"))
	st := em.Stats()
	wantMethods := map[string]int64{"securityPolicies.insert": 1, "globalOperations.wait": 1, "securityPolicies.get": 1,
		"regionSecurityPolicies.insert": 1, "regionOperations.wait": 1, "regionSecurityPolicies.patchRule": 1}
	if diff := cmp.Diff(wantMethods, st.Methods); diff != "" {
		t.Errorf("methods: -want, +got:\n%s", diff)
	}
	wantPolicy := map[string]int64{"securityPolicies.insert": 1, "globalOperations.wait": 1, "securityPolicies.get": 1}
	if diff := cmp.Diff(wantPolicy, st.Policies[g.Path("p")]); diff != "" {
		t.Errorf("per policy: -want, +got:\n%s", diff)
	}
	if st.Mutations != 2 || st.Total != 6 {
		t.Errorf("mutations %d, total %d", st.Mutations, st.Total)
	}
	res, body := rawCall(t, "GET", em.URL()+"/_emulator/stats", "", nil)
	var dbg struct {
		Total int64                     `json:"total"`
		State map[string]map[string]any `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &dbg); err != nil || res.StatusCode != 200 || dbg.Total != 6 || len(dbg.State) != 2 {
		t.Errorf("GET /_emulator/stats: %d %s", res.StatusCode, body)
	}
	if res, _ := rawCall(t, "POST", em.URL()+"/_emulator/reset", "", nil); res.StatusCode != 200 {
		t.Errorf("reset: %d", res.StatusCode)
	}
	if st := em.Stats(); st.Total != 0 || len(em.Snapshot()) != 0 {
		t.Errorf("after reset: %+v, %d policies", st, len(em.Snapshot()))
	}
}

func TestBadInput(t *testing.T) {
	cases := map[string]struct {
		reason string
		body   string
		want   apiErr
	}{
		"Malformed": {"Not JSON is a parseError.", `{"name":`,
			apiErr{400, "parseError", "Invalid JSON payload received. Unexpected end of input."}},
		"UnknownField": {"Unknown names are rejected like ESF does.", `{"name":"p","colour":"red"}`,
			apiErr{400, "invalid", `Invalid JSON payload received. Unknown name "colour" at 'security_policy': Cannot find field.`}},
		"CaseMatters": {"Field names are case-sensitive.", `{"Name":"p"}`,
			apiErr{400, "invalid", `Invalid JSON payload received. Unknown name "Name" at 'security_policy': Cannot find field.`}},
		"NestedUnknown": {"Unknown names inside rules are rejected.", `{"name":"p","rules":[{"prio":1}]}`,
			apiErr{400, "invalid", `Invalid JSON payload received. Unknown name "prio" at 'security_policy.rules[0]': Cannot find field.`}},
		"WrongType": {"Wrong types are rejected.", `{"name":"p","rules":[{"priority":"high"}]}`,
			apiErr{400, "invalid", `Invalid value at 'security_policy.rules.priority' (int64), string`}},
		"NotObject": {"The body must be an object.", `[1,2]`,
			apiErr{400, "invalid", "Invalid JSON payload received. Expected an object for 'security_policy'."}},
		"Trailing": {"Data after the object is refused.", `{"name":"p"} {}`,
			apiErr{400, "parseError", "Invalid JSON payload received. Unexpected data after the JSON object."}},
		"Huge": {"Bodies over the limit are refused.", `{"description":"` + strings.Repeat("a", 5<<20) + `"}`,
			apiErr{400, "invalid", "Request payload size exceeds the limit: 4194304 bytes."}},
	}
	em := Start(t, Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, body := rawCall(t, "POST", em.Endpoint()+"projects/p/global/securityPolicies", tc.body, nil)
			var env struct {
				Error struct {
					Code    int
					Message string
					Errors  []struct{ Reason string }
				}
			}
			if err := json.Unmarshal([]byte(body), &env); err != nil || len(env.Error.Errors) == 0 {
				t.Fatalf("not an error envelope (%d): %s", res.StatusCode, body)
			}
			got := apiErr{res.StatusCode, env.Error.Errors[0].Reason, env.Error.Message}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if res, _ := rawCall(t, "GET", em.URL()+"/_emulator/healthz", "", nil); res.StatusCode != 200 {
		t.Error("server did not survive bad input")
	}
}

// TestPersistence: a state file survives a restart.
func TestPersistence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	em := Start(t, Options{StateFile: file})
	api := globalAPI{newService(t, em)}
	r := ipRule(5, "allow", "1.2.3.4")
	r.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{}
	waiter(t, api)(api.Insert(policyWith("p", r)))
	before, _ := api.Get("p")
	_ = em.Close()

	em2 := Start(t, Options{StateFile: file})
	after, err := globalAPI{newService(t, em2)}.Get("p")
	if err != nil {
		t.Fatal(err)
	}
	// The response headers carry a Date, which moves on when the two calls
	// fall either side of a second; the state is what must survive.
	if diff := cmp.Diff(before, after, cmpopts.IgnoreFields(compute.SecurityPolicy{}, "ServerResponse")); diff != "" {
		t.Errorf("after restart: -before, +after:\n%s", diff)
	}
}

// TestWithoutPrefix: the API is also served at the root, for clients given
// an endpoint without /compute/v1.
func TestWithoutPrefix(t *testing.T) {
	em := Start(t, Options{})
	res, body := rawCall(t, "GET", em.URL()+"/projects/p/global/securityPolicies/x", "", nil)
	if res.StatusCode != 404 || !strings.Contains(body, "projects/p/global/securityPolicies/x' was not found") {
		t.Errorf("got %d %s", res.StatusCode, body)
	}
}

func TestListsAndExpressionSets(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	g, r := globalAPI{svc}, regionalAPI{svc}
	for _, n := range []string{"c", "a", "b"} {
		waiter(t, g)(g.Insert(policyWith(n)))
	}
	waiter(t, r)(r.Insert(policyWith("r")))
	page, err := svc.SecurityPolicies.List(project).MaxResults(2).Do()
	if err != nil || len(page.Items) != 2 || page.Items[0].Name != "a" || page.NextPageToken == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	page2, _ := svc.SecurityPolicies.List(project).MaxResults(2).PageToken(page.NextPageToken).Do()
	if len(page2.Items) != 1 || page2.Items[0].Name != "c" || page2.NextPageToken != "" {
		t.Errorf("second page: %+v", page2)
	}
	f, _ := svc.SecurityPolicies.List(project).Filter(`name = "b"`).Do()
	if len(f.Items) != 1 || f.Items[0].Name != "b" {
		t.Errorf("filter: %+v", f)
	}
	agg, err := svc.SecurityPolicies.AggregatedList(project).Do()
	if err != nil || len(agg.Items["global"].SecurityPolicies) != 3 || len(agg.Items["regions/"+region].SecurityPolicies) != 1 {
		t.Errorf("aggregatedList: %+v, %v", agg, err)
	}
	sets, err := svc.SecurityPolicies.ListPreconfiguredExpressionSets(project).Do()
	if err != nil || len(sets.PreconfiguredExpressionSets.WafRules.ExpressionSets) == 0 {
		t.Errorf("listPreconfiguredExpressionSets: %+v, %v", sets, err)
	}
	ops, err := svc.GlobalOperations.List(project).Do()
	if err != nil || len(ops.Items) != 3 {
		t.Errorf("globalOperations.list: %v", err)
	}
	rops, err := svc.RegionOperations.List(project, region).Do()
	if err != nil || len(rops.Items) != 1 {
		t.Errorf("regionOperations.list: %v", err)
	}
	aops, err := svc.GlobalOperations.AggregatedList(project).Do()
	if err != nil || len(aops.Items["global"].Operations) != 3 {
		t.Errorf("globalOperations.aggregatedList: %v", err)
	}
	if err := svc.GlobalOperations.Delete(project, ops.Items[0].Name).Do(); err != nil {
		t.Errorf("globalOperations.delete: %v", err)
	}
}

// TestLogf: Logf gets a line for each accepted write and one for each write
// the API refused, with GCP's reason; reads get none.
func TestLogf(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	em := Start(t, Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	api := globalAPI{newService(t, em)}
	wait := waiter(t, api)
	wait(api.Insert(policyWith("p")))
	wait(api.AddRule("p", ipRule(5, "allow", "1.2.3.4")))
	if _, err := api.AddRule("p", ipRule(5, "allow", "1.2.3.4")); err == nil {
		t.Fatal("a second rule at priority 5 was accepted")
	}
	if _, err := api.Get("p"); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	opName := regexp.MustCompile(`operation=\S+`)
	var got []string
	for _, l := range lines {
		got = append(got, opName.ReplaceAllString(l, "operation=OP"))
	}
	want := []string{
		"securityPolicies.insert projects/" + project + "/global/securityPolicies/p operation=OP",
		"securityPolicies.addRule projects/" + project + "/global/securityPolicies/p operation=OP",
		"securityPolicies.addRule /compute/v1/projects/" + project + "/global/securityPolicies/p/addRule refused=400 reason=invalid " +
			`message="Invalid value for field 'resource.priority': '5'. Cannot have rules with the same priorities."`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Logf lines: -want, +got:\n%s", diff)
	}
}

// TestLogfCutOffRequest: a write whose client dies after sending the headers
// (the GCP client sends headers and body in two writes) changes nothing and
// is logged as a body that could not be read.
func TestLogfCutOffRequest(t *testing.T) {
	lines := make(chan string, 10)
	em := Start(t, Options{Auth: AuthAny, Logf: func(format string, args ...any) { lines <- fmt.Sprintf(format, args...) }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(em.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	path := "/compute/v1/projects/" + project + "/global/securityPolicies"
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n", path)
	_ = conn.Close()

	want := "securityPolicies.insert " + path + ` refused=400 reason=parseError message="Invalid JSON payload received. Cannot read request body."`
	select {
	case got := <-lines:
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Logf line: -want, +got:\n%s", diff)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Logf line for the cut-off request")
	}
	if st := em.Stats(); st.Mutations != 0 {
		t.Errorf("a cut-off request made %d mutations, want 0", st.Mutations)
	}
}
