package emulator

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

const (
	projA = "proj-a"
	projB = "proj-b"
)

// tenantGrants are two tenants, a read-only user of proj-a, an auditor who
// may read everything and an admin who may do everything.
var tenantGrants = map[string]Grant{
	"token-a": {Read: []string{projA}, Write: []string{projA}},
	"token-b": {Write: []string{projB}}, // write implies read
	"reader":  {Read: []string{projA}},
	"auditor": {Read: []string{AnyProject}},
	"admin":   {Write: []string{AnyProject}},
}

func forbidden(perm, resource string) *apiErr {
	return &apiErr{403, "forbidden", "Required '" + perm + "' permission for '" + resource + "'"}
}

// grantsEnv starts an emulator with tenantGrants and, as admin, creates the
// policy "p" globally and in region in both projects.
func grantsEnv(t *testing.T, opts Options) (*Running, func(token string) *compute.Service) {
	t.Helper()
	opts.Grants = tenantGrants
	em := Start(t, opts)
	svcs := map[string]*compute.Service{}
	as := func(token string) *compute.Service {
		if svcs[token] == nil {
			svc, err := em.NewServiceWithToken(context.Background(), token)
			if err != nil {
				t.Fatal(err)
			}
			svcs[token] = svc
		}
		return svcs[token]
	}
	admin := as("admin")
	for _, proj := range []string{projA, projB} {
		if _, err := admin.SecurityPolicies.Insert(proj, policyWith("p")).Do(); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RegionSecurityPolicies.Insert(proj, region, policyWith("p")).Do(); err != nil {
			t.Fatal(err)
		}
	}
	return em, as
}

