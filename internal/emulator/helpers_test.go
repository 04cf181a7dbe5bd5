package emulator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

const (
	project = "test-project"
	region  = "us-central1"
)

// newService returns the official client pointed at the emulator.
func newService(t *testing.T, em *Running) *compute.Service {
	t.Helper()
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// policyAPI hides the difference between the global and the regional
// services, so that every test runs against both.
type policyAPI interface {
	Insert(p *compute.SecurityPolicy) (*compute.Operation, error)
	Get(name string) (*compute.SecurityPolicy, error)
	List() (*compute.SecurityPolicyList, error)
	Patch(name string, p *compute.SecurityPolicy) (*compute.Operation, error)
	Delete(name string) (*compute.Operation, error)
	AddRule(name string, r *compute.SecurityPolicyRule) (*compute.Operation, error)
	GetRule(name string, prio int64) (*compute.SecurityPolicyRule, error)
	PatchRule(name string, prio int64, mask string, r *compute.SecurityPolicyRule) (*compute.Operation, error)
	RemoveRule(name string, prio int64) (*compute.Operation, error)
	SetLabels(name string, labels map[string]string, fp string) (*compute.Operation, error)
	GetOp(name string) (*compute.Operation, error)
	WaitOp(name string) (*compute.Operation, error)
	Path(name string) string
	Method(m string) string
}

type globalAPI struct{ svc *compute.Service }

func (g globalAPI) Insert(p *compute.SecurityPolicy) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.Insert(project, p).Do()
}
func (g globalAPI) Get(n string) (*compute.SecurityPolicy, error) {
	return g.svc.SecurityPolicies.Get(project, n).Do()
}
func (g globalAPI) List() (*compute.SecurityPolicyList, error) {
	return g.svc.SecurityPolicies.List(project).Do()
}
func (g globalAPI) Patch(n string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.Patch(project, n, p).Do()
}
func (g globalAPI) Delete(n string) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.Delete(project, n).Do()
}
func (g globalAPI) AddRule(n string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.AddRule(project, n, r).Do()
}
func (g globalAPI) GetRule(n string, p int64) (*compute.SecurityPolicyRule, error) {
	return g.svc.SecurityPolicies.GetRule(project, n).Priority(p).Do()
}
func (g globalAPI) PatchRule(n string, p int64, mask string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.PatchRule(project, n, r).Priority(p).UpdateMask(mask).Do()
}
func (g globalAPI) RemoveRule(n string, p int64) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.RemoveRule(project, n).Priority(p).Do()
}
func (g globalAPI) SetLabels(n string, l map[string]string, fp string) (*compute.Operation, error) {
	return g.svc.SecurityPolicies.SetLabels(project, n, &compute.GlobalSetLabelsRequest{Labels: l, LabelFingerprint: fp}).Do()
}
func (g globalAPI) GetOp(n string) (*compute.Operation, error) {
	return g.svc.GlobalOperations.Get(project, n).Do()
}
func (g globalAPI) WaitOp(n string) (*compute.Operation, error) {
	return g.svc.GlobalOperations.Wait(project, n).Do()
}
func (g globalAPI) Path(n string) string {
	return "projects/" + project + "/global/securityPolicies/" + n
}
func (g globalAPI) Method(m string) string { return "securityPolicies." + m }

type regionalAPI struct{ svc *compute.Service }

