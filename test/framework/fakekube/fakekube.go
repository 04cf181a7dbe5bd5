// Package fakekube is a lightweight fake Kubernetes API server: one process
// serves many clusters of realistic GKE Nodes over https, each on its own
// port under its own base path (https://127.0.0.1:PORT/clusters/I), so a
// benchmark can point a provider at a hundred remote clusters of a
// thousand Nodes without a kube-apiserver and etcd for each.
//
// It answers what an informer of Nodes asks: GET /api/v1/nodes, a list
// with a resourceVersion and limit/continue paging, and ?watch=true (with
// sendInitialEvents too, client-go's streaming list), a stream of MODIFIED
// events as the kubelets' status updates come (Beat,
// Heartbeats). Also /version and /api, /api/v1 discovery. Every request
// needs the cluster's bearer token. Nodes are rendered from a template on
// each read, so a hundred thousand of them cost the fake a few MB.
package fakekube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options says what the server serves.
type Options struct {
	// Clusters is how many clusters, Nodes how many Nodes each.
	Clusters, Nodes int
	// Token is the bearer token every request must carry.
	Token string
}

// Stats counts what the server answered.
type Stats struct {
	Lists, Watches, Events, Bytes int64
}

// Server is the running fake.
type Server struct {
	token    string
	caPEM    []byte
	clusters []*cluster
	servers  []*http.Server
	started  time.Time

	lists, watches, events, bytes atomic.Int64
}

// cluster is one cluster's Nodes: their last write's resourceVersion and
// heartbeat, and the watches open on them.
type cluster struct {
	i      int
	prefix string
	url    string
	tmpl   []segment

	mu       sync.Mutex
	rv       int64
	nodeRV   []int64
	beat     []int64 // unix seconds of the Node's last heartbeat
	watchers map[*watcher]struct{}
}

// watcher is one open watch: the Nodes written since, in order.
type watcher struct {
	ch     chan int
	closed bool // dropped for falling behind; guarded by cluster.mu
}

// watchBuffer is how many events a watch may fall behind before it is
// ended (the client watches again, as after any ended watch).
const watchBuffer = 8192

// Start serves o.Clusters clusters, each on its own loopback port.
func Start(o Options) (*Server, error) {
	if o.Clusters < 1 || o.Nodes < 0 {
		return nil, errors.New("fakekube: at least one cluster and no negative Node count")
	}
	caPEM, cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s := &Server{token: o.Token, caPEM: caPEM, started: time.Now()}
	now := time.Now().Unix()
	for i := range o.Clusters {
		t, err := nodeTemplate(i)
		if err != nil {
			return nil, err
		}
		c := &cluster{i: i, prefix: fmt.Sprintf("/clusters/%d", i), tmpl: split(t), rv: int64(o.Nodes) + 1,
			nodeRV: make([]int64, o.Nodes), beat: make([]int64, o.Nodes), watchers: map[*watcher]struct{}{}}
		for j := range c.nodeRV {
			c.nodeRV[j], c.beat[j] = int64(j)+1, now
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, err
		}
		c.url = "https://" + l.Addr().String() + c.prefix
		hs := &http.Server{Handler: s.handler(c), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 10 * time.Second}
		s.clusters = append(s.clusters, c)
		s.servers = append(s.servers, hs)
		go func() { _ = hs.ServeTLS(l, "", "") }()
	}
	return s, nil
}

// Close stops every cluster's server.
func (s *Server) Close() {
	for _, hs := range s.servers {
		_ = hs.Close()
	}
}

// URL is cluster i's server, base path included.
func (s *Server) URL(i int) string { return s.clusters[i].url }

// CA is the PEM of the CA that signed the server's certificate.
func (s *Server) CA() []byte { return s.caPEM }

// Kubeconfig is a kubeconfig for cluster i: its https URL, the CA and the
// bearer token, all embedded.
func (s *Server) Kubeconfig(i int) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fleet"] = &clientcmdapi.Cluster{Server: s.URL(i), CertificateAuthorityData: s.caPEM}
	cfg.AuthInfos["fleet"] = &clientcmdapi.AuthInfo{Token: s.token}
	cfg.Contexts["fleet"] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: "fleet"}
	cfg.CurrentContext = "fleet"
	return clientcmd.Write(*cfg)
}

