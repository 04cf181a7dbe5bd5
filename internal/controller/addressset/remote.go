package addressset

import (
	"context"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// remoteListTimeout bounds one list of a remote cluster's Nodes: a server that
// accepts the connection and never answers is an outage too.
const remoteListTimeout = 30 * time.Second

// remote is the informer of one remote cluster's Nodes, and its health.
type remote struct {
	key, source string
	informer    cache.SharedIndexInformer
	started     time.Time
	cancel      context.CancelFunc

	// users are the AddressSets reading it; guarded by clusters.mu.
	users map[types.NamespacedName]bool

	// bounds are what its cluster may cost.
	bounds Bounds

	mu sync.Mutex
	// outage holds what failed last: the call and its outcome, never the
	// server's text.
	outage outage
}

// startLocked starts the informer of t's cluster.
func (c *clusters) startLocked(t *target) (*remote, error) {
	cs, err := kubernetes.NewForConfig(t.config)
	if err != nil {
		return nil, wrongSecret{errors.Wrap(err, errKubeconfigClient)}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	r := &remote{key: t.key, source: t.source, started: c.now(), cancel: cancel, users: map[types.NamespacedName]bool{}, bounds: c.bounds}
	lw := &nodeListWatch{ListWatch: &cache.ListWatch{}, rest: cs.CoreV1().RESTClient(), maxNodes: c.bounds.NodesPerCluster,
		seen: func(call string, err error) { c.seen(ctx, r, call, err) }}
	lw.ListWithContextFunc, lw.WatchFuncWithContext = lw.list, lw.watch
	r.informer = cache.NewSharedIndexInformerWithOptions(lw, &corev1.Node{}, cache.SharedIndexInformerOptions{})
	lw.count = func() int { return len(r.informer.GetStore().ListKeys()) }
	if err := r.informer.SetTransform(remoteTransform(c.bounds.LabelBytesPerNode)); err != nil {
		cancel()
		return nil, err
	}
	if _, err := r.informer.AddEventHandler(c.nodeHandler(r.key)); err != nil {
		cancel()
		return nil, err
	}
	go r.informer.RunWithContext(ctx)
	go func() {
		// The initial list wakes the sets once, not once per Node.
		if cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
			c.wakeUsers(r.key)
		}
	}()
	c.log.Debug("Watching the Nodes of a cluster", "source", r.source)
	return r, nil
}

func (r *remote) stop() { r.cancel() }

// seen records the outcome of a list or watch call, and wakes the cluster's
// sets when it turns: an outage begins, or the server answers again. What
// is kept of an error says which call failed and how, never what the
// server said: the AddressSet's status is the tenant's to read, and a
// server the tenant names may answer anything (describe).
func (c *clusters) seen(ctx context.Context, r *remote, call string, err error) {
	if ctx.Err() != nil {
		return // stopping: not an outage
	}
	if err != nil {
		c.log.Debug("A call to a remote cluster failed", "source", r.source, "call", call, "error", err.Error())
		err = describe(call, err)
	}
	now := c.now()
	r.mu.Lock()
	turned := r.outage.record(err, now)
	r.mu.Unlock()
	if turned {
		c.wakeUsers(r.key)
	}
}

// nodeHandler wakes the cluster's sets when a Node comes, goes, or changes
// its labels or addresses; a kubelet's status updates change neither.
func (c *clusters) nodeHandler(key string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				c.wakeUsers(key)
			}
		},
		UpdateFunc: func(o, n any) {
			if nodeMoved(o, n) {
				c.wakeUsers(key)
			}
		},
		DeleteFunc: func(any) { c.wakeUsers(key) },
	}
}

// nodeMoved reports whether a Node's labels or addresses changed.
func nodeMoved(o, n any) bool {
	on, ok1 := o.(*corev1.Node)
	nn, ok2 := n.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(on.GetLabels(), nn.GetLabels()) ||
		!equality.Semantic.DeepEqual(on.Status.Addresses, nn.Status.Addresses)
}

