package addressset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/internal/netguard"
)

const (
	// RemoteRetry is how soon an AddressSet whose cluster cannot be read is
	// looked at again. The informer retries on its own and wakes the set
	// when it lists again; this only refreshes the message.
	RemoteRetry = 5 * time.Second

	// RemoteFirstSync is how long a cluster read for the first time is
	// Pending (the set publishes nothing new) before it is Unreadable.
	RemoteFirstSync = 10 * time.Second

	// remotePoll is how often a Pending set looks again.
	remotePoll = time.Second

	// Recheck is how often a set reading another cluster reads its
	// kubeconfig Secret (and ProviderConfig) again when nothing else wakes
	// it: a Secret changed or deleted is seen within it, as a rotated
	// credentials Secret is by every managed resource. The provider's role
	// may get Secrets but not list or watch them (it cannot enumerate
	// them), so a Secret's change is looked for rather than watched.
	Recheck = connector.SecretTTL

	// wakeBuffer bounds the Node events waiting for the controller: an
	// informer's handler blocks beyond it rather than drop a wake.
	wakeBuffer = 1024
)

// Messages about a kubeconfig Secret and a ProviderConfig identity.
const (
	errFmtSecretNotFound  = "Secret %s/%s not found: a cluster's kubeconfig Secret is read from the AddressSet's own namespace %s"
	errFmtSecretGet       = "cannot get Secret %s/%s"
	errFmtSecretKey       = "Secret %s/%s has no key %q"
	errFmtSecretKubecfg   = "key %q of Secret %s/%s"
	errFmtClusterPC       = "identity ProviderConfig sends the config's Google access token to the server the kubeconfig names, which this namespace chooses: a ClusterProviderConfig's identity is shared and is not handed out so. Use a ProviderConfig of namespace %s"
	errPCConnect          = "cannot use the ProviderConfig's credentials"
	errPCToken            = "cannot get Google access tokens of the ProviderConfig's credentials"
	errNeverListed        = "the API server has not answered a list of its Nodes yet"
	errFmtClusterSource   = "the cluster of Secret %s/%s"
	errFmtClusterSourceAt = "the cluster of Secret %s/%s (%s)"
)

// clusters reads the Nodes of other clusters: one informer per distinct
// cluster and credentials, holding only names, labels and addresses, shared
// by every AddressSet that names it and stopped when the last one goes.
type clusters struct {
	kube    client.Reader // the manager's cache, for AddressSets
	secrets client.Reader // uncached: Secrets are read on demand, never cached
	conn    *connector.Connector
	log     logging.Logger
	now     func() time.Time

	// dial is where a remote cluster may be: every connection to one
	// dials through it. bounds are what one may cost.
	dial   *netguard.Policy
	bounds Bounds

	// wake carries a Node event of a remote cluster to the controller's
	// queue, which delays it by Settle as it does a local Node's.
	wake chan ctrlevent.GenericEvent

	// ctx ends every informer when the manager stops.
	ctx context.Context

	mu      sync.Mutex
	remotes map[string]*remote
	users   map[types.NamespacedName]*user
}

// user is what the reader keeps for one AddressSet.
type user struct {
	// remote is the key of the cluster it reads, "" for none.
	remote string
	// failSince is the first failure to resolve its cluster (Secret,
	// kubeconfig, ProviderConfig) in the current run of failures.
	failSince time.Time
	// resolved is when its Secret was last read into remote, for the
	// AddressSet generation generation.
	resolved   time.Time
	generation int64
}

func newClusters(mgr ctrl.Manager, o setup.Options, bounds Bounds) *clusters {
	ctx, cancel := context.WithCancel(context.Background())
	c := &clusters{
		kube: mgr.GetClient(), secrets: mgr.GetAPIReader(), conn: o.Connector, dial: o.Dial, bounds: bounds,
		log: o.Logger.WithValues("controller", "addressset", "reader", "clusters"), now: time.Now,
		wake: make(chan ctrlevent.GenericEvent, wakeBuffer), ctx: ctx,
		remotes: map[string]*remote{}, users: map[types.NamespacedName]*user{},
	}
	// Informers end with the manager.
	_ = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		cancel()
		return nil
	}))
	return c
}

// watch adds to b what wakes an AddressSet reading another cluster: a Node
// event of that cluster, after Settle as a local Node's. Its Secret is read
// again every Recheck instead (Read).
func (c *clusters) watch(b *builder.Builder) *builder.Builder {
	return b.WatchesRawSource(source.Channel(c.wake, setup.Delayed(&handler.EnqueueRequestForObject{}, Settle)))
}

