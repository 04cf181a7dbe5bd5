package addressset

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/sourceread"
)

// Messages about the objects an AddressSet reads of its own namespace.
const (
	errNotListedYet     = "the API server has not answered a list yet"
	errFmtNotFound      = "%s not found"
	errNoNamespace      = "the AddressSet has no namespace: services, object and configMap read objects of the set's own namespace only"
	errNoNamespaceSel   = "the AddressSet selects none of services, object and configMap"
	errServicesNoLabels = "spec.services.matchLabels must name at least one label"
	errObjectNameXOR    = "spec.object: set exactly one of objectName and matchLabels"
	errFmtAPIVersion    = "spec.object.apiVersion %q is not group/version or version"
	errFmtFieldPath     = "spec.object.fieldPath %q"
	errFmtUnmapped      = "the API server serves no kind %s of %s"
	errFmtSecret        = "spec.object: kind %s of %s is the core resource secrets: an AddressSet never reads Secrets, whose values are credentials"
	errFmtClusterScoped = "spec.object: kind %s of %s is cluster-scoped: an AddressSet reads objects of its own namespace only"
)

var (
	servicesResource   = corev1.SchemeGroupVersion.WithResource("services")
	configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")
	secretsResource    = corev1.SchemeGroupVersion.WithResource("secrets").GroupResource()
)

// namespaceReader reads what objects of an AddressSet's own namespace
// publish: LoadBalancer Services, a field of objects of any namespaced
// kind, a ConfigMap's list. Each set has an informer of its own that lists
// and watches its namespace only, and only the objects its selector names,
// and keeps of each object what the set reads of it; its events wake the
// set. No edit of such an object goes through Crossplane.
type namespaceReader struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	bounds Bounds
	now    func() time.Time
	// firstSync is how long a new informer is Pending before it is
	// Unreadable: RemoteFirstSync.
	firstSync time.Duration

	// wake puts a set in the controller's queue; false when the provider
	// stops. ctx ends every informer when the manager stops.
	wake func(types.NamespacedName) bool
	ctx  context.Context

	mu   sync.Mutex
	sets map[types.NamespacedName]*setInformer
}

// newNamespaceReader returns the reader of namespace sources that reads
// with cfg, maps kinds with mapper, and wakes a set with wake, until ctx
// ends.
func newNamespaceReader(ctx context.Context, cfg *rest.Config, mapper meta.RESTMapper, wake func(types.NamespacedName) bool, bounds Bounds) (*namespaceReader, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the dynamic client of namespace sources")
	}
	return newNamespaceReaderWith(ctx, dyn, mapper, wake, bounds), nil
}

func newNamespaceReaderWith(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, wake func(types.NamespacedName) bool, bounds Bounds) *namespaceReader {
	return &namespaceReader{dyn: dyn, mapper: mapper, bounds: bounds, now: time.Now, firstSync: RemoteFirstSync,
		wake: wake, ctx: ctx, sets: map[types.NamespacedName]*setInformer{}}
}

// Read returns what as's selector reads in its namespace, from its
// informer: Pending until the informer first lists (up to firstSync),
// Unreadable while it cannot list or watch, or while a named object or
// key is missing or a bound is exceeded. The informer wakes the set.
func (n *namespaceReader) Read(_ context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	key := client.ObjectKeyFromObject(as)
	sel, err := selectionOf(as)
	if err != nil {
		n.Forget(key)
		return Collected{}, 0, err
	}
	si, err := n.follow(key, sel)
	if err != nil {
		return Collected{}, 0, err
	}
	got, err := si.read(n.now(), n.firstSync, n.bounds)
	return got, 0, err
}

// Forget stops key's informer.
func (n *namespaceReader) Forget(key types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if si, ok := n.sets[key]; ok {
		si.stop()
		delete(n.sets, key)
	}
}

