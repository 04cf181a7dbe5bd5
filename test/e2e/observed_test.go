package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/api/compute/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// 10. What is changed in GCP directly shows in status.atProvider, every rule
// field included, while the provider cannot write it back; once it can, it
// corrects GCP and status shows the spec again. ddosProtectionConfig's fields
// reach GCP, show in status and are kept there.
func (s *suite) testObservedState(t *testing.T) {
	t.Run("RuleDrift", s.testObservedRuleDrift)
	t.Run("DdosProtection", s.testObservedDdos)
}

func (s *suite) testObservedRuleDrift(t *testing.T) {
	const name = "e2e-observed"
	throttle := v1beta1.PolicyRule{Priority: 100, RuleParameters: v1beta1.RuleParameters{
		Action: "throttle",
		Match:  &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "request.path.startsWith('/api')"}},
		RateLimitOptions: &v1beta1.RateLimitOptions{ConformAction: armor.Ptr("allow"), ExceedAction: armor.Ptr("deny(429)"),
			EnforceOnKey: armor.Ptr("IP"), RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 10, IntervalSec: 60}},
	}}
	waf := v1beta1.PolicyRule{Priority: 200, RuleParameters: v1beta1.RuleParameters{
		Action: "deny(403)",
		Match:  &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "evaluatePreconfiguredWaf('sqli-v33-stable')"}},
		PreconfiguredWafConfig: &v1beta1.PreconfiguredWafConfig{Exclusions: []v1beta1.WafExclusion{{TargetRuleSet: "sqli-v33-stable",
			RequestHeadersToExclude: []v1beta1.WafExclusionFieldParams{{Op: "EQUALS", Val: armor.Ptr("x-trace")}}}}},
	}}
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "allow"}
		p.Rules = []v1beta1.PolicyRule{throttle}
	})
	rule := armor.NewRule(name+"-200", name, waf)
	s.create(t, sp, rule)
	s.waitReady(t, sp)
	s.waitReady(t, rule)
	s.waitObserved(t, sp, rule, 10, "EQUALS", false)

	// The provider's rule writes fail from now on, so the drift below stays
	// in GCP until the faults are lifted.
	blocked := emulator.FaultRule{OpErrorRate: 1}
	if err := s.emu.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{
		"securityPolicies.addRule": blocked, "securityPolicies.patchRule": blocked, "securityPolicies.removeRule": blocked,
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.emu.SetFaults(emulator.Faults{}) })

	// As in the console: one PATCH replacing the rule set, through the
	// emulator's API behind the provider's back.
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		cur, err := s.gcpPolicy(s.project, "", name)
		if err != nil {
			return nil, err
		}
		for _, r := range cur.Rules {
			switch r.Priority {
			case 100:
				r.Preview = true
				r.RateLimitOptions.RateLimitThreshold.Count = 999
			case 200:
				r.PreconfiguredWafConfig.Exclusions[0].RequestHeadersToExclude[0].Op = "STARTS_WITH"
			}
		}
		return s.gcp.SecurityPolicies.Patch(s.project, name, &compute.SecurityPolicy{Fingerprint: cur.Fingerprint, Rules: cur.Rules}).Do()
	})
	s.waitObserved(t, sp, rule, 999, "STARTS_WITH", true)

	if err := s.emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	s.waitObserved(t, sp, rule, 10, "EQUALS", false)
	got, err := s.gcpPolicy(s.project, "", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Rules {
		if r.Priority == 100 && (r.Preview || r.RateLimitOptions.RateLimitThreshold.Count != 10) {
			t.Errorf("GCP rule 100 not corrected: preview %t, count %d", r.Preview, r.RateLimitOptions.RateLimitThreshold.Count)
		}
	}
	s.delete(t, rule, sp)
	s.waitGone(t, sp)
}

