package platformsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// The private cluster's IPAllowlist, examples/allowlist/private-cluster/ipallowlist.yaml,
// applied in namespace teamA. teamB holds objects of the same names and labels, which must
// never reach its rules.
const (
	teamA         = "team-a"
	teamB         = "team-b"
	privateXRName = "private-web"
	privatePolicy = "private-web-allowlist"
	privateFirst  = 2000
	privateLast   = 2009
)

// addressGVK is provider-gcp's namespaced Address (provider-upjet-gcp v2,
// compute.gcp.m.upbound.io/v1beta1), whose status.atProvider.address holds the reserved IP.
// The suite installs a CRD of that shape rather than the provider.
var addressGVK = schema.GroupVersionKind{Group: "compute.gcp.m.upbound.io", Version: "v1beta1", Kind: "Address"}

const addressCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: addresses.compute.gcp.m.upbound.io
spec:
  group: compute.gcp.m.upbound.io
  names: {kind: Address, listKind: AddressList, plural: addresses, singular: address, categories: [crossplane, managed, gcp]}
  scope: Namespaced
  versions:
    - name: v1beta1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                forProvider:
                  type: object
                  properties:
                    addressType: {type: string}
                    region: {type: string}
            status:
              type: object
              properties:
                atProvider:
                  type: object
                  properties:
                    address: {type: string}
                    id: {type: string}