// Stats is what the server answered so far.
func (s *Server) Stats() Stats {
	return Stats{Lists: s.lists.Load(), Watches: s.watches.Load(), Events: s.events.Load(), Bytes: s.bytes.Load()}
}

// NodeJSON is Node j of cluster i as the server sends it now.
func (s *Server) NodeJSON(i, j int) []byte {
	c := s.clusters[i]
	c.mu.Lock()
	rv, beat := c.nodeRV[j], c.beat[j]
	c.mu.Unlock()
	return c.render(nil, j, rv, beat)
}

// Beat writes Node j of cluster i's status, as its kubelet does: a new
// heartbeat and resourceVersion, sent to every watch as MODIFIED.
func (s *Server) Beat(i, j int) {
	c := s.clusters[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv++
	c.nodeRV[j], c.beat[j] = c.rv, time.Now().Unix()
	for w := range c.watchers {
		select {
		case w.ch <- j:
		default:
			// Fallen behind: end the watch; the client lists or
			// watches again, as a real server makes it.
			w.closed = true
			close(w.ch)
			delete(c.watchers, w)
		}
	}
}

// Heartbeats writes every Node's status once per period, spread evenly,
// until ctx ends (the kubelets' default period is 5 minutes). It returns
// how many it wrote.
func (s *Server) Heartbeats(ctx context.Context, period time.Duration) int64 {
	var total int
	for _, c := range s.clusters {
		total += len(c.nodeRV)
	}
	if total == 0 || period <= 0 {
		<-ctx.Done()
		return 0
	}
	const tick = 20 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start, done, next := time.Now(), int64(0), 0
	for {
		select {
		case <-ctx.Done():
			return done
		case now := <-t.C:
			due := int64(float64(total) * now.Sub(start).Seconds() / period.Seconds())
			for ; done < due; done++ {
				i, j := s.node(next)
				s.Beat(i, j)
				next = (next + 1) % total
			}
		}
	}
}

// node is the cluster and index of the n-th Node over all clusters.
func (s *Server) node(n int) (int, int) {
	for i, c := range s.clusters {
		if n < len(c.nodeRV) {
			return i, n
		}
		n -= len(c.nodeRV)
	}
	return 0, 0
}

func (s *Server) handler(c *cluster) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
			return
		}
		path, ok := strings.CutPrefix(r.URL.Path, c.prefix)
		if !ok || r.Method != http.MethodGet {
			status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
			return
		}
		switch path {
		case "/version":
			writeJSON(w, `{"major":"1","minor":"35","gitVersion":"v1.35.4-gke.1000","platform":"linux/amd64"}`)
		case "/api":
			writeJSON(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:443"}]}`)
		case "/api/v1":
			writeJSON(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["get","list","watch"],"shortNames":["no"]}]}`)
		case "/api/v1/nodes":
			if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
				s.watch(w, r, c)
				return
			}
			s.list(w, r, c)
		default:
			status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		}
	})
}

// list answers a list of the cluster's Nodes, a page of limit if asked,
// continue being the index the page starts at.
func (s *Server) list(w http.ResponseWriter, r *http.Request, c *cluster) {
	s.lists.Add(1)
	q := r.URL.Query()
	c.mu.Lock()
	rv := c.rv
	nodeRV := append([]int64(nil), c.nodeRV...)
	beat := append([]int64(nil), c.beat...)
	c.mu.Unlock()
	from, to := 0, len(nodeRV)
	if v := q.Get("continue"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > len(nodeRV) {
			status(w, http.StatusBadRequest, "BadRequest", "invalid continue token")
			return
		}
		from = n
	}
	if v := q.Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && from+n < to {
			to = from + n
		}
	}
	w.Header().Set("Content-Type", "application/json")
	cw := &countingWriter{w: w}
	meta := fmt.Sprintf(`"resourceVersion":%q`, strconv.FormatInt(rv, 10))
	if to < len(nodeRV) {
		meta += fmt.Sprintf(`,"continue":%q,"remainingItemCount":%d`, strconv.Itoa(to), len(nodeRV)-to)
	}
	_, _ = fmt.Fprintf(cw, `{"kind":"NodeList","apiVersion":"v1","metadata":{%s},"items":[`, meta)
	buf := make([]byte, 0, 16<<10)
	for j := from; j < to; j++ {
		buf = buf[:0]
		if j > from {
			buf = append(buf, ',')
		}
		buf = c.render(buf, j, nodeRV[j], beat[j])
		if _, err := cw.Write(buf); err != nil {
			return
		}
	}
	_, _ = cw.Write([]byte("]}\n"))
	s.bytes.Add(cw.n)
}

// watch streams a MODIFIED event for every Node written from now until
// timeoutSeconds, the client going, or the watch falling behind; with
// sendInitialEvents, every Node as ADDED first.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, c *cluster) {
	s.watches.Add(1)
	timeout := 30 * time.Minute
	if v := r.URL.Query().Get("timeoutSeconds"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	wt := &watcher{ch: make(chan int, watchBuffer)}
	c.mu.Lock()
	c.watchers[wt] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if !wt.closed {
			delete(c.watchers, wt)
		}
		c.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	buf := make([]byte, 0, 16<<10)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		// A streaming list (client-go's WatchList): every Node as
		// ADDED, then the bookmark that ends the initial events.
		c.mu.Lock()
		rv := c.rv
		nodeRV := append([]int64(nil), c.nodeRV...)
		beat := append([]int64(nil), c.beat...)
		c.mu.Unlock()
		for j := range nodeRV {
			buf = append(buf[:0], `{"type":"ADDED","object":`...)
			buf = c.render(buf, j, nodeRV[j], beat[j])
			buf = append(buf, "}\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			s.bytes.Add(int64(len(buf)))
		}
		_, _ = fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", rv)
		if fl != nil {
			fl.Flush()
		}
	}
	end := time.NewTimer(timeout)
	defer end.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-end.C:
			return
		case j, ok := <-wt.ch:
			if !ok {
				return
			}
			c.mu.Lock()
			rv, beat := c.nodeRV[j], c.beat[j]
			c.mu.Unlock()
			buf = append(buf[:0], `{"type":"MODIFIED","object":`...)
			buf = c.render(buf, j, rv, beat)
			buf = append(buf, "}\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			if fl != nil && len(wt.ch) == 0 {
				fl.Flush()
			}
			s.events.Add(1)
			s.bytes.Add(int64(len(buf)))
		}
	}
}

// A segment of a Node template: literal bytes, then a placeholder (or none).
type segment struct {
	lit []byte
	ph  string
}

var placeholders = []string{phName, phInternal, phExternal, phZone, phUID, phRV, phBeat, phPodCIDR}

// split cuts a template at its placeholders.
func split(t []byte) []segment {
	var out []segment
	for len(t) > 0 {
		at, ph := -1, ""
		for _, p := range placeholders {
			if k := bytes.Index(t, []byte(p)); k >= 0 && (at < 0 || k < at) {
				at, ph = k, p
			}
		}
		if at < 0 {
			out = append(out, segment{lit: t})
			break
		}
		out = append(out, segment{lit: t[:at], ph: ph})
		t = t[at+len(ph):]
	}
	return out
}

// render appends Node j's JSON to buf.
func (c *cluster) render(buf []byte, j int, rv, beat int64) []byte {
	for _, sg := range c.tmpl {
		buf = append(buf, sg.lit...)
		switch sg.ph {
		case phName:
			buf = append(buf, nodeName(c.i, j)...)
		case phInternal:
			buf = fmt.Appendf(buf, "10.%d.%d.%d", c.i%256, (j/256)%256, j%256)
		case phExternal:
			buf = fmt.Appendf(buf, "35.%d.%d.%d", (100+c.i)%256, (j/256)%256, j%256)
		case phZone:
			buf = append(buf, zones[j%len(zones)]...)
		case phUID:
			buf = fmt.Appendf(buf, "%08x-0000-4000-8000-%012x", c.i, j)
		case phRV:
			buf = strconv.AppendInt(buf, rv, 10)
		case phBeat:
			buf = time.Unix(beat, 0).UTC().AppendFormat(buf, time.RFC3339)
		case phPodCIDR:
			buf = fmt.Appendf(buf, "10.%d.%d.0/24", 128+c.i%128, j%256)
		}
	}
	return buf
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

// status answers a Kubernetes Status error.
func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// selfSigned makes a CA and a certificate it signs for 127.0.0.1 and
// localhost: clients verify the server against the CA, as they must a
// remote cluster's.
func selfSigned() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fakekube CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "fakekube"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