// read returns the addresses of the Nodes sel selects, once the informer
// has listed them: Pending while a new cluster has not answered (up to
// RemoteFirstSync), Unreadable while it cannot be listed or watched.
func (r *remote) read(sel *v1alpha1.NodeSelector, now time.Time) (Collected, error) {
	r.mu.Lock()
	since, err := r.outage.since, r.outage.err
	r.mu.Unlock()
	synced := r.informer.HasSynced()
	switch {
	case !since.IsZero() && (synced || now.Sub(r.started) >= RemoteFirstSync):
		return Collected{}, &Unreadable{Source: r.source, Since: since, Err: err, After: RemoteRetry}
	case !synced && now.Sub(r.started) < RemoteFirstSync:
		return Collected{}, &Pending{After: min(remotePoll, RemoteFirstSync-now.Sub(r.started))}
	case !synced:
		return Collected{}, &Unreadable{Source: r.source, Since: r.started, Err: errors.New(errNeverListed), After: RemoteRetry}
	}
	all := r.informer.GetStore().List()
	if r.bounds.NodesPerCluster > 0 && len(all) > r.bounds.NodesPerCluster {
		return Collected{}, &Unreadable{Source: r.source, Since: now, Err: nodesBound(r.bounds.NodesPerCluster), After: RemoteRetry}
	}
	s := labels.SelectorFromSet(sel.MatchLabels)
	var nodes []corev1.Node
	for _, o := range all {
		n, ok := o.(*corev1.Node)
		if !ok {
			continue
		}
		if _, over := n.Annotations[annotationLabelBytes]; over {
			return Collected{}, &Unreadable{Source: r.source, Since: now, Err: labelsBound(n.Name, r.bounds.LabelBytesPerNode), After: RemoteRetry}
		}
		if s.Matches(labels.Set(n.GetLabels())) {
			nodes = append(nodes, *n)
		}
	}
	return Collect(nodes, sel.IncludeInternalIP), nil
}

// nodeListWatch lists and watches a remote cluster's Nodes and reports
// every call's outcome, the informer keeping its errors to itself. Its calls
// are never retried inside client-go: a request's own retries of a reset
// connection (ten, each waiting its turn) hid an outage for minutes behind a
// Watch call that neither failed nor returned. The reflector retries, with
// its backoff, and each failure is seen.
type nodeListWatch struct {
	*cache.ListWatch
	rest rest.Interface
	seen func(call string, err error)

	// maxNodes bounds the Nodes listed (over every page of one list) and
	// kept (count, the informer's store); 0 is none.
	maxNodes int
	count    func() int
	// listed counts the Nodes of the list's pages so far: a server that
	// pages without end is refused as one that lists too many at once.
	listed int
}

// IsWatchListSemanticsUnSupported makes the reflector list, not stream
// its initial list through a watch: a list is one call whose outcome says
// whether the cluster answers.
func (l *nodeListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *nodeListWatch) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteListTimeout)
	defer cancel()
	got := &corev1.NodeList{}
	err := l.rest.Get().Resource("nodes").VersionedParams(&o, scheme.ParameterCodec).MaxRetries(0).Do(ctx).Into(got)
	if err == nil {
		if o.Continue == "" {
			l.listed = 0
		}
		l.listed += len(got.Items)
		if l.maxNodes > 0 && l.listed > l.maxNodes {
			got, err = &corev1.NodeList{}, nodesBound(l.maxNodes)
		}
	}
	l.seen("list", err)
	return got, err
}

// watch reports a refused watch: the reflector retries one on a refused
// connection without listing again, so an API server that is down shows
// only here.
func (l *nodeListWatch) watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if o.TimeoutSeconds != nil {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	o.Watch = true
	w, err := l.rest.Get().Resource("nodes").VersionedParams(&o, scheme.ParameterCodec).Timeout(timeout).MaxRetries(0).Watch(ctx)
	l.seen("watch", err)
	if err != nil || l.maxNodes == 0 || l.count == nil {
		return w, err
	}
	return l.bounded(w), nil
}

// bounded ends w when it would add a Node beyond maxNodes: the reflector
// lists again, and a list beyond the bound is refused.
func (l *nodeListWatch) bounded(w watch.Interface) watch.Interface {
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type != watch.Added || l.count() < l.maxNodes {
			return e, true
		}
		err := nodesBound(l.maxNodes)
		l.seen("watch", err)
		w.Stop()
		return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusRequestEntityTooLarge}}, true
	})
}
