package platformsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

const (
	policyName = "web-allowlist"
	pool       = "web"
	// converge bounds each wait for the allowlist to follow a change; the
	// goal is 5 s at p95, so a wait this long means something is wrong.
	converge = 60 * time.Second
)

// offices are the static CIDRs of examples/allowlist/ipallowlist.yaml, which
// the suite applies as it is, under a name of its own (env.xr).
var offices = []string{"203.0.113.0/26", "2001:db8:10::/48", "198.51.100.32/28"}

var xrGVK = schema.GroupVersionKind{Group: "platform.armorplane.io", Version: "v1alpha1", Kind: "IPAllowlist"}

// TestPlatform is the platform team's path in order: the packages are
// installed by Crossplane, an IPAllowlist is composed from Nodes, Nodes change
// the ways a cluster changes them, and the XR is deleted.
func TestPlatform(t *testing.T) {
	e := setup(t)
	ctx := context.Background()

	t.Run("InstalledFromPackages", func(t *testing.T) { e.checkInstalled(ctx, t) })

	e.applyProviderConfig(ctx, t)

	c := newCluster(e)
	for range 3 {
		c.addNode(ctx, t, pool)
	}
	t.Run("Compose", func(t *testing.T) {
		begin := time.Now()
		e.applyXR(ctx, t)
		e.waitAllowlist(t, c.want())
		e.waitXRReady(ctx, t, len(c.want()))
		t.Logf("IPAllowlist Ready and GCP allowing %d sources %.1fs after it was applied", len(c.want()), time.Since(begin).Seconds())
		sp := e.policy(t)
		if sp.Type != "CLOUD_ARMOR" || !defaultDenies(sp) {
			t.Errorf("policy %s: want a CLOUD_ARMOR policy whose default rule denies, got type %q rules %v", policyName, sp.Type, sp.Rules)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("NodeChanges", func(t *testing.T) {
		m := e.newMeter(t)
		defer m.stop()
		changes := []struct {
			kind string
			reps int
			do   func()
		}{
			{"add 1 node", 5, func() { c.addNode(ctx, t, pool) }},
			{"add 20 nodes", 2, func() {
				for range 20 {
					c.addNode(ctx, t, pool)
				}
			}},
			{"add 100 nodes", 1, func() {
				for range 100 {
					c.addNode(ctx, t, pool)
				}
			}},
			{"replace a node", 4, func() { c.replaceNode(ctx, t) }},
			{"node loses its external IP", 3, func() { c.dropExternalIP(ctx, t) }},
			{"node relabelled out of the pool", 3, func() { c.relabel(ctx, t) }},
			{"node deleted", 3, func() { c.deleteNode(ctx, t) }},
		}
		for _, ch := range changes {
			for range ch.reps {
				m.measure(t, ch.kind, c, ch.do)
			}
		}
		m.report(t)
	})
	if t.Failed() {
		return
	}

	// Every Node gone at once looks like a watch restart or a mistyped
	// selector: the AddressSet holds the shrink back (shrinkHoldSeconds,
	// shortened here), the IPAllowlist says so and is not Ready, and GCP
	// keeps allowing the Nodes until the hold is over.
	t.Run("DrainHeldThenApplied", func(t *testing.T) {
		const hold = 8 * time.Second
		before := c.want()
		e.setShrinkHold(ctx, t, hold)
		e.waitXRReady(ctx, t, len(before))
		begin := time.Now()
		c.drain(ctx, t)
		wait.Eventually(t, converge, "the IPAllowlist to say it holds a shrink", func() error {
			s, reason, msg := e.xrCondition(ctx, t, "Current")
			if s != "False" || reason != "SourceHeld" {
				return fmt.Errorf("Current=%s %s %s", s, reason, msg)
			}
			if ready, _, _ := e.xrCondition(ctx, t, "Ready"); ready == "True" {
				return fmt.Errorf("Ready=True while a shrink is held")
			}
			return nil
		})
		// The Nodes' deletions arrive over several of the AddressSet's
		// looks; the first ones, under half, may be applied, but it never
		// publishes fewer than half of what it held within the hold.
		if held := time.Since(begin); held < hold {
			as := &unstructured.Unstructured{}
			as.SetGroupVersionKind(schema.GroupVersionKind{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "AddressSet"})
			if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: e.xr + "-nodes-pool-web"}, as); err != nil {
				t.Fatal(err)
			}
			count, _, _ := unstructured.NestedInt64(as.Object, "status", "addressCount")
			from, _, _ := unstructured.NestedInt64(as.Object, "status", "heldShrink", "from")
			if count*2 < from {
				t.Errorf("%.1fs into a %s hold the AddressSet publishes %d addresses, want at least half of the %d it held", held.Seconds(), hold, count, from)
			}
			t.Logf("%.1fs into the hold: the AddressSet publishes %d of the %d addresses it held; GCP allows %d Node addresses", held.Seconds(), count, from, len(allowedSources(e.policy(t), e.groups()))-len(offices))
		}
		e.waitAllowlist(t, sortedCopy(offices))
		if took := time.Since(begin); took < hold {
			t.Errorf("the drain reached GCP after %.1fs, before the %s hold was over", took.Seconds(), hold)
		}
		t.Logf("drain of %d sources held, then applied %.1fs after the Nodes were deleted (hold %s)", len(before)-len(offices), time.Since(begin).Seconds(), hold)
		sp := e.policy(t)
		if got, want := allowedSources(sp, e.groups()), sortedCopy(offices); !slices.Equal(got, want) {
			t.Errorf("after draining every node: GCP allows %v, want only the offices %v", got, want)
		}
		if !defaultDenies(sp) {
			t.Errorf("after draining every node the default rule must still deny: %v", sp.Rules)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("DeleteXR", func(t *testing.T) {
		xr := &unstructured.Unstructured{}
		xr.SetGroupVersionKind(xrGVK)
		xr.SetNamespace("default")
		xr.SetName(e.xr)
		begin := time.Now()
		if err := e.cp.Client.Delete(ctx, xr); err != nil {
			t.Fatal(err)
		}
		wait.Eventually(t, converge, "the XR, its composed resources and the GCP policy to be gone", func() error {
			if err := e.plat.Err(); err != nil {
				t.Fatal(err)
			}
			if err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(xr), xr); !kerrors.IsNotFound(err) {
				return fmt.Errorf("XR still there (%v)", err)
			}
			for _, kind := range []string{"SecurityPolicy", "SecurityPolicyRule"} {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(schema.GroupVersionKind{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: kind + "List"})
				if err := e.cp.Client.List(ctx, l, client.InNamespace("default")); err != nil {
					return err
				}
				if len(l.Items) > 0 {
					return fmt.Errorf("%d %s objects remain", len(l.Items), kind)
				}
			}
			if _, err := e.gcp.SecurityPolicies.Get(project, policyName).Do(); err == nil {
				return fmt.Errorf("GCP policy %s still exists", policyName)
			}
			return nil
		})
		t.Logf("XR, composed resources and GCP policy gone %.1fs after the delete", time.Since(begin).Seconds())
	})
}

// checkInstalled asserts that what the cluster serves came from the packages:
// the provider's CRDs are owned by its ProviderRevision, the XRD and the
// Composition by the ConfigurationRevision.
func (e *env) checkInstalled(ctx context.Context, t *testing.T) {
	for _, crd := range []string{"securitypolicies.cloudarmor.armorplane.io", "securitypolicyrules.cloudarmor.armorplane.io", "addresssets.cloudarmor.armorplane.io",
		"securitypolicyallowlists.cloudarmor.armorplane.io", "clusterproviderconfigs.armorplane.io", "providerconfigs.armorplane.io"} {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := e.cp.Client.Get(ctx, types.NamespacedName{Name: crd}, o); err != nil {
			t.Errorf("CRD %s: %v", crd, err)
			continue
		}
		if !ownedBy(o.GetOwnerReferences(), "ProviderRevision", platform.ProviderName+"-") {
			t.Errorf("CRD %s is not owned by the provider's ProviderRevision: %v", crd, o.GetOwnerReferences())
		}
	}
	for _, o := range []struct{ gvk schema.GroupVersionKind }{
		{schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v2", Kind: "CompositeResourceDefinition"}},
		{schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "Composition"}},
	} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.gvk)
		if err := e.cp.Client.Get(ctx, types.NamespacedName{Name: "ipallowlists.platform.armorplane.io"}, u); err != nil {
			t.Errorf("%s: %v", o.gvk.Kind, err)
			continue
		}
		if !ownedBy(u.GetOwnerReferences(), "ConfigurationRevision", platform.ConfigurationName+"-") {
			t.Errorf("%s is not owned by the ConfigurationRevision: %v", o.gvk.Kind, u.GetOwnerReferences())
		}
	}
	// README.md installs the provider by name (for its runtime config);
	// Crossplane named the functions itself, from the Configuration's
	// dependsOn, and the Composition refers to them by those names.
	for _, want := range []struct{ kind, name string }{
		{"Provider", platform.ProviderName},
		{"Function", platform.FunctionName},
		{"Function", platform.AutoReadyName},
	} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: want.kind})
		if err := e.cp.Client.Get(ctx, types.NamespacedName{Name: want.name}, u); err != nil {
			t.Errorf("%s %s, installed as a dependency: %v", want.kind, want.name, err)
		}
	}
}

