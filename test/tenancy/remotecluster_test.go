package tenancy

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// canaryToken is a remote cluster's credential that must reach its API
// server and nothing else: not a status, an event or the provider's log.
const canaryToken = "canary-kubeconfig-token-5d1f0c"

// canaryServer is a remote "API server" that records the bearer tokens it is
// sent and answers every request 401, as a real one does a token it does
// not know.
type canaryServer struct {
	srv *httptest.Server
	// addr is where the provider's pod reaches it.
	addr string
	mu   sync.Mutex
	seen map[string]int // Authorization header to count
}

func (s *suite) newCanaryServer(t *testing.T) *canaryServer {
	t.Helper()
	c := &canaryServer{seen: map[string]int{}}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen[r.Header.Get("Authorization")]++
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: http.StatusUnauthorized})
	}))
	t.Cleanup(c.srv.Close)
	addr, err := s.plat.Node.Expose(strings.TrimPrefix(c.srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	c.addr = addr
	return c
}

// saw is how many requests carried the bearer token tok.
func (c *canaryServer) saw(tok string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen["Bearer "+tok]
}

// kubeconfig reaches the server from the provider's pod, with its
// certificate (issued to example.com) verified, and user u.
func (c *canaryServer) kubeconfig(t *testing.T, u *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = &clientcmdapi.Cluster{Server: "https://" + c.addr, TLSServerName: "example.com",
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})}
	cfg.AuthInfos["u"] = u
	cfg.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "u"}
	cfg.CurrentContext = "remote"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *suite) kubeconfigSecret(t *testing.T, ns, name string, data []byte) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": data}}
	if err := s.Admin.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
}

// remoteSet creates an AddressSet of ns reading the cluster of Secret
// secret, as identity ProviderConfig when pc is set.
func (s *suite) remoteSet(t *testing.T, ns, name, secret string, pc *xpv2.ProviderConfigReference) *v1alpha1.AddressSet {
	t.Helper()
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressSetSpec{ProviderConfigRef: pc, Nodes: &v1alpha1.NodeSelector{Cluster: &v1alpha1.NodeCluster{
			KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: secret}}}}}
	if pc != nil {
		as.Spec.Nodes.Cluster.Identity = v1alpha1.IdentityProviderConfig
	}
	if err := s.Admin.Create(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	return as
}

// setSays is a condition: the AddressSet is Ready=False with every one of
// msgs in its message.
func (s *suite) setSays(as *v1alpha1.AddressSet, msgs ...string) func() error {
	return func() error {
		got := &v1alpha1.AddressSet{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(as), got); err != nil {
			return err
		}
		c := got.Status.GetCondition(xpv2.TypeReady)
		for _, m := range msgs {
			if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, m) {
				return fmt.Errorf("AddressSet %s: Ready=%s %q, want False saying %q", client.ObjectKeyFromObject(as), c.Status, c.Message, m)
			}
		}
		return nil
	}
}

// testRemoteClusterSecretStaysInNamespace: an AddressSet of tenant-a naming
// a kubeconfig Secret that exists only in tenant-b reads nothing of it: it
// says the Secret is not found in tenant-a, and the cluster tenant-b's
// Secret names is never called.
func (s *suite) testRemoteClusterSecretStaysInNamespace(t *testing.T) {
	remote := s.newCanaryServer(t)
	s.kubeconfigSecret(t, "tenant-b", "fleet-b", remote.kubeconfig(t, &clientcmdapi.AuthInfo{Token: "tenant-b-cluster-token"}))
	as := s.remoteSet(t, "tenant-a", "steals-fleet-b", "fleet-b", nil)
	refused := s.setSays(as, "Secret tenant-a/fleet-b not found", "own namespace tenant-a")
	s.Eventually(t, settle, "tenant-a's AddressSet naming tenant-b's Secret refused", refused)
	s.holds(t, window, "tenant-b's cluster never called", all(refused, func() error {
		if n := remote.saw("tenant-b-cluster-token"); n > 0 {
			return fmt.Errorf("the cluster of tenant-b's Secret got %d requests with its token", n)
		}
		return nil
	}))
}