// Read returns the addresses of the Nodes as selects in the cluster its
// Secret names, from that cluster's informer.
func (c *clusters) Read(ctx context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	key := client.ObjectKeyFromObject(as)
	// A Node event of the cluster reads the informer, not the Secret: the
	// Secret is read again once Recheck has passed, or for a new spec.
	if r, due := c.fresh(key, as.GetGeneration()); r != nil {
		got, err := r.read(as.Spec.Nodes, c.now())
		return got, due, err
	}
	t, err := c.resolve(ctx, as)
	if err != nil {
		return Collected{}, 0, c.unresolved(key, as, err)
	}
	r, err := c.attach(key, t, as.GetGeneration())
	if err != nil {
		return Collected{}, 0, c.unresolved(key, as, err)
	}
	got, err := r.read(as.Spec.Nodes, c.now())
	return got, Recheck, err
}

// Forget stops reading for key, and stops its cluster's informer when no
// other AddressSet reads that cluster.
func (c *clusters) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.users[key]; ok {
		c.detachLocked(key, u)
		delete(c.users, key)
	}
}

// target is a cluster an AddressSet resolves to.
type target struct {
	// key identifies the cluster and credentials: equal keys share an
	// informer. It changes with the kubeconfig's bytes, so a changed Secret
	// starts a new informer.
	key    string
	source string
	config *rest.Config
}

// resolve reads as's Secret (and ProviderConfig) into the cluster it names.
func (c *clusters) resolve(ctx context.Context, as *v1alpha1.AddressSet) (*target, error) {
	cl := as.Spec.Nodes.Cluster
	ref := cl.KubeconfigSecretRef
	data, err := c.kubeconfig(ctx, as.GetNamespace(), ref)
	if err != nil {
		return nil, err
	}
	var cfg *rest.Config
	identity := ""
	if cl.IdentityOrDefault() == v1alpha1.IdentityProviderConfig {
		cfg, identity, err = c.providerConfigIdentity(ctx, as, data)
	} else {
		cfg, err = kubeconfigConfig(data)
		err = wrongKubeconfig(err, as)
	}
	if err != nil {
		return nil, err
	}
	// Refused before any connection, so the set says why at once; the
	// dialer checks again on every connection.
	if err := c.dial.Check(serverHost(cfg)); err != nil {
		return nil, wrongKubeconfig(err, as)
	}
	c.guard(cfg)
	sum := sha256.Sum256(data)
	return &target{
		key:    gcp.IdentityKey(as.GetNamespace(), ref.Name, ref.KeyOrDefault(), cl.IdentityOrDefault(), hex.EncodeToString(sum[:]), identity),
		source: fmt.Sprintf(errFmtClusterSourceAt, as.GetNamespace(), ref.Name, cfg.Host),
		config: cfg,
	}, nil
}

// guard makes rc connect only as the provider allows: through its dial
// policy, never through a proxy (not the environment's either), and with
// every response's bytes bounded.
func (c *clusters) guard(rc *rest.Config) {
	rc.Dial = c.dial.DialContext
	rc.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	if c.bounds.ResponseBytes <= 0 {
		return
	}
	wrap := rc.WrapTransport
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return capTransport{rt: rt, max: c.bounds.ResponseBytes}
	}
}

// kubeconfig reads the kubeconfig from the Secret ref names in namespace,
// the AddressSet's own, straight from the API server.
func (c *clusters) kubeconfig(ctx context.Context, namespace string, ref v1alpha1.LocalSecretKey) ([]byte, error) {
	s := &corev1.Secret{}
	err := c.secrets.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, s)
	switch {
	case kerrors.IsNotFound(err):
		return nil, wrongSecret{errors.Errorf(errFmtSecretNotFound, namespace, ref.Name, namespace)}
	case err != nil:
		return nil, errors.Wrapf(err, errFmtSecretGet, namespace, ref.Name)
	}
	data, ok := s.Data[ref.KeyOrDefault()]
	if !ok {
		return nil, wrongSecret{errors.Errorf(errFmtSecretKey, namespace, ref.Name, ref.KeyOrDefault())}
	}
	return data, nil
}

// providerConfigIdentity is the configuration for identity ProviderConfig,
// and what identifies the credentials it authenticates with.
func (c *clusters) providerConfigIdentity(ctx context.Context, as *v1alpha1.AddressSet, kubeconfig []byte) (*rest.Config, string, error) {
	ref := as.Spec.ProviderConfigRef
	if ref != nil && ref.Kind == v1beta1.ClusterProviderConfigKind {
		return nil, "", errors.Errorf(errFmtClusterPC, as.GetNamespace())
	}
	_, creds, err := c.conn.ConnectNamespace(ctx, as.GetNamespace(), ref)
	if err != nil {
		return nil, "", errors.Wrap(err, errPCConnect)
	}
	ts, err := gcp.TokenSource(ctx, creds)
	if err != nil {
		return nil, "", errors.Wrap(err, errPCToken)
	}
	cfg, err := providerConfigConfig(kubeconfig, ts)
	if err != nil {
		return nil, "", wrongKubeconfig(err, as)
	}
	return cfg, ref.Kind + "/" + ref.Name + "/" + creds.Hash(), nil
}

