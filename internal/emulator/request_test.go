package emulator

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

func TestPolicyByID(t *testing.T) {
	scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
		wait := waiter(t, api)
		wait(api.Insert(policyWith("p", ipRule(1000, "allow", "10.0.0.0/8"))))
		wait(api.Insert(policyWith("other")))
		p, err := api.Get("p")
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatUint(p.Id, 10)
		steps := []struct {
			reason string
			call   func() error
		}{
			{"get by id returns the policy.", func() error {
				got, err := api.Get(id)
				if err == nil && (got.Name != "p" || got.Id != p.Id) {
					t.Errorf("get by id: got %s (%d)", got.Name, got.Id)
				}
				return err
			}},
			{"getRule by id.", func() error { _, err := api.GetRule(id, 1000); return err }},
			{"addRule by id.", func() error { return opErr(t, api)(api.AddRule(id, ipRule(7, "deny(403)", "1.2.3.4"))) }},
			{"patchRule by id.", func() error {
				return opErr(t, api)(api.PatchRule(id, 7, "", &compute.SecurityPolicyRule{Description: "by id"}))
			}},
			{"removeRule by id.", func() error { return opErr(t, api)(api.RemoveRule(id, 1000)) }},
			{"patch by id.", func() error {
				return opErr(t, api)(api.Patch(id, &compute.SecurityPolicy{Description: "patched by id"}))
			}},
			{"setLabels by id.", func() error {
				return opErr(t, api)(api.SetLabels(id, map[string]string{"by": "id"}, emptyLabelFingerprint))
			}},
		}
		for _, s := range steps {
			if err := s.call(); err != nil {
				t.Fatalf("%s: %v", s.reason, err)
			}
		}
		got, err := api.Get("p")
		if err != nil {
			t.Fatal(err)
		}
		var rules []string
		for _, r := range got.Rules {
			rules = append(rules, strconv.FormatInt(r.Priority, 10)+" "+r.Description)
		}
		want := []string{"2147483647 ", "7 by id"}
		if diff := cmp.Diff(want, rules); diff != "" || got.Description != "patched by id" || got.Labels["by"] != "id" {
			t.Errorf("after the calls by id: description %q, labels %v, rules -want, +got:\n%s", got.Description, got.Labels, diff)
		}
		other, err := api.Get("other")
		if err != nil {
			t.Fatalf("get other: %v", err)
		}
		if other.Description != "" || len(other.Rules) != 1 {
			t.Errorf("the other policy changed: %+v", other)
		}
		if n := em.Stats().Policies[api.Path("p")][api.Method("get")]; n != 3 {
			t.Errorf("stats: calls by id count against the policy's name: want 3 gets, got %d", n)
		}

		op := wait(api.Delete(id))
		if op.TargetLink != apiRoot+api.Path("p") {
			t.Errorf("delete by id: targetLink %s", op.TargetLink)
		}
		_, err = api.Get(id)
		wantErr := &apiErr{404, "notFound", "The resource '" + api.Path(id) + "' was not found"}
		if diff := cmp.Diff(wantErr, asAPIErr(err)); diff != "" {
			t.Errorf("get of a deleted id: -want, +got:\n%s", diff)
		}
	})
}

// opErr waits for a mutation's operation and returns the call's error.
func opErr(t *testing.T, api policyAPI) func(*compute.Operation, error) error {
	return func(op *compute.Operation, err error) error {
		t.Helper()
		if err != nil {
			return err
		}
		done(t, api, op, nil)
		return nil
	}
}