// waitObserved waits until the policy's status shows rule 100 with count
// and preview, and both the policy's and the rule object's status show rule
// 200's first header exclusion with op.
func (s *suite) waitObserved(t *testing.T, sp *v1beta1.SecurityPolicy, rule *v1beta1.SecurityPolicyRule, count int64, op string, preview bool) {
	t.Helper()
	s.eventually(t, waitFor, fmt.Sprintf("status.atProvider to show count %d, preview %t and op %s", count, preview, op), func() error {
		ctx := context.Background()
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(sp), sp); err != nil {
			return err
		}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(rule), rule); err != nil {
			return err
		}
		var r100, r200 *v1beta1.RuleObservation
		for i, r := range sp.Status.AtProvider.Rules {
			switch r.Priority {
			case 100:
				r100 = &sp.Status.AtProvider.Rules[i]
			case 200:
				r200 = &sp.Status.AtProvider.Rules[i]
			}
		}
		if r100 == nil || r100.RateLimitOptions == nil || r100.RateLimitOptions.RateLimitThreshold == nil {
			return fmt.Errorf("policy status has no rule 100 with rateLimitOptions: %+v", sp.Status.AtProvider.Rules)
		}
		if got := r100.RateLimitOptions.RateLimitThreshold.Count; got != count || r100.Preview != preview {
			return fmt.Errorf("policy status rule 100: count %d, preview %t", got, r100.Preview)
		}
		for who, r := range map[string]*v1beta1.RuleObservation{"policy": r200, "rule object": rule.Status.AtProvider.Rule} {
			if got := headerExclusionOp(r); got != op {
				return fmt.Errorf("%s status rule 200: header exclusion op %q", who, got)
			}
		}
		return nil
	})
}

func headerExclusionOp(r *v1beta1.RuleObservation) string {
	if r == nil || r.PreconfiguredWafConfig == nil || len(r.PreconfiguredWafConfig.Exclusions) == 0 ||
		len(r.PreconfiguredWafConfig.Exclusions[0].RequestHeadersToExclude) == 0 {
		return ""
	}
	return r.PreconfiguredWafConfig.Exclusions[0].RequestHeadersToExclude[0].Op
}

// testObservedDdos applies a CLOUD_ARMOR_NETWORK policy with every
// ddosProtectionConfig field, checks GCP holds them, and that a change made
// in GCP to one of them is corrected.
func (s *suite) testObservedDdos(t *testing.T) {
	const name, region = "e2e-ddos", "us-central1"
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
		p.Region, p.Type = armor.Ptr(region), armor.Ptr("CLOUD_ARMOR_NETWORK")
		p.DdosProtectionConfig = &v1beta1.DdosProtectionConfig{DdosProtection: armor.Ptr("ADVANCED"),
			DdosAdaptiveProtection: armor.Ptr("ENABLED"), DdosImpactedBaselineThreshold: armor.Ptr(0.25)}
	})
	s.create(t, sp)
	s.waitReady(t, sp)
	want := compute.SecurityPolicyDdosProtectionConfig{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED", DdosImpactedBaselineThreshold: 0.25}
	holds := func() error {
		got, err := s.gcpPolicy(s.project, region, name)
		if err != nil {
			return err
		}
		d := got.DdosProtectionConfig
		if d == nil {
			return errors.New("GCP holds no ddosProtectionConfig")
		}
		if d.DdosProtection != want.DdosProtection || d.DdosAdaptiveProtection != want.DdosAdaptiveProtection ||
			d.DdosImpactedBaselineThreshold != want.DdosImpactedBaselineThreshold {
			return fmt.Errorf("GCP holds %+v", *d)
		}
		return nil
	}
	s.eventually(t, waitFor, "GCP to hold every ddosProtectionConfig field", holds)
	s.eventually(t, waitFor, "status.atProvider.ddosProtectionConfig to show GCP's", func() error {
		if err := s.kube.Get(context.Background(), client.ObjectKeyFromObject(sp), sp); err != nil {
			return err
		}
		want := v1beta1.DdosProtectionConfigObservation{DdosProtection: "ADVANCED", DdosAdaptiveProtection: "ENABLED", DdosImpactedBaselineThreshold: 0.25}
		if got := sp.Status.AtProvider.DdosProtectionConfig; got == nil || *got != want {
			return fmt.Errorf("got %+v", got)
		}
		return nil
	})

	s.gcpDo(t, s.project, region, func() (*compute.Operation, error) {
		cur, err := s.gcpPolicy(s.project, region, name)
		if err != nil {
			return nil, err
		}
		return s.gcp.RegionSecurityPolicies.Patch(s.project, region, name, &compute.SecurityPolicy{Fingerprint: cur.Fingerprint,
			DdosProtectionConfig: &compute.SecurityPolicyDdosProtectionConfig{DdosAdaptiveProtection: "DISABLED"}}).Do()
	})
	s.eventually(t, waitFor, "the provider to correct ddosAdaptiveProtection changed in GCP", holds)
	s.delete(t, sp)
	s.waitGone(t, sp)
}