// unresolved is the Unreadable error of a set whose cluster cannot be
// resolved: it keeps its last addresses, never an empty set. A Secret that
// is gone or wrong also stops the informer the set read (it held the old
// credentials); an error reading it does not.
func (c *clusters) unresolved(key types.NamespacedName, as *v1alpha1.AddressSet, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.userLocked(key)
	if u.failSince.IsZero() {
		u.failSince = c.now()
	}
	if errors.As(err, &wrongSecret{}) {
		c.detachLocked(key, u)
	}
	ref := as.Spec.Nodes.Cluster.KubeconfigSecretRef
	return &Unreadable{Source: fmt.Sprintf(errFmtClusterSource, as.GetNamespace(), ref.Name), Since: u.failSince, Err: err, After: RemoteRetry}
}

// wrongSecret is a kubeconfig Secret that is gone, lacks its key or holds
// no kubeconfig the provider will use: the cluster it named is no longer
// read with it.
type wrongSecret struct{ error }

func (w wrongSecret) Unwrap() error { return w.error }

// wrongKubeconfig says which Secret's key holds the kubeconfig err is about.
func wrongKubeconfig(err error, as *v1alpha1.AddressSet) error {
	if err == nil {
		return nil
	}
	ref := as.Spec.Nodes.Cluster.KubeconfigSecretRef
	return wrongSecret{errors.Wrapf(err, errFmtSecretKubecfg, ref.KeyOrDefault(), as.GetNamespace(), ref.Name)}
}

// attach makes key read the cluster t, starting its informer if no other
// set reads it, and stopping the one key read before if that was another.
func (c *clusters) attach(key types.NamespacedName, t *target, generation int64) (*remote, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.userLocked(key)
	u.failSince = time.Time{}
	u.resolved, u.generation = c.now(), generation
	if u.remote != t.key {
		c.detachLocked(key, u)
	}
	r, ok := c.remotes[t.key]
	if !ok {
		if err := c.withinClustersLocked(key, t.key); err != nil {
			return nil, err
		}
		var err error
		if r, err = c.startLocked(t); err != nil {
			return nil, err
		}
		c.remotes[t.key] = r
	}
	r.users[key] = true
	u.remote = t.key
	return r, nil
}

// fresh returns the cluster key reads when its Secret was read for this
// generation less than Recheck ago, and how long until it is due again;
// nil when it is to be read now.
func (c *clusters) fresh(key types.NamespacedName, generation int64) (*remote, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[key]
	if !ok || u.remote == "" || u.generation != generation {
		return nil, 0
	}
	age := c.now().Sub(u.resolved)
	if age >= Recheck {
		return nil, 0
	}
	return c.remotes[u.remote], Recheck - age
}

// withinClustersLocked refuses a cluster that would make key's namespace
// read more than ClustersPerNamespace distinct clusters.
func (c *clusters) withinClustersLocked(key types.NamespacedName, remote string) error {
	if c.bounds.ClustersPerNamespace <= 0 {
		return nil
	}
	read := map[string]bool{remote: true}
	for k, u := range c.users {
		if k.Namespace == key.Namespace && k != key && u.remote != "" {
			read[u.remote] = true
		}
	}
	if len(read) > c.bounds.ClustersPerNamespace {
		return clustersBound(key.Namespace, c.bounds.ClustersPerNamespace)
	}
	return nil
}

func (c *clusters) userLocked(key types.NamespacedName) *user {
	u, ok := c.users[key]
	if !ok {
		u = &user{}
		c.users[key] = u
	}
	return u
}

// detachLocked stops u reading its cluster, and stops the cluster's
// informer when u was its last reader.
func (c *clusters) detachLocked(key types.NamespacedName, u *user) {
	r, ok := c.remotes[u.remote]
	u.remote = ""
	if !ok {
		return
	}
	delete(r.users, key)
	if len(r.users) == 0 {
		r.stop()
		delete(c.remotes, r.key)
		c.log.Debug("Stopped watching the Nodes of a cluster", "source", r.source)
	}
}

// wakeUsers puts every set reading the cluster key in the queue.
func (c *clusters) wakeUsers(key string) {
	c.mu.Lock()
	var keys []types.NamespacedName
	if r, ok := c.remotes[key]; ok {
		for k := range r.users {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		if !c.wakeSet(k) {
			return
		}
	}
}

// wakeSet puts the set key in the remote controller's queue; false when
// the provider stops.
func (c *clusters) wakeSet(key types.NamespacedName) bool {
	select {
	case c.wake <- ctrlevent.GenericEvent{Object: &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
		return true
	case <-c.ctx.Done():
		return false
	}
}
