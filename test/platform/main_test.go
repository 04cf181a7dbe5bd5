// Package platform_test runs the platform team's path end to end with the real
// parts: Crossplane core v2.4.0 installs this repository's Configuration from
// an OCI registry, resolving the provider and the two functions it depends on;
// Crossplane runs them as pods on the real node `make test` boots (package
// test/framework/platform); the provider writes to the Cloud Armor emulator
// the suite runs, exposed to the node. An IPAllowlist is composed from
// Node objects (through the AddressSet the provider keeps from them) that the
// suite changes the way a cluster changes them, and each change is timed from
// the Node write to the emulator holding the right rules.
package platformsuite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	// token is what the suite's ProviderConfig sends and the emulator accepts.
	token = "platform-suite-token"
	// project is the ProviderConfig's project.
	project = "platform-project"
	// opLatency keeps each GCP operation RUNNING this long, as GCP does.
	opLatency = 100 * time.Millisecond
)

// env is the shared node, one emulator and the suite's client for a test.
// Crossplane on the node runs with the chart's defaults, its XR circuit
// breaker included: Node changes reach GCP through the provider alone, and
// wake Crossplane only through the allowlist's paced status.
type env struct {
	// cp is a client of the node's API server.
	cp   *controlplane.ControlPlane
	emu  *emulator.Running
	gcp  *compute.Service
	plat *platform.Platform
	// endpoint is the emulator's compute API as the provider's pod reaches it.
	endpoint string
	// xr names this test's IPAllowlist: examples/allowlist/ipallowlist.yaml
	// under a name of the test's own (applyXR). Crossplane keeps each XR's
	// circuit breaker by namespace and name for a day, and an open one drops
	// watch events for 5 minutes: a test reusing the name after another's
	// storm of edits would inherit it and wait on its 30 s probes.
	xr string
}

// setup attaches to the shared node and starts an emulator for the test,
// exposed to the node's pods. Its cleanup deletes what the test composed
// (while the emulator still answers the provider's deletes) and the Nodes it
// created, so the next test finds the node as the install left it.
func setup(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("platform: runs on the real node with Crossplane; skipped with -short")
	}
	e := &env{plat: platform.Attach(t, kube.SchemeT(t)), xr: "web-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))}
	e.cp = e.plat.Kube
	e.emu = emulator.Start(t, emulator.Options{OpLatency: opLatency, Auth: emulator.AuthToken, Token: token})
	var err error
	if e.gcp, err = e.emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(e.emu.Endpoint(), "http://"), "/compute/v1/")
	exposed, err := e.plat.Node.Expose(host)
	if err != nil {
		t.Fatal(err)
	}
	e.endpoint = "http://" + exposed + "/compute/v1/"
	// The provider reads the objects of serviceSources, objectSources and
	// configMapSources with its own ServiceAccount: the grant a user applies.
	if _, err := e.cp.Apply(context.Background(), repo.Path("examples", "allowlist", "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.plat.Cleanup(t) })
	return e
}

// node returns a Node of pool with an internal and (when external is not empty)
// an external address, as a cloud's node controller reports them.
func node(name, pool, internal, external string) *corev1.Node {
	// No kubelet runs for it: unschedulable, so no pod is placed on it.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"cloud.google.com/gke-nodepool": pool,
	}}, Spec: corev1.NodeSpec{Unschedulable: true}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internal}}
	if external != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external})
	}
	return n
}

// createNode creates nd, then writes its status as a cloud's node controller
// does after the kubelet registers the Node (status is a subresource). The
// status is a merge patch, not an update: the node lifecycle controller
// writes a new Node at once (its taints) and an update would conflict.
func createNode(ctx context.Context, c client.Client, nd *corev1.Node) error {
	status := nd.Status
	if err := c.Create(ctx, nd); err != nil {
		return err
	}
	orig := nd.DeepCopy()
	nd.Status = status
	return c.Status().Patch(ctx, nd, client.MergeFrom(orig))
}

// applyXR applies examples/allowlist/ipallowlist.yaml as it is, but named
// e.xr.
func (e *env) applyXR(ctx context.Context, t *testing.T) {
	t.Helper()
	xr := e.exampleXR(t)
	if err := e.cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(xr),
		client.FieldOwner(controlplane.FieldManager), client.ForceOwnership); err != nil {
		t.Fatalf("apply IPAllowlist %s: %v", e.xr, err)
	}
}

// exampleXR is examples/allowlist/ipallowlist.yaml, named e.xr.
func (e *env) exampleXR(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(repo.Path("examples", "allowlist", "ipallowlist.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xr := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &xr.Object); err != nil {
		t.Fatal(err)
	}
	xr.SetName(e.xr)
	return xr
}