// follow returns the informer of key for sel, started when key had none,
// or one of another selection, which it stops.
func (n *namespaceReader) follow(key types.NamespacedName, sel *selection) (*setInformer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	si, ok := n.sets[key]
	if ok && si.sel.key != sel.key {
		si.stop()
		ok = false
	}
	if !ok {
		if limit := n.bounds.NamespaceSourcesPerNamespace; limit > 0 && n.inNamespaceLocked(key.Namespace) >= limit {
			// Each set is a watch of the API server: a namespace's sets
			// beyond the bound wait, the others' are read as before.
			return nil, &Unreadable{Source: sel.source, Since: n.now(), Err: namespaceSourcesBound(key.Namespace, limit), After: RemoteRetry}
		}
		si = &setInformer{sel: sel}
		n.sets[key] = si
	}
	if si.informer != nil {
		return si, nil
	}
	gvr, err := n.resourceOf(sel)
	var unmapped *unmappedKind
	switch {
	case errors.As(err, &unmapped):
		// Retried on the next read: the RESTMapper reloads on a miss, so a
		// CRD installed later is found.
		if si.unmappedSince.IsZero() {
			si.unmappedSince = n.now()
		}
		return nil, &Unreadable{Source: sel.source, Since: si.unmappedSince, Err: unmapped.err, After: UnmappedRetry}
	case err != nil:
		delete(n.sets, key)
		return nil, err
	}
	n.startLocked(key, si, gvr)
	return si, nil
}

// inNamespaceLocked counts the sets of namespace that have an informer or
// wait for their kind to be served.
func (n *namespaceReader) inNamespaceLocked(namespace string) int {
	count := 0
	for k := range n.sets {
		if k.Namespace == namespace {
			count++
		}
	}
	return count
}

// UnmappedRetry is how soon a set whose kind the API server does not serve
// looks again. Each look on a miss is a discovery call of the API server,
// which a namespace could otherwise ask for every few seconds per set.
const UnmappedRetry = 30 * time.Second

// unmappedKind is a kind the RESTMapper cannot map (yet): no such CRD, or
// discovery failing.
type unmappedKind struct{ err error }

func (u *unmappedKind) Error() string { return u.err.Error() }

// resourceOf is the resource sel lists, refusing Secrets and
// cluster-scoped kinds.
func (n *namespaceReader) resourceOf(sel *selection) (schema.GroupVersionResource, error) {
	if sel.gvk.Empty() {
		return sel.resource, nil
	}
	m, err := n.mapper.RESTMapping(sel.gvk.GroupKind(), sel.gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, &unmappedKind{errors.Wrapf(err, errFmtUnmapped, sel.gvk.Kind, sel.gvk.GroupVersion())}
	}
	// The CRD refuses apiVersion v1 kind Secret; this is the provider's own
	// check, of whatever maps to Secrets.
	if m.Resource.GroupResource() == secretsResource {
		return schema.GroupVersionResource{}, errors.Errorf(errFmtSecret, sel.gvk.Kind, sel.gvk.GroupVersion())
	}
	if m.Scope == nil || m.Scope.Name() != meta.RESTScopeNameNamespace {
		return schema.GroupVersionResource{}, errors.Errorf(errFmtClusterScoped, sel.gvk.Kind, sel.gvk.GroupVersion())
	}
	return m.Resource, nil
}

// startLocked starts si's informer of gvr.
func (n *namespaceReader) startLocked(key types.NamespacedName, si *setInformer, gvr schema.GroupVersionResource) {
	ctx, cancel := context.WithCancel(n.ctx)
	lw := &scopedListWatch{ListWatch: &cache.ListWatch{}, rest: n.dyn.Resource(gvr).Namespace(si.sel.namespace), sel: si.sel,
		maxObjects: n.bounds.ObjectsPerSource, seen: func(err error) { n.seen(ctx, key, si, err) }}
	lw.ListWithContextFunc, lw.WatchFuncWithContext = lw.list, lw.watch
	inf := cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{})
	// None of these fail on an informer not started yet.
	_ = inf.SetTransform(si.sel.keep(n.bounds.ValuesPerSource))
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if kerrors.IsResourceExpired(err) || kerrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return // a watch that ends is resumed: no outage
		}
		// A failed call is seen already, in the API server's own words;
		// the reflector's wrapping of it would only rewrite the message.
		// This catches what breaks a watch stream.
		if !si.failing() {
			n.seen(ctx, key, si, err)
		}
	})
	_, _ = inf.AddEventHandler(n.handler(key))
	si.informer, si.cancel, si.started = inf, cancel, n.now()
	si.running.Go(func() { inf.RunWithContext(ctx) })
	si.running.Go(func() {
		// The initial list wakes the set once, not once per object.
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			n.wake(key)
		}
	})
}