func ownedBy(refs []metav1.OwnerReference, kind, namePrefix string) bool {
	for _, r := range refs {
		if r.Kind == kind && strings.HasPrefix(r.Name, namePrefix) {
			return true
		}
	}
	return false
}

func (e *env) applyYAML(ctx context.Context, t *testing.T, manifest string) {
	t.Helper()
	path := writeTemp(t, manifest)
	wait.Eventually(t, 30*time.Second, "apply "+path, func() error {
		_, err := e.cp.Apply(ctx, path)
		return err
	})
}

// policy reads the allowlist's policy from GCP (the emulator) through the
// official client.
func (e *env) policy(t *testing.T) *compute.SecurityPolicy {
	t.Helper()
	sp, err := e.gcp.SecurityPolicies.Get(project, policyName).Do()
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// snapshot reads the policy from the emulator's memory, without a request, so
// sampling it costs no API call and is not counted.
func (e *env) snapshot() *compute.SecurityPolicy {
	raw, ok := e.emu.Snapshot()[fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, policyName)]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	sp := &compute.SecurityPolicy{}
	if err := json.Unmarshal(b, sp); err != nil {
		return nil
	}
	return sp
}

// groups reads the project's global address groups' items from the emulator's
// memory, by group name.
func (e *env) groups() map[string][]string {
	prefix := fmt.Sprintf("projects/%s/locations/global/addressGroups/", project)
	out := map[string][]string{}
	for name, g := range e.emu.AddressGroups() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		items, _ := g["items"].([]string)
		out[strings.TrimPrefix(name, prefix)] = items
	}
	return out
}