func TestAccessToken(t *testing.T) {
	type args struct {
		opts   Options
		header string // bearer token sent in the Authorization header
		params []googleapi.CallOption
		proj   string
	}
	grants := map[string]Grant{"tok-a": {Read: []string{"proj-a"}}}
	cases := map[string]struct {
		reason string
		args   args
		want   *apiErr
	}{
		"QueryTokenAccepted": {
			reason: "access_token in the query authenticates like the Authorization header.",
			args: args{opts: Options{Auth: AuthToken, Token: "s3cret"}, proj: "p",
				params: []googleapi.CallOption{googleapi.QueryParameter("access_token", "s3cret")}},
		},
		"OAuthTokenAccepted": {
			reason: "The older oauth_token parameter works too.",
			args: args{opts: Options{Auth: AuthToken, Token: "s3cret"}, proj: "p",
				params: []googleapi.CallOption{googleapi.QueryParameter("oauth_token", "s3cret")}},
		},
		"QueryTokenWrong": {
			reason: "A wrong query token is refused like a wrong header token.",
			args: args{opts: Options{Auth: AuthToken, Token: "s3cret"}, proj: "p",
				params: []googleapi.CallOption{googleapi.QueryParameter("access_token", "x")}},
			want: &apiErr{401, "authError", "Request had invalid authentication credentials. " + core.AuthHelp},
		},
		"NoToken": {
			reason: "Without header or query token auth=require answers 401.",
			args:   args{proj: "p"},
			want:   &apiErr{401, "required", "Request is missing required authentication credential. " + core.AuthHelp},
		},
		"HeaderWins": {
			reason: "When both are sent, the header is the one checked.",
			args: args{opts: Options{Auth: AuthToken, Token: "s3cret"}, header: "x", proj: "p",
				params: []googleapi.CallOption{googleapi.QueryParameter("access_token", "s3cret")}},
			want: &apiErr{401, "authError", "Request had invalid authentication credentials. " + core.AuthHelp},
		},
		"GrantsSeeQueryToken": {
			reason: "Project grants apply to the query token.",
			args: args{opts: Options{Grants: grants}, proj: "proj-a",
				params: []googleapi.CallOption{googleapi.QueryParameter("access_token", "tok-a")}},
		},
		"GrantsDenyQueryToken": {
			reason: "A query token is denied the projects its grant does not list.",
			args: args{opts: Options{Grants: grants}, proj: "proj-b",
				params: []googleapi.CallOption{googleapi.QueryParameter("access_token", "tok-a")}},
			want: &apiErr{403, "forbidden", "Required 'compute.securityPolicies.list' permission for 'projects/proj-b'"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, tc.args.opts)
			opts := []option.ClientOption{option.WithEndpoint(em.Endpoint()), option.WithoutAuthentication()}
			if tc.args.header != "" {
				svc, err := em.NewServiceWithToken(context.Background(), tc.args.header)
				if err != nil {
					t.Fatal(err)
				}
				_, err = svc.SecurityPolicies.List(tc.args.proj).Do(tc.args.params...)
				check(t, tc.reason, tc.want, err)
				return
			}
			svc, err := compute.NewService(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.SecurityPolicies.List(tc.args.proj).Do(tc.args.params...)
			check(t, tc.reason, tc.want, err)
		})
	}
}

func check(t *testing.T, reason string, want *apiErr, err error) {
	t.Helper()
	if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
		t.Errorf("\n%s\nerror: -want, +got:\n%s", reason, diff)
	}
}

func TestFields(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	api := globalAPI{svc}
	wait := waiter(t, api)
	wait(api.Insert(policyWith("a", ipRule(1000, "allow", "10.0.0.0/8"))))
	wait(api.Insert(&compute.SecurityPolicy{Name: "b", Description: "second"}))
	get := func(fields string) (string, error) {
		return rawJSON(t, em.Endpoint()+"projects/"+project+"/global/securityPolicies/a?fields="+fields)
	}
	list := func(fields string) (string, error) {
		return rawJSON(t, em.Endpoint()+"projects/"+project+"/global/securityPolicies?fields="+fields)
	}
	cases := map[string]struct {
		reason string
		call   func() (string, error)
		want   string
	}{
		"TopLevel": {
			reason: "A comma list keeps only those fields.",
			call:   func() (string, error) { return get("name,type") },
			want:   `{"name":"a","type":"CLOUD_ARMOR"}`,
		},
		"SubSelection": {
			reason: "a(b,c) keeps b and c of every element of a list.",
			call:   func() (string, error) { return get("name,rules(priority,action)") },
			want: `{"name":"a","rules":[{"action":"allow","priority":1000},` +
				`{"action":"deny(403)","priority":2147483647}]}`,
		},
		"SlashPath": {
			reason: "a/b/c selects inside nested objects and lists.",
			call:   func() (string, error) { return get("rules/match/config/srcIpRanges") },
			want:   `{"rules":[{"match":{"config":{"srcIpRanges":["10.0.0.0/8"]}}},{"match":{"config":{"srcIpRanges":["*"]}}}]}`,
		},
		"ListItems": {
			reason: "items(name),nextPageToken on a list keeps the page token and drops kind and id.",
			call:   func() (string, error) { return list("items(name),nextPageToken&maxResults=1") },
			want:   `{"items":[{"name":"a"}],"nextPageToken":"1"}`,
		},
		"AbsentFieldLeftOut": {
			reason: "A selected field an item does not have is simply left out of that item.",
			call:   func() (string, error) { return list("items(name,description)") },
			want:   `{"items":[{"name":"a"},{"description":"second","name":"b"}]}`,
		},
		"Wildcard": {
			reason: "* selects every field at its level.",
			call:   func() (string, error) { return get("rules/*") },
			want:   "",
		},
		"Unbalanced": {
			reason: "A selection that does not parse is a 400.",
			call:   func() (string, error) { return get("rules(priority") },
			want:   "400 Invalid field selection rules(priority",
		},
		"EmptyName": {
			reason: "An empty field name is a 400.",
			call:   func() (string, error) { return get("name,,id") },
			want:   "400 Invalid field selection name,,id",
		},
		"UnknownField": {
			reason: "A field the resource does not have is a 400 naming its path.",
			call:   func() (string, error) { return get("name,rules(nope)") },
			want:   "400 Invalid field selection rules/nope",
		},
		"InsideScalar": {
			reason: "Selecting inside a scalar field is a 400.",
			call:   func() (string, error) { return get("name/x") },
			want:   "400 Invalid field selection name/x",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.call()
			if err != nil {
				got = err.Error()
			}
			if tc.want == "" { // Wildcard: compare with the full rules
				full, err := get("rules")
				if err != nil {
					t.Fatalf("fields=rules: %v", err)
				}
				if got != full {
					t.Errorf("\n%s\nwant %s\ngot  %s", tc.reason, full, got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("\n%s\nwant %s\ngot  %s", tc.reason, tc.want, got)
			}
		})
	}
}

// rawJSON GETs url and returns its body re-encoded (keys sorted), or an
// error "<status> <message>".
func rawJSON(t *testing.T, url string) (string, error) {
	t.Helper()
	res, body := rawCall(t, "GET", url, "", nil)
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not JSON: %q", body)
	}
	if res.StatusCode != 200 {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &e)
		return "", &statusError{res.StatusCode, e.Error.Message}
	}
	b, _ := json.Marshal(v)
	return string(b), nil
}

