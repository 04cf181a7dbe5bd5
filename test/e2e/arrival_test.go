package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyrule"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

const (
	// arrivalPoll is the provider's --poll in TestArrival: longer than any
	// deadline below, so that only a policy's arrival, not a poll, can wake
	// a rule waiting for it in time.
	arrivalPoll = time.Minute
	// arrivalBound is how soon after a policy and its rules are applied
	// together (or after the policy follows its rules) every one of them
	// must be Ready. The emulator takes opLatency per write and writes to a
	// policy are serial: 7 writes here, 1.4 s.
	arrivalBound = 5 * time.Second
)

// TestArrival: a SecurityPolicy and its rule objects applied together become
// Ready within seconds, with no error, warning event or backoff in between;
// rules applied before their policy wait quietly (one status, no churn) and
// are created as soon as the policy arrives, long before their next poll.
func TestArrival(t *testing.T) {
	s := setup(t, "--poll="+arrivalPoll.String())

	t.Run("1-Together", func(t *testing.T) {
		s.testArrival(t, "arrival-together", func(policy client.Object, rules []client.Object) {
			// Rules first: the hardest order for them.
			s.create(t, append(slices.Clone(rules), policy)...)
		})
	})
	t.Run("2-RulesFirst", func(t *testing.T) {
		s.testArrival(t, "arrival-late", func(policy client.Object, rules []client.Object) {
			s.create(t, rules...)
			s.waitQuiet(t, rules)
			s.create(t, policy)
		})
	})
}

// testArrival applies a policy and six rule objects (four by reference, two
// by GCP name) through apply, which creates the policy last, then checks that all are Ready within
// arrivalBound of the policy's creation, that no object got a warning
// event, and that GCP was asked to add each rule once.
func (s *suite) testArrival(t *testing.T, name string, apply func(policy client.Object, rules []client.Object)) {
	policy := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.Description = armor.Ptr("applied with its rules")
	})
	var rules []client.Object
	for i := range 6 {
		r := armor.NewRule(fmt.Sprintf("%s-%d", name, i), name, armor.AllowRule(int64(1000+i), v1beta1.IPRange(fmt.Sprintf("10.0.%d.0/24", i))))
		if i >= 4 {
			r.Spec.ForProvider.SecurityPolicyRef = nil
			r.Spec.ForProvider.SecurityPolicy = armor.Ptr(name)
		}
		rules = append(rules, r)
	}
	apply(policy, rules) // the policy is created last
	start := time.Now()
	for _, o := range append([]client.Object{policy}, rules...) {
		s.waitReadyWithin(t, arrivalBound, o)
	}
	took := time.Since(start)
	t.Logf("%s: policy and %d rules Ready %s after the policy was applied", name, len(rules), took.Round(10*time.Millisecond))

	want := []string{}
	for i := range 6 {
		want = append(want, fmt.Sprintf("%d:allow:10.0.%d.0/24", 1000+i, i))
	}
	want = append(want, fmt.Sprintf("%d:allow:*", defaultPriority))
	s.waitGCPRules(t, s.project, "", name, want)
	if got := s.calls(policyPath(s.project, "", name))["securityPolicies.addRule"]; got != int64(len(rules)) {
		t.Errorf("%s: %d addRule calls, want %d (one per rule, none refused)", name, got, len(rules))
	}
	// Events are recorded asynchronously; give the last ones time to land.
	time.Sleep(time.Second)
	if w := s.warnings(t, append([]client.Object{policy}, rules...)); len(w) > 0 {
		t.Errorf("%s: warning events, want none:\n  %s", name, strings.Join(w, "\n  "))
	}
}

// waitQuiet waits until every rule reports waiting for its policy (Ready
// False with reason WaitingForSecurityPolicy, Synced True), then checks that
// none is written again over a few seconds and none got a warning event.
func (s *suite) waitQuiet(t *testing.T, rules []client.Object) {
	t.Helper()
	for _, r := range rules {
		s.waitConditionWithin(t, 10*time.Second, r, "to wait for its policy", func(c map[string]condition) error {
			if c["Ready"].Status != "False" || c["Ready"].Reason != string(securitypolicyrule.ReasonWaitingForPolicy) || c["Synced"].Status != "True" {
				return fmt.Errorf("Ready=%s Synced=%s", c["Ready"], c["Synced"])
			}
			return nil
		})
	}
	versions := func() []string {
		var out []string
		for _, r := range rules {
			s.get(t, r)
			out = append(out, r.GetResourceVersion())
		}
		return out
	}
	before := versions()
	time.Sleep(3 * time.Second)
	if after := versions(); !slices.Equal(before, after) {
		t.Errorf("waiting rules were written while they waited: resourceVersions %v, then %v", before, after)
	}
	c, _ := s.conditions(t, rules[0])
	t.Logf("a waiting rule: Ready=%s", c["Ready"])
	if w := s.warnings(t, rules); len(w) > 0 {
		t.Errorf("warning events while waiting, want none:\n  %s", strings.Join(w, "\n  "))
	}
}

// warnings lists the Warning events recorded for objs.
func (s *suite) warnings(t *testing.T, objs []client.Object) []string {
	t.Helper()
	l := &corev1.EventList{}
	if err := s.kube.List(context.Background(), l, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, o := range objs {
		names[o.GetName()] = true
	}
	var out []string
	for _, e := range l.Items {
		if e.Type == corev1.EventTypeWarning && names[e.InvolvedObject.Name] {
			out = append(out, fmt.Sprintf("%s %s: %s (x%d)", e.InvolvedObject.Name, e.Reason, e.Message, e.Count))
		}
	}
	return out
}