// allowed is what GCP allows through the allowlist's priority range now, read
// from the emulator's memory; nil while the policy does not exist.
func (e *env) allowed() []string {
	sp := e.snapshot()
	if sp == nil {
		return nil
	}
	return allowedSources(sp, e.groups())
}

// waitAllowlist waits until GCP allows exactly want in the allowlist's
// priority range.
func (e *env) waitAllowlist(t *testing.T, want []string) {
	t.Helper()
	wait.Eventually(t, converge, "GCP to allow exactly the wanted sources", func() error {
		if err := e.plat.Err(); err != nil {
			t.Fatal(err)
		}
		sp := e.snapshot()
		if sp == nil {
			return fmt.Errorf("no policy %s in GCP yet", policyName)
		}
		if got := allowedSources(sp, e.groups()); !slices.Equal(got, want) {
			return fmt.Errorf("GCP allows %d sources, want %d; the IPAllowlist says %s", len(got), len(want), e.xrSays(t))
		}
		return nil
	})
}

func (e *env) waitXRReady(ctx context.Context, t *testing.T, ips int) {
	t.Helper()
	wait.Eventually(t, converge, "the IPAllowlist to be Ready with its counts", func() error {
		xr := &unstructured.Unstructured{}
		xr.SetGroupVersionKind(xrGVK)
		if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: e.xr}, xr); err != nil {
			return err
		}
		if s, msg := platform.Condition(xr, "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s %s", s, msg)
		}
		got, _, _ := unstructured.NestedInt64(xr.Object, "status", "ipCount")
		rules, _, _ := unstructured.NestedInt64(xr.Object, "status", "ruleCount")
		if int(got) != ips || rules < 1 {
			return fmt.Errorf("status.ipCount=%d ruleCount=%d, want ipCount %d", got, rules, ips)
		}
		return nil
	})
}

