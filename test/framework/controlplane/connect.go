package controlplane

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Connect returns a ControlPlane for a cluster that is already running (the
// real node `make test` boots), from its admin kubeconfig: Client, Config,
// Kubeconfig and Apply work as for one Start made; Stop does nothing.
func Connect(kubeconfigPath string, scheme *runtime.Scheme) (*ControlPlane, error) {
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	raw, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kubeconfigPath, err)
	}
	// The suites create hundreds of objects in bursts; client-go's default of
	// 5 requests a second would time them, not the system under test.
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Config: cfg, Client: c, Kubeconfig: raw, KubeconfigPath: kubeconfigPath, URL: cfg.Host,
		opts: Options{Logf: func(string, ...any) {}}}
	cp.stopOnce.Do(func() {}) // not ours to stop
	return cp, nil
}
