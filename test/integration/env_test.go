// Package integration tests the provider against the real kube-apiserver and
// etcd (built from the module proxy; see `make tools`) and the Cloud Armor
// emulator spoken to by the official compute/v1 client.
package integration

import (
	"context"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	armorcontroller "github.com/armorplane/provider-cloudarmor/internal/controller"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
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

// startProvider adds an emulator and runs the provider's controllers
// in-process against both, with a short poll so drift tests finish quickly.
func startProvider(t *testing.T, emuOpts emulator.Options, opts ...func(*armorcontroller.Options)) *env {
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

	// Several tests of this package each start a provider: controller names
	// repeat across their managers.
	mgr, err := ctrl.NewManager(e.cp.Config, ctrl.Options{Scheme: e.kube.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	o := controller.Options{
		Logger:                  logging.NewNopLogger(),
		MaxConcurrentReconciles: 10,
		PollInterval:            poll,
		GlobalRateLimiter:       ratelimiter.NewGlobal(100),
		Features:                &feature.Flags{},
		Gate:                    new(gate.Gate[schemaGVK]),
	}
	o.Features.Enable(feature.EnableBetaManagementPolicies)
	snapshots := gcp.NewSnapshotCache(gcp.WithSnapshotTTL(time.Second))
	queue := gcp.NewWriteQueue()
	build := func(ctx context.Context, creds gcp.Credentials) (*gcp.Client, error) {
		return gcp.NewClientForCredentials(ctx, creds, snapshots, queue, gcp.WithProjectReadTTL(poll))
	}
	usage := resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1beta1.ProviderConfigUsage{})
	conn := connector.New(mgr.GetClient(), mgr.GetAPIReader(), usage, gcp.NewClientCache(0), build)
	so := armorcontroller.Options{Options: setup.Options{Options: o, Connector: conn, Timeout: 30 * time.Second,
		Indexes: &ownership.Indexes{}, Labeler: ownership.NewLabeler("integration"), PolicyWake: setup.NewWake()}}
	for _, fn := range opts {
		fn(&so)
	}
	if err := armorcontroller.SetupGated(mgr, so); err != nil {
		t.Fatal(err)
	}
	// No CRD gate controller runs here: the CRDs exist before the manager
	// starts, so open the gates directly.
	for _, gvk := range managedKinds() {
		o.Gate.Set(gvk, true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	e.createProviderConfig(t)
	return e
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
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "default", Name: "emulator-token"}, Key: "token"}}}}
	for _, o := range []client.Object{secret, cpc} {
		if err := e.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
