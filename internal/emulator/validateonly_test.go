package emulator

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

// dryRunAPI sends insert, addRule and patchRule with the Go client's
// ValidateOnly(true). The client has no such option for PATCH of a policy
// (the method has no validateOnly parameter); Patch sends it as a raw query
// parameter and notes that it did, because GCP refuses it.
type dryRunAPI struct {
	policyAPI
	svc      *compute.Service
	regional bool
	patched  bool
}

var dryRun = googleapi.QueryParameter("validateOnly", "true")

func (d *dryRunAPI) Insert(p *compute.SecurityPolicy) (*compute.Operation, error) {
	if d.regional {
		return d.svc.RegionSecurityPolicies.Insert(project, region, p).ValidateOnly(true).Do()
	}
	return d.svc.SecurityPolicies.Insert(project, p).ValidateOnly(true).Do()
}

func (d *dryRunAPI) AddRule(n string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	if d.regional {
		return d.svc.RegionSecurityPolicies.AddRule(project, region, n, r).ValidateOnly(true).Do()
	}
	return d.svc.SecurityPolicies.AddRule(project, n, r).ValidateOnly(true).Do()
}

func (d *dryRunAPI) PatchRule(n string, p int64, mask string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	if d.regional {
		return d.svc.RegionSecurityPolicies.PatchRule(project, region, n, r).Priority(p).UpdateMask(mask).ValidateOnly(true).Do()
	}
	return d.svc.SecurityPolicies.PatchRule(project, n, r).Priority(p).UpdateMask(mask).ValidateOnly(true).Do()
}

func (d *dryRunAPI) Patch(n string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	d.patched = true
	if d.regional {
		return d.svc.RegionSecurityPolicies.Patch(project, region, n, p).Do(dryRun)
	}
	return d.svc.SecurityPolicies.Patch(project, n, p).Do(dryRun)
}

func newDryRunAPI(svc *compute.Service, regional bool) *dryRunAPI {
	if regional {
		return &dryRunAPI{policyAPI: regionalAPI{svc}, svc: svc, regional: true}
	}
	return &dryRunAPI{policyAPI: globalAPI{svc}, svc: svc}
}

// errNoValidateOnly is GCP's front end refusing a query parameter the
// method does not have.
var errNoValidateOnly = apiErr{400, "invalid", `Invalid JSON payload received. Unknown name "validateOnly": ` +
	`Cannot bind query parameter. Field 'validateOnly' could not be found in request message.`}

// TestValidateOnlyConformance runs every refused case of the validation
// table as a dry run: each gets the same 400 as the write, except PATCH of a
// policy, which has no validateOnly and is refused for the parameter.
// Nothing changes (runValidationCases checks the fixtures' fingerprints).
func TestValidateOnlyConformance(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	apis := map[bool]*dryRunAPI{false: newDryRunAPI(svc, false), true: newDryRunAPI(svc, true)}
	fixtures := map[bool]policyAPI{false: globalAPI{svc}, true: regionalAPI{svc}}
	runValidationCases(t, fixtures, map[bool]policyAPI{false: apis[false], true: apis[true]}, func() *apiErr {
		patched := apis[false].patched || apis[true].patched
		apis[false].patched, apis[true].patched = false, false
		if patched {
			return &errNoValidateOnly
		}
		return nil
	})
	st := em.Stats()
	if st.DryRuns != 0 {
		t.Errorf("DryRuns = %d after only refused dry runs, want 0", st.DryRuns)
	}
	for m := range st.Methods {
		if base, ok := strings.CutSuffix(m, "?validateOnly"); ok && !validateOnlyMethods[base] {
			t.Errorf("counted %s, a method without validateOnly", m)
		}
	}
}