// applyProviderConfig applies the ProviderConfig the composed resources use
// (they name none), pointed at the suite's emulator.
func (e *env) applyProviderConfig(ctx context.Context, t *testing.T) {
	t.Helper()
	e.applyYAML(ctx, t, fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: emulator-token, namespace: default}
stringData: {token: %s}
---
apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: default}
spec:
  projectID: %s
  endpoint: %s
  credentials:
    source: AccessToken
    secretRef: {namespace: default, name: emulator-token, key: token}
  # The IPAllowlist's attachTo composes attachments in namespace default:
  # they write only the backend service granted here.
  attachmentGrants:
  - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: default}}
    targets: [{kind: BackendService, names: [%s]}]
`, token, project, e.endpoint, attachBackend))
}

// setShrinkHold sets the node source's shrinkHoldSeconds on the IPAllowlist.
func (e *env) setShrinkHold(ctx context.Context, t *testing.T, hold time.Duration) {
	t.Helper()
	e.patchXR(ctx, t, fmt.Sprintf(`{"spec":{"nodeSources":[{"name":"pool-web","matchLabels":{"cloud.google.com/gke-nodepool":%q},"shrinkHoldSeconds":%d}]}}`, pool, int(hold.Seconds())))
}

// xrCondition returns the status, reason and message of the IPAllowlist's
// condition of type typ.
func (e *env) xrCondition(ctx context.Context, t *testing.T, typ string) (status, reason, message string) {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: e.xr}, xr); err != nil {
		t.Fatal(err)
	}
	return platform.ConditionOf(xr, typ)
}

// xrSays is the IPAllowlist's conditions, for a failure's message: whether
// Crossplane's circuit breaker holds it (Responsive) and what it waits for.
// A deleted IPAllowlist says so: Crossplane removes it before its composed
// resources have finished deleting.
func (e *env) xrSays(t *testing.T) string {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	if err := e.cp.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: e.xr}, xr); err != nil {
		if kerrors.IsNotFound(err) {
			return "the IPAllowlist is gone"
		}
		t.Fatal(err)
	}
	var out []string
	for _, typ := range []string{"Ready", "Synced", "Responsive", "Current"} {
		st, reason, msg := platform.ConditionOf(xr, typ)
		out = append(out, fmt.Sprintf("%s=%s %s %q", typ, st, reason, msg))
	}
	return strings.Join(out, "; ")
}

// allowedSources is the sorted set of source ranges that allow rules in the
// allowlist's priority range admit: their source ranges, and the items of the
// address groups their expressions evaluate (groups, by name).
func allowedSources(sp *compute.SecurityPolicy, groups map[string][]string) []string {
	set := map[string]bool{}
	for _, r := range sp.Rules {
		if r.Priority < 1000 || r.Priority > 1099 || r.Action != "allow" || r.Preview || r.Match == nil {
			continue
		}
		if r.Match.Config != nil {
			for _, s := range r.Match.Config.SrcIpRanges {
				set[canonical(s)] = true
			}
		}
		if r.Match.Expr != nil {
			for _, m := range evaluateAddressGroup.FindAllStringSubmatch(r.Match.Expr.Expression, -1) {
				for _, s := range groups[m[1]] {
					set[canonical(s)] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var evaluateAddressGroup = regexp.MustCompile(`evaluateAddressGroup\('([^']+)', origin\.ip\)`)

// defaultDenies reports whether the default rule denies.
func defaultDenies(sp *compute.SecurityPolicy) bool {
	for _, r := range sp.Rules {
		if r.Priority == 2147483647 {
			return strings.HasPrefix(r.Action, "deny")
		}
	}
	return false
}

// canonical writes an address as the /32 or /128 prefix GCP stores.
func canonical(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	return s
}

func sortedCopy(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		out = append(out, canonical(v))
	}
	sort.Strings(out)
	return out
}