`

// TestPrivateSources composes the IPAllowlist of a private cluster whose callers arrive through
// a LoadBalancer egress gateway, a Cloud NAT Address (provider-gcp's kind) and a ConfigMap the
// network team keeps. The provider reads them, with watches in the IPAllowlist's namespace only,
// through an AddressSet each; the test times how long GCP takes to follow a change to each, and
// checks that none of those changes reaches an object Crossplane composed. The provider is the
// pod Crossplane installed, reading with the grants of examples/allowlist/rbac.yaml.
func TestPrivateSources(t *testing.T) {
	begin := time.Now()
	// Registered before setup's, so run after it, once the IPAllowlist is
	// gone: the teams' objects go too, or the next test (or this one run
	// again, -count=2) would find the second gateway Service of this run
	// and compose its address.
	var e *env
	t.Cleanup(func() {
		if e != nil {
			e.deletePrivateObjects(t)
		}
	})
	e = setup(t)
	ctx := context.Background()
	e.applyProviderConfig(ctx, t)
	e.applyYAML(ctx, t, addressCRD)
	for _, ns := range []string{teamA, teamB} {
		if err := e.cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	// What the team's sources hold, and the other team's objects of the same names and labels.
	e.gatewayService(ctx, t, teamA, "egress-gateway", "34.120.0.10")
	e.configMap(ctx, t, teamA, "egress-ranges", "# partner egress\n198.51.100.0/28, 198.51.100.64/28\n")
	e.address(ctx, t, teamA, "cloud-nat-egress", "35.200.0.1")
	e.gatewayService(ctx, t, teamB, "egress-gateway", "34.120.9.9")
	e.configMap(ctx, t, teamB, "egress-ranges", "192.0.2.0/24")
	e.address(ctx, t, teamB, "cloud-nat-egress", "35.200.9.9")
	theirs := []string{"34.120.9.9/32", "192.0.2.0/24", "35.200.9.9/32"}

	want := []string{"203.0.113.0/26", "34.120.0.10", "35.200.0.1", "198.51.100.0/28", "198.51.100.64/28"}
	t.Run("Compose", func(t *testing.T) {
		start := time.Now()
		e.applyPrivateXR(ctx, t)
		e.waitPrivate(t, want, theirs)
		e.waitPrivateReady(ctx, t, len(want))
		t.Logf("IPAllowlist %s/%s Ready and GCP allowing its %d sources %.1fs after it was applied", teamA, privateXRName, len(want), time.Since(start).Seconds())
	})
	if t.Failed() {
		return
	}

	t.Run("ChangesFollowed", func(t *testing.T) {
		changes := []struct {
			what string
			do   func()
			want []string
		}{
			{"gateway Service's load balancer IP changed", func() { e.gatewayService(ctx, t, teamA, "egress-gateway", "34.120.0.11") },
				[]string{"203.0.113.0/26", "34.120.0.11", "35.200.0.1", "198.51.100.0/28", "198.51.100.64/28"}},
			{"second gateway Service added", func() { e.gatewayService(ctx, t, teamA, "egress-gateway-b", "34.120.0.12") },
				[]string{"203.0.113.0/26", "34.120.0.11", "34.120.0.12", "35.200.0.1", "198.51.100.0/28", "198.51.100.64/28"}},
			{"ConfigMap edited", func() {
				e.configMap(ctx, t, teamA, "egress-ranges", "198.51.100.0/28\n2001:db8:20::/48 # new partner\n")
			},
				[]string{"203.0.113.0/26", "34.120.0.11", "34.120.0.12", "35.200.0.1", "198.51.100.0/28", "2001:db8:20::/48"}},
			{"Address's status.atProvider.address changed", func() { e.address(ctx, t, teamA, "cloud-nat-egress", "35.200.0.2") },
				[]string{"203.0.113.0/26", "34.120.0.11", "34.120.0.12", "35.200.0.2", "198.51.100.0/28", "2001:db8:20::/48"}},
			{"the other team's objects changed (nothing to follow)", func() {
				e.gatewayService(ctx, t, teamB, "egress-gateway", "34.120.9.10")
				e.configMap(ctx, t, teamB, "egress-ranges", "192.0.2.0/25")
			}, nil},
		}
		// The composed allowlist's spec names the sources, not what they hold: no change below
		// may change it, or it would go through Crossplane's loop.
		generation := e.allowlistGeneration(ctx, t)
		var took []string
		for _, ch := range changes {
			if ch.want == nil {
				ch.do()
				// Wait longer than any change above took, then check nothing moved.
				time.Sleep(3 * time.Second)
				e.waitPrivate(t, want, append(theirs, "34.120.9.10/32", "192.0.2.0/25"))
				continue
			}
			// An edit on its own, as a team makes one: the allowlist holds a change that
			// follows another within its 2 s batch window for the rest of a burst, which
			// TestBursts measures with Nodes.
			time.Sleep(batchWindow)
			start := time.Now()
			ch.do()
			e.waitPrivate(t, ch.want, theirs)
			d := time.Since(start)
			took = append(took, fmt.Sprintf("%s %.2fs", ch.what, d.Seconds()))
			t.Logf("%-48s reached GCP in %.2fs", ch.what, d.Seconds())
			want = ch.want
		}
		t.Logf("changes followed: %v", took)
		if g := e.allowlistGeneration(ctx, t); g != generation {
			t.Errorf("the composed SecurityPolicyAllowlist's generation went from %d to %d: a change of a source's object went through Crossplane", generation, g)
		}
		e.wantResponsive(ctx, t)
	})
	if t.Failed() {
		return
	}

	// The Address is named (objectName, required): deleting it is an error, not "no NAT".
	// GCP keeps allowing the NAT address, the IPAllowlist says why and is not Ready; a new
	// Address is followed.
	t.Run("NamedAddressDeletedHolds", func(t *testing.T) {
		a := &unstructured.Unstructured{}
		a.SetGroupVersionKind(addressGVK)
		a.SetNamespace(teamA)
		a.SetName("cloud-nat-egress")
		if err := e.cp.Client.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		// The provider holds the set's last addresses and says why, with the time the outage began.
		wantMsg := regexp.MustCompile(`^object source "cloud-nat": AddressSet private-web-nodes-cloud-nat: cannot read Address team-a/cloud-nat-egress since [0-9TZ:-]+: .*not found`)
		wait.Eventually(t, converge, "the IPAllowlist to hold its rules", func() error {
			if err := e.plat.Err(); err != nil {
				t.Fatal(err)
			}
			xr := e.privateXR(ctx, t)
			if s, reason, msg := platform.ConditionOf(xr, "Current"); s != "False" || reason != "SourceUnreadable" || !wantMsg.MatchString(msg) {
				// Core's own conditions say whether it saw the deletion at all.
				ss, sr, sm := platform.ConditionOf(xr, "Synced")
				rs, rr, rm := platform.ConditionOf(xr, "Responsive")
				return fmt.Errorf("Current=%s %s %q (Synced=%s %s %q, Responsive=%s %s %q)", s, reason, msg, ss, sr, sm, rs, rr, rm)
			}
			if s, _ := platform.Condition(xr, "Ready"); s == "True" {
				return fmt.Errorf("Ready=True while the rules are held")
			}
			return nil
		})
		e.waitPrivate(t, want, theirs)
		time.Sleep(batchWindow)
		start := time.Now()
		e.address(ctx, t, teamA, "cloud-nat-egress", "35.200.0.3")
		want = []string{"203.0.113.0/26", "34.120.0.11", "34.120.0.12", "35.200.0.3", "198.51.100.0/28", "2001:db8:20::/48"}
		e.waitPrivate(t, want, theirs)
		e.waitPrivateReady(ctx, t, len(want))
		t.Logf("Address re-created: GCP followed in %.2fs", time.Since(start).Seconds())
		e.wantResponsive(ctx, t)
	})
	t.Logf("TestPrivateSources took %.1fs, platform start included", time.Since(begin).Seconds())
}

// batchWindow is a little more than the allowlist's window for a burst of range changes (2 s).
const batchWindow = 2200 * time.Millisecond

// allowlistGeneration is the generation of the private cluster's composed SecurityPolicyAllowlist.
func (e *env) allowlistGeneration(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	al := &unstructured.Unstructured{}
	al.SetGroupVersionKind(schema.GroupVersionKind{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAllowlist"})
	if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: teamA, Name: privateXRName}, al); err != nil {
		t.Fatal(err)
	}
	return al.GetGeneration()
}

// wantResponsive fails the test if Crossplane's circuit breaker opened for the private
// cluster's IPAllowlist: a few edits of its sources must not cost it a hundred events.
func (e *env) wantResponsive(ctx context.Context, t *testing.T) {
	t.Helper()
	if s, reason, msg := platform.ConditionOf(e.privateXR(ctx, t), "Responsive"); s == "False" {
		t.Errorf("Crossplane's circuit breaker opened for the IPAllowlist: Responsive=False %s %q", reason, msg)
	}
}

// applyPrivateXR applies examples/allowlist/private-cluster/ipallowlist.yaml in namespace teamA.
func (e *env) applyPrivateXR(ctx context.Context, t *testing.T) {
	t.Helper()
	e.createExample(ctx, t, teamA, nil, "private-cluster", "ipallowlist.yaml")
}

// createExample creates the IPAllowlist of examples/allowlist/<path> in
// namespace, after edit (if not nil) changed it.
func (e *env) createExample(ctx context.Context, t *testing.T, namespace string, edit func(*unstructured.Unstructured), path ...string) {
	t.Helper()
	b, err := os.ReadFile(repo.Path(append([]string{"examples", "allowlist"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(namespace)
	if edit != nil {
		edit(u)
	}
	if err := e.cp.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
}

func (e *env) privateXR(ctx context.Context, t *testing.T) *unstructured.Unstructured {
	t.Helper()
	xr := &unstructured.Unstructured{}
	xr.SetGroupVersionKind(xrGVK)
	if err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: teamA, Name: privateXRName}, xr); err != nil {
		t.Fatal(err)
	}
	return xr
}

// gatewayService creates or updates a Service of type LoadBalancer labelled
// app=egress-gateway whose load balancer reports ip, as a cloud's service controller does.
func (e *env) gatewayService(ctx context.Context, t *testing.T, namespace, name, ip string) {
	t.Helper()
	s := &corev1.Service{}
	err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)
	if kerrors.IsNotFound(err) {
		s = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "egress-gateway"}},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "egress-gateway"},
				Ports:    []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}},
			},
		}
		err = e.cp.Client.Create(ctx, s)
	}
	if err != nil {
		t.Fatal(err)
	}
	vip := corev1.LoadBalancerIPModeVIP
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: &vip}}
	if err := e.cp.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// deletePrivateObjects deletes what TestPrivateSources made in the teams'
// namespaces: the gateway Services, the egress-ranges ConfigMaps and the
// Addresses. The namespaces stay; a namespace being deleted would refuse the
// next run's objects until it is gone.
func (e *env) deletePrivateObjects(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{teamA, teamB} {
		var objects []client.Object
		services := &corev1.ServiceList{}
		if err := e.cp.Client.List(ctx, services, client.InNamespace(ns), client.MatchingLabels{"app": "egress-gateway"}); err != nil {
			t.Errorf("cannot list the gateway Services of %s: %v", ns, err)
		}
		for i := range services.Items {
			objects = append(objects, &services.Items[i])
		}
		objects = append(objects, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "egress-ranges"}})
		addresses := &unstructured.UnstructuredList{}
		addresses.SetGroupVersionKind(addressGVK.GroupVersion().WithKind(addressGVK.Kind + "List"))
		if err := e.cp.Client.List(ctx, addresses, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
			t.Errorf("cannot list the Addresses of %s: %v", ns, err)
		}
		for i := range addresses.Items {
			objects = append(objects, &addresses.Items[i])
		}
		for _, o := range objects {
			if err := e.cp.Client.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
				t.Errorf("cannot delete %s %s/%s: %v", o.GetObjectKind().GroupVersionKind().Kind, ns, o.GetName(), err)
			}
		}
	}
}

// configMap creates or updates ConfigMap name with key cidrs.
func (e *env) configMap(ctx context.Context, t *testing.T, namespace, name, cidrs string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err := e.cp.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	switch {
	case kerrors.IsNotFound(err):
		cm.Data = map[string]string{"cidrs": cidrs}
		err = e.cp.Client.Create(ctx, cm)
	case err == nil:
		cm.Data = map[string]string{"cidrs": cidrs}
		err = e.cp.Client.Update(ctx, cm)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// address creates or updates an Address labelled egress=nat whose
// status.atProvider.address is addr, as provider-gcp reports a reserved address.
func (e *env) address(ctx context.Context, t *testing.T, namespace, name, addr string) {
	t.Helper()
	a := &unstructured.Unstructured{}
	a.SetGroupVersionKind(addressGVK)
	err := e.cp.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, a)
	if kerrors.IsNotFound(err) {
		a = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"forProvider": map[string]any{
			"addressType": "EXTERNAL", "region": "europe-west1",
		}}}}
		a.SetGroupVersionKind(addressGVK)
		a.SetNamespace(namespace)
		a.SetName(name)
		a.SetLabels(map[string]string{"egress": "nat"})
		err = e.cp.Client.Create(ctx, a)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(a.Object, addr, "status", "atProvider", "address"); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Client.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// waitPrivate waits until GCP allows exactly want in the private allowlist's priority range,
// failing at once if it ever allows one of never.
func (e *env) waitPrivate(t *testing.T, want, never []string) {
	t.Helper()
	want = sortedCopy(want)
	wait.Eventually(t, converge, "GCP to allow exactly the private cluster's sources", func() error {
		if err := e.plat.Err(); err != nil {
			t.Fatal(err)
		}
		sp := e.snapshotOf(privatePolicy)
		if sp == nil {
			return fmt.Errorf("no policy %s in GCP yet", privatePolicy)
		}
		got := allowedIn(sp, privateFirst, privateLast)
		for _, n := range sortedCopy(never) {
			if slices.Contains(got, n) {
				t.Fatalf("GCP allows %s, from another team's namespace: %v", n, got)
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("GCP allows %v, want %v", got, want)
		}
		return nil
	}, wait.Every(20*time.Millisecond))
}

func (e *env) waitPrivateReady(ctx context.Context, t *testing.T, ips int) {
	t.Helper()
	wait.Eventually(t, converge, "the private IPAllowlist to be Ready with its counts", func() error {
		xr := e.privateXR(ctx, t)
		if s, msg := platform.Condition(xr, "Ready"); s != "True" {
			return fmt.Errorf("Ready=%s %s", s, msg)
		}
		if s, reason, msg := platform.ConditionOf(xr, "Current"); s != "True" {
			return fmt.Errorf("Current=%s %s %s", s, reason, msg)
		}
		if got, _, _ := unstructured.NestedInt64(xr.Object, "status", "ipCount"); int(got) != ips {
			return fmt.Errorf("status.ipCount=%d, want %d", got, ips)
		}
		return nil
	})
}

// snapshotOf reads a global policy from the emulator's memory.
func (e *env) snapshotOf(name string) *compute.SecurityPolicy {
	raw, ok := e.emu.Snapshot()[fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, name)]
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

// allowedIn is the sorted set of source ranges that allow rules of priorities first to last
// admit.
func allowedIn(sp *compute.SecurityPolicy, first, last int64) []string {
	set := map[string]bool{}
	for _, r := range sp.Rules {
		if r.Priority < first || r.Priority > last || r.Action != "allow" || r.Preview || r.Match == nil || r.Match.Config == nil {
			continue
		}
		for _, s := range r.Match.Config.SrcIpRanges {
			set[canonical(s)] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
