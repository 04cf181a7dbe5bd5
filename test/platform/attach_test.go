package platformsuite

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/dataplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// attachBackend is the backend service TestAttachTo's IPAllowlist names, made in the emulator
// as gcloud would make it.
const attachBackend = "web-frontend"

// TestAttachTo applies the example IPAllowlist naming a backend service in spec.attachTo:
// Crossplane composes its SecurityPolicyAttachment, the backend service's securityPolicy
// names the allowlist's policy in GCP, and the XR is Attached and Ready. Removing the field
// detaches the policy; so does deleting the XR, after which the policy itself goes.
func TestAttachTo(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	op, err := e.gcp.BackendServices.Insert(project, &compute.BackendService{Name: attachBackend, LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	ours := "projects/" + project + "/global/securityPolicies/" + policyName
	attachTo := []any{map[string]any{"backendService": attachBackend}}

	t.Run("Attach", func(t *testing.T) {
		begin := time.Now()
		e.applyXRWith(ctx, t, attachTo)
		e.waitField(t, ours)
		e.waitAttached(ctx, t, "True", "Attached")
		e.waitXRReady(ctx, t, len(offices))
		t.Logf("backend service %s names %s, the IPAllowlist Attached and Ready, %.1fs after it was applied", attachBackend, policyName, time.Since(begin).Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("NodeJoinsOnTheDataPlane", func(t *testing.T) {
		// A request through the backend service, evaluated by the emulator's
		// data plane against the policy the backend names at that moment,
		// from the address a Node about to join the pool will have: denied
		// until the Node joins, allowed once the allowlist has it in GCP,
		// denied again once it leaves.
		dp, err := dataplane.Listen("127.0.0.1:0", e.emu, dataplane.Options{TrustClientIPHeader: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = dp.Close() }()
		c := newCluster(e)
		joining := newIP(1)
		status := func() (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dp.Addr()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = attachBackend + "." + project + ".backend.local"
			req.Header.Set(dataplane.ClientIPHeader, joining)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			return res.StatusCode, res.Header.Get(dataplane.VerdictHeader)
		}
		waitStatus := func(want int, what string) time.Duration {
			t.Helper()
			begin := time.Now()
			wait.Eventually(t, converge, fmt.Sprintf("a request from %s to be answered %d %s", joining, want, what), func() error {
				if got, verdict := status(); got != want {
					return fmt.Errorf("answered %d: %s", got, verdict)
				}
				return nil
			})
			return time.Since(begin)
		}
		if got, verdict := status(); got != http.StatusForbidden {
			t.Fatalf("before the Node joins, a request from %s was answered %d (%s), want 403", joining, got, verdict)
		}
		c.addNode(ctx, t, pool)
		joined := waitStatus(http.StatusOK, "once its Node joins the pool")
		c.deleteNode(ctx, t)
		left := waitStatus(http.StatusForbidden, "once its Node leaves")
		t.Logf("data plane: a request from the Node's address answered 200 %.1fs after the Node joined, 403 %.1fs after it left", joined.Seconds(), left.Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("RemoveDetaches", func(t *testing.T) {
		begin := time.Now()
		e.applyXRWith(ctx, t, nil)
		e.waitField(t, "")
		e.waitAttached(ctx, t, "False", "NoTarget")
		// The field is cleared first, then the attachment's finalizer goes.
		wait.Eventually(t, converge, "the SecurityPolicyAttachment to be gone", func() error {
			if n := e.attachments(ctx, t); n > 0 {
				return fmt.Errorf("%d SecurityPolicyAttachments remain", n)
			}
			return nil
		})
		t.Logf("attachTo removed: backend service %s detached %.1fs later", attachBackend, time.Since(begin).Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("DeleteDetaches", func(t *testing.T) {
		e.applyXRWith(ctx, t, attachTo)
		e.waitField(t, ours)
		e.waitAttached(ctx, t, "True", "Attached")
		xr := &unstructured.Unstructured{}
		xr.SetGroupVersionKind(xrGVK)
		xr.SetNamespace("default")
		xr.SetName(e.xr)
		begin := time.Now()
		if err := e.cp.Client.Delete(ctx, xr); err != nil {
			t.Fatal(err)
		}
		e.waitField(t, "")
		detached := time.Since(begin)
		// GCP refuses to delete a policy a backend uses: the allowlist deletes it once the
		// attachment has detached it.
		wait.Eventually(t, 2*converge, "the XR, its attachment and the GCP policy to be gone", func() error {
			if err := e.plat.Err(); err != nil {
				t.Fatal(err)
			}
			if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(xr), xr); !kerrors.IsNotFound(err) {
				return fmt.Errorf("XR still there (%v)", err)
			}
			if n := e.attachments(ctx, t); n > 0 {
				return fmt.Errorf("%d SecurityPolicyAttachments remain", n)
			}
			if _, err := e.gcp.SecurityPolicies.Get(project, policyName).Do(); err == nil {
				return fmt.Errorf("GCP policy %s still exists", policyName)
			}
			return nil
		})
		t.Logf("XR deleted: backend service detached %.1fs, XR and GCP policy gone %.1fs after the delete", detached.Seconds(), time.Since(begin).Seconds())
	})
}

// applyXRWith applies the example IPAllowlist, named e.xr, with spec.attachTo set to targets
// (none when nil).
func (e *env) applyXRWith(ctx context.Context, t *testing.T, targets []any) {
	t.Helper()
	xr := e.exampleXR(t)
	if targets != nil {
		if err := unstructured.SetNestedSlice(xr.Object, targets, "spec", "attachTo"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(xr),
		client.FieldOwner(controlplane.FieldManager), client.ForceOwnership); err != nil {
		t.Fatalf("apply IPAllowlist %s: %v", e.xr, err)
	}
}

// waitField waits until the backend service's securityPolicy names want ("" for none).
func (e *env) waitField(t *testing.T, want string) {
	t.Helper()
	wait.Eventually(t, converge, fmt.Sprintf("backend service %s's securityPolicy to be %q", attachBackend, want), func() error {
		if err := e.plat.Err(); err != nil {
			t.Fatal(err)
		}
		b, err := e.gcp.BackendServices.Get(project, attachBackend).Do()
		if err != nil {
			return err
		}
		if got := gcp.RelativeName(b.SecurityPolicy); got != want {
			return fmt.Errorf("securityPolicy %q; the IPAllowlist says %s", got, e.xrSays(t))
		}
		return nil
	})
}

// waitAttached waits until the IPAllowlist's Attached condition has status and reason.
func (e *env) waitAttached(ctx context.Context, t *testing.T, status, reason string) {
	t.Helper()
	wait.Eventually(t, converge, "the IPAllowlist's Attached condition to be "+status+" "+reason, func() error {
		if st, r, msg := e.xrCondition(ctx, t, "Attached"); st != status || r != reason {
			return fmt.Errorf("Attached=%s %s %q", st, r, msg)
		}
		return nil
	})
}

// attachments counts the SecurityPolicyAttachments of namespace default.
func (e *env) attachments(ctx context.Context, t *testing.T) int {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cloudarmor.armorplane.io/v1alpha1")
	l.SetKind("SecurityPolicyAttachmentList")
	if err := e.cp.Client.List(ctx, l, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}