// cluster is the suite's Nodes, and the allowlist they call for.
type cluster struct {
	e     *env
	mu    sync.Mutex
	next  int
	nodes map[string]*corev1.Node // in the pool with an external IP, by name
	// others are Nodes that exist but contribute nothing.
	others map[string]bool
	// realistic gives added Nodes a kubelet's full status (TestScale).
	realistic bool
}

func newCluster(e *env) *cluster {
	return &cluster{e: e, nodes: map[string]*corev1.Node{}, others: map[string]bool{}}
}

// want is the allowlist the Nodes call for: the offices and each pool
// node's external IP.
func (c *cluster) want() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(offices)
	for _, n := range c.nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeExternalIP {
				out = append(out, a.Address)
			}
		}
	}
	return sortedCopy(out)
}

// newIP is a fresh external address for the n-th node.
func newIP(n int) string { return fmt.Sprintf("34.%d.%d.%d", 100+n/65536, (n/256)%256, n%256) }

func (c *cluster) addNode(ctx context.Context, t *testing.T, pool string) {
	t.Helper()
	if err := c.createPoolNode(ctx, c.e.cp.Client, pool); err != nil {
		t.Fatal(err)
	}
}

// createPoolNode creates the next Node of pool through kc and records it.
func (c *cluster) createPoolNode(ctx context.Context, kc client.Client, pool string) error {
	c.mu.Lock()
	c.next++
	n := c.next
	c.mu.Unlock()
	nd := node(fmt.Sprintf("gke-web-%04d", n), pool, fmt.Sprintf("10.0.%d.%d", n/256, n%256), newIP(n))
	if c.realistic {
		realisticStatus(nd)
	}
	if err := createNode(ctx, kc, nd); err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[nd.Name] = nd
	c.mu.Unlock()
	return nil
}

// pick returns the oldest pool node.
func (c *cluster) pick(t *testing.T) *corev1.Node {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		names = append(names, n)
	}
	if len(names) == 0 {
		t.Fatal("no pool node left to change")
	}
	sort.Strings(names)
	return c.nodes[names[0]]
}

func (c *cluster) forget(name string, stillExists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	if stillExists {
		c.others[name] = true
	}
}

func (c *cluster) deleteNode(ctx context.Context, t *testing.T) {
	t.Helper()
	n := c.pick(t)
	// Forgotten first: the meter stops requiring a source once it is being removed.
	c.forget(n.Name, false)
	if err := c.e.cp.Client.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// replaceNode deletes the oldest node and adds a new one with a new IP, as a
// node pool upgrade does: both land in one change.
func (c *cluster) replaceNode(ctx context.Context, t *testing.T) {
	t.Helper()
	c.deleteNode(ctx, t)
	c.addNode(ctx, t, pool)
}

func (c *cluster) dropExternalIP(ctx context.Context, t *testing.T) {
	t.Helper()
	n := c.pick(t)
	cur := &corev1.Node{}
	if err := c.e.cp.Client.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
		t.Fatal(err)
	}
	orig := cur.DeepCopy()
	cur.Status.Addresses = slices.DeleteFunc(cur.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Type == corev1.NodeExternalIP })
	// A patch, not an update: the node lifecycle controller writes Nodes too.
	c.forget(n.Name, true)
	if err := c.e.cp.Client.Status().Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) relabel(ctx context.Context, t *testing.T) {
	t.Helper()
	n := c.pick(t)
	patch := []byte(`{"metadata":{"labels":{"cloud.google.com/gke-nodepool":"batch"}}}`)
	c.forget(n.Name, true)
	if err := c.e.cp.Client.Patch(ctx, &corev1.Node{ObjectMeta: n.ObjectMeta}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// drain deletes every Node the suite made, in the pool or not, at once. The
// real node stays: deleting it would take Crossplane's and the provider's
// pods with it (their node gone, the pod garbage collector deletes them and
// nothing can be scheduled until the kubelet registers again), which the
// suites after this one would meet.
func (c *cluster) drain(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := c.e.cp.Client.DeleteAllOf(ctx, &corev1.Node{}, client.HasLabels{"cloud.google.com/gke-nodepool"}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes = map[string]*corev1.Node{}
	c.others = map[string]bool{}
	c.mu.Unlock()
}