func TestGrants(t *testing.T) {
	const (
		gPolicyB = "projects/" + projB + "/global/securityPolicies/p"
		rPolicyB = "projects/" + projB + "/regions/" + region + "/securityPolicies/p"
		gPolicyA = "projects/" + projA + "/global/securityPolicies/p"
		rPolicyA = "projects/" + projA + "/regions/" + region + "/securityPolicies/p"
	)
	type args struct {
		token string
		call  func(svc *compute.Service) error
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *apiErr
	}{
		// Tenant A in its own project.
		"OwnGet": {
			reason: "A token may read a project it is granted.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projA, "p").Do()
				return err
			}},
		},
		"OwnInsert": {
			reason: "A token may write a project it is granted.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Insert(projA, policyWith("q")).Do()
				return err
			}},
		},
		"OwnRegionalAddRule": {
			reason: "A write grant covers regional policies of the project too.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.AddRule(projA, region, "p", ipRule(10, "allow", "*")).Do()
				return err
			}},
		},
		"OwnMissingPolicy": {
			reason: "Past the grant check, errors are what they always were.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projA, "nope").Do()
				return err
			}},
			want: &apiErr{404, "notFound", "The resource 'projects/" + projA + "/global/securityPolicies/nope' was not found"},
		},
		// Tenant A in tenant B's project: global.
		"OtherGet": {
			reason: "get needs compute.securityPolicies.get on the policy.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projB, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", gPolicyB),
		},
		"OtherGetMissing": {
			reason: "The grant is checked before the policy is looked up: 403, not 404.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projB, "nope").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", "projects/"+projB+"/global/securityPolicies/nope"),
		},
		"OtherList": {
			reason: "list needs compute.securityPolicies.list on the project.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.List(projB).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.list", "projects/"+projB),
		},
		"OtherInsert": {
			reason: "insert needs compute.securityPolicies.create; the message names the project (chosen).",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Insert(projB, policyWith("q")).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.create", "projects/"+projB),
		},
		"OtherPatch": {
			reason: "patch needs compute.securityPolicies.update.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Patch(projB, "p", &compute.SecurityPolicy{Description: "x"}).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyB),
		},
		"OtherDelete": {
			reason: "delete needs compute.securityPolicies.delete.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Delete(projB, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.delete", gPolicyB),
		},
		"OtherAddRule": {
			reason: "addRule needs compute.securityPolicies.update, as in GCP.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.AddRule(projB, "p", ipRule(10, "allow", "*")).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyB),
		},
		"OtherPatchRule": {
			reason: "patchRule needs compute.securityPolicies.update.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.PatchRule(projB, "p", ipRule(defaultPriority, "allow", "*")).Priority(defaultPriority).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyB),
		},
		"OtherRemoveRule": {
			reason: "removeRule needs compute.securityPolicies.update.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.RemoveRule(projB, "p").Priority(10).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyB),
		},
		"OtherGetRule": {
			reason: "getRule needs compute.securityPolicies.get.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.GetRule(projB, "p").Priority(defaultPriority).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", gPolicyB),
		},
		"OtherSetLabels": {
			reason: "setLabels needs compute.securityPolicies.setLabels.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.SetLabels(projB, "p", &compute.GlobalSetLabelsRequest{Labels: map[string]string{"a": "b"}}).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.setLabels", gPolicyB),
		},
		"OtherAggregatedList": {
			reason: "aggregatedList needs compute.securityPolicies.list on the project.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.AggregatedList(projB).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.list", "projects/"+projB),
		},
		"OtherOperationGet": {
			reason: "Polling an operation needs compute.globalOperations.get on it.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.GlobalOperations.Get(projB, "operation-x").Do()
				return err
			}},
			want: forbidden("compute.globalOperations.get", "projects/"+projB+"/global/operations/operation-x"),
		},
		"OtherOperationWait": {
			reason: "wait needs compute.globalOperations.get too.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.GlobalOperations.Wait(projB, "operation-x").Do()
				return err
			}},
			want: forbidden("compute.globalOperations.get", "projects/"+projB+"/global/operations/operation-x"),
		},
		"OtherOperationList": {
			reason: "Listing operations needs compute.globalOperations.list on the project.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.GlobalOperations.List(projB).Do()
				return err
			}},
			want: forbidden("compute.globalOperations.list", "projects/"+projB),
		},
		// Tenant A in tenant B's project: regional.
		"OtherRegionalGet": {
			reason: "Regional get needs compute.regionSecurityPolicies.get.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Get(projB, region, "p").Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.get", rPolicyB),
		},
		"OtherRegionalList": {
			reason: "Regional list names the region as the resource.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.List(projB, region).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.list", "projects/"+projB+"/regions/"+region),
		},
		"OtherRegionalInsert": {
			reason: "Regional insert names the region as the resource (chosen).",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Insert(projB, region, policyWith("q")).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.create", "projects/"+projB+"/regions/"+region),
		},
		"OtherRegionalPatch": {
			reason: "Regional patch needs compute.regionSecurityPolicies.update.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Patch(projB, region, "p", &compute.SecurityPolicy{Description: "x"}).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.update", rPolicyB),
		},
		"OtherRegionalDelete": {
			reason: "Regional delete needs compute.regionSecurityPolicies.delete.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Delete(projB, region, "p").Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.delete", rPolicyB),
		},
		"OtherRegionalAddRule": {
			reason: "Regional addRule needs compute.regionSecurityPolicies.update.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.AddRule(projB, region, "p", ipRule(10, "allow", "*")).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.update", rPolicyB),
		},
		"OtherRegionalGetRule": {
			reason: "Regional getRule needs compute.regionSecurityPolicies.get.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.GetRule(projB, region, "p").Priority(defaultPriority).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.get", rPolicyB),
		},
		"OtherRegionalSetLabels": {
			reason: "Regional setLabels needs compute.regionSecurityPolicies.setLabels.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.SetLabels(projB, region, "p", &compute.RegionSetLabelsRequest{Labels: map[string]string{"a": "b"}}).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.setLabels", rPolicyB),
		},
		"OtherRegionalOperationWait": {
			reason: "Regional wait needs compute.regionOperations.get.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionOperations.Wait(projB, region, "operation-x").Do()
				return err
			}},
			want: forbidden("compute.regionOperations.get", "projects/"+projB+"/regions/"+region+"/operations/operation-x"),
		},
		"OtherRegionalOperationList": {
			reason: "Listing regional operations needs compute.regionOperations.list on the region.",
			args: args{"token-a", func(s *compute.Service) error {
				_, err := s.RegionOperations.List(projB, region).Do()
				return err
			}},
			want: forbidden("compute.regionOperations.list", "projects/"+projB+"/regions/"+region),
		},
		// Tenant B: write implies read; and it cannot see A.
		"WriteImpliesRead": {
			reason: "A write grant alone lets the token read its project.",
			args: args{"token-b", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Get(projB, region, "p").Do()
				return err
			}},
		},
		"OtherTenantB": {
			reason: "The second tenant is denied the first one's project.",
			args: args{"token-b", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projA, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", gPolicyA),
		},
		// A read-only grant.
		"ReaderGet": {
			reason: "A read grant allows get.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projA, "p").Do()
				return err
			}},
		},
		"ReaderListOperations": {
			reason: "A read grant allows reading operations.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.RegionOperations.List(projA, region).Do()
				return err
			}},
		},
		"ReaderInsert": {
			reason: "A read grant does not allow insert.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Insert(projA, policyWith("q")).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.create", "projects/"+projA),
		},
		"ReaderPatch": {
			reason: "A read grant does not allow patch.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Patch(projA, "p", &compute.SecurityPolicy{Description: "x"}).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyA),
		},
		"ReaderAddRule": {
			reason: "A read grant does not allow addRule.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.AddRule(projA, "p", ipRule(10, "allow", "*")).Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.update", gPolicyA),
		},
		"ReaderRegionalPatchRule": {
			reason: "A read grant does not allow a regional patchRule.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.PatchRule(projA, region, "p", ipRule(defaultPriority, "allow", "*")).Priority(defaultPriority).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.update", rPolicyA),
		},
		"ReaderOtherProject": {
			reason: "A read grant is for its projects only.",
			args: args{"reader", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projB, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", gPolicyB),
		},
		// The "*" project.
		"AuditorReadsAny": {
			reason: "Read \"*\" reads every project.",
			args: args{"auditor", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projB, "p").Do()
				return err
			}},
		},
		"AuditorCannotWrite": {
			reason: "Read \"*\" does not write.",
			args: args{"auditor", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Delete(projB, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.delete", gPolicyB),
		},
		// A token without a grant.
		"UnlistedGet": {
			reason: "A token that is not in Grants may read nothing.",
			args: args{"stranger", func(s *compute.Service) error {
				_, err := s.SecurityPolicies.Get(projA, "p").Do()
				return err
			}},
			want: forbidden("compute.securityPolicies.get", gPolicyA),
		},
		"UnlistedInsert": {
			reason: "A token that is not in Grants may write nothing.",
			args: args{"stranger", func(s *compute.Service) error {
				_, err := s.RegionSecurityPolicies.Insert(projA, region, policyWith("q")).Do()
				return err
			}},
			want: forbidden("compute.regionSecurityPolicies.create", "projects/"+projA+"/regions/"+region),
		},
	}
	_, as := grantsEnv(t, Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, asAPIErr(tc.args.call(as(tc.args.token)))); diff != "" {
				t.Errorf("\n%s\ncall(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGrantsGoogleAPIError: the official client parses the denial as a
// *googleapi.Error with code 403 and reason forbidden.
func TestGrantsGoogleAPIError(t *testing.T) {
	_, as := grantsEnv(t, Options{})
	_, err := as("token-a").SecurityPolicies.Get(projB, "p").Do()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("want a *googleapi.Error, got %T: %v", err, err)
	}
	msg := "Required 'compute.securityPolicies.get' permission for 'projects/" + projB + "/global/securityPolicies/p'"
	type parsed struct {
		Code    int
		Message string
		Errors  []googleapi.ErrorItem
	}
	want := parsed{403, msg, []googleapi.ErrorItem{{Reason: "forbidden", Message: msg}}}
	if diff := cmp.Diff(want, parsed{ge.Code, ge.Message, ge.Errors}); diff != "" {
		t.Errorf("error: -want, +got:\n%s", diff)
	}
}

// TestGrantsHTTP checks the raw answers: the 403 envelope, and that
// authentication still comes first.
func TestGrantsHTTP(t *testing.T) {
	forbiddenBody := `{"error":{"code":403,"message":"Required 'compute.securityPolicies.get' permission for 'projects/proj-b/global/securityPolicies/p'","errors":[{"domain":"global","message":"Required 'compute.securityPolicies.get' permission for 'projects/proj-b/global/securityPolicies/p'","reason":"forbidden"}]}}`
	cases := map[string]struct {
		reason string
		opts   Options
		header string
		want   int
		body   string // compared when not empty
	}{
		"Denied": {
			reason: "A denied call gets compute's 403 envelope.",
			header: "Bearer token-a", want: 403, body: forbiddenBody,
		},
		"Allowed": {
			reason: "A granted call reaches the API.",
			header: "Bearer token-b", want: 200,
		},
		"NoBearer": {
			reason: "With grants, a missing bearer is still a 401.",
			header: "", want: 401,
		},
		"AuthTokenWrong": {
			reason: "With auth=token, a granted but unpinned token is still a 401.",
			opts:   Options{Auth: AuthToken, Token: "token-a"},
			header: "Bearer token-b", want: 401,
		},
		"AuthTokenPinnedDenied": {
			reason: "With auth=token, the pinned token is limited by its grant.",
			opts:   Options{Auth: AuthToken, Token: "token-a"},
			header: "Bearer token-a", want: 403, body: forbiddenBody,
		},
		"AuthAnyNoBearer": {
			reason: "With auth=any, a call without a token has no grant.",
			opts:   Options{Auth: AuthAny},
			header: "", want: 403, body: forbiddenBody,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := tc.opts
			opts.Grants = tenantGrants
			em := Start(t, opts)
			// Denials come before the lookup, so only "Allowed" needs the
			// policy; with auth=token admin could not create it.
			if tc.want == 200 {
				admin, err := em.NewServiceWithToken(context.Background(), "admin")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := admin.SecurityPolicies.Insert(projB, policyWith("p")).Do(); err != nil {
					t.Fatal(err)
				}
			}
			res, body := rawCall(t, "GET", em.Endpoint()+"projects/"+projB+"/global/securityPolicies/p", "",
				map[string]string{"Authorization": tc.header})
			if res.StatusCode != tc.want {
				t.Errorf("\n%s\nstatus: want %d, got %d: %s", tc.reason, tc.want, res.StatusCode, body)
			}
			if tc.body != "" {
				if diff := cmp.Diff(tc.body, body); diff != "" {
					t.Errorf("\n%s\nbody: -want, +got:\n%s", tc.reason, diff)
				}
				if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
					t.Errorf("Content-Type %q", ct)
				}
			}
		})
	}
}

