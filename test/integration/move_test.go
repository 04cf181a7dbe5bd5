package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// TestMoveToNewControlPlane moves a policy and a rule object to a new
// management cluster as the docs say (pause, back up, restore, run the
// provider with the old cluster's --owner-identity, unpause) against the same
// GCP. Without the identity the new cluster's provider refuses the policy
// (its owner label names the old cluster) and writes nothing; with it, it
// adopts both with no GCP write, and then edits reach GCP.
func TestMoveToNewControlPlane(t *testing.T) {
	ctx := context.Background()
	old := startProvider(t, emulator.Options{})
	sp := armor.NewPolicy("moved", func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(1000, "192.0.2.0/24")}
	})
	rule := armor.NewRule("moved-2000", "moved", armor.AllowRule(2000, "198.51.100.0/24"))
	for _, o := range []client.Object{sp, rule} {
		if err := old.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	old.waitReady(t, sp)
	old.waitReady(t, rule)
	gcpRules := []string{"1000:allow:192.0.2.0/24", "2000:allow:198.51.100.0/24", "2147483647:deny(403):*"}
	old.waitGCPRules(t, "", "moved", gcpRules)
	oldID := kubeSystemUID(t, old)

	// In the old cluster: pause, then back up what the move takes (as a
	// backup tool keeps it: metadata's labels and annotations, the spec).
	var backup []client.Object
	for _, o := range []client.Object{sp, rule} {
		old.get(t, o)
		meta.AddAnnotations(o, map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
		if err := old.kube.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
		backup = append(backup, o)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "emulator-token"}}
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	old.get(t, secret)
	old.get(t, cpc)
	backup = append([]client.Object{secret, cpc}, backup...)
	old.stopProvider()
	before := old.mutations()

	// The new cluster: the same GCP, the objects restored, still paused.
	nu := startControlPlane(t)
	nu.emu, nu.gcp = old.emu, old.gcp
	for _, o := range backup {
		o.SetResourceVersion("")
		o.SetUID("")
		o.SetCreationTimestamp(metav1.Time{})
		o.SetManagedFields(nil)
		o.SetFinalizers(nil)
		if err := nu.kube.Create(ctx, o); err != nil {
			t.Fatalf("restoring %s: %v", o.GetName(), err)
		}
	}
	unpause := func() {
		t.Helper()
		for _, o := range []client.Object{sp, rule} {
			nu.get(t, o)
			meta.RemoveAnnotations(o, meta.AnnotationKeyReconciliationPaused)
			if err := nu.kube.Update(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	pause := func() {
		t.Helper()
		for _, o := range []client.Object{sp, rule} {
			nu.get(t, o)
			meta.AddAnnotations(o, map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
			if err := nu.kube.Update(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Without the old identity the owner label names another cluster.
	stop := nu.runProvider(t)
	unpause()
	nu.waitSynced(t, sp, corev1.ConditionFalse, "carries the label armorplane-owner=")
	time.Sleep(2 * poll) // what it would write, it would have written by now
	pause()
	stop()
	if got := old.mutations() - before; got != 0 {
		t.Errorf("without --owner-identity the new cluster's provider wrote to GCP %d times, want 0: %v", got, old.emu.Stats().Methods)
	}

	// With it, both are adopted as they are.
	nu.runProvider(t, "--owner-identity="+oldID)
	unpause()
	nu.waitReady(t, sp)
	nu.waitReady(t, rule)
	time.Sleep(2 * poll)
	if got := old.mutations() - before; got != 0 {
		t.Errorf("with the old cluster's --owner-identity the new cluster's provider wrote to GCP %d times, want 0: %v", got, old.emu.Stats().Methods)
	}
	old.waitGCPRules(t, "", "moved", gcpRules)

	// And it owns them: an edit reaches GCP.
	nu.get(t, rule)
	rule.Spec.ForProvider.Match.Config.SrcIpRanges = []v1beta1.IPRange{"203.0.113.0/24"}
	if err := nu.kube.Update(ctx, rule); err != nil {
		t.Fatal(err)
	}
	old.waitGCPRules(t, "", "moved", []string{"1000:allow:192.0.2.0/24", "2000:allow:203.0.113.0/24", "2147483647:deny(403):*"})
}

// kubeSystemUID is what the provider names e's cluster by when it is given
// no --owner-identity.
func kubeSystemUID(t *testing.T, e *env) string {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		t.Fatal(err)
	}
	return string(ns.GetUID())
}