// seen records the outcome of a list or watch of si, and wakes the set
// when it turns: an outage begins, or the API server answers again.
func (n *namespaceReader) seen(ctx context.Context, key types.NamespacedName, si *setInformer, err error) {
	if ctx.Err() != nil {
		return // stopping: not an outage
	}
	now := n.now()
	si.mu.Lock()
	turned := si.outage.record(err, now)
	si.mu.Unlock()
	if turned {
		n.wake(key)
	}
}

// handler wakes the set when an object it reads comes, goes, or changes
// what the set reads of it.
func (n *namespaceReader) handler(key types.NamespacedName) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				n.wake(key)
			}
		},
		UpdateFunc: func(o, nw any) {
			ok, ok1 := o.(*kept)
			nk, ok2 := nw.(*kept)
			if !ok1 || !ok2 || !ok.sameAs(nk) {
				n.wake(key)
			}
		},
		DeleteFunc: func(any) { n.wake(key) },
	}
}

// selection is what one AddressSet reads of its namespace.
type selection struct {
	// key identifies it: a set whose selection changes gets a new informer.
	key string
	// source names it in messages: Services of namespace team-a labelled
	// {app=x}, Address team-a/nat-ip, ConfigMap team-a/egress.
	source    string
	namespace string
	// gvk is the kind an object selector names, mapped to a resource when
	// its informer starts; resource is known at once for Services and
	// ConfigMaps.
	gvk      schema.GroupVersionKind
	resource schema.GroupVersionResource
	// labels, or else name, select the objects; a named one must exist.
	labels labels.Selector
	name   string
	// extract reads one selected object: what it holds, whether it counts
	// as matched (a Service of type LoadBalancer), and what makes the
	// source unreadable (a ConfigMap without the key).
	extract func(*unstructured.Unstructured) (sourceread.Found, bool, error)
}

// selectionOf is what as reads of its namespace. A selector the API server
// would refuse, or that would read more than one namespace's objects by
// one label, is the user's to fix: an error, not an outage.
func selectionOf(as *v1alpha1.AddressSet) (*selection, error) {
	ns := as.GetNamespace()
	if ns == "" {
		// The dynamic client would list every namespace.
		return nil, errors.New(errNoNamespace)
	}
	switch s := as.Spec; {
	case s.Services != nil:
		return servicesSelection(ns, s.Services)
	case s.Object != nil:
		return objectSelection(ns, s.Object)
	case s.ConfigMap != nil:
		return configMapSelection(ns, s.ConfigMap)
	}
	return nil, errors.New(errNoNamespaceSel)
}

func servicesSelection(ns string, s *v1alpha1.ServiceSelector) (*selection, error) {
	if len(s.MatchLabels) == 0 {
		return nil, errors.New(errServicesNoLabels)
	}
	ls, err := labels.ValidatedSelectorFromSet(s.MatchLabels)
	if err != nil {
		return nil, errors.Wrap(err, "spec.services.matchLabels")
	}
	l := labelsString(s.MatchLabels)
	return &selection{
		key:       "services|" + l,
		source:    fmt.Sprintf("Services of namespace %s labelled {%s}", ns, l),
		namespace: ns, resource: servicesResource, labels: ls,
		extract: func(u *unstructured.Unstructured) (sourceread.Found, bool, error) {
			f, lb := sourceread.Service(u)
			return f, lb, nil
		},
	}, nil
}