// TestGrantsBeforeFaults: a denied call is counted like any answered request
// but consumes no injected fault and is no mutation.
func TestGrantsBeforeFaults(t *testing.T) {
	em := Start(t, Options{Grants: tenantGrants, Faults: Faults{Global: FaultRule{ErrorRate: 1, ErrorCodes: []int{503}}}})
	a, err := em.NewServiceWithToken(context.Background(), "token-a")
	if err != nil {
		t.Fatal(err)
	}
	_, errDenied := a.SecurityPolicies.Insert(projB, policyWith("p")).Do()
	_, errDenied2 := a.SecurityPolicies.Get(projB, "p").Do()
	_, errAllowed := a.SecurityPolicies.Get(projA, "p").Do()
	got := []*apiErr{asAPIErr(errDenied), asAPIErr(errDenied2), asAPIErr(errAllowed)}
	want := []*apiErr{
		forbidden("compute.securityPolicies.create", "projects/"+projB),
		forbidden("compute.securityPolicies.get", "projects/"+projB+"/global/securityPolicies/p"),
		{503, "backendError", "The service is currently unavailable."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers: -want, +got:\n%s", diff)
	}
	st := em.Stats()
	wantStats := Stats{Total: 3, Forbidden: 2, InjectedErrors: 1,
		Methods: map[string]int64{"securityPolicies.insert": 1, "securityPolicies.get": 2},
		Policies: map[string]map[string]int64{
			"projects/" + projB + "/global/securityPolicies/p": {"securityPolicies.get": 1},
			"projects/" + projA + "/global/securityPolicies/p": {"securityPolicies.get": 1},
		}}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		t.Errorf("stats: -want, +got:\n%s", diff)
	}
}

