package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// tooComplex has six subexpressions; GCP allows five. Admission cannot
// count them, so only GCP (here the emulator, as strict) refuses it.
const tooComplex = "request.path == '/a' || request.path == '/b' || request.path == '/c' || " +
	"request.path == '/d' || request.path == '/e' || request.path == '/f'"

// exprRule matches expression at priority with a deny(403).
func exprRule(priority int64, expression string) v1beta1.PolicyRule {
	return v1beta1.PolicyRule{Priority: priority, RuleParameters: v1beta1.RuleParameters{Action: "deny(403)",
		Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: expression}}}}
}

func dryRun(o interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}, on bool) {
	a := maps.Clone(o.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	if on {
		a[v1beta1.AnnotationDryRun] = "true"
	} else {
		delete(a, v1beta1.AnnotationDryRun)
	}
	o.SetAnnotations(a)
}

// TestDryRun proves the per-object dry run (annotation
// cloudarmor.armorplane.io/dry-run) through the built provider and the
// emulator: GCP is asked with validateOnly and answers in Validated, nothing
// is written, GCP is not asked again on every poll, and removing the
// annotation writes.
func TestDryRun(t *testing.T) {
	s := setup(t)
	const (
		good = "e2e-dryrun-good"
		bad  = "e2e-dryrun-bad"
	)
	goodPath, badPath := policyPath(s.project, "", good), policyPath(s.project, "", bad)

	validated := func(status, reason string, contains ...string) func(map[string]condition) error {
		return func(c map[string]condition) error {
			v := c[string(v1beta1.TypeValidated)]
			if v.Status != status || v.Reason != reason {
				return fmt.Errorf("Validated=%s", v)
			}
			for _, s := range contains {
				if !strings.Contains(v.Message, s) {
					return fmt.Errorf("Validated=%s, want its message to hold %q", v, s)
				}
			}
			if r := c["Ready"]; r.Status != "False" || r.Reason != string(v1beta1.ReasonDryRun) {
				return fmt.Errorf("Ready=%s, want False (DryRun)", r)
			}
			if sc := c["Synced"]; sc.Status != "True" {
				return fmt.Errorf("Synced=%s", sc)
			}
			return nil
		}
	}
	gcpAbsent := func(t *testing.T, name string) {
		t.Helper()
		if sp, err := s.gcpPolicy(s.project, "", name); err == nil {
			t.Errorf("GCP holds policy %s, which only a dry run named: %v", name, armor.RulesOf(sp))
		} else if !strings.Contains(err.Error(), "404") {
			t.Fatal(err)
		}
	}
	// The emulator counts a refused insert under its method only (the
	// request names no policy), so these count every policy's requests:
	// in this suite only the dry-run objects reach GCP.
	noWrites := func(t *testing.T) {
		t.Helper()
		st := s.emu.Stats()
		for m, n := range st.Methods {
			if isWrite(m) {
				t.Errorf("%d %s requests without validateOnly, want none: %v", n, m, st.Methods)
			}
		}
		if st.Mutations != 0 {
			t.Errorf("%d mutations accepted, want none: %v", st.Mutations, st.Methods)
		}
	}
	asked := func(method string) int64 { return s.emu.Stats().Methods[method+"?validateOnly"] }

	goodPolicy := armor.NewPolicy(good, func(p *v1beta1.SecurityPolicyParameters) {
		p.Rules = []v1beta1.PolicyRule{exprRule(1000, "request.path.startsWith('/admin')")}
	})
	badPolicy := armor.NewPolicy(bad, func(p *v1beta1.SecurityPolicyParameters) {
		p.Rules = []v1beta1.PolicyRule{exprRule(1000, tooComplex)}
	})
	dryRun(goodPolicy, true)
	dryRun(badPolicy, true)

	t.Run("Policy", func(t *testing.T) {
		s.create(t, goodPolicy, badPolicy)
		s.waitCondition(t, goodPolicy, "to be Validated=True (Accepted)", validated("True", string(v1beta1.ReasonAccepted), "insert"))
		s.waitCondition(t, badPolicy, "to be Validated=False (Refused) with GCP's message", validated("False", string(v1beta1.ReasonRefused),
			"GCP refuses insert", "resource.rules[0].match.expr.expression", "6 subexpressions"))
		gcpAbsent(t, good)
		gcpAbsent(t, bad)
		noWrites(t)
		if n := asked("securityPolicies.insert"); n != 2 {
			t.Errorf("%d inserts with validateOnly, want 2 (one per policy): %v", n, s.emu.Stats().Methods)
		}
		s.eventually(t, waitFor, "a DryRunRefused warning event for "+bad, func() error {
			for _, w := range s.warnings(t, []client.Object{badPolicy}) {
				if strings.Contains(w, "DryRunRefused") && strings.Contains(w, "6 subexpressions") {
					return nil
				}
			}
			return fmt.Errorf("warnings: %v", s.warnings(t, []client.Object{badPolicy}))
		})
	})

	t.Run("NotAskedEveryPoll", func(t *testing.T) {
		before := maps.Clone(s.emu.Stats().Methods)
		window := 4 * poll
		time.Sleep(window)
		after := s.emu.Stats().Methods
		for m, n := range after {
			if strings.HasSuffix(m, "?validateOnly") && n != before[m] {
				t.Errorf("%s asked %d more times in %s with nothing changed: GCP is asked on every poll", m, n-before[m], window)
			}
		}
		t.Logf("requests after %s: %v (reads: %v, %v)", window, after, s.calls(goodPath), s.calls(badPath))
		noWrites(t)
		// The refusal is a condition, not an error: still Synced=True.
		s.waitCondition(t, badPolicy, "to stay Validated=False, Synced=True", validated("False", string(v1beta1.ReasonRefused)))
	})

	t.Run("SpecChangeAsksAgain", func(t *testing.T) {
		s.update(t, badPolicy, func() {
			badPolicy.Spec.ForProvider.Rules = []v1beta1.PolicyRule{exprRule(1000, "request.path == '/a'")}
		})
		s.waitCondition(t, badPolicy, "to be Validated=True (Accepted) after the fix", validated("True", string(v1beta1.ReasonAccepted), "insert"))
		if n := asked("securityPolicies.insert"); n != 3 {
			t.Errorf("%d inserts with validateOnly, want 3 (one per policy and spec): %v", n, s.emu.Stats().Methods)
		}
		gcpAbsent(t, bad)
		noWrites(t)
	})

	t.Run("RemovingTheAnnotationWrites", func(t *testing.T) {
		s.update(t, goodPolicy, func() { dryRun(goodPolicy, false) })
		s.waitReady(t, goodPolicy)
		s.waitGCPRules(t, s.project, "", good, []string{"1000:deny(403):", "2147483647:allow:*"})
		conds, err := s.conditions(t, goodPolicy)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := conds[string(v1beta1.TypeValidated)]; ok {
			t.Errorf("Validated=%s after the dry run ended, want it gone", v)
		}
	})

	t.Run("Rule", func(t *testing.T) {
		ok := armor.NewRule("e2e-dryrun-rule-ok", good, exprRule(2000, "request.path.startsWith('/private')"))
		refused := armor.NewRule("e2e-dryrun-rule-bad", good, exprRule(3000, tooComplex))
		dryRun(ok, true)
		dryRun(refused, true)
		writesBefore := s.writes(goodPath)
		s.create(t, ok, refused)
		s.waitCondition(t, ok, "to be Validated=True (Accepted)", validated("True", string(v1beta1.ReasonAccepted), "addRule priority 2000"))
		s.waitCondition(t, refused, "to be Validated=False (Refused) with GCP's message", validated("False", string(v1beta1.ReasonRefused),
			"GCP refuses addRule priority 3000", "match.expr.expression", "6 subexpressions"))
		sp, err := s.gcpPolicy(s.project, "", good)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := armor.RulesOf(sp), []string{"1000:deny(403):", "2147483647:allow:*"}; !slices.Equal(got, want) {
			t.Errorf("GCP rules %v, want %v: a dry-run rule was written", got, want)
		}
		calls := s.calls(goodPath)
		if n := s.writes(goodPath) - writesBefore; n != 0 {
			t.Errorf("%d writes without validateOnly while only dry-run rules changed, want none: %v", n, calls)
		}
		if n := calls["securityPolicies.addRule?validateOnly"]; n != 2 {
			t.Errorf("%d addRule with validateOnly, want 2 (one per rule): %v", n, calls)
		}

		s.update(t, ok, func() { dryRun(ok, false) })
		s.waitReady(t, ok)
		s.waitGCPRules(t, s.project, "", good, []string{"1000:deny(403):", "2000:deny(403):", "2147483647:allow:*"})
	})
}