func objectSelection(ns string, o *v1alpha1.ObjectSelector) (*selection, error) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil || gv.Version == "" {
		return nil, errors.Errorf(errFmtAPIVersion, o.APIVersion)
	}
	if _, err := fieldpath.Parse(o.FieldPath); err != nil {
		return nil, errors.Wrapf(err, errFmtFieldPath, o.FieldPath)
	}
	if (o.ObjectName == "") == (len(o.MatchLabels) == 0) {
		return nil, errors.New(errObjectNameXOR)
	}
	kind, path := o.Kind, o.FieldPath
	sel := &selection{
		key:       strings.Join([]string{"object", o.APIVersion, kind, o.ObjectName, labelsString(o.MatchLabels), path}, "|"),
		source:    fmt.Sprintf("%s %s/%s", kind, ns, o.ObjectName),
		namespace: ns, gvk: gv.WithKind(kind), name: o.ObjectName,
		extract: func(u *unstructured.Unstructured) (sourceread.Found, bool, error) {
			return sourceread.Object(u, kind, path), true, nil
		},
	}
	if o.ObjectName == "" {
		if sel.labels, err = labels.ValidatedSelectorFromSet(o.MatchLabels); err != nil {
			return nil, errors.Wrap(err, "spec.object.matchLabels")
		}
		sel.source = fmt.Sprintf("%s objects of namespace %s labelled {%s}", kind, ns, labelsString(o.MatchLabels))
	}
	return sel, nil
}

func configMapSelection(ns string, c *v1alpha1.ConfigMapKeySelector) (*selection, error) {
	key := c.Key
	return &selection{
		key:       "configMap|" + c.Name + "|" + key,
		source:    fmt.Sprintf("ConfigMap %s/%s", ns, c.Name),
		namespace: ns, resource: configMapsResource, name: c.Name,
		extract: func(u *unstructured.Unstructured) (sourceread.Found, bool, error) {
			f, err := sourceread.ConfigMap(u, key)
			return f, true, err
		},
	}, nil
}

// narrow makes o list or watch only what s selects. The namespace is the
// client's.
func (s *selection) narrow(o *metav1.ListOptions) {
	if s.name != "" {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
		return
	}
	o.LabelSelector = s.labels.String()
}

// selects reports whether u is one of the objects s selects. The API
// server sends no other; this is the provider's own check.
func (s *selection) selects(u *unstructured.Unstructured) bool {
	if u.GetNamespace() != s.namespace {
		return false
	}
	if s.name != "" {
		return u.GetName() == s.name
	}
	return s.labels.Matches(labels.Set(u.GetLabels()))
}

// keep is the informer's transform: it keeps of an object what the set
// reads of it, so the informer holds no whole ConfigMap or object, and of
// an object with more than maxValues values only how many.
func (s *selection) keep(maxValues int) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil // kept already
		}
		k := &kept{ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()},
			selected: s.selects(u)}
		if !k.selected {
			return k, nil
		}
		k.found, k.counted, k.err = s.extract(u)
		k.size = len(k.found.Values) + len(k.found.Notes)
		if maxValues > 0 && k.size > maxValues {
			k.found = sourceread.Found{}
		}
		return k, nil
	}
}

// kept is what an informer keeps of one object: its identity and what the
// set reads of it, never the object itself.
type kept struct {
	metav1.ObjectMeta
	// selected is false for an object the set does not select.
	selected bool
	// counted says it counts as matched: a Service of type LoadBalancer,
	// any selected object of another kind.
	counted bool
	found   sourceread.Found
	// size is how many values and notes it holds: found is dropped when
	// it alone is over the bound.
	size int
	// err makes the source unreadable: a ConfigMap without the key.
	err error
}

