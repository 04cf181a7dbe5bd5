package tenancy

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// exposedServer is a server the test runs on host loopback, exposed to the
// provider's pod on the node's bridge gateway (the one address the shared
// node allows, --allow-dial-cidr), counting what it receives.
type exposedServer struct {
	srv      *httptest.Server
	addr     string // where the pod reaches it
	requests atomic.Int32
	written  atomic.Int64
}

func (s *suite) newExposedServer(t *testing.T, tls bool, h func(http.ResponseWriter, *http.Request, *atomic.Int64)) *exposedServer {
	t.Helper()
	e := &exposedServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		h(w, r, &e.written)
	})
	if tls {
		e.srv = httptest.NewTLSServer(handler)
	} else {
		e.srv = httptest.NewServer(handler)
	}
	t.Cleanup(e.srv.Close)
	host := strings.TrimPrefix(strings.TrimPrefix(e.srv.URL, "https://"), "http://")
	addr, err := s.plat.Node.Expose(host)
	if err != nil {
		t.Fatal(err)
	}
	e.addr = addr
	return e
}

// kubeconfigFor is a kubeconfig whose cluster is cl (its CA that of srv,
// when srv is a TLS server) and whose user has a token.
func kubeconfigFor(t *testing.T, cl *clientcmdapi.Cluster, srv *httptest.Server) []byte {
	t.Helper()
	if srv != nil && srv.TLS != nil && cl.CertificateAuthorityData == nil && !cl.InsecureSkipTLSVerify {
		cl.CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		cl.TLSServerName = "example.com"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["remote"] = cl
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "hostile-tenant-token"}
	cfg.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: "u"}
	cfg.CurrentContext = "remote"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *exposedServer) noRequests() error {
	if n := e.requests.Load(); n > 0 {
		return fmt.Errorf("the tenant's server received %d requests", n)
	}
	return nil
}

// testRemoteClusterReach: a remote cluster's server may not be an address
// the platform has not allowed (loopback, link-local, the cluster's own
// Service and API server), nor reached in clear, unverified or through a
// proxy. Each AddressSet says why, and what to do; the servers the tenant
// runs (reachable, as the shared node allows their address) receive
// nothing. RemoteCredentialsNeverShown is the positive control: a verified
// https server at that address is reached.
func (s *suite) testRemoteClusterReach(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request, _ *atomic.Int64) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}
	plain := s.newExposedServer(t, false, ok)
	unverified := s.newExposedServer(t, true, ok)
	proxied := s.newExposedServer(t, true, ok)
	proxy := s.newExposedServer(t, false, ok)

	cases := map[string]struct {
		cluster *clientcmdapi.Cluster
		srv     *httptest.Server
		says    []string
		servers []*exposedServer // must receive nothing
	}{
		"loopback": {
			cluster: &clientcmdapi.Cluster{Server: "https://127.0.0.1:8443", CertificateAuthorityData: []byte("x")},
			says:    []string{"connection to 127.0.0.1:8443 refused: loopback address", "--allow-dial-cidr"},
		},
		"link-local": {
			cluster: &clientcmdapi.Cluster{Server: "https://169.254.169.254", CertificateAuthorityData: []byte("x")},
			says:    []string{"connection to 169.254.169.254 refused: link-local address"},
		},
		"service-ip": {
			cluster: &clientcmdapi.Cluster{Server: "https://10.96.0.10:53", CertificateAuthorityData: []byte("x")},
			says:    []string{"connection to 10.96.0.10:53 refused: private address"},
		},
		"api-server": {
			cluster: &clientcmdapi.Cluster{Server: "https://10.96.0.1", CertificateAuthorityData: []byte("x")},
			says:    []string{"connection to 10.96.0.1 refused: the cluster's own API server Service"},
		},
		"api-server-name": {
			cluster: &clientcmdapi.Cluster{Server: "https://kubernetes.default.svc", CertificateAuthorityData: []byte("x")},
			says:    []string{"connection to kubernetes.default.svc (10.96.0.1) refused", "--allow-dial-host=kubernetes.default.svc"},
		},
		"http": {
			cluster: &clientcmdapi.Cluster{Server: "http://" + plain.addr},
			says:    []string{"its cluster's server is http, which is refused"},
			servers: []*exposedServer{plain},
		},
		"skip-verify": {
			cluster: &clientcmdapi.Cluster{Server: "https://" + unverified.addr, InsecureSkipTLSVerify: true},
			says:    []string{"insecure-skip-tls-verify, which is refused"},
			servers: []*exposedServer{unverified},
		},
		"proxy-url": {
			cluster: &clientcmdapi.Cluster{Server: "https://" + proxied.addr, ProxyURL: "http://" + proxy.addr},
			srv:     proxied.srv,
			says:    []string{"names a proxy-url, which is refused"},
			servers: []*exposedServer{proxied, proxy},
		},
	}
	var refused []func() error
	for name, tc := range cases {
		s.kubeconfigSecret(t, "tenant-a", "reach-"+name, kubeconfigFor(t, tc.cluster, tc.srv))
		as := s.remoteSet(t, "tenant-a", "reach-"+name, "reach-"+name, nil)
		says := s.setSays(as, tc.says...)
		refused = append(refused, says)
		for _, srv := range tc.servers {
			refused = append(refused, srv.noRequests)
		}
	}
	s.Eventually(t, settle, "every hostile remote cluster refused, saying why", all(refused...))
	s.holds(t, window, "the tenant's servers receive nothing", all(refused...))
}

