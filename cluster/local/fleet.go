package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What examples/allowlist/fleet reads. `make run` has one cluster: its
// workload cluster is that cluster again, read as another cluster would be
// (a kubeconfig Secret holding a ServiceAccount token that may only read
// Nodes, through the API server's Service), and its private node pool is
// two instances seeded in the emulator.
const (
	fleetReader     = "fleet-reader"
	fleetSecret     = "workload-eu-kubeconfig"
	fleetSecretKey  = "value" // Cluster API's key
	fleetZone       = "us-central1-a"
	fleetPoolLabel  = "goog-k8s-node-pool-name"
	fleetServer     = "https://kubernetes.default.svc"
	fleetNamespace  = "default"
	fleetTokenAfter = time.Minute
)

// fleetInstances are the private node pools' instances (batch for the fleet
// example, web for the instances example), and one of a pool neither must
// allow.
var fleetInstances = []struct{ name, pool, natIP string }{
	{"gke-batch-1", "batch", "35.30.0.1"},
	{"gke-batch-2", "batch", "35.30.0.2"},
	{"gke-web-1", "web", "35.30.1.1"}, // examples/allowlist/instances
	{"gke-other-1", "other", "35.30.9.1"},
}

// prepareFleet makes what the fleet example reads: the kubeconfig Secret of
// its workload cluster and its instances.
func prepareFleet(ctx context.Context, c client.Client, emulator string) error {
	kubeconfig, err := readerKubeconfig(ctx, c)
	if err != nil {
		return fmt.Errorf("fleet example: %w", err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleetSecret, Namespace: fleetNamespace},
		Data: map[string][]byte{fleetSecretKey: kubeconfig}}
	if err := c.Create(ctx, s); err != nil && !kerrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet example: %w", err)
	}
	return seedInstances(ctx, emulator)
}

// readerKubeconfig is a kubeconfig of a ServiceAccount that may get, list
// and watch Nodes and nothing else, as a platform team would hand out for
// a workload cluster.
func readerKubeconfig(ctx context.Context, c client.Client) ([]byte, error) {
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: fleetReader, Namespace: fleetNamespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fleetReader},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fleetReader},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fleetReader},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: fleetReader, Namespace: fleetNamespace}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleetReader + "-token", Namespace: fleetNamespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: fleetReader}}, Type: corev1.SecretTypeServiceAccountToken},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !kerrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	// The token controller fills the Secret in.
	tok := &corev1.Secret{}
	for deadline := time.Now().Add(fleetTokenAfter); ; {
		err := c.Get(ctx, types.NamespacedName{Namespace: fleetNamespace, Name: fleetReader + "-token"}, tok)
		if err == nil && len(tok.Data[corev1.ServiceAccountTokenKey]) > 0 && len(tok.Data[corev1.ServiceAccountRootCAKey]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the token of ServiceAccount %s was not issued within %s", fleetReader, fleetTokenAfter)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["workload-eu"] = &clientcmdapi.Cluster{Server: fleetServer, CertificateAuthorityData: tok.Data[corev1.ServiceAccountRootCAKey]}
	kc.AuthInfos[fleetReader] = &clientcmdapi.AuthInfo{Token: string(tok.Data[corev1.ServiceAccountTokenKey])}
	kc.Contexts["workload-eu"] = &clientcmdapi.Context{Cluster: "workload-eu", AuthInfo: fleetReader}
	kc.CurrentContext = "workload-eu"
	return clientcmd.Write(*kc)
}

// seedInstances inserts the private node pool's instances in the emulator,
// as GKE would create them, and waits until they exist.
func seedInstances(ctx context.Context, emulator string) error {
	svc, err := compute.NewService(ctx, option.WithEndpoint("http://"+emulator+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		return err
	}
	for _, in := range fleetInstances {
		_, err := svc.Instances.Insert(demoProject, fleetZone, &compute.Instance{Name: in.name,
			MachineType: "zones/" + fleetZone + "/machineTypes/e2-medium",
			Labels:      map[string]string{fleetPoolLabel: in.pool},
			NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{
				{Name: "external-nat", Type: "ONE_TO_ONE_NAT", NatIP: in.natIP}}}},
		}).Context(ctx).Do()
		if err != nil {
			return fmt.Errorf("fleet example: insert instance %s: %w", in.name, err)
		}
	}
	for _, in := range fleetInstances {
		for {
			if _, err := svc.Instances.Get(demoProject, fleetZone, in.name).Context(ctx).Do(); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
