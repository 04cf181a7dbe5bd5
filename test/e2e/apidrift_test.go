package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// checkProvenance fails unless labels, a GCP object's, carry the provenance
// labels of o, the object that wrote it, and an owner label.
func (s *suite) checkProvenance(t *testing.T, o client.Object, labels map[string]string) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	pcKind, _, _ := unstructured.NestedString(obj, "spec", "providerConfigRef", "kind")
	pcName, _, _ := unstructured.NestedString(obj, "spec", "providerConfigRef", "name")
	gk := s.gvk(t, o).GroupKind()
	want := map[string]string{
		"crossplane-kind":                strings.ReplaceAll(strings.ToLower(gk.String()), ".", "_"),
		"crossplane-name":                strings.ReplaceAll(o.GetName(), ".", "_"),
		"crossplane-namespace":           o.GetNamespace(),
		"crossplane-providerconfig":      strings.ReplaceAll(pcName, ".", "_"),
		"crossplane-providerconfig-kind": strings.ToLower(pcKind),
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("%s %s: GCP labels %v, want %s=%s", gk.Kind, o.GetName(), labels, k, v)
		}
	}
	if len(labels["armorplane-owner"]) != 32 {
		t.Errorf("%s: GCP labels %v, want the owner label", o.GetName(), labels)
	}
}

// 12. A value GCP may have added since this provider was built is admitted,
// reported in a Warning condition and sent to GCP, whose refusal is
// reported in Synced; a preview-only value is admitted with a warning that
// says so; fixing the value clears the warning.
func (s *suite) testAPIDrift(t *testing.T) {
	const name = "e2e-drift"
	sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {})
	s.create(t, sp)
	s.waitReady(t, sp)

	throttle := armor.AllowRule(500, "10.0.0.0/8")
	throttle.Action = v1beta1.ActionThrottle
	throttle.RateLimitOptions = &v1beta1.RateLimitOptions{EnforceOnKey: armor.Ptr("TLS_JA5_FINGERPRINT"),
		ConformAction: armor.Ptr("allow"), ExceedAction: armor.Ptr("deny(429)"),
		RateLimitThreshold: &v1beta1.RateLimitThreshold{Count: 100, IntervalSec: 60}}
	r := armor.NewRule("e2e-drift-500", name, throttle)
	s.create(t, r) // admitted: enforceOnKey takes any value of GCP's form
	s.waitCondition(t, r, "to warn of the unknown key and report GCP's refusal", func(c map[string]condition) error {
		if w := c["Warning"]; w.Status != "True" || w.Reason != "UnknownValue" || !strings.Contains(w.Message, `spec.forProvider.rateLimitOptions.enforceOnKey "TLS_JA5_FINGERPRINT" is not a value this provider knows`) {
			return fmt.Errorf("Warning=%s", w)
		}
		if sy := c["Synced"]; sy.Status != "False" || !strings.Contains(sy.Message, "TLS_JA5_FINGERPRINT") {
			return fmt.Errorf("Synced=%s, want False with GCP's refusal", sy)
		}
		return nil
	})
	s.waitGCPRules(t, s.project, "", name, []string{"2147483647:allow:*"})

	s.update(t, r, func() { r.Spec.ForProvider.RateLimitOptions.EnforceOnKey = armor.Ptr("TLS_JA4_FINGERPRINT") })
	s.waitReady(t, r)
	s.waitCondition(t, r, "to clear its warning", func(c map[string]condition) error {
		if w := c["Warning"]; w.Status != "False" || w.Reason != "NoWarning" {
			return fmt.Errorf("Warning=%s", w)
		}
		return nil
	})
	s.waitGCPRules(t, s.project, "", name, []string{"500:throttle:10.0.0.0/8", "2147483647:allow:*"})

	// A preview-only policy type is admitted with a warning saying so; the
	// emulator, like GCP for a project in the preview, takes it.
	internal := armor.NewPolicy("e2e-drift-internal", func(p *v1beta1.SecurityPolicyParameters) {
		p.Type = armor.Ptr("CLOUD_ARMOR_INTERNAL_SERVICE")
	})
	s.create(t, internal)
	s.waitReady(t, internal)
	s.waitCondition(t, internal, "to warn that its type is preview only", func(c map[string]condition) error {
		if w := c["Warning"]; w.Status != "True" || w.Reason != "PreviewValue" || !strings.Contains(w.Message, `"CLOUD_ARMOR_INTERNAL_SERVICE" is preview only`) {
			return fmt.Errorf("Warning=%s", w)
		}
		return nil
	})
	s.delete(t, r, internal, sp)
	for _, o := range []client.Object{r, internal, sp} {
		s.waitGone(t, o)
	}
}