// TestValidateOnly: an accepted dry run of each method answers a DONE
// operation and changes nothing (no policy, no rule, same fingerprint, the
// policy not busy), is counted apart from writes and logged; a refused one
// gets the write's answer.
func TestValidateOnly(t *testing.T) {
	type want struct {
		err    *apiErr
		opType string
	}
	cases := map[string]struct {
		reason string
		call   func(d *dryRunAPI) (*compute.Operation, error)
		method string
		want   want
	}{
		"InsertNew": {
			reason: "A valid insert of a new policy validates and creates nothing.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.Insert(policyWith("new", ipRule(10, "allow", "10.0.0.0/8")))
			},
			method: "insert",
			want:   want{opType: "insert"},
		},
		"InsertExisting": {
			reason: "An insert of a name that exists gets the write's 409.",
			call:   func(d *dryRunAPI) (*compute.Operation, error) { return d.Insert(policyWith("p")) },
			method: "insert",
			want:   want{err: &apiErr{409, "alreadyExists", "The resource '%s' already exists"}},
		},
		"AddRule": {
			reason: "A valid addRule validates and adds nothing.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.AddRule("p", ipRule(20, "deny(404)", "10.1.0.0/16"))
			},
			method: "addRule",
			want:   want{opType: "AddRule"},
		},
		"AddRuleDuplicate": {
			reason: "A duplicate priority gets the write's 400.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.AddRule("p", ipRule(10, "allow", "10.1.0.0/16"))
			},
			method: "addRule",
			want:   want{err: &apiErr{400, "invalid", "Invalid value for field 'resource.priority': '10'. Cannot have rules with the same priorities."}},
		},
		"AddRuleMissingPolicy": {
			reason: "A missing policy gets the write's 404.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.AddRule("absent", ipRule(20, "allow", "10.1.0.0/16"))
			},
			method: "addRule",
			want:   want{err: &apiErr{404, "notFound", "The resource '%s' was not found"}},
		},
		"PatchRule": {
			reason: "A valid patchRule validates and changes nothing.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.PatchRule("p", 10, "", ipRule(10, "deny(502)", "192.168.0.0/16"))
			},
			method: "patchRule",
			want:   want{opType: "PatchRule"},
		},
		"PatchRuleMissing": {
			reason: "A missing priority gets the write's 400.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.PatchRule("p", 30, "", ipRule(30, "allow", "*"))
			},
			method: "patchRule",
			want:   want{err: &apiErr{400, "invalid", "Invalid value for field 'priority': '30'. The security policy does not contain a rule at priority 30."}},
		},
		"PatchRuleTooManySubexpressions": {
			reason: "A CEL expression GCP refuses gets the write's 400.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.PatchRule("p", 10, "match", vRule(10, "allow", vExpr(strings.Repeat("request.path == '/a' || ", 5)+"request.path == '/b'")))
			},
			method: "patchRule",
			want: want{err: &apiErr{400, "invalid", "Invalid value for field 'resource.match.expr.expression': '" +
				strings.Repeat("request.path == '/a' || ", 4) + "requ...'. The expression has 6 subexpressions; the limit is 5."}},
		},
		"Patch": {
			reason: "PATCH of a policy has no validateOnly: refused, never written.",
			call: func(d *dryRunAPI) (*compute.Operation, error) {
				return d.Patch("p", &compute.SecurityPolicy{Description: "changed"})
			},
			method: "patch",
			want:   want{err: &errNoValidateOnly},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var logMu sync.Mutex
			var lines []string
			logf := func(format string, args ...any) {
				logMu.Lock()
				defer logMu.Unlock()
				lines = append(lines, fmt.Sprintf(format, args...))
			}
			scopes(t, Options{Logf: logf}, func(t *testing.T, em *Running, api policyAPI) {
				waiter(t, api)(api.Insert(policyWith("p", ipRule(10, "allow", "10.0.0.0/8"))))
				before := em.Server.Snapshot()
				stBefore := em.Stats()
				_, regional := api.(regionalAPI)
				d := newDryRunAPI(newService(t, em), regional)

				op, err := tc.call(d)
				wantErr := tc.want.err
				if wantErr != nil && strings.Contains(wantErr.Message, "%s") {
					path := api.Path("p")
					if tc.want.err.Code == 404 {
						path = api.Path("absent")
					}
					wantErr = &apiErr{wantErr.Code, wantErr.Reason, fmt.Sprintf(wantErr.Message, path)}
				}
				if diff := cmp.Diff(wantErr, asAPIErr(err)); diff != "" {
					t.Fatalf("%s\nerror: -want, +got:\n%s", tc.reason, diff)
				}
				if err == nil {
					if diff := cmp.Diff([]string{tc.want.opType, "DONE"}, []string{op.OperationType, op.Status}); diff != "" {
						t.Errorf("%s\noperation: -want, +got:\n%s", tc.reason, diff)
					}
					polled, err := api.GetOp(op.Name)
					if err != nil || polled.Status != "DONE" {
						t.Errorf("%s\npolling the dry run's operation: %v, %+v", tc.reason, err, polled)
					}
				}
				if diff := cmp.Diff(before, em.Server.Snapshot()); diff != "" {
					t.Errorf("%s\nstate changed by a dry run: -before, +after:\n%s", tc.reason, diff)
				}
				st := em.Stats()
				dry := api.Method(tc.method) + "?validateOnly"
				if tc.method == "patch" {
					dry = api.Method(tc.method) // refused for the parameter, counted as what it is
				}
				wantDry := int64(0)
				if err == nil {
					wantDry = 1
				}
				got := []int64{st.Mutations - stBefore.Mutations, st.DryRuns - stBefore.DryRuns, st.Methods[dry] - stBefore.Methods[dry]}
				if diff := cmp.Diff([]int64{0, wantDry, 1}, got); diff != "" {
					t.Errorf("%s\n[mutations, dry runs, %s]: -want, +got:\n%s", tc.reason, dry, diff)
				}
				logMu.Lock()
				logged := strings.Join(lines, "\n")
				logMu.Unlock()
				if !strings.Contains(logged, dry+" ") {
					t.Errorf("%s\nno log line for %s in:\n%s", tc.reason, dry, logged)
				}

				// The policy is not held busy: a write right after succeeds,
				// and the fingerprint is the one before the dry run.
				cur, err := api.Get("p")
				if err != nil {
					t.Fatal(err)
				}
				if cur.Fingerprint != before[api.Path("p")]["fingerprint"] {
					t.Errorf("%s\nfingerprint changed by a dry run", tc.reason)
				}
				waiter(t, api)(api.AddRule("p", ipRule(40, "allow", "10.9.0.0/16")))
			})
		})
	}
}

