package addressset

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

var (
	addressGVK        = schema.GroupVersionKind{Group: "compute.gcp.m.upbound.io", Version: "v1beta1", Kind: "Address"}
	addressesResource = addressGVK.GroupVersion().WithResource("addresses")
	secretsGVR        = corev1.SchemeGroupVersion.WithResource("secrets")
	namespacesGVR     = corev1.SchemeGroupVersion.WithResource("namespaces")
)

// unstructuredOf is an object of namespace with labels and the fields of
// body.
func unstructuredOf(apiVersion, kind, namespace, name string, labels map[string]any, body map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": labels},
	}}
	for k, v := range body {
		u.Object[k] = v
	}
	return u
}

// lbService is a Service of type typ labelled app=app whose load balancer
// reports ingress.
func lbService(namespace, name, typ, app string, ingress ...map[string]any) *unstructured.Unstructured {
	in := make([]any, 0, len(ingress))
	for _, i := range ingress {
		in = append(in, i)
	}
	return unstructuredOf("v1", "Service", namespace, name, map[string]any{"app": app}, map[string]any{
		"spec":   map[string]any{"type": typ},
		"status": map[string]any{"loadBalancer": map[string]any{"ingress": in}},
	})
}

// gcpAddress is a provider-gcp Address labelled egress=nat whose
// status.atProvider.address is addr.
func gcpAddress(namespace, name, addr string) *unstructured.Unstructured {
	return unstructuredOf(addressGVK.GroupVersion().String(), "Address", namespace, name, map[string]any{"egress": "nat"}, map[string]any{
		"status": map[string]any{"atProvider": map[string]any{"address": addr}},
	})
}

func cidrConfigMap(namespace, name string, data map[string]any) *unstructured.Unstructured {
	return unstructuredOf("v1", "ConfigMap", namespace, name, nil, map[string]any{"data": data})
}

func nsSet(spec v1alpha1.AddressSetSpec) *v1alpha1.AddressSet {
	return &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "egress"}, Spec: spec}
}

func servicesSet(app string) *v1alpha1.AddressSet {
	return nsSet(v1alpha1.AddressSetSpec{Services: &v1alpha1.ServiceSelector{MatchLabels: map[string]string{"app": app}}})
}

func addressSet(name string) *v1alpha1.AddressSet {
	return nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: addressGVK.GroupVersion().String(), Kind: "Address",
		ObjectName: name, FieldPath: "status.atProvider.address"}})
}

func configMapSet() *v1alpha1.AddressSet {
	return nsSet(v1alpha1.AddressSetSpec{ConfigMap: &v1alpha1.ConfigMapKeySelector{Name: "egress-ranges", Key: "cidrs"}})
}

var setKey = types.NamespacedName{Namespace: "team-a", Name: "egress"}

// readerTest is a namespace reader of a fake API server, its clock stopped
// at readerStart.
type readerTest struct {
	r        *namespaceReader
	dyn      *dynamicfake.FakeDynamicClient
	wakes    chan types.NamespacedName
	watching chan schema.GroupVersionResource
	cancel   context.CancelFunc
}

var readerStart = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func newReaderTest(t *testing.T, b Bounds, objs ...runtime.Object) *readerTest {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		servicesResource: "ServiceList", configMapsResource: "ConfigMapList", addressesResource: "AddressList",
		secretsGVR: "SecretList", namespacesGVR: "NamespaceList",
	}, objs...)
	// Says when a watch is in place: the fake drops what changes before.
	watching := make(chan schema.GroupVersionResource, 100)
	dyn.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(a.GetResource(), a.GetNamespace())
		select {
		case watching <- a.GetResource():
		default:
		}
		return true, w, err
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(addressGVK, meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wakes := make(chan types.NamespacedName, 1000)
	r := newNamespaceReaderWith(ctx, dyn, mapper, func(k types.NamespacedName) bool {
		wakes <- k
		return true
	}, b)
	r.now = func() time.Time { return readerStart }
	// Past the first sync window at once: a read waits only for the
	// informer's first answer (settle).
	r.firstSync = 0
	return &readerTest{r: r, dyn: dyn, wakes: wakes, watching: watching, cancel: cancel}
}

