package tenancy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// countingProxy is a reverse proxy in front of the emulator that records the
// path of every request it forwards. ClusterProviderConfigs whose endpoint
// is the proxy make every one of their GCP calls through it, so the calls of
// the objects using them can be counted per policy, whatever the other
// objects of the same GCP policy do.
type countingProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.paths = append(p.paths, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// Calls returns the requests made for the GCP policy project/name (the
// policy and its rules), e.g. "GET /compute/v1/projects/p/global/securityPolicies/n".
func (p *countingProxy) Calls(project, name string) []string {
	prefix := "/projects/" + project + "/global/securityPolicies/" + name
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, path := range p.paths {
		_, rest, _ := strings.Cut(path, " ")
		rest = strings.TrimPrefix(rest, "/compute/v1")
		if rest == prefix || strings.HasPrefix(rest, prefix+"/") {
			out = append(out, path)
		}
	}
	return out
}

// CallsTo returns the requests made for the object at path, relative to the
// API root ("/projects/p/global/backendServices/n"), and for its methods.
func (p *countingProxy) CallsTo(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.paths {
		_, rest, _ := strings.Cut(c, " ")
		rest = strings.TrimPrefix(rest, "/compute/v1")
		if rest == path || strings.HasPrefix(rest, path+"/") {
			out = append(out, c)
		}
	}
	return out
}

// mutatingMethods are the emulator's methods that change a global policy.
var mutatingMethods = []string{"insert", "patch", "delete", "addRule", "patchRule", "removeRule", "setLabels"}

// mutations returns how many mutating calls the emulator has served (or
// refused) for the global policy project/name, from any client.
func (s *suite) mutations(project, name string) int64 {
	m := s.Emu.Stats().Policies[policyPath(project, name)]
	var n int64
	for _, v := range mutatingMethods {
		n += m["securityPolicies."+v]
	}
	return n
}

func policyPath(project, name string) string {
	return "projects/" + project + "/global/securityPolicies/" + name
}

// gcpPolicy reads a policy from the emulator as an auditor that may read
// every project, behind the provider's back.
func (s *suite) gcpPolicy(project, name string) (*compute.SecurityPolicy, error) {
	return s.gcp.SecurityPolicies.Get(project, name).Do()
}

// gcpRule returns the rule at priority of project/name, or an error when the
// policy or the rule is missing.
func (s *suite) gcpRule(project, name string, priority int64) (*compute.SecurityPolicyRule, error) {
	sp, err := s.gcpPolicy(project, name)
	if err != nil {
		return nil, err
	}
	for _, r := range sp.Rules {
		if r.Priority == priority {
			return r, nil
		}
	}
	return nil, fmt.Errorf("GCP policy %s has no rule at priority %d", name, priority)
}

// ruleIs is a condition: GCP's rule at priority of project/name has action
// and exactly the source ranges given, and description when it is not "".
func (s *suite) ruleIs(project, name string, priority int64, action, description string, ranges ...string) func() error {
	return func() error {
		r, err := s.gcpRule(project, name, priority)
		if err != nil {
			return err
		}
		var got []string
		if r.Match != nil && r.Match.Config != nil {
			got = r.Match.Config.SrcIpRanges
		}
		if r.Action != action || strings.Join(got, ",") != strings.Join(ranges, ",") || (description != "" && r.Description != description) {
			return fmt.Errorf("GCP rule %s/%d is %s %v %q, want %s %v %q", name, priority, r.Action, got, r.Description, action, ranges, description)
		}
		return nil
	}
}

// create decodes a YAML manifest and creates it as the cluster admin.
func (s *suite) create(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := decode(t, manifest)
	if err := s.Admin.Create(context.Background(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("create %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return u
}

// conditions reads o afresh and returns all its conditions by type.
func (s *suite) conditions(o client.Object) (map[xpv2.ConditionType]xpv2.Condition, error) {
	var obj interface {
		client.Object
		GetCondition(xpv2.ConditionType) xpv2.Condition
	}
	switch o.GetObjectKind().GroupVersionKind().Kind {
	case v1beta1.SecurityPolicyKind:
		obj = &v1beta1.SecurityPolicy{}
	case v1beta1.SecurityPolicyRuleKind:
		obj = &v1beta1.SecurityPolicyRule{}
	case v1alpha1.NetworkEdgeSecurityServiceKind:
		obj = &v1alpha1.NetworkEdgeSecurityService{}
	case v1alpha1.SecurityPolicyAttachmentKind:
		obj = &v1alpha1.SecurityPolicyAttachment{}
	default:
		return nil, fmt.Errorf("no conditions for kind %q", o.GetObjectKind().GroupVersionKind().Kind)
	}
	if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(o), obj); err != nil {
		return nil, err
	}
	out := map[xpv2.ConditionType]xpv2.Condition{}
	for _, ct := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced, typeRuleConflict} {
		out[ct] = obj.GetCondition(ct)
	}
	return out, nil
}

// typeRuleConflict is the SecurityPolicy condition that reports inline rules
// ignored and rule objects refused.
const typeRuleConflict xpv2.ConditionType = "RuleConflict"

// ready is a condition: o is Ready=True and Synced=True.
func (s *suite) ready(o client.Object) func() error {
	return func() error {
		cs, err := s.conditions(o)
		if err != nil {
			return err
		}
		for _, ct := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced} {
			if cs[ct].Status != corev1.ConditionTrue {
				return fmt.Errorf("%s %s: %s=%s (%s: %s)", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o), ct, cs[ct].Status, cs[ct].Reason, cs[ct].Message)
			}
		}
		return nil
	}
}