// TestValidateOnlyWhileBusy: while a write's operation runs, a dry run of
// the same policy gets resourceNotReady like a write would, and a dry run
// does not itself hold the policy busy.
func TestValidateOnlyWhileBusy(t *testing.T) {
	scopes(t, Options{OpLatency: time.Hour}, func(t *testing.T, em *Running, api policyAPI) {
		_, regional := api.(regionalAPI)
		d := newDryRunAPI(newService(t, em), regional)
		if _, err := d.Insert(policyWith("p")); err != nil {
			t.Fatalf("dry-run insert: %v", err)
		}
		if _, err := api.Insert(policyWith("p")); err != nil {
			t.Fatalf("insert right after a dry run: %v", err)
		}
		_, err := d.AddRule("p", ipRule(20, "allow", "10.1.0.0/16"))
		want := &apiErr{400, "resourceNotReady", fmt.Sprintf("The resource '%s' is not ready", api.Path("p"))}
		if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
			t.Errorf("dry run while busy: -want, +got:\n%s", diff)
		}
	})
}

// TestValidateOnlyBadValue: validateOnly must be a bool, as GCP's front end
// parses it.
func TestValidateOnlyBadValue(t *testing.T) {
	em := Start(t, Options{})
	res, body := rawCall(t, "POST", em.Endpoint()+"projects/p/global/securityPolicies?validateOnly=yes", `{"name":"q"}`, nil)
	if res.StatusCode != 400 || !strings.Contains(body, `Invalid value at 'validate_only' (TYPE_BOOL), \"yes\"`) {
		t.Errorf("status %d, body %s", res.StatusCode, body)
	}
	if n := len(em.Server.Snapshot()); n != 0 {
		t.Errorf("%d policies after a refused call", n)
	}
}