// sameAs reports whether the set reads the same of k and o.
func (k *kept) sameAs(o *kept) bool {
	return k.selected == o.selected && k.counted == o.counted && k.size == o.size &&
		errorText(k.err) == errorText(o.err) &&
		slices.Equal(k.found.Values, o.found.Values) && slices.Equal(k.found.Notes, o.found.Notes)
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// setInformer is one AddressSet's informer, and its health.
type setInformer struct {
	sel *selection
	// unmappedSince is the first failure to map sel's kind to a resource
	// in the current run of failures; guarded by namespaceReader.mu.
	unmappedSince time.Time

	informer cache.SharedIndexInformer
	started  time.Time
	cancel   context.CancelFunc
	// running are the informer's goroutines, done once it has stopped.
	running sync.WaitGroup

	mu sync.Mutex
	// outage holds the API server's own error.
	outage outage
	// heldSince is when the objects read first made the source
	// unreadable (a named object missing, a bound exceeded) in the current
	// run of such reads.
	heldSince time.Time
}

func (si *setInformer) failing() bool {
	si.mu.Lock()
	defer si.mu.Unlock()
	return si.outage.failing()
}

func (si *setInformer) stop() {
	if si.cancel != nil {
		si.cancel()
	}
}

// read returns what the set reads, once the informer has listed: Pending
// while a new informer has not (up to firstSync), Unreadable while it
// cannot list or watch, or while what it holds cannot serve.
func (si *setInformer) read(now time.Time, firstSync time.Duration, b Bounds) (Collected, error) {
	si.mu.Lock()
	defer si.mu.Unlock()
	synced := si.informer.HasSynced()
	age := now.Sub(si.started)
	src := si.sel.source
	switch {
	case si.outage.failing() && (synced || age >= firstSync):
		return Collected{}, &Unreadable{Source: src, Since: si.outage.since, Err: si.outage.err, After: RemoteRetry}
	case !synced && age < firstSync:
		return Collected{}, &Pending{After: min(remotePoll, firstSync-age)}
	case !synced:
		return Collected{}, &Unreadable{Source: src, Since: si.started, Err: errors.New(errNotListedYet), After: RemoteRetry}
	}
	got, err := si.gather(b)
	if err != nil {
		if si.heldSince.IsZero() {
			si.heldSince = now
		}
		return Collected{}, &Unreadable{Source: src, Since: si.heldSince, Err: err, After: RemoteRetry}
	}
	si.heldSince = time.Time{}
	return got, nil
}

// gather collects what the informer holds: every value once, canonical,
// sorted IPv4 first, which may be wider than a host (a ConfigMap's /28).
func (si *setInformer) gather(b Bounds) (Collected, error) {
	var objs []*kept
	for _, o := range si.informer.GetStore().List() {
		if k, ok := o.(*kept); ok && k.selected {
			objs = append(objs, k)
		}
	}
	sel := si.sel
	if b.ObjectsPerSource > 0 && len(objs) > b.ObjectsPerSource {
		return Collected{}, objectsBound(sel.source, b.ObjectsPerSource)
	}
	if sel.name != "" && len(objs) == 0 {
		// A name is explicit: its absence is not "no address".
		return Collected{}, errors.Errorf(errFmtNotFound, sel.source)
	}
	// In name order, so that the same objects give the same warnings.
	slices.SortFunc(objs, func(a, b *kept) int { return strings.Compare(a.Name, b.Name) })
	size, counted := 0, 0
	found := make([]sourceread.Found, 0, len(objs))
	for _, k := range objs {
		if k.err != nil {
			return Collected{}, k.err
		}
		size += k.size
		if k.counted {
			counted++
		}
		found = append(found, k.found)
	}
	if b.ValuesPerSource > 0 && size > b.ValuesPerSource {
		return Collected{}, valuesBound(sel.source, b.ValuesPerSource)
	}
	r := sourceread.Canonical(found...)
	return Collected{Addresses: r.Prefixes, Nodes: counted, Warnings: r.Warnings}, nil
}

// scopedListWatch lists and watches the objects one set selects, in its
// namespace only, and reports every call's outcome: the informer keeps
// its errors to itself. A list of more objects than the bound fails.
type scopedListWatch struct {
	*cache.ListWatch
	rest dynamic.ResourceInterface
	sel  *selection
	seen func(err error)

	maxObjects int
	// listed counts the objects of the list's pages so far.
	listed int
}

// IsWatchListSemanticsUnSupported makes the reflector list, not stream its
// initial list through a watch: a list is one call whose outcome says
// whether the objects can be read.
func (l *scopedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *scopedListWatch) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.sel.narrow(&o)
	got, err := l.rest.List(ctx, o)
	if err == nil {
		if o.Continue == "" {
			l.listed = 0
		}
		l.listed += len(got.Items)
		if l.maxObjects > 0 && l.listed > l.maxObjects {
			err = objectsBound(l.sel.source, l.maxObjects)
		}
	}
	l.seen(err)
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (l *scopedListWatch) watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.sel.narrow(&o)
	w, err := l.rest.Watch(ctx, o)
	l.seen(err)
	return w, err
}
