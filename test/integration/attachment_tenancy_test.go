package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// TestAttachmentTenancy runs a hostile tenant's attachments and policies
// against the emulator: what GCP holds afterwards is the outcome checked.
// The ClusterProviderConfig (createProviderConfig) grants backend services
// shared-* only to namespaces labelled granted=shared.
func TestAttachmentTenancy(t *testing.T) {
	e := startProvider(t, emulator.Options{})
	ctx := context.Background()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "tenant-granted", Labels: map[string]string{"granted": "shared"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tenant-ungranted"}},
	} {
		if err := e.kube.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// Policies made outside Kubernetes: another team's, and one the
	// tenant's attachments name.
	for _, n := range []string{"legacy-armor", "tenant-armor"} {
		op, err := e.gcp.SecurityPolicies.Insert(project, &compute.SecurityPolicy{Name: n}).Do()
		if err == nil {
			err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("UngrantedBackendWritesNothing", func(t *testing.T) { e.testUngranted(t) })
	t.Run("AdoptThenDeleteLeavesField", func(t *testing.T) { e.testAdoptThenDelete(t) })
	t.Run("DeleteRestoresReplaced", func(t *testing.T) { e.testRestore(t) })
	t.Run("AnnotationDoesNotTakePolicy", func(t *testing.T) { e.testAnnotationDoesNotRank(t) })
}

const legacyArmor = "projects/" + project + "/global/securityPolicies/legacy-armor"

// backendHolding makes backend service name holding policy (a name, or ""
// for none), as gcloud would, behind the provider's back.
func (e *env) backendHolding(t *testing.T, name, policy string) {
	t.Helper()
	ctx := context.Background()
	b := &compute.BackendService{Name: name, LoadBalancingScheme: "EXTERNAL_MANAGED"}
	if policy != "" {
		b.SecurityPolicy = "https://www.googleapis.com/compute/v1/projects/" + project + "/global/securityPolicies/" + policy
	}
	op, err := e.gcp.BackendServices.Insert(project, b).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fieldOf is the policy GCP's backend service name names.
func (e *env) fieldOf(t *testing.T, name string) string {
	t.Helper()
	b, err := e.gcp.BackendServices.Get(project, name).Do()
	if err != nil {
		t.Fatal(err)
	}
	return gcp.RelativeName(b.SecurityPolicy)
}

// attachmentOf is an attachment in ns of policy (a name) to backend service
// backend.
func attachmentOf(ns, name, backend, policy string) *v1alpha1.SecurityPolicyAttachment {
	a := newAttachment(ns, name)
	a.Spec.ForProvider.SecurityPolicyRef = nil
	a.Spec.ForProvider.SecurityPolicy = armor.Ptr(policy)
	a.Spec.ForProvider.Target.Name = backend
	return a
}

// deleteAndWait deletes o and waits until it is gone.
func (e *env) deleteAndWait(t *testing.T, o client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := e.kube.Delete(ctx, o); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, o.GetName()+" to be gone", func() error {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(o), o); kerrors.IsNotFound(err) {
			return nil
		}
		return errors.New("still there")
	})
}

// testUngranted: an attachment naming a backend its namespace is not
// granted says why and what to grant, and makes no call to GCP: the
// emulator sees neither a read nor a write of the backend.
func (e *env) testUngranted(t *testing.T) {
	e.backendHolding(t, "legacy-console", "legacy-armor")
	before := e.emu.Stats().Methods
	a := attachmentOf("tenant-ungranted", "steal", "legacy-console", "tenant-armor")
	if err := e.kube.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.waitSynced(t, a, corev1.ConditionFalse, `grants namespace "tenant-ungranted" no BackendService named "legacy-console"`)
	e.waitSynced(t, a, corev1.ConditionFalse, `targets include {kind: BackendService, names: ["legacy-console"]}`)
	time.Sleep(poll)
	after := e.emu.Stats().Methods
	for _, m := range []string{"backendServices.get", "backendServices.setSecurityPolicy"} {
		if after[m] != before[m] {
			t.Errorf("%s: %d calls while an ungranted attachment reconciled; want none", m, after[m]-before[m])
		}
	}
	if got := e.fieldOf(t, "legacy-console"); got != legacyArmor {
		t.Errorf("securityPolicy of legacy-console: want %s, got %q", legacyArmor, got)
	}
	e.deleteAndWait(t, a)
	if got := e.fieldOf(t, "legacy-console"); got != legacyArmor {
		t.Errorf("after deleting the ungranted attachment: securityPolicy of legacy-console: want %s, got %q", legacyArmor, got)
	}
}

// testAdoptThenDelete: an attachment naming a backend and the policy it
// already holds (set outside Kubernetes) is Ready without a write; deleting
// it leaves the field as GCP held it, in a granted namespace too.
func (e *env) testAdoptThenDelete(t *testing.T) {
	e.backendHolding(t, "shared-console", "legacy-armor")
	for _, ns := range []string{"tenant-granted", "tenant-ungranted"} {
		a := attachmentOf(ns, "adopt", "shared-console", "legacy-armor")
		if err := e.kube.Create(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if ns == "tenant-granted" {
			e.waitReady(t, a)
		} else {
			e.waitSynced(t, a, corev1.ConditionFalse, "grants namespace")
		}
		e.deleteAndWait(t, a)
		if got := e.fieldOf(t, "shared-console"); got != legacyArmor {
			t.Errorf("%s: adopt then delete: securityPolicy of shared-console: want %s kept, got %q", ns, legacyArmor, got)
		}
	}
}

// testRestore: an attachment that replaced policy legacy-armor puts it back
// when deleted.
func (e *env) testRestore(t *testing.T) {
	e.backendHolding(t, "shared-web", "legacy-armor")
	a := attachmentOf("tenant-granted", "replace", "shared-web", "tenant-armor")
	if err := e.kube.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, a)
	if got, want := e.fieldOf(t, "shared-web"), "projects/"+project+"/global/securityPolicies/tenant-armor"; got != want {
		t.Fatalf("securityPolicy of shared-web: want %s, got %q", want, got)
	}
	e.deleteAndWait(t, a)
	if got := e.fieldOf(t, "shared-web"); got != legacyArmor {
		t.Errorf("after delete: securityPolicy of shared-web: want %s restored, got %q", legacyArmor, got)
	}
}

// testAnnotationDoesNotRank: a tenant that names another team's GCP policy
// in a younger SecurityPolicy and annotates it
// crossplane.io/external-create-succeeded does not become its owner: the
// older object stays Synced, the younger stays refused naming it. The
// owner adopted a policy made outside Kubernetes, so it never recorded a
// create of its own, which the annotation used to outrank.
func (e *env) testAnnotationDoesNotRank(t *testing.T) {
	ctx := context.Background()
	op, err := e.gcp.SecurityPolicies.Insert(project, &compute.SecurityPolicy{Name: "owned", Description: "made in the console"}).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	owner := armor.NewPolicy("owned", func(p *v1beta1.SecurityPolicyParameters) { p.Description = armor.Ptr("the owner's") })
	if err := e.kube.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, owner)
	// creationTimestamp has a resolution of a second: the tenant's object
	// is younger.
	time.Sleep(1100 * time.Millisecond)
	thief := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-ungranted", Name: "thief",
		Annotations: map[string]string{meta.AnnotationKeyExternalName: "owned"}}}
	thief.Spec.ForProvider.Description = armor.Ptr("the thief's")
	if err := e.kube.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	e.waitSynced(t, thief, corev1.ConditionFalse, "is managed by SecurityPolicy default/owned")
	e.get(t, thief)
	meta.SetExternalCreateSucceeded(thief, time.Now())
	if err := e.kube.Update(ctx, thief); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * poll)
	e.waitSynced(t, thief, corev1.ConditionFalse, "is managed by SecurityPolicy default/owned")
	e.get(t, owner)
	if s := owner.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue {
		t.Errorf("the owner after the tenant's annotation: Synced=%s %s; want True", s.Status, s.Message)
	}
	sp, err := e.gcp.SecurityPolicies.Get(project, "owned").Do()
	if err != nil {
		t.Fatal(err)
	}
	if sp.Description != "the owner's" {
		t.Errorf("GCP policy owned: description %q, want the owner's", sp.Description)
	}
	e.deleteAndWait(t, thief)
	e.deleteAndWait(t, owner)
}
