package addressset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/netguard"
)

// fakeAPIServer is a remote cluster's API server on loopback: lists answer
// with list, watches stay open and silent. It counts the requests and the
// bytes it got written.
type fakeAPIServer struct {
	srv      *httptest.Server
	requests atomic.Int32
	written  atomic.Int64
}

func newFakeAPIServer(t *testing.T, list http.HandlerFunc) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.URL.Query().Get("watch") == "true" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		list(&countingWriter{ResponseWriter: w, n: &f.written}, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// kubeconfig reaches f as a token user, its certificate verified.
func (f *fakeAPIServer) kubeconfig(t *testing.T) []byte {
	return kubeconfigOf(t, &clientcmdapi.Cluster{Server: f.srv.URL, CertificateAuthorityData: caOf(t, f.srv)}, &clientcmdapi.AuthInfo{Token: "tok"})
}

func nodeOf(name string, labels map[string]string) corev1.Node {
	return corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "198.51.100.1"}}}}
}

func writeList(w http.ResponseWriter, cont string, nodes ...corev1.Node) {
	_ = json.NewEncoder(w).Encode(&corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "1", Continue: cont}, Items: nodes})
}

// clock is a test's time, moved on by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// readUntil reads as until done, moving the clock (unless nil) past
// RemoteFirstSync once the server has been asked, so that a new cluster's
// failure is Unreadable at once, and returns what Read returned last.
func readUntil(t *testing.T, c *clusters, clk *clock, as *v1alpha1.AddressSet, srv *fakeAPIServer, done func(Collected, error) bool) (Collected, error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got Collected
	var err error
	for time.Now().Before(deadline) {
		got, _, err = c.Read(context.Background(), as)
		if done(got, err) {
			return got, err
		}
		if clk != nil && srv.requests.Load() > 0 {
			clk.Add(RemoteFirstSync)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got, err
}

func remoteFixture(t *testing.T, kubeconfig []byte, dial *netguard.Policy, b Bounds) (*clusters, *clock, *v1alpha1.AddressSet) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "eu-1"}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	c := testClusters(t, clk.now, []client.Object{sec}...)
	c.now, c.dial, c.bounds = clk.Now, dial, b
	as := remoteSet("eu-1", "", nil)
	as.Spec.Nodes.MatchLabels = map[string]string{"pool": "web"}
	return c, clk, as
}

var loopbackAllowed = netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil, nil)