// testRemoteClusterIdentityStaysInNamespace: identity ProviderConfig resolves
// the ProviderConfig in the AddressSet's own namespace only (tenant-b's is
// not found from tenant-a), and never hands a ClusterProviderConfig's token
// to a server the namespace names. Tenant-a's own ProviderConfig is the
// positive control: its token reaches the server.
func (s *suite) testRemoteClusterIdentityStaysInNamespace(t *testing.T) {
	remote := s.newCanaryServer(t)
	s.kubeconfigSecret(t, "tenant-a", "gke", remote.kubeconfig(t, &clientcmdapi.AuthInfo{}))
	s.create(t, `apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: only-b, namespace: tenant-b}
spec:
  projectID: proj-b
  credentials: {source: AccessToken, secretRef: {name: gcp-token, key: token}}`)

	otherNS := s.remoteSet(t, "tenant-a", "as-tenant-b", "gke", &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "only-b"})
	shared := s.remoteSet(t, "tenant-a", "as-platform", "gke", &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: cpcShared})
	own := s.remoteSet(t, "tenant-a", "as-tenant-a", "gke", &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"})

	refused := all(
		s.setSays(otherNS, "cannot get ProviderConfig", "not found"),
		s.setSays(shared, "a ClusterProviderConfig's identity is shared", "Use a ProviderConfig of namespace tenant-a"),
	)
	s.Eventually(t, settle, "identity ProviderConfig refused for tenant-b's ProviderConfig and the platform's ClusterProviderConfig", refused)
	s.Eventually(t, settle, "tenant-a's own ProviderConfig token sent, and refused by the server", all(
		s.setSays(own, "cannot read the cluster of Secret tenant-a/gke", "Unauthorized"),
		func() error {
			if remote.saw(tokenA) == 0 {
				return fmt.Errorf("the server saw no request with tenant-a's own token: the refusals above prove nothing")
			}
			return nil
		}))
	s.holds(t, window, "no other namespace's or the platform's token sent", all(refused, func() error {
		if n, m := remote.saw(tokenB), remote.saw(tokenShared); n+m > 0 {
			return fmt.Errorf("the server tenant-a names got tenant-b's token %d times and the platform's %d times", n, m)
		}
		return nil
	}))
}

// testRemoteClusterCredentialsNeverShown: a remote cluster's token is sent to
// its server (which refuses it) and appears nowhere else: not in the
// AddressSet's status, not in an event, not in the provider's log.
func (s *suite) testRemoteClusterCredentialsNeverShown(t *testing.T) {
	ctx := context.Background()
	remote := s.newCanaryServer(t)
	s.kubeconfigSecret(t, "tenant-a", "canary", remote.kubeconfig(t, &clientcmdapi.AuthInfo{Token: canaryToken}))
	as := s.remoteSet(t, "tenant-a", "canary", "canary", nil)
	s.Eventually(t, settle, "the canary cluster refuses the token, and the AddressSet says so", all(
		s.setSays(as, "cannot read the cluster of Secret tenant-a/canary (https://"+remote.addr+")", "Unauthorized"),
		func() error {
			if remote.saw(canaryToken) == 0 {
				return fmt.Errorf("the server saw no request with the kubeconfig's token")
			}
			return nil
		}))

	got := &v1alpha1.AddressSet{}
	if err := s.Admin.Get(ctx, client.ObjectKeyFromObject(as), got); err != nil {
		t.Fatal(err)
	}
	status, _ := json.Marshal(got.Status)
	events := &corev1.EventList{}
	if err := s.Admin.List(ctx, events, client.InNamespace("tenant-a")); err != nil {
		t.Fatal(err)
	}
	var messages []string
	for _, e := range events.Items {
		messages = append(messages, e.Message)
	}
	for what, text := range map[string]string{
		"the AddressSet's status": string(status),
		"tenant-a's events":       strings.Join(messages, "\n"),
		"the provider's log":      s.plat.ProviderLog(ctx, 5000),
	} {
		if strings.Contains(text, canaryToken) {
			t.Errorf("%s holds the remote cluster's token", what)
		}
	}
}
