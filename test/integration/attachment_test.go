package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
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
	spa "github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicyattachment"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// attachmentBackoff is the attachments' Fight.Backoff in TestProvider, so
// that a fight takes seconds.
const attachmentBackoff = 2 * time.Second

// testAttachment runs a SecurityPolicyAttachment against the emulator: the
// attach shows in the policy's usedBy; a second attachment of the same field
// is refused; a second writer that undoes every write of the attachment
// ends in Contested after a bounded number of writes, and no write follows;
// the reapply annotation ends the contest; deleting the attachment clears
// only its own policy.
func (e *env) testAttachment(t *testing.T) {
	ctx := context.Background()
	const setMethod = "backendServices.setSecurityPolicy"
	limit := spa.DefaultFight.Limit
	webPath := "projects/" + project + "/global/backendServices/attach-web"

	for _, n := range []string{"attach-armor", "attach-other"} {
		sp := armor.NewPolicy(n, func(*v1beta1.SecurityPolicyParameters) {})
		if err := e.kube.Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
		e.waitReady(t, sp)
	}
	op, err := e.gcp.BackendServices.Insert(project, &compute.BackendService{Name: "attach-web", LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	field := func() string {
		b, err := e.gcp.BackendServices.Get(project, "attach-web").Do()
		if err != nil {
			t.Fatal(err)
		}
		return gcp.RelativeName(b.SecurityPolicy)
	}
	ours := "projects/" + project + "/global/securityPolicies/attach-armor"

	// Attach: GCP holds it, the policy's usedBy says so.
	at := newAttachment(armor.Namespace, "attach-web")
	if err := e.kube.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, at)
	attached := time.Now()
	if got := field(); got != ours {
		t.Fatalf("GCP's securityPolicy of web: want %s, got %q", ours, got)
	}
	policy := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "attach-armor"}}
	eventually(t, waitFor, "attach-armor's usedBy to name attach-web", func() error {
		e.get(t, policy)
		for _, u := range policy.Status.AtProvider.UsedBy {
			if u.Name == webPath && u.Field == "securityPolicy" {
				return nil
			}
		}
		return fmt.Errorf("usedBy %v", policy.Status.AtProvider.UsedBy)
	})
	t.Logf("usedBy named attach-web %v after the attachment was Ready (poll %v)", time.Since(attached).Round(100*time.Millisecond), poll)

	// A second attachment of the same field, in another namespace, is
	// refused and writes nothing.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "attach-other"}}
	if err := e.kube.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	second := newAttachment(other.Name, "web-too")
	second.Spec.ForProvider.SecurityPolicyRef = nil
	second.Spec.ForProvider.SecurityPolicy = armor.Ptr("attach-other")
	if err := e.kube.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	e.waitSynced(t, second, corev1.ConditionFalse, "is managed by SecurityPolicyAttachment default/attach-web, the oldest object for it")
	if got := field(); got != ours {
		t.Errorf("a refused attachment wrote: GCP holds %q", got)
	}
	if err := e.kube.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}

	// A second writer undoes every write of the attachment at once.
	before := e.emu.Stats().Methods[setMethod]
	var theirs atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil {
			if b, err := e.gcp.BackendServices.Get(project, "attach-web").Context(wctx).Do(); err == nil && gcp.RelativeName(b.SecurityPolicy) == ours {
				if op, err := e.gcp.BackendServices.SetSecurityPolicy(project, "attach-web", &compute.SecurityPolicyReference{SecurityPolicy: "attach-other"}).Context(wctx).Do(); err == nil {
					theirs.Add(1)
					_ = gcp.WaitForOperation(wctx, e.gcp, project, "", op)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-done })

	eventually(t, 2*waitFor, "the attachment to be Contested", func() error {
		e.get(t, at)
		if c := at.GetCondition(spa.TypeContested); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Contested=%s; Synced: %s", c.Status, at.GetCondition(xpv2.TypeSynced).Message)
		}
		return nil
	})
	contested := e.emu.Stats().Methods[setMethod]
	ours1 := contested - before - theirs.Load()
	if s := at.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, "contested: another writer set securityPolicy") {
		t.Errorf("Synced: want False naming the contest, got %s %s", s.Status, s.Message)
	}
	if c := at.Status.AtProvider.Contest; c == nil || c.Reversals != limit || c.Value != "projects/"+project+"/global/securityPolicies/attach-other" {
		t.Errorf("status.atProvider.contest: %+v", c)
	}
	// The first write came before the writer started: the fight cost
	// Limit-1 writes of ours.
	if ours1 > int64(limit-1) {
		t.Errorf("the attachment wrote %d times against the other writer before stopping; want at most %d", ours1, limit-1)
	}
	t.Logf("contested after %d writes of ours and %d of the other writer", ours1, theirs.Load())

	// No write follows while contested: three polls.
	time.Sleep(3 * poll)
	if n := e.emu.Stats().Methods[setMethod] - contested; n != 0 {
		t.Errorf("%d setSecurityPolicy calls after the contest; want none", n)
	}

	// The user acts: the other writer stops, and the reapply annotation
	// has the attachment write again.
	stop()
	<-done
	e.get(t, at)
	meta.AddAnnotations(at, map[string]string{v1alpha1.AnnotationReapply: "1"})
	if err := e.kube.Update(ctx, at); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, at)
	if got, c := field(), at.GetCondition(spa.TypeContested); got != ours || c.Status != corev1.ConditionFalse {
		t.Errorf("after reapply: GCP holds %q, Contested=%s", got, c.Status)
	}

	// Deleting it clears its own policy.
	if err := e.kube.Delete(ctx, at); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the attachment to be gone", func() error {
		err := e.kube.Get(ctx, client.ObjectKeyFromObject(at), at)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.New("still there")
	})
	if got := field(); got != "" {
		t.Errorf("after delete: GCP holds %q, want no policy", got)
	}
}

func newAttachment(ns, name string) *v1alpha1.SecurityPolicyAttachment {
	return &v1alpha1.SecurityPolicyAttachment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecurityPolicyAttachmentSpec{ForProvider: v1alpha1.SecurityPolicyAttachmentParameters{
			SecurityPolicyRef: &xpv2.NamespacedReference{Name: "attach-armor"},
			Target:            v1alpha1.AttachmentTarget{Kind: v1alpha1.TargetBackendService, Name: "attach-web"},
			Field:             v1alpha1.FieldSecurityPolicy}}}
}

// waitSynced waits until o's Synced condition has status and a message
// containing msg.
func (e *env) waitSynced(t *testing.T, o client.Object, status corev1.ConditionStatus, msg string) {
	t.Helper()
	c, ok := o.(interface {
		client.Object
		GetCondition(xpv2.ConditionType) xpv2.Condition
	})
	if !ok {
		t.Fatalf("%T has no conditions", o)
	}
	eventually(t, waitFor, o.GetName()+" Synced="+string(status), func() error {
		e.get(t, o)
		s := c.GetCondition(xpv2.TypeSynced)
		if s.Status != status || !strings.Contains(s.Message, msg) {
			b, _ := json.Marshal(o)
			return fmt.Errorf("Synced=%s: %s; the object: %s", s.Status, s.Message, b)
		}
		return nil
	})
}
