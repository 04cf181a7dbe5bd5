package gcp

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

const (
	policyPath   = "/global/securityPolicies/n"
	regionalPath = "/regions/r/securityPolicies/n"
	globalOpWait = "POST /global/operations/op-1/wait"
	policyJSON   = `{"name":"n","fingerprint":"f1","rules":[{"priority":0,"action":"allow"},{"priority":2147483647,"action":"deny(403)"}]}`
	notFoundMsg  = "The resource 'projects/p/global/securityPolicies/n' was not found"
	missingRule  = "Invalid value for field 'priority': '5'. The security policy does not contain a rule at priority 5."
	quotaMsg     = "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."
)

func TestPolicyClient(t *testing.T) {
	type args struct {
		region string
		call   func(ctx context.Context, c PolicyClient) error
	}
	type want struct {
		err    error
		kind   ErrorKind
		seen   []string
		bodies []string
	}
	get := func(ctx context.Context, c PolicyClient) error { _, err := c.Get(ctx, "n"); return err }
	twice := func(fn func(ctx context.Context, c PolicyClient) error) func(ctx context.Context, c PolicyClient) error {
		return func(ctx context.Context, c PolicyClient) error {
			if err := fn(ctx, c); err != nil && !IsNotFound(err) {
				return err
			}
			return fn(ctx, c)
		}
	}
	cases := map[string]struct {
		reason string
		routes routes
		args   args
		want   want
	}{
		"GetCached": {
			reason: "Two Gets of one policy cost one GCP read.",
			routes: routes{"GET " + policyPath: {ok(policyJSON)}},
			args:   args{call: twice(get)},
			want:   want{seen: []string{"GET " + policyPath}},
		},
		"GetNotFoundCached": {
			reason: "A 404 is NotFound and cached too.",
			routes: routes{"GET " + policyPath: {{status: http.StatusNotFound, body: errJSON(404, "notFound", notFoundMsg)}}},
			args:   args{call: twice(get)},
			want:   want{err: apiErr(404, "notFound", notFoundMsg), kind: KindNotFound, seen: []string{"GET " + policyPath}},
		},
		"GetFresh": {
			reason: "GetFresh bypasses the snapshot.",
			routes: routes{"GET " + policyPath: {ok(policyJSON)}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				_ = get(ctx, c)
				_, err := c.GetFresh(ctx, "n")
				return err
			}},
			want: want{seen: []string{"GET " + policyPath, "GET " + policyPath}},
		},
		"GetRateLimited": {
			reason: "A 429 is RateLimited.",
			routes: routes{"GET " + policyPath: {{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "7"},
				body: errJSON(429, "rateLimitExceeded", "Rate Limit Exceeded")}}},
			args: args{call: get},
			want: want{err: apiErr(429, "rateLimitExceeded", "Rate Limit Exceeded"), kind: KindRateLimited, seen: []string{"GET " + policyPath}},
		},
		"InsertWaits": {
			reason: "Insert waits for its operation, RUNNING then DONE, and invalidates a cached NotFound.",
			routes: routes{
				"GET " + policyPath:             {{status: http.StatusNotFound, body: errJSON(404, "notFound", notFoundMsg)}, ok(policyJSON)},
				"POST /global/securityPolicies": {ok(opJSON("op-1", "RUNNING"))},
				globalOpWait:                    {ok(opJSON("op-1", "RUNNING")), ok(opJSON("op-1", "DONE"))},
			},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				_ = get(ctx, c)
				if err := c.Insert(ctx, &compute.SecurityPolicy{Name: "n", Rules: []*compute.SecurityPolicyRule{{Priority: 0, Action: "allow"}}}); err != nil {
					return err
				}
				return get(ctx, c)
			}},
			want: want{
				seen:   []string{"GET " + policyPath, "POST /global/securityPolicies", globalOpWait, globalOpWait, "GET " + policyPath},
				bodies: []string{`{"name":"n","rules":[{"action":"allow","priority":0}]}`},
			},
		},
		"InsertQuota": {
			reason: "An operation that ends in QUOTA_EXCEEDED fails with GCP's message verbatim.",
			routes: routes{
				"POST /global/securityPolicies": {ok(opJSON("op-1", "RUNNING"))},
				globalOpWait:                    {ok(opErrorJSON("op-1", "QUOTA_EXCEEDED", quotaMsg))},
			},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.Insert(ctx, &compute.SecurityPolicy{Name: "n"})
			}},
			want: want{
				err:    &OperationError{Operation: "op-1", Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED", Message: quotaMsg}}},
				kind:   KindQuotaExceeded,
				seen:   []string{"POST /global/securityPolicies", globalOpWait},
				bodies: []string{`{"name":"n"}`},
			},
		},
		"InsertExists": {
			reason: "A 409 on insert is AlreadyExists.",
			routes: routes{"POST /global/securityPolicies": {{status: http.StatusConflict,
				body: errJSON(409, "alreadyExists", "The resource 'projects/p/global/securityPolicies/n' already exists")}}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.Insert(ctx, &compute.SecurityPolicy{Name: "n"})
			}},
			want: want{
				err:    apiErr(409, "alreadyExists", "The resource 'projects/p/global/securityPolicies/n' already exists"),
				kind:   KindAlreadyExists,
				seen:   []string{"POST /global/securityPolicies"},
				bodies: []string{`{"name":"n"}`},
			},
		},
		"PatchMask": {
			reason: "Patch sends its update mask comma-separated.",
			routes: routes{"PATCH " + policyPath: {ok(opJSON("op-1", "DONE"))}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.Patch(ctx, "n", &compute.SecurityPolicy{Fingerprint: "f1", Description: "d"}, "adaptiveProtectionConfig", "description")
			}},
			want: want{
				seen:   []string{"PATCH " + policyPath + "?updateMask=adaptiveProtectionConfig%2Cdescription"},
				bodies: []string{`{"description":"d","fingerprint":"f1"}`},
			},
		},
		"Delete": {
			reason: "Delete waits for its operation.",
			routes: routes{"DELETE " + policyPath: {ok(opJSON("op-1", "RUNNING"))}, globalOpWait: {ok(opJSON("op-1", "DONE"))}},
			args:   args{call: func(ctx context.Context, c PolicyClient) error { return c.Delete(ctx, "n") }},
			want:   want{seen: []string{"DELETE " + policyPath, globalOpWait}},
		},
		"AddRulePriorityZero": {
			reason: "A rule at priority 0 is sent with its priority.",
			routes: routes{"POST " + policyPath + "/addRule": {ok(opJSON("op-1", "DONE"))}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 0, Action: "allow"})
			}},
			want: want{
				seen:   []string{"POST " + policyPath + "/addRule"},
				bodies: []string{`{"action":"allow","priority":0}`},
			},
		},
		"PatchRuleMissing": {
			reason: "GCP's 400 for a missing rule priority is NotFound.",
			routes: routes{"POST " + policyPath + "/patchRule": {{status: http.StatusBadRequest, body: errJSON(400, "invalid", missingRule)}}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.PatchRule(ctx, "n", 5, &compute.SecurityPolicyRule{Action: "deny(403)"})
			}},
			want: want{
				err:    apiErr(400, "invalid", missingRule),
				kind:   KindNotFound,
				seen:   []string{"POST " + policyPath + "/patchRule?priority=5"},
				bodies: []string{`{"action":"deny(403)","priority":5}`},
			},
		},
		"PatchRuleZeroMask": {
			reason: "PatchRule always sends the priority, even 0, and its mask.",
			routes: routes{"POST " + policyPath + "/patchRule": {ok(opJSON("op-1", "DONE"))}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.PatchRule(ctx, "n", 0, &compute.SecurityPolicyRule{Action: "allow"}, "rate_limit_options.enforce_on_key")
			}},
			want: want{
				seen:   []string{"POST " + policyPath + "/patchRule?priority=0&updateMask=rate_limit_options.enforce_on_key"},
				bodies: []string{`{"action":"allow","priority":0}`},
			},
		},
		"RemoveRuleZero": {
			reason: "RemoveRule always sends the priority, even 0.",
			routes: routes{"POST " + policyPath + "/removeRule": {ok(opJSON("op-1", "DONE"))}},
			args:   args{call: func(ctx context.Context, c PolicyClient) error { return c.RemoveRule(ctx, "n", 0) }},
			want:   want{seen: []string{"POST " + policyPath + "/removeRule?priority=0"}},
		},
		"SetLabelsEmpty": {
			reason: "Clearing labels sends an empty map, with the fingerprint.",
			routes: routes{"POST " + policyPath + "/setLabels": {ok(opJSON("op-1", "DONE"))}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.SetLabels(ctx, "n", nil, "lf1")
			}},
			want: want{
				seen:   []string{"POST " + policyPath + "/setLabels"},
				bodies: []string{`{"labelFingerprint":"lf1","labels":{}}`},
			},
		},
		"SetLabelsStale": {
			reason: "A stale label fingerprint is PreconditionFailed.",
			routes: routes{"POST " + policyPath + "/setLabels": {{status: http.StatusPreconditionFailed,
				body: errJSON(412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed")}}},
			args: args{call: func(ctx context.Context, c PolicyClient) error {
				return c.SetLabels(ctx, "n", map[string]string{"a": "b"}, "old")
			}},
			want: want{
				err:    apiErr(412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed"),
				kind:   KindPreconditionFailed,
				seen:   []string{"POST " + policyPath + "/setLabels"},
				bodies: []string{`{"labelFingerprint":"old","labels":{"a":"b"}}`},
			},
		},
		"Regional": {
			reason: "A regional client uses the regional service and regional operations.",
			routes: routes{
				"POST " + regionalPath + "/addRule":    {ok(opJSON("op-1", "RUNNING"))},
				"POST /regions/r/operations/op-1/wait": {ok(opJSON("op-1", "DONE"))},
				"GET " + regionalPath:                  {ok(policyJSON)},
			},
			args: args{region: "r", call: func(ctx context.Context, c PolicyClient) error {
				if err := c.AddRule(ctx, "n", &compute.SecurityPolicyRule{Priority: 10, Action: "allow"}); err != nil {
					return err
				}
				return get(ctx, c)
			}},
			want: want{
				seen:   []string{"POST " + regionalPath + "/addRule", "POST /regions/r/operations/op-1/wait", "GET " + regionalPath},
				bodies: []string{`{"action":"allow","priority":10}`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, svc := newFakeGCP(t, tc.routes)
			c := NewClient(svc, NewSnapshotCache(), NewWriteQueue(), fastWait)
			err := tc.args.call(context.Background(), c.Policies("p", tc.args.region))
			seen, bodies := f.log()
			got := want{err: err, kind: Kind(err), seen: seen, bodies: bodies}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPolicyClientDoesNotModifyArguments(t *testing.T) {
	_, svc := newFakeGCP(t, routes{
		"POST " + policyPath + "/addRule": {ok(opJSON("op-1", "DONE"))},
		"POST /global/securityPolicies":   {ok(opJSON("op-1", "DONE"))},
	})
	c := NewClient(svc, nil, nil).Policies("p", "")
	r := &compute.SecurityPolicyRule{Action: "allow"}
	p := &compute.SecurityPolicy{Name: "n", Rules: []*compute.SecurityPolicyRule{{Action: "allow"}}}
	if err := c.AddRule(context.Background(), "n", r); err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if r.ForceSendFields != nil || p.Rules[0].ForceSendFields != nil {
		t.Errorf("the caller's rules must not be modified: %v, %v", r.ForceSendFields, p.Rules[0].ForceSendFields)
	}
}

// TestPolicyClientSerialisesWrites checks that writes to one policy from
// two Clients (two credential sets) sharing a queue never overlap at GCP.
func TestPolicyClientSerialisesWrites(t *testing.T) {
	var mu sync.Mutex
	inside, most := 0, 0
	handler := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inside++
		most = max(most, inside)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inside--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(opJSON("op-1", "DONE")))
	}
	svc := newHandlerService(t, http.HandlerFunc(handler))
	snapshots, queue, calls := NewSnapshotCache(), NewWriteQueue(), NewCallCounter()
	a, b := NewClient(svc, snapshots, queue, WithCallCounter(calls)), NewClient(svc, snapshots, queue, WithCallCounter(calls))
	var wg sync.WaitGroup
	for i := range 10 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			if err := c.Policies("p", "").AddRule(context.Background(), "n", &compute.SecurityPolicyRule{Priority: int64(i)}); err != nil {
				t.Errorf("AddRule: %v", err)
			}
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("writes to one policy overlapped: up to %d at once", most)
	}
	if got := calls.Count(MethodAddRule); got != 10 {
		t.Errorf("want the shared counter to count 10 AddRule calls, got %d", got)
	}
}