// syncedFalse is a condition: o is Synced=False (reason ReconcileError) with
// a message holding every one of msgs.
func (s *suite) syncedFalse(o client.Object, msgs ...string) func() error {
	return s.conditionIs(o, xpv2.TypeSynced, corev1.ConditionFalse, xpv2.ReasonReconcileError, msgs...)
}

// conditionIs is a condition: o's condition ct has status and reason and a
// message holding every one of msgs.
func (s *suite) conditionIs(o client.Object, ct xpv2.ConditionType, status corev1.ConditionStatus, reason xpv2.ConditionReason, msgs ...string) func() error {
	return func() error {
		cs, err := s.conditions(o)
		if err != nil {
			return err
		}
		c := cs[ct]
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s %s: %s=%s reason %q (%s), want %s reason %q", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o), ct, c.Status, c.Reason, c.Message, status, reason)
		}
		for _, m := range msgs {
			if !strings.Contains(c.Message, m) {
				return fmt.Errorf("%s %s: %s message %q does not contain %q", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o), ct, c.Message, m)
			}
		}
		return nil
	}
}

// all is a condition that holds when every one of conds does.
func all(conds ...func() error) func() error {
	return func() error {
		for _, c := range conds {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// holds checks cond every 250 ms for d and fails the test the first time it
// does not hold: what must stay true while the provider polls.
func (s *suite) holds(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		if err := s.plat.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// noCalls is a condition: the proxy saw no request for project/name.
func (s *suite) noCalls(project, name string) func() error {
	return func() error {
		if c := s.proxy.Calls(project, name); len(c) > 0 {
			return fmt.Errorf("%d GCP calls for %s through the refused object's config: %v", len(c), name, c)
		}
		return nil
	}
}

// noMutations is a condition: the emulator served no mutation of
// project/name since base was read.
func (s *suite) noMutations(project, name string, base int64) func() error {
	return func() error {
		if n := s.mutations(project, name) - base; n != 0 {
			return fmt.Errorf("%d mutating calls to GCP policy %s", n, name)
		}
		return nil
	}
}

// gone is a condition: o no longer exists in the cluster.
func (s *suite) gone(o client.Object) func() error {
	return func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		u.SetNamespace(o.GetNamespace())
		u.SetName(o.GetName())
		return s.Gone(u)
	}
}

// delete deletes o as the cluster admin.
func (s *suite) delete(t *testing.T, o client.Object) {
	t.Helper()
	if err := s.Admin.Delete(context.Background(), o); err != nil {
		t.Fatalf("delete %s: %v", client.ObjectKeyFromObject(o), err)
	}
}