// TestRemoteReach checks, by what a remote server on loopback receives
// and what the AddressSet is told, that a remote cluster is reached only
// where the dial policy allows, and that the server's words never reach the
// set's status.
func TestRemoteReach(t *testing.T) {
	web := nodeOf("web-1", map[string]string{"pool": "web"})
	secretBody := "ignore previous instructions; metadata token ya29.leaked"
	type want struct {
		Requests bool   // the server got a request
		Nodes    int    // the set's Nodes, when read
		Err      string // a part of the Unreadable error
	}
	cases := map[string]struct {
		reason string
		dial   *netguard.Policy
		list   http.HandlerFunc
		want   want
	}{
		"LoopbackRefused": {
			reason: "A kubeconfig naming a server on loopback is refused before any connection, and says how to allow it.",
			dial:   netguard.New(nil, nil, nil),
			list:   func(w http.ResponseWriter, _ *http.Request) { writeList(w, "", web) },
			want:   want{Err: "refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr"},
		},
		"LoopbackAllowed": {
			reason: "The platform team's allowed CIDR lets the provider read it.",
			dial:   loopbackAllowed,
			list:   func(w http.ResponseWriter, _ *http.Request) { writeList(w, "", web) },
			want:   want{Requests: true, Nodes: 1},
		},
		"ErrorBodyNotShown": {
			reason: "An error answer is its status code in the set's status, not the server's text.",
			dial:   loopbackAllowed,
			list: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(secretBody))
			},
			want: want{Requests: true, Err: "the list of Nodes answered HTTP 403 Forbidden"},
		},
		"StatusMessageNotShown": {
			reason: "Nor the message of a Status the server writes.",
			dial:   loopbackAllowed,
			list: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
					Message: secretBody, Reason: metav1.StatusReason(secretBody), Code: http.StatusUnauthorized})
			},
			want: want{Requests: true, Err: "the list of Nodes answered HTTP 401 Unauthorized"},
		},
		"GarbageNotShown": {
			reason: "Nor an answer that is no Kubernetes object (client-go quotes it in its error).",
			dial:   loopbackAllowed,
			list: func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`<html>` + secretBody + `</html>`))
			},
			want: want{Requests: true, Err: "the list of Nodes failed; its error is not shown"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newFakeAPIServer(t, tc.list)
			c, clk, as := remoteFixture(t, srv.kubeconfig(t), tc.dial, DefaultBounds())
			if tc.want.Err == "" {
				clk = nil // a cluster that answers is read before RemoteFirstSync
			}
			got, err := readUntil(t, c, clk, as, srv, func(got Collected, err error) bool {
				return got.Nodes > 0 || (err != nil && tc.want.Err != "" && strings.Contains(err.Error(), tc.want.Err))
			})
			w := want{Requests: srv.requests.Load() > 0, Nodes: got.Nodes}
			if err != nil {
				w.Err = err.Error()
				if tc.want.Err != "" && strings.Contains(w.Err, tc.want.Err) {
					w.Err = tc.want.Err
				}
				if strings.Contains(err.Error(), "ya29") || strings.Contains(err.Error(), "ignore previous") {
					t.Errorf("%s\nthe set's error quotes the server: %v", tc.reason, err)
				}
			}
			if tc.want != w {
				t.Errorf("%s\nRead(...): want %+v, got %+v", tc.reason, tc.want, w)
			}
		})
	}
}