// TestNoGrants: without grants every accepted token may do everything, as
// before grants existed.
func TestNoGrants(t *testing.T) {
	cases := map[string]struct {
		reason string
		grants map[string]Grant
	}{
		"Nil":   {reason: "No Grants field: no restriction.", grants: nil},
		"Empty": {reason: "An empty map is no restriction either.", grants: map[string]Grant{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{Grants: tc.grants})
			svc, err := em.NewServiceWithToken(context.Background(), "whoever")
			if err != nil {
				t.Fatal(err)
			}
			_, errInsert := svc.RegionSecurityPolicies.Insert(projB, region, policyWith("p")).Do()
			_, errGet := svc.SecurityPolicies.Get(projA, "nope").Do()
			got := []*apiErr{asAPIErr(errInsert), asAPIErr(errGet)}
			want := []*apiErr{nil, {404, "notFound", "The resource 'projects/" + projA + "/global/securityPolicies/nope' was not found"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("\n%s\nanswers: -want, +got:\n%s", tc.reason, diff)
			}
			if st := em.Stats(); st.Forbidden != 0 {
				t.Errorf("\n%s\nforbidden: %d", tc.reason, st.Forbidden)
			}
		})
	}
}

func TestGrantsValidation(t *testing.T) {
	cases := map[string]struct {
		reason string
		grants map[string]Grant
		err    bool
	}{
		"Valid":        {reason: "Projects and \"*\" are accepted.", grants: tenantGrants},
		"EmptyToken":   {reason: "A grant needs a token.", grants: map[string]Grant{"": {Read: []string{projA}}}, err: true},
		"EmptyProject": {reason: "A project cannot be empty.", grants: map[string]Grant{"t": {Write: []string{""}}}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(Options{Grants: tc.grants})
			if (err != nil) != tc.err {
				t.Errorf("\n%s\nNew(...): err %v, want error %v", tc.reason, err, tc.err)
			}
		})
	}
}