type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return strconv.Itoa(e.code) + " " + e.msg }

func TestFieldsThroughClient(t *testing.T) {
	scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
		wait := waiter(t, api)
		op := wait(api.Insert(policyWith("a", ipRule(1000, "allow", "10.0.0.0/8"))))
		svc := newService(t, em)
		var (
			p    *compute.SecurityPolicy
			list *compute.SecurityPolicyList
			o    *compute.Operation
			err  error
		)
		fields := []googleapi.Field{"name", "rules(priority)"}
		switch api.(type) {
		case globalAPI:
			p, err = svc.SecurityPolicies.Get(project, "a").Fields(fields...).Do()
			if err == nil {
				list, err = svc.SecurityPolicies.List(project).Fields("items(name)").Do()
			}
			if err == nil {
				o, err = svc.GlobalOperations.Get(project, op.Name).Fields("status").Do()
			}
		case regionalAPI:
			p, err = svc.RegionSecurityPolicies.Get(project, region, "a").Fields(fields...).Do()
			if err == nil {
				list, err = svc.RegionSecurityPolicies.List(project, region).Fields("items(name)").Do()
			}
			if err == nil {
				o, err = svc.RegionOperations.Get(project, region, op.Name).Fields("status").Do()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		p.ServerResponse, list.ServerResponse, o.ServerResponse = googleapi.ServerResponse{}, googleapi.ServerResponse{}, googleapi.ServerResponse{}
		want := &compute.SecurityPolicy{Name: "a", Rules: []*compute.SecurityPolicyRule{{Priority: 1000}, {Priority: defaultPriority}}}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("get with fields: -want, +got:\n%s", diff)
		}
		if diff := cmp.Diff(&compute.SecurityPolicyList{Items: []*compute.SecurityPolicy{{Name: "a"}}}, list); diff != "" {
			t.Errorf("list with fields: -want, +got:\n%s", diff)
		}
		if diff := cmp.Diff(&compute.Operation{Status: "DONE"}, o); diff != "" {
			t.Errorf("operation with fields: -want, +got:\n%s", diff)
		}
	})
}

// FuzzFields feeds arbitrary fields= values to a get, a list and a mutation:
// the answer must be 200 with JSON or a 400 with the error envelope, and a
// rejected selection must not mutate anything.
func FuzzFields(f *testing.F) {
	for _, s := range []string{"name,rules(priority,action)", "items(name,id),nextPageToken", "a/b/c", "*",
		"rules/*", "((", ")", ",", "a(b(c(d)))", "rules(match/config/srcIpRanges),id", "items/*/x"} {
		f.Add(uint8(0), s)
		f.Add(uint8(1), s)
		f.Add(uint8(2), s)
	}
	targets := []struct{ method, path, body string }{
		{"GET", "/projects/p/global/securityPolicies/base", ""},
		{"GET", "/projects/p/global/securityPolicies", ""},
		{"POST", "/projects/p/global/securityPolicies/base/addRule", `{"priority":7,"action":"allow","match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}}}`},
	}
	f.Fuzz(func(t *testing.T, target uint8, fields string) {
		s, err := New(Options{Auth: AuthAny, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		seedPolicy(t, s)
		tg := targets[int(target)%len(targets)]
		req := httptest.NewRequest(tg.method, tg.path, strings.NewReader(tg.body))
		req.URL.RawQuery = url.Values{"fields": {fields}}.Encode()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Errorf("fields=%q: status %d: %s", fields, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("fields=%q: response is not JSON: %q", fields, rec.Body)
		}
		if rec.Code == 400 && s.Stats().Mutations != 1 { // the seed policy's insert
			t.Errorf("fields=%q: a rejected selection mutated the state", fields)
		}
	})
}