// settle reads as until its informer has answered its first list (or
// failed it).
func (rt *readerTest) settle(t *testing.T, as *v1alpha1.AddressSet) (Collected, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _, err := rt.r.Read(context.Background(), as)
		var p *Pending
		var u *Unreadable
		notYet := errors.As(err, &p) || (errors.As(err, &u) && u.Err != nil && u.Err.Error() == errNotListedYet)
		if !notYet {
			return got, err
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer did not answer: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// informerOfSet is key's informer.
func (rt *readerTest) informerOfSet(key types.NamespacedName) *setInformer {
	rt.r.mu.Lock()
	defer rt.r.mu.Unlock()
	return rt.r.sets[key]
}

// stopped reports whether si's goroutines end within a few seconds.
func stopped(si *setInformer) bool {
	done := make(chan struct{})
	go func() {
		si.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// awaitWake waits for the set's next wake.
func (rt *readerTest) awaitWake(t *testing.T) {
	t.Helper()
	select {
	case <-rt.wakes:
	case <-time.After(5 * time.Second):
		t.Fatal("the set was not woken")
	}
}

// awaitWatch waits until the informer watches resource.
func (rt *readerTest) awaitWatch(t *testing.T, resource schema.GroupVersionResource) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-rt.watching:
			if got == resource {
				return
			}
		case <-deadline:
			t.Fatalf("no watch of %s", resource)
		}
	}
}

var cmpErrorText = cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })

func TestNamespaceReaderRead(t *testing.T) {
	forbidden := kerrors.NewForbidden(servicesResource.GroupResource(), "",
		errors.New(`User "system:serviceaccount:crossplane-system:provider-cloudarmor" cannot list resource "services" in API group "" in the namespace "team-a"`))
	cases := map[string]struct {
		reason   string
		objs     []runtime.Object
		as       *v1alpha1.AddressSet
		bounds   Bounds
		reactors func(*dynamicfake.FakeDynamicClient)
		want     Collected
		wantErr  error
	}{
		"ServicesOfItsNamespaceOnly": {
			reason: "The ingress IPs of the LoadBalancer Services labelled so in the set's namespace are read; an identical Service of another namespace is not, " +
				"nor a ClusterIP Service or another label; a host name and a Service without an address yet are warnings.",
			objs: []runtime.Object{
				lbService("team-a", "nat-a", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.7"}, map[string]any{"hostname": "nat-a.example.com"}),
				lbService("team-a", "nat-b", "LoadBalancer", "nat"),
				lbService("team-b", "nat-a", "LoadBalancer", "nat", map[string]any{"ip": "198.51.100.9"}),
				lbService("team-a", "internal", "ClusterIP", "nat", map[string]any{"ip": "10.0.0.1"}),
				lbService("team-a", "web", "LoadBalancer", "web", map[string]any{"ip": "192.0.2.1"}),
			},
			as: servicesSet("nat"),
			want: Collected{Addresses: []netip.Prefix{netip.MustParsePrefix("203.0.113.7/32")}, Nodes: 2, Warnings: []string{
				`Service team-a/nat-a: ingress host name "nat-a.example.com" left out: Cloud Armor matches IP addresses, not names`,
				"Service team-a/nat-b has no load balancer address yet",
			}},
		},
		"NamedObject": {
			reason: "The field of the named object of the set's namespace is read.",
			objs:   []runtime.Object{gcpAddress("team-a", "cloud-nat-egress", "34.1.2.3"), gcpAddress("team-b", "cloud-nat-egress", "34.9.9.9")},
			as:     addressSet("cloud-nat-egress"),
			want:   Collected{Addresses: []netip.Prefix{netip.MustParsePrefix("34.1.2.3/32")}, Nodes: 1},
		},
		"NamedObjectMissing": {
			reason:  "A named object that does not exist in the set's namespace (one of that name in another does not count) holds the set's addresses.",
			objs:    []runtime.Object{gcpAddress("team-b", "cloud-nat-egress", "34.9.9.9")},
			as:      addressSet("cloud-nat-egress"),
			wantErr: &Unreadable{Source: "Address team-a/cloud-nat-egress", Since: readerStart, Err: errors.New("Address team-a/cloud-nat-egress not found"), After: RemoteRetry},
		},
		"ObjectsByLabelValueNotQuoted": {
			reason: "Objects are selected by label in the set's namespace; a malformed value is left out with a warning that names it and does not show it.",
			objs: []runtime.Object{
				gcpAddress("team-a", "a", "34.1.2.3"), gcpAddress("team-a", "b", "s3cr3t-value"), gcpAddress("team-b", "c", "34.9.9.9"),
			},
			as: nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: addressGVK.GroupVersion().String(), Kind: "Address",
				MatchLabels: map[string]string{"egress": "nat"}, FieldPath: "status.atProvider.address"}}),
			want: Collected{Addresses: []netip.Prefix{netip.MustParsePrefix("34.1.2.3/32")}, Nodes: 2, Warnings: []string{
				"Address team-a/b status.atProvider.address left out: a value of 12 character(s) that is not an IP address or a CIDR without host bits (not shown)",
			}},
		},
		"ConfigMapList": {
			reason: "The ConfigMap's key is read, CIDRs as wide as they are listed, IPv4 first.",
			objs: []runtime.Object{
				cidrConfigMap("team-a", "egress-ranges", map[string]any{"cidrs": "# NAT egress\n2001:db8:1::/48\n198.51.100.0/28, 203.0.113.7\n"}),
				cidrConfigMap("team-a", "other", map[string]any{"cidrs": "192.0.2.1"}),
			},
			as: configMapSet(),
			want: Collected{Nodes: 1, Addresses: []netip.Prefix{
				netip.MustParsePrefix("198.51.100.0/28"), netip.MustParsePrefix("203.0.113.7/32"), netip.MustParsePrefix("2001:db8:1::/48"),
			}},
		},
		"ConfigMapMissing": {
			reason:  "A ConfigMap that does not exist in the set's namespace holds its addresses.",
			objs:    []runtime.Object{cidrConfigMap("team-b", "egress-ranges", map[string]any{"cidrs": "192.0.2.1"})},
			as:      configMapSet(),
			wantErr: &Unreadable{Source: "ConfigMap team-a/egress-ranges", Since: readerStart, Err: errors.New("ConfigMap team-a/egress-ranges not found"), After: RemoteRetry},
		},
		"ConfigMapKeyMissing": {
			reason:  "A key that does not exist is as explicit as a name: it holds the set's addresses.",
			objs:    []runtime.Object{cidrConfigMap("team-a", "egress-ranges", map[string]any{"other": "192.0.2.1"})},
			as:      configMapSet(),
			wantErr: &Unreadable{Source: "ConfigMap team-a/egress-ranges", Since: readerStart, Err: errors.New(`ConfigMap team-a/egress-ranges has no key "cidrs"`), After: RemoteRetry},
		},
		"ConfigMapKeyInBinaryData": {
			reason: "A key in binaryData is refused by name.",
			objs: []runtime.Object{unstructuredOf("v1", "ConfigMap", "team-a", "egress-ranges", nil,
				map[string]any{"binaryData": map[string]any{"cidrs": "MTkyLjAuMi4x"}})},
			as: configMapSet(),
			wantErr: &Unreadable{Source: "ConfigMap team-a/egress-ranges", Since: readerStart,
				Err: errors.New(`ConfigMap team-a/egress-ranges holds key "cidrs" in binaryData, not data: list the addresses as text`), After: RemoteRetry},
		},
		"SecretRefused": {
			reason: "A kind that maps to core secrets is refused before anything is listed, saying why.",
			objs:   []runtime.Object{unstructuredOf("v1", "Secret", "team-a", "nat", nil, map[string]any{"data": map[string]any{"ip": "MTkyLjAuMi4x"}})},
			as: nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: "v1", Kind: "Secret",
				ObjectName: "nat", FieldPath: "data.ip"}}),
			wantErr: errors.New("spec.object: kind Secret of v1 is the core resource secrets: an AddressSet never reads Secrets, whose values are credentials"),
		},
		"ClusterScopedRefused": {
			reason: "A cluster-scoped kind is refused: a set reads its own namespace only.",
			as: nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: "v1", Kind: "Namespace",
				ObjectName: "team-a", FieldPath: "metadata.name"}}),
			wantErr: errors.New("spec.object: kind Namespace of v1 is cluster-scoped: an AddressSet reads objects of its own namespace only"),
		},
		"NameAndLabelsRefused": {
			reason: "An object selector names one object or selects by label, not both.",
			as: nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: addressGVK.GroupVersion().String(), Kind: "Address",
				ObjectName: "a", MatchLabels: map[string]string{"egress": "nat"}, FieldPath: "status.atProvider.address"}}),
			wantErr: errors.New(errObjectNameXOR),
		},
		"UnmappedKind": {
			reason: "A kind the API server does not serve (its CRD is not installed) holds the set's addresses and is retried.",
			as: nsSet(v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway",
				ObjectName: "egress", FieldPath: "status.addresses[*].value"}}),
			wantErr: &Unreadable{Source: "Gateway team-a/egress", Since: readerStart, After: UnmappedRetry,
				Err: errors.New(`the API server serves no kind Gateway of gateway.networking.k8s.io/v1: no matches for kind "Gateway" in version "gateway.networking.k8s.io/v1"`)},
		},
		"Forbidden": {
			reason: "A list the API server refuses holds the set's addresses, in the server's own words, since the first failure.",
			objs:   []runtime.Object{lbService("team-a", "nat-a", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.7"})},
			as:     servicesSet("nat"),
			reactors: func(dyn *dynamicfake.FakeDynamicClient) {
				dyn.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden })
			},
			wantErr: &Unreadable{Source: "Services of namespace team-a labelled {app=nat}", Since: readerStart, Err: forbidden, After: RemoteRetry},
		},
		"ObjectsOverBound": {
			reason: "More objects than the bound hold the set's addresses and name the bound.",
			objs: []runtime.Object{
				lbService("team-a", "a", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.1"}),
				lbService("team-a", "b", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.2"}),
				lbService("team-a", "c", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.3"}),
			},
			as:      servicesSet("nat"),
			bounds:  Bounds{ObjectsPerSource: 2},
			wantErr: &Unreadable{Source: "Services of namespace team-a labelled {app=nat}", Since: readerStart, Err: objectsBound("Services of namespace team-a labelled {app=nat}", 2), After: RemoteRetry},
		},
		"ValuesOverBound": {
			reason:  "More values than the bound hold the set's addresses and name the bound.",
			objs:    []runtime.Object{cidrConfigMap("team-a", "egress-ranges", map[string]any{"cidrs": "192.0.2.1 192.0.2.2 192.0.2.3 192.0.2.4"})},
			as:      configMapSet(),
			bounds:  Bounds{ValuesPerSource: 3},
			wantErr: &Unreadable{Source: "ConfigMap team-a/egress-ranges", Since: readerStart, Err: valuesBound("ConfigMap team-a/egress-ranges", 3), After: RemoteRetry},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := newReaderTest(t, tc.bounds, tc.objs...)
			if tc.reactors != nil {
				tc.reactors(rt.dyn)
			}
			got, err := rt.settle(t, tc.as)
			if diff := cmp.Diff(tc.wantErr, err, cmpErrorText); diff != "" {
				t.Errorf("%s\nRead(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			var u, wantU *Unreadable
			if errors.As(err, &u) && errors.As(tc.wantErr, &wantU) && u.After != wantU.After {
				t.Errorf("%s\nRead(...): Unreadable after %s, want %s", tc.reason, u.After, wantU.After)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
				t.Errorf("%s\nRead(...): -want, +got:\n%s", tc.reason, diff)
			}
			if si := rt.informerOfSet(setKey); si != nil && si.informer != nil {
				for _, o := range si.informer.GetStore().List() {
					if _, ok := o.(*kept); !ok {
						t.Errorf("%s\nthe informer holds a %T: it keeps only what the set reads of an object", tc.reason, o)
					}
				}
			}
			for _, a := range rt.dyn.Actions() {
				if a.GetNamespace() != "team-a" || a.GetResource() == secretsGVR {
					t.Errorf("%s\n%s of %s in namespace %q: the reader reads the set's namespace only, and never Secrets", tc.reason, a.GetVerb(), a.GetResource(), a.GetNamespace())
				}
			}
		})
	}
}

// TestNamespaceReaderFirstSync checks that a new informer is Pending, even
// while it fails, until the first sync window passes, and then Unreadable
// with the API server's error since its first failure.
func TestNamespaceReaderFirstSync(t *testing.T) {
	rt := newReaderTest(t, Bounds{})
	rt.r.firstSync = RemoteFirstSync
	now := readerStart
	rt.r.now = func() time.Time { return now }
	forbidden := kerrors.NewForbidden(servicesResource.GroupResource(), "", errors.New("cannot list services"))
	rt.dyn.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden })
	as := servicesSet("nat")

	_, _, err := rt.r.Read(context.Background(), as)
	if diff := cmp.Diff(&Pending{After: remotePoll}, err); diff != "" {
		t.Fatalf("A new informer is Pending: -want, +got:\n%s", diff)
	}
	si := rt.informerOfSet(setKey)
	deadline := time.Now().Add(5 * time.Second)
	for !si.failing() {
		if time.Now().After(deadline) {
			t.Fatal("the refused list was not seen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rt.awaitWake(t) // the outage's readerStart wakes the set

	now = readerStart.Add(RemoteFirstSync - 300*time.Millisecond)
	_, _, err = rt.r.Read(context.Background(), as)
	if diff := cmp.Diff(&Pending{After: 300 * time.Millisecond}, err); diff != "" {
		t.Errorf("A failing informer is Pending until the window ends, and looks again when it does: -want, +got:\n%s", diff)
	}

	now = readerStart.Add(RemoteFirstSync)
	_, _, err = rt.r.Read(context.Background(), as)
	want := &Unreadable{Source: "Services of namespace team-a labelled {app=nat}", Since: readerStart, Err: forbidden, After: RemoteRetry}
	if diff := cmp.Diff(error(want), err, cmpErrorText); diff != "" {
		t.Errorf("Past the window a failing informer is Unreadable since its first failure: -want, +got:\n%s", diff)
	}
}

// TestNamespaceReaderFollowsEdits checks that an edit of what the set reads
// wakes it and is read, that an edit of anything else does not wake it, and
// that a named ConfigMap deleted holds the set's addresses.
func TestNamespaceReaderFollowsEdits(t *testing.T) {
	cm := cidrConfigMap("team-a", "egress-ranges", map[string]any{"cidrs": "192.0.2.1"})
	rt := newReaderTest(t, Bounds{}, cm)
	as := configMapSet()
	got, err := rt.settle(t, as)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}, got.Addresses, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Fatalf("first read: -want, +got:\n%s", diff)
	}
	rt.awaitWake(t) // the first list, once
	rt.awaitWatch(t, configMapsResource)
	select {
	case <-rt.wakes:
		t.Error("The first list woke the set more than once")
	default:
	}
	client := rt.dyn.Resource(configMapsResource).Namespace("team-a")
	ctx := context.Background()

	edited := cm.DeepCopy()
	edited.Object["data"] = map[string]any{"cidrs": "192.0.2.1\n198.51.100.0/28"}
	if _, err := client.Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt.awaitWake(t)
	got, err = rt.settle(t, as)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("198.51.100.0/28")}
	if diff := cmp.Diff(want, got.Addresses, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("An edit of the key is read: -want, +got:\n%s", diff)
	}

	annotated := edited.DeepCopy()
	annotated.SetAnnotations(map[string]string{"owner": "network-team"})
	if _, err := client.Update(ctx, annotated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.Delete(ctx, "egress-ranges", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rt.awaitWake(t)
	// Events reach the handler in order: had the annotation woken the set,
	// that wake came first and the deletion's is still to come.
	select {
	case <-rt.wakes:
		t.Error("An edit that changes nothing the set reads woke it")
	case <-time.After(200 * time.Millisecond):
	}
	_, err = rt.settle(t, as)
	wantErr := &Unreadable{Source: "ConfigMap team-a/egress-ranges", Since: readerStart, Err: errors.New("ConfigMap team-a/egress-ranges not found"), After: RemoteRetry}
	if diff := cmp.Diff(error(wantErr), err, cmpErrorText); diff != "" {
		t.Errorf("A named ConfigMap deleted holds the set's addresses: -want, +got:\n%s", diff)
	}
}

// TestNamespaceReaderSpecChange checks that a changed selector stops the
// set's informer and starts one of the new selection.
func TestNamespaceReaderSpecChange(t *testing.T) {
	rt := newReaderTest(t, Bounds{},
		lbService("team-a", "a", "LoadBalancer", "a", map[string]any{"ip": "203.0.113.1"}),
		lbService("team-a", "b", "LoadBalancer", "b", map[string]any{"ip": "203.0.113.2"}))
	if _, err := rt.settle(t, servicesSet("a")); err != nil {
		t.Fatal(err)
	}
	before := rt.informerOfSet(setKey)
	got, err := rt.settle(t, servicesSet("b"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("203.0.113.2/32")}, got.Addresses, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("The new selector is read: -want, +got:\n%s", diff)
	}
	if after := rt.informerOfSet(setKey); after == before {
		t.Error("The set kept the informer of its old selector")
	}
	if !stopped(before) {
		t.Error("The informer of the old selector did not stop")
	}
}

// TestNamespaceReaderStops checks that Forget stops a set's informer, and
// that the end of the reader's context stops every other.
func TestNamespaceReaderStops(t *testing.T) {
	rt := newReaderTest(t, Bounds{},
		lbService("team-a", "a", "LoadBalancer", "nat", map[string]any{"ip": "203.0.113.1"}),
		cidrConfigMap("team-a", "egress-ranges", map[string]any{"cidrs": "192.0.2.1"}))
	if _, err := rt.settle(t, servicesSet("nat")); err != nil {
		t.Fatal(err)
	}
	other := configMapSet()
	other.Name = "other"
	if _, err := rt.settle(t, other); err != nil {
		t.Fatal(err)
	}
	forgotten := rt.informerOfSet(setKey)
	remaining := rt.informerOfSet(types.NamespacedName{Namespace: "team-a", Name: "other"})

	rt.r.Forget(setKey)
	if rt.informerOfSet(setKey) != nil {
		t.Error("Forget kept the set's informer")
	}
	if !stopped(forgotten) {
		t.Error("Forget did not stop the set's informer")
	}
	select {
	case <-stoppedNow(remaining):
		t.Error("Forget stopped another set's informer")
	default:
	}
	rt.cancel()
	if !stopped(remaining) {
		t.Error("The end of the reader's context did not stop an informer")
	}
}

// stoppedNow is closed once si's goroutines have ended; it is open when
// they run when it is made.
func stoppedNow(si *setInformer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		si.running.Wait()
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	return done
}

// recordingReader records what the Reconciler asks of it.
type recordingReader struct {
	name string
	log  *[]string
}

func (r recordingReader) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	*r.log = append(*r.log, "read "+r.name)
	return Collected{}, 0, nil
}

func (r recordingReader) Forget(types.NamespacedName) { *r.log = append(*r.log, "forget "+r.name) }

// TestReadDispatch checks that a set is read by its source's reader, on the
// remote path for every source but the local Nodes, and that every other
// reader forgets it.
func TestReadDispatch(t *testing.T) {
	cases := map[string]struct {
		spec     v1alpha1.AddressSetSpec
		wantPath path
		want     []string
	}{
		"Services": {
			spec:     servicesSet("nat").Spec,
			wantPath: pathRemote,
			want:     []string{"forget clusters", "forget instances", "forget nats", "read namespaced"},
		},
		"ConfigMap": {
			spec:     configMapSet().Spec,
			wantPath: pathRemote,
			want:     []string{"forget clusters", "forget instances", "forget nats", "read namespaced"},
		},
		"Instances": {
			spec:     v1alpha1.AddressSetSpec{Instances: &v1alpha1.InstanceSelector{MatchLabels: map[string]string{"pool": "web"}}},
			wantPath: pathRemote,
			want:     []string{"forget clusters", "forget namespaced", "forget nats", "read instances"},
		},
		"NAT": {
			spec:     v1alpha1.AddressSetSpec{NAT: &v1alpha1.NATSelector{Router: "r", Region: "europe-west1"}},
			wantPath: pathRemote,
			want:     []string{"forget clusters", "forget instances", "forget namespaced", "read nats"},
		},
		"RemoteNodes": {
			spec:     v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{Cluster: &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1"}}}},
			wantPath: pathRemote,
			want:     []string{"forget instances", "forget namespaced", "forget nats", "read clusters"},
		},
		"LocalNodes": {
			spec:     v1alpha1.AddressSetSpec{Nodes: &v1alpha1.NodeSelector{}},
			wantPath: pathLocal,
			want:     []string{"forget clusters", "forget instances", "forget namespaced", "forget nats"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var log []string
			r := &Reconciler{
				clusters: recordingReader{"clusters", &log}, instances: recordingReader{"instances", &log},
				nats: recordingReader{"nats", &log}, namespaced: recordingReader{"namespaced", &log},
			}
			as := nsSet(tc.spec)
			if got := pathOf(as); got != tc.wantPath {
				t.Errorf("pathOf(...): got %d, want %d", got, tc.wantPath)
			}
			_, _, _ = r.read(context.Background(), as)
			slices.Sort(log)
			if diff := cmp.Diff(tc.want, log); diff != "" {
				t.Errorf("read(...): -want, +got:\n%s", diff)
			}
		})
	}
}

// TestNamespaceReaderSetsPerNamespace: each set reading its namespace is a
// watch of the API server, so one namespace may have only so many; the one
// beyond waits, naming the bound, while another namespace's set is read.
func TestNamespaceReaderSetsPerNamespace(t *testing.T) {
	rt := newReaderTest(t, Bounds{NamespaceSourcesPerNamespace: 1},
		cidrConfigMap("team-a", "egress-ranges", map[string]any{"cidrs": "192.0.2.1"}),
		cidrConfigMap("team-b", "egress-ranges", map[string]any{"cidrs": "198.51.100.1"}))
	if _, err := rt.settle(t, configMapSet()); err != nil {
		t.Fatal(err)
	}
	second := configMapSet()
	second.Name = "second"
	_, _, err := rt.r.Read(context.Background(), second)
	var u *Unreadable
	var b *BoundError
	if !errors.As(err, &u) || !errors.As(err, &b) || b.Flag != FlagNamespaceSources {
		t.Errorf("a second set of team-a: want Unreadable naming %s, got %v", FlagNamespaceSources, err)
	}
	if rt.informerOfSet(types.NamespacedName{Namespace: "team-a", Name: "second"}) != nil {
		t.Error("the set beyond the bound got an informer")
	}
	theirs := configMapSet()
	theirs.Namespace = "team-b"
	got, err := rt.settle(t, theirs)
	if err != nil {
		t.Fatalf("team-b's set: %v", err)
	}
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("198.51.100.1/32")}, got.Addresses, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("team-b's set: -want, +got:\n%s", diff)
	}
	rt.r.Forget(setKey)
	if _, err := rt.settle(t, second); err != nil {
		t.Errorf("once the first set is gone the second is read: %v", err)
	}
}
