// Package integration tests the provider against the real kube-apiserver and
// etcd (built from the module proxy; see `make tools`) and the Cloud Armor
// emulator spoken to by the official compute/v1 client.
package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/cmd/provider/app"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const (
	project = "it-project"
	token   = "integration-token"
	poll    = 3 * time.Second
)

type env struct {
	kube client.Client
	cp   *controlplane.ControlPlane
	emu  *emulator.Running
	gcp  *compute.Service // talks to the emulator directly, behind the provider's back
	// stopProvider stops the provider startProvider started.
	stopProvider func()
}

// startControlPlane starts kube-apiserver + etcd with our CRDs installed.
func startControlPlane(t *testing.T) *env {
	t.Helper()
	cp := controlplane.StartT(t, controlplane.Options{
		CRDDirs: []string{repo.CRDDir()},
		Scheme:  kube.SchemeT(t),
	})
	return &env{kube: cp.Client, cp: cp}
}

// startProvider adds an emulator and runs the provider in-process against
// both, built by the provider's own wiring (app.NewManager, as cmd/provider
// runs it) from the command line providerArgs, with a short poll so drift
// tests finish quickly.
func startProvider(t *testing.T, emuOpts emulator.Options) *env {
	t.Helper()
	e := startControlPlane(t)
	emuOpts.Auth, emuOpts.Token = emulator.AuthToken, token
	e.emu = emulator.Start(t, emuOpts)

	svc, err := compute.NewService(context.Background(), option.WithEndpoint(e.emu.Endpoint()),
		option.WithTokenSource(staticToken(token)))
	if err != nil {
		t.Fatal(err)
	}
	e.gcp = svc

	e.stopProvider = e.runProvider(t)
	e.createProviderConfig(t)
	return e
}

// runProvider runs the provider in-process against e's control plane and
// emulator, with providerArgs and extra. The returned function stops it
// (the test's end does too).
func (e *env) runProvider(t *testing.T, extra ...string) (stop func()) {
	t.Helper()
	// Several tests of this package each start a provider: each registers
	// its metrics in a registry of its own, and controller names repeat
	// across their managers.
	p := app.Process{Config: e.cp.Config, Metrics: prometheus.NewRegistry(), ManyManagers: true}
	// The platform team's grant: namespaced ProviderConfigs may point at the
	// emulator.
	args := append(append([]string{}, providerArgs...), "--namespaced-endpoint="+e.emu.Endpoint())
	mgr, closeProvider, err := app.NewManager(append(args, extra...), app.Provider(), p, logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done; closeProvider() }) }
	t.Cleanup(stop)
	return stop
}

// providerArgs is the provider's command line in these tests: a poll short
// enough for drift tests, no jitter, snapshots that expire within a second,
// no metrics or health endpoints (several providers run in one process), and
// loopback allowed: the tests' second API server and emulator are there,
// which the provider reaches on a tenant's behalf only where allowed.
var providerArgs = []string{
	"--poll=" + poll.String(), "--poll-jitter=0s", "--snapshot-ttl=1s", "--timeout=30s",
	"--max-concurrent-reconciles=10", "--metrics-bind-address=0", "--health-probe-bind-address=0",
	"--allow-dial-cidr=127.0.0.1/32",
}

func (e *env) createProviderConfig(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "emulator-token"},
		StringData: map[string]string{"token": token}}
	endpoint := e.emu.Endpoint()
	cpc := &v1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1beta1.ClusterProviderConfigSpec{ProjectID: project, Endpoint: &endpoint,
			Credentials: v1beta1.ClusterProviderCredentials{Source: v1beta1.CredentialsSourceAccessToken,
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "default", Name: "emulator-token"}, Key: "token"}},
			// The attachments of these tests write backend services named
			// attach-* (any namespace) and shared-* (namespaces labelled
			// granted=shared); no other backend is granted.
			AttachmentGrants: []v1beta1.AttachmentGrant{
				{Targets: []v1beta1.AttachmentGrantTarget{{Kind: "BackendService", Names: []string{"attach-*"}}}},
				{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"granted": "shared"}},
					Targets: []v1beta1.AttachmentGrantTarget{{Kind: "BackendService", Names: []string{"shared-*"}}}},
			}}}
	for _, o := range []client.Object{secret, cpc} {
		if err := e.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