func (g regionalAPI) Insert(p *compute.SecurityPolicy) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.Insert(project, region, p).Do()
}
func (g regionalAPI) Get(n string) (*compute.SecurityPolicy, error) {
	return g.svc.RegionSecurityPolicies.Get(project, region, n).Do()
}
func (g regionalAPI) List() (*compute.SecurityPolicyList, error) {
	return g.svc.RegionSecurityPolicies.List(project, region).Do()
}
func (g regionalAPI) Patch(n string, p *compute.SecurityPolicy) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.Patch(project, region, n, p).Do()
}
func (g regionalAPI) Delete(n string) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.Delete(project, region, n).Do()
}
func (g regionalAPI) AddRule(n string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.AddRule(project, region, n, r).Do()
}
func (g regionalAPI) GetRule(n string, p int64) (*compute.SecurityPolicyRule, error) {
	return g.svc.RegionSecurityPolicies.GetRule(project, region, n).Priority(p).Do()
}
func (g regionalAPI) PatchRule(n string, p int64, mask string, r *compute.SecurityPolicyRule) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.PatchRule(project, region, n, r).Priority(p).UpdateMask(mask).Do()
}
func (g regionalAPI) RemoveRule(n string, p int64) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.RemoveRule(project, region, n).Priority(p).Do()
}
func (g regionalAPI) SetLabels(n string, l map[string]string, fp string) (*compute.Operation, error) {
	return g.svc.RegionSecurityPolicies.SetLabels(project, region, n, &compute.RegionSetLabelsRequest{Labels: l, LabelFingerprint: fp}).Do()
}
func (g regionalAPI) GetOp(n string) (*compute.Operation, error) {
	return g.svc.RegionOperations.Get(project, region, n).Do()
}
func (g regionalAPI) WaitOp(n string) (*compute.Operation, error) {
	return g.svc.RegionOperations.Wait(project, region, n).Do()
}
func (g regionalAPI) Path(n string) string {
	return "projects/" + project + "/regions/" + region + "/securityPolicies/" + n
}
func (g regionalAPI) Method(m string) string { return "regionSecurityPolicies." + m }

// scopes runs a test body against the global and the regional API.
func scopes(t *testing.T, opts Options, body func(t *testing.T, em *Running, api policyAPI)) {
	for name, mk := range map[string]func(*compute.Service) policyAPI{
		"Global":   func(s *compute.Service) policyAPI { return globalAPI{s} },
		"Regional": func(s *compute.Service) policyAPI { return regionalAPI{s} },
	} {
		t.Run(name, func(t *testing.T) {
			em := Start(t, opts)
			body(t, em, mk(newService(t, em)))
		})
	}
}

// waiter returns a function that waits for an operation and fails the test
// unless it succeeded; it takes a call's two results directly.
func waiter(t *testing.T, api policyAPI) func(*compute.Operation, error) *compute.Operation {
	return func(op *compute.Operation, err error) *compute.Operation {
		t.Helper()
		return done(t, api, op, err)
	}
}

func done(t *testing.T, api policyAPI, op *compute.Operation, err error) *compute.Operation {
	t.Helper()
	if err != nil {
		t.Fatalf("call failed: %v", err)
	}
	op, err = api.WaitOp(op.Name)
	if err != nil {
		t.Fatalf("wait failed: %v", err)
	}
	if op.Status != "DONE" || op.Error != nil {
		t.Fatalf("operation %s: status %s, error %+v", op.Name, op.Status, op.Error)
	}
	return op
}

// apiErr is the comparable part of a *googleapi.Error.
type apiErr struct {
	Code    int
	Reason  string
	Message string
}

func asAPIErr(err error) *apiErr {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		if err == nil {
			return nil
		}
		return &apiErr{Message: "not a googleapi.Error: " + err.Error()}
	}
	e := &apiErr{Code: ge.Code, Message: ge.Message}
	if len(ge.Errors) > 0 {
		e.Reason = ge.Errors[0].Reason
	}
	return e
}

// policyWith returns a policy with the default rule and optional rules.
func policyWith(name string, rules ...*compute.SecurityPolicyRule) *compute.SecurityPolicy {
	return &compute.SecurityPolicy{Name: name,
		Rules: append([]*compute.SecurityPolicyRule{ipRule(defaultPriority, "deny(403)", "*")}, rules...)}
}

func ipRule(prio int64, action string, ranges ...string) *compute.SecurityPolicyRule {
	return &compute.SecurityPolicyRule{Priority: prio, Action: action, Match: &compute.SecurityPolicyRuleMatcher{
		VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: ranges}}}
}

// rawCall sends a raw request, for what the Go client cannot express.
func rawCall(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer raw")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close() //nolint:errcheck // read fully below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// GCP's values the tests check answers against: the priority of every
// policy's default rule, and the labelFingerprint of no labels.
const (
	defaultPriority       = 2147483647
	emptyLabelFingerprint = "42WmSpB8rSM="
)