// testRemoteClusterEndlessList: a remote server that streams an endless Node
// list is read up to the provider's bound of bytes per response and no
// further: the AddressSet names the bound, and the server could write only
// a little more than the bound before the provider stopped reading.
func (s *suite) testRemoteClusterEndlessList(t *testing.T) {
	const bound = 128 << 20 // --max-remote-response-bytes's default
	node, _ := json.Marshal(corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": strings.Repeat("x", 60)}}})
	endless := s.newExposedServer(t, true, func(w http.ResponseWriter, r *http.Request, written *atomic.Int64) {
		if r.URL.Query().Get("watch") == "true" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		n, _ := w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`))
		written.Add(int64(n))
		for r.Context().Err() == nil {
			n, err := w.Write(append(node, ','))
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	// Another tenant's allowlist of local Nodes, in GCP before the endless
	// list starts: its Node changes must keep reaching GCP at their usual
	// pace while tenant-a's source is being cut.
	probe := s.localNodeAllowlist(t, "tenant-b", projB, "probe")
	s.kubeconfigSecret(t, "tenant-a", "endless", kubeconfigFor(t, &clientcmdapi.Cluster{Server: "https://" + endless.addr}, endless.srv))
	as := s.remoteSet(t, "tenant-a", "endless", "endless", nil)
	s.Eventually(t, settle, "the endless list cut at the response bound", s.setSays(as, "over the provider's bound", "--max-remote-response-bytes"))
	if took := probe.addNode(t, "198.51.100.77"); took > 5*time.Second {
		t.Errorf("while tenant-a's endless list was read, a Node of tenant-b's allowlist reached GCP in %s, want at most 5 s", took.Round(10*time.Millisecond))
	}
	// Per list: the bound, plus what the sockets and the node's forward
	// buffer; the reflector lists again after a backoff, so allow a few.
	if got, most := endless.written.Load()/max(int64(endless.requests.Load()), 1), int64(bound+32<<20); got > most {
		t.Errorf("the endless server wrote %d bytes a request, more than %d: the provider read past its bound", got, most)
	}
}

// nodeProbe is an allowlist of local Nodes labelled for it, in GCP.
type nodeProbe struct {
	s               *suite
	project, policy string
	label           string
}

// localNodeAllowlist makes a SecurityPolicyAllowlist in ns, through its
// ProviderConfig "default", allowing the local Nodes labelled
// tenancy-probe=name in a policy of its own, and waits for the policy in GCP.
func (s *suite) localNodeAllowlist(t *testing.T, ns, project, name string) *nodeProbe {
	t.Helper()
	p := &nodeProbe{s: s, project: project, policy: "probe-" + name, label: name}
	s.create(t, fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: SecurityPolicyAllowlist
metadata: {name: %s, namespace: %s}
spec:
  securityPolicy: %s
  createPolicy: {defaultAction: "deny(403)"}
  priorityRange: {first: 1000, last: 1009}
  providerConfigRef: {kind: ProviderConfig, name: default}
  sources:
  - {name: office, cidrs: ["203.0.113.0/26"]}
  - name: probe
    nodes: {matchLabels: {tenancy-probe: %s}, shrinkHoldSeconds: 0}`, name, ns, p.policy, name))
	s.Eventually(t, settle, "policy "+p.policy+" in GCP with the office range", p.allows("203.0.113.0/26"))
	return p
}

// allows is a condition: the probe's policy has a rule allowing cidr.
func (p *nodeProbe) allows(cidr string) func() error {
	return func() error {
		sp, err := p.s.gcpPolicy(p.project, p.policy)
		if err != nil {
			return err
		}
		for _, r := range sp.Rules {
			if r.Action == "allow" && r.Match != nil && r.Match.Config != nil && slices.Contains(r.Match.Config.SrcIpRanges, cidr) {
				return nil
			}
		}
		return fmt.Errorf("policy %s does not allow %s yet", p.policy, cidr)
	}
}

// addNode registers a Node with external address ip, labelled for the
// probe (as a cloud's node controller does: created, then its status), and
// returns how long GCP took to allow it. The Node is deleted at t's end.
func (p *nodeProbe) addNode(t *testing.T, ip string) time.Duration {
	t.Helper()
	ctx := context.Background()
	// No kubelet runs for it: unschedulable, so no pod is placed on it.
	nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "tenancy-" + p.label, Labels: map[string]string{"tenancy-probe": p.label}},
		Spec: corev1.NodeSpec{Unschedulable: true}}
	start := time.Now()
	if err := p.s.Admin.Create(ctx, nd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.s.Admin.Delete(context.Background(), nd) })
	orig := nd.DeepCopy()
	nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: ip}}
	if err := p.s.Admin.Status().Patch(ctx, nd, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	s := p.s
	s.Eventually(t, settle, "GCP allows Node "+nd.Name, p.allows(ip+"/32"))
	took := time.Since(start)
	t.Logf("Node %s (%s) reached GCP in %s", nd.Name, ip, took.Round(10*time.Millisecond))
	return took
}