// TestPermissionOf pins the IAM permission of every routed method.
func TestPermissionOf(t *testing.T) {
	want := map[string]permission{
		"securityPolicies.insert":                          {"compute.securityPolicies.create", true},
		"securityPolicies.list":                            {"compute.securityPolicies.list", false},
		"securityPolicies.get":                             {"compute.securityPolicies.get", false},
		"securityPolicies.patch":                           {"compute.securityPolicies.update", true},
		"securityPolicies.delete":                          {"compute.securityPolicies.delete", true},
		"securityPolicies.addRule":                         {"compute.securityPolicies.update", true},
		"securityPolicies.getRule":                         {"compute.securityPolicies.get", false},
		"securityPolicies.patchRule":                       {"compute.securityPolicies.update", true},
		"securityPolicies.removeRule":                      {"compute.securityPolicies.update", true},
		"securityPolicies.setLabels":                       {"compute.securityPolicies.setLabels", true},
		"securityPolicies.listPreconfiguredExpressionSets": {"compute.securityPolicies.list", false},
		"securityPolicies.aggregatedList":                  {"compute.securityPolicies.list", false},
		"regionSecurityPolicies.insert":                    {"compute.regionSecurityPolicies.create", true},
		"regionSecurityPolicies.list":                      {"compute.regionSecurityPolicies.list", false},
		"regionSecurityPolicies.get":                       {"compute.regionSecurityPolicies.get", false},
		"regionSecurityPolicies.patch":                     {"compute.regionSecurityPolicies.update", true},
		"regionSecurityPolicies.delete":                    {"compute.regionSecurityPolicies.delete", true},
		"regionSecurityPolicies.addRule":                   {"compute.regionSecurityPolicies.update", true},
		"regionSecurityPolicies.getRule":                   {"compute.regionSecurityPolicies.get", false},
		"regionSecurityPolicies.patchRule":                 {"compute.regionSecurityPolicies.update", true},
		"regionSecurityPolicies.removeRule":                {"compute.regionSecurityPolicies.update", true},
		"regionSecurityPolicies.setLabels":                 {"compute.regionSecurityPolicies.setLabels", true},
		"globalOperations.list":                            {"compute.globalOperations.list", false},
		"globalOperations.get":                             {"compute.globalOperations.get", false},
		"globalOperations.wait":                            {"compute.globalOperations.get", false},
		"globalOperations.delete":                          {"compute.globalOperations.delete", true},
		"globalOperations.aggregatedList":                  {"compute.globalOperations.aggregatedList", false},
		"regionOperations.list":                            {"compute.regionOperations.list", false},
		"regionOperations.get":                             {"compute.regionOperations.get", false},
		"regionOperations.wait":                            {"compute.regionOperations.get", false},
		"regionOperations.delete":                          {"compute.regionOperations.delete", true},
	}
	got := map[string]permission{}
	for m := range want {
		got[m] = permissionOf(m)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(permission{})); diff != "" {
		t.Errorf("permissionOf: -want, +got:\n%s", diff)
	}
}