// TestRemoteBounds checks each bound by outcome: a remote server that
// answers beyond it makes the set Unreadable naming the bound, and the
// provider stops reading (the endless list's server could write only a
// little more than the bound).
func TestRemoteBounds(t *testing.T) {
	small := Bounds{ResponseBytes: 1 << 20, NodesPerCluster: 300, LabelBytesPerNode: 1024, ClustersPerNamespace: 2}
	node := func(i int) corev1.Node {
		return nodeOf(fmt.Sprintf("web-%d", i), map[string]string{"pool": "web", "cloud.google.com/gke-nodepool": "pool-1"})
	}
	cases := map[string]struct {
		reason  string
		list    http.HandlerFunc
		wantErr string
		maxSent int64 // what the server may have written, at most
	}{
		"EndlessList": {
			reason: "A list that never ends is cut at the response bound; the server could not write much more than it.",
			list: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`))
				for i := 0; r.Context().Err() == nil; i++ {
					b, _ := json.Marshal(node(i))
					if _, err := w.Write(append(b, ',')); err != nil {
						return
					}
				}
			},
			wantErr: "a response of the API server: over the provider's bound of 1048576 bytes per remote response (--max-remote-response-bytes)",
			maxSent: 16 << 20, // the bound, plus the socket buffers of both ends
		},
		"EndlessPages": {
			reason: "A list of small pages that never ends is cut at the Node bound.",
			list: func(w http.ResponseWriter, r *http.Request) {
				writeList(w, "more", node(1), node(2), node(3), node(4), node(5))
			},
			wantErr: "the cluster's Node list: over the provider's bound of 300 Nodes per remote cluster (--max-remote-nodes)",
		},
		"TooManyNodes": {
			reason: "A cluster with more Nodes than the bound is refused.",
			list: func(w http.ResponseWriter, _ *http.Request) {
				var nodes []corev1.Node
				for i := range 301 {
					nodes = append(nodes, node(i))
				}
				writeList(w, "", nodes...)
			},
			wantErr: "the cluster's Node list: over the provider's bound of 300 Nodes per remote cluster (--max-remote-nodes)",
		},
		"LabelBytes": {
			reason: "A Node with more label bytes than the bound is named, and its labels are not kept.",
			list: func(w http.ResponseWriter, _ *http.Request) {
				writeList(w, "", node(1), nodeOf("fat", map[string]string{"pool": "web", "x": strings.Repeat("a", 2000)}))
			},
			wantErr: "the labels of Node fat: over the provider's bound of 1024 label bytes per remote Node (--max-remote-node-label-bytes)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newFakeAPIServer(t, tc.list)
			c, clk, as := remoteFixture(t, srv.kubeconfig(t), loopbackAllowed, small)
			want := tc.wantErr
			_, err := readUntil(t, c, clk, as, srv, func(_ Collected, err error) bool {
				return err != nil && strings.Contains(err.Error(), want)
			})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s\nRead(...): want an Unreadable error saying %q, got %v", tc.reason, want, err)
			}
			var u *Unreadable
			if !errors.As(err, &u) {
				t.Errorf("%s\nRead(...): want an Unreadable error (last addresses held), got %T", tc.reason, err)
			}
			if tc.maxSent > 0 {
				if sent := srv.written.Load(); sent > tc.maxSent {
					t.Errorf("%s\nthe server wrote %d bytes, more than %d: the provider kept reading", tc.reason, sent, tc.maxSent)
				}
			}
		})
	}
}

// TestClustersPerNamespace checks that a namespace reads at most
// ClustersPerNamespace clusters, and that another namespace is not counted.
func TestClustersPerNamespace(t *testing.T) {
	c := testClusters(t, time.Now())
	c.bounds = Bounds{ClustersPerNamespace: 1}
	target := func(key string) *target {
		return &target{key: key, source: key, config: &rest.Config{Host: "https://127.0.0.1:1"}}
	}
	a1, a2 := types.NamespacedName{Namespace: "team-a", Name: "one"}, types.NamespacedName{Namespace: "team-a", Name: "two"}
	b1 := types.NamespacedName{Namespace: "team-b", Name: "one"}
	if _, err := c.attach(a1, target("a-eu"), 1); err != nil {
		t.Fatalf("the first cluster of team-a is refused: %v", err)
	}
	if _, err := c.attach(a2, target("a-eu"), 1); err != nil {
		t.Errorf("a second set of team-a reading the same cluster is refused: %v", err)
	}
	_, err := c.attach(a2, target("a-us"), 1)
	want := "the remote clusters of namespace team-a: over the provider's bound of 1 remote clusters per namespace (--max-remote-clusters-per-namespace)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a second cluster of team-a: want %q, got %v", want, err)
	}
	if _, err := c.attach(b1, target("b-eu"), 1); err != nil {
		t.Errorf("team-b is refused for team-a's clusters: %v", err)
	}
}

// TestPathOf checks which controller reconciles a set: another cluster's
// Nodes and instances on the remote workers, the provider's own Nodes on
// the local one, so that a slow remote source never holds a local set.
func TestPathOf(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   v1alpha1.AddressSetSpec
		want   path
	}{
		"LocalNodes": {reason: "The provider's own Nodes are read on the local worker.", spec: v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{}}, want: pathLocal},
		"RemoteNodes": {reason: "Another cluster's Nodes are read on the remote workers.",
			spec: v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{Cluster: &v1alpha1.NodeCluster{}}}, want: pathRemote},
		"Instances": {reason: "Instances are polled on the remote workers.", spec: v1alpha1.AddressSetSpec{Instances: &v1alpha1.InstanceSelector{}}, want: pathRemote},
		"NAT":       {reason: "Cloud NAT is polled on the remote workers.", spec: v1alpha1.AddressSetSpec{NAT: &v1alpha1.NATSelector{}}, want: pathRemote},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := pathOf(&v1alpha1.AddressSet{Spec: tc.spec}); got != tc.want {
				t.Errorf("%s\npathOf(...): want %d, got %d", tc.reason, tc.want, got)
			}
		})
	}
}
