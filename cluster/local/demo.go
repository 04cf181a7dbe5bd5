package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
)

const (
	// emulatorHostAddr is where the host reaches the emulator pod, as the
	// examples' and README's curl commands say (a free port if taken).
	emulatorHostAddr = "127.0.0.1:8787"
	// dataPlaneHostAddr is where the host reaches the emulator's data
	// plane (a free port if taken).
	dataPlaneHostAddr = "127.0.0.1:8788"
	demoProject       = "demo-project"
	demoOpLatency     = time.Second
	importedPolicy    = "legacy-console-policy"
	// legacyBackend is the backend service, made outside Kubernetes like the
	// policy it uses, that the imported policy's status lists (usedBy).
	legacyBackend = "legacy-console"
	// attachedBackend is the backend service, made outside Kubernetes
	// without a policy, that examples/features/attachment.yaml attaches
	// office-allowlist to.
	attachedBackend = "web-frontend"
	// poolBackend is the backend service, made outside Kubernetes without a
	// policy, that examples/allowlist/attached's IPAllowlist attaches its
	// policy to.
	poolBackend  = "web-pool"
	readyTimeout = 3 * time.Minute
)

// The example folders `make run` applies, in order. examples/allowlist is
// composed by Crossplane from the Nodes startDemo creates (through the
// AddressSet the provider keeps from them); examples/allowlist/fleet and
// instances read what prepareFleet makes.
var demoExamples = []string{"providerconfig", "securitypolicy", "securitypolicyrule", "regional", "import", "allowlist", "allowlist/fleet", "allowlist/instances", "allowlist/nat", "allowlist/attached",
	"features/network-edge-security-service.yaml", "features/project-tier.yaml", "features/organization-policy.yaml",
	"features/organization-policy-rule.yaml", "features/attachment.yaml"}

// demoNodes are Node objects `make run` creates besides the real one: three
// in the pool the example IPAllowlist selects and one outside it, with
// addresses as a cloud's node controller reports them. No kubelet runs for
// them, so they are unschedulable: no pod may be placed on them.
var demoNodes = []struct{ name, pool, internal, external string }{
	{"gke-web-a", "web", "10.128.0.2", "34.118.10.1"},
	{"gke-web-b", "web", "10.128.0.3", "34.118.10.2"},
	{"gke-web-c", "web", "10.128.0.4", "34.118.10.3"},
	{"gke-batch-a", "batch", "10.128.0.9", "34.118.20.1"},
}

// thisNode is an IPAllowlist of a real node's InternalIP (its kubelet
// reports it) and an office: what a cluster's own egress allowlist looks like.
func thisNode(hostname string) string {
	return `apiVersion: platform.armorplane.io/v1alpha1
kind: IPAllowlist
metadata: {name: this-cluster, namespace: default}
spec:
  policy: {name: this-cluster-allowlist, create: true, defaultAction: deny(403), description: "The node make run booted, and an office"}
  priorityRange: {first: 1000, last: 1099}
  staticSources:
  - {name: office, cidrs: ["203.0.113.0/26"]}
  nodeSources:
  - {name: nodes, matchLabels: {kubernetes.io/hostname: ` + hostname + `}, includeInternalIP: true}
`
}

// A demoTarget is where the demo runs: the node make run booted, or a
// cluster the user has.
type demoTarget struct {
	cluster    stack.Cluster
	kubeconfig string
	// emulator is the host address forwarded to the emulator's Service.
	emulator string
	// dataPlane is the host address forwarded to its data plane; "" when
	// there is none.
	dataPlane string
	// nodeName is the real Node (its kubernetes.io/hostname) whose
	// InternalIP this-cluster's IPAllowlist follows.
	nodeName string
	// fakeNodes creates demoNodes. Only on make run's own node: in a
	// cluster the user has, Node objects with no machine behind them are not
	// ours to make (a cloud's node controller deletes them, and they would
	// show in the user's capacity).
	fakeNodes bool
}

// demo is the running demo: a client of the node and the emulator's host address.
type demo struct {
	kube     client.Client
	emulator string // host address of the emulator pod's forwarder
	// dataPlane is the host address of its data plane's forwarder.
	dataPlane string
	// emulatorIP is the emulator Service's cluster IP.
	emulatorIP string
}

// startDemo seeds the policy examples/import adopts, creates the demo
// Nodes, applies the examples and waits until every managed resource and
// IPAllowlist is Ready. It returns the manifests it applied.
func startDemo(ctx context.Context, t demoTarget, in *stack.Installed, root string, cfg config, logf func(string, ...any)) (*demo, []string, error) {
	d := &demo{emulatorIP: in.EmulatorIP, emulator: t.emulator, dataPlane: t.dataPlane}
	var err error
	if err := seed(ctx, d.emulator); err != nil {
		return nil, nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", t.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if d.kube, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		return nil, nil, err
	}
	if t.fakeNodes {
		if err := createNodes(ctx, d.kube); err != nil {
			return nil, nil, err
		}
		logf("created %d Node objects (3 in pool web, unschedulable) besides %s", len(demoNodes), t.nodeName)
	}

	if err := prepareFleet(ctx, d.kube, d.emulator); err != nil {
		return nil, nil, err
	}
	logf("made the fleet example's workload kubeconfig Secret and seeded %d instances", len(fleetInstances))

	var paths []string
	for _, e := range demoExamples {
		paths = append(paths, filepath.Join(root, cfg.examples, e))
	}
	manifest := filepath.Join(t.cluster.WorkDir(), "this-cluster.yaml")
	if err := os.WriteFile(manifest, []byte(thisNode(t.nodeName)), 0o600); err != nil {
		return nil, nil, err
	}
	paths = append(paths, manifest)
	s := time.Now()
	args := []string{"apply"}
	for _, p := range paths {
		args = append(args, "-f", p)
	}
	// The kinds come from the packages: the activation policy makes the
	// provider's CRDs a moment after the package is Healthy.
	for deadline := time.Now().Add(time.Minute); ; {
		_, err := t.cluster.Kubectl(ctx, args...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, paths, err
		}
		time.Sleep(500 * time.Millisecond)
	}
	logf("applied examples/{%s} and this-cluster's IPAllowlist", strings.Join(demoExamples, ","))
	if err := d.waitReady(ctx, logf); err != nil {
		return nil, paths, err
	}
	logf("all Ready and Synced %s after they were applied", time.Since(s).Round(100*time.Millisecond))
	return d, paths, nil
}

// seed creates, straight in GCP (the emulator), the policy examples/import
// observes and a backend service that uses it, as a load balancer made
// outside Kubernetes would: the policy's status lists it (usedBy); two
// backend services without a policy, which examples/features/attachment.yaml
// and examples/allowlist/attached attach one to; and a Cloud Router with a
// NAT (seedRouter).
func seed(ctx context.Context, emulator string) error {
	svc, err := compute.NewService(ctx, option.WithEndpoint("http://"+emulator+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		return err
	}
	if _, err := svc.SecurityPolicies.Insert(demoProject, &compute.SecurityPolicy{Name: importedPolicy,
		Description: "created outside Kubernetes; examples/import observes it"}).Context(ctx).Do(); err != nil {
		return err
	}
	// The emulator answers an insert once it is done (its operations take
	// demoOpLatency): wait for the policy before a backend names it.
	for {
		if _, err := svc.SecurityPolicies.Get(demoProject, importedPolicy).Context(ctx).Do(); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, err = svc.BackendServices.Insert(demoProject, &compute.BackendService{Name: legacyBackend, LoadBalancingScheme: "EXTERNAL_MANAGED",
		SecurityPolicy: "projects/" + demoProject + "/global/securityPolicies/" + importedPolicy}).Context(ctx).Do(); err != nil {
		return err
	}
	for name, description := range map[string]string{
		attachedBackend: "made with gcloud; examples/features/attachment.yaml attaches a policy",
		poolBackend:     "made with gcloud; the IPAllowlist web-pool (examples/allowlist/attached) attaches its policy",
	} {
		if _, err := svc.BackendServices.Insert(demoProject, &compute.BackendService{Name: name, LoadBalancingScheme: "EXTERNAL_MANAGED",
			Description: description}).Context(ctx).Do(); err != nil {
			return err
		}
	}
	return seedRouter(ctx, svc, emulator)
}

// seedRouter creates the Cloud Router egress of the default network with
// one AUTO_ONLY NAT, as gcloud would, and has the emulator give the NAT
// two addresses, as GCP does when its VMs need them.
func seedRouter(ctx context.Context, svc *compute.Service, emulator string) error {
	const region, router, nat = "us-central1", "egress", "egress-nat"
	if _, err := svc.Routers.Insert(demoProject, region, &compute.Router{Name: router, Network: "global/networks/default",
		Nats: []*compute.RouterNat{{Name: nat, NatIpAllocateOption: "AUTO_ONLY",
			SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"}}}).Context(ctx).Do(); err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s/_emulator/routers/%s/%s/%s/nats/%s/needs", emulator, demoProject, region, router, nat)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"addresses":2}`))
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("cannot give NAT %s two addresses: %s %s", nat, res.Status, b)
	}
	return nil
}

// createNodes creates demoNodes and writes their addresses.
func createNodes(ctx context.Context, c client.Client) error {
	for _, dn := range demoNodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: dn.name, Labels: map[string]string{"cloud.google.com/gke-nodepool": dn.pool}},
			Spec: corev1.NodeSpec{Unschedulable: true}}
		if err := c.Create(ctx, n); err != nil {
			return err
		}
		// A merge patch, not an update: the node lifecycle controller writes
		// to a new Node at once (its taints), and an update would conflict.
		orig := n.DeepCopy()
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: dn.internal}, {Type: corev1.NodeExternalIP, Address: dn.external}}
		if err := c.Status().Patch(ctx, n, client.MergeFrom(orig)); err != nil {
			return err
		}
	}
	return nil
}

// The kinds whose every object must be Ready and Synced.
var readyKinds = []schema.GroupVersionKind{
	{Group: "platform.armorplane.io", Version: "v1alpha1", Kind: "IPAllowlist"},
	{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicy"},
	{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicyRule"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "AddressSet"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "NetworkEdgeSecurityService"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "ProjectCloudArmorTier"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "OrganizationSecurityPolicy"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "OrganizationSecurityPolicyAssociation"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "OrganizationSecurityPolicyRule"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAllowlist"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAttachment"},
}

// waitReady polls until every object of readyKinds is Ready=True and
// Synced=True, or fails with the conditions of those that are not.
func (d *demo) waitReady(ctx context.Context, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for last := -1; ; {
		var pending []string
		total := 0
		for _, gvk := range readyKinds {
			for _, o := range d.list(ctx, gvk) {
				total++
				ready, synced, msg := conditions(o)
				if ready != "True" || synced != "True" {
					pending = append(pending, fmt.Sprintf("%s %s/%s: Ready=%s Synced=%s %s", o.GetKind(), o.GetNamespace(), o.GetName(), ready, synced, msg))
				}
				if o.GetKind() == "SecurityPolicy" && gcpPolicyOf(o) == "global/"+importedPolicy && !strings.Contains(usedBy(o), legacyBackend) {
					pending = append(pending, fmt.Sprintf("SecurityPolicy %s/%s: status.atProvider.usedBy does not list the backend service %s yet", o.GetNamespace(), o.GetName(), legacyBackend))
				}
				if o.GetKind() == "SecurityPolicy" && gcpPolicyOf(o) == "global/web-pool-allowlist" && !strings.Contains(usedBy(o), poolBackend) {
					pending = append(pending, fmt.Sprintf("SecurityPolicy %s/%s: status.atProvider.usedBy does not list the backend service %s the IPAllowlist web-pool attaches it to yet", o.GetNamespace(), o.GetName(), poolBackend))
				}
				if o.GetKind() == "SecurityPolicy" && gcpPolicyOf(o) == "global/office-allowlist" && !strings.Contains(usedBy(o), attachedBackend) {
					pending = append(pending, fmt.Sprintf("SecurityPolicy %s/%s: status.atProvider.usedBy does not list the backend service %s its attachment set yet", o.GetNamespace(), o.GetName(), attachedBackend))
				}
			}
		}
		if len(pending) == 0 && total > 0 {
			return nil
		}
		if len(pending) != last {
			logf("waiting for %d of %d objects to become Ready…", len(pending), total)
			last = len(pending)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not Ready after %s:\n  %s", readyTimeout, strings.Join(pending, "\n  "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// conditions returns the Ready and Synced status of o and the message of the
// first one that is not True.
func conditions(o *unstructured.Unstructured) (ready, synced, msg string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	ready, synced = string(corev1.ConditionUnknown), string(corev1.ConditionUnknown)
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		status, _ := cond["status"].(string)
		switch cond["type"] {
		case "Ready":
			ready = status
		case "Synced":
			synced = status
		default:
			continue
		}
		if m, _ := cond["message"].(string); status != "True" && msg == "" {
			msg = m
		}
	}
	return ready, synced, msg
}

// list lists every object of gvk, sorted by namespace and name.
func (d *demo) list(ctx context.Context, gvk schema.GroupVersionKind) []*unstructured.Unstructured {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := d.kube.List(ctx, l); err != nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out
}

// printTable shows each IPAllowlist with its counts, then every managed
// resource (those composed for an IPAllowlist too) with the rule count GCP
// (the emulator) holds for its policy.
func (d *demo) printTable(ctx context.Context, out io.Writer) {
	rules, err := ruleCounts(ctx, d.emulator)
	if err != nil {
		fmt.Fprintf(out, "reading the emulator: %v\n", err)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKIND\tNAME\tREADY\tSYNCED\tGCP POLICY\tGCP RULES\tCOMPOSED FOR\tUSED BY")
	for _, o := range d.list(ctx, readyKinds[0]) {
		ready, synced, _ := conditions(o)
		policy, _, _ := unstructured.NestedString(o.Object, "status", "policyName")
		ips, _, _ := unstructured.NestedInt64(o.Object, "status", "ipCount")
		n, _, _ := unstructured.NestedInt64(o.Object, "status", "ruleCount")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\tglobal/%s\t%s\t(%d IPs in %d rules)\n", o.GetKind(), o.GetName(), ready, synced, policy, rules["global/"+policy], ips, n)
	}
	for _, o := range d.list(ctx, readyKinds[9]) {
		ready, synced, _ := conditions(o)
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "securityPolicy")
		ips, _, _ := unstructured.NestedInt64(o.Object, "status", "ipCount")
		n, _, _ := unstructured.NestedInt64(o.Object, "status", "ruleCount")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\tglobal/%s\t%s\t%s\t(%d IPs in %d rules)\n", o.GetKind(), o.GetName(), ready, synced, policy, rules["global/"+policy], o.GetLabels()["crossplane.io/composite"], ips, n)
	}
	for _, gvk := range readyKinds[1:3] {
		for _, o := range d.list(ctx, gvk) {
			ready, synced, _ := conditions(o)
			policy := gcpPolicyOf(o)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.GetKind(), o.GetName(), ready, synced, policy, rules[policy], composedFor(o), usedBy(o))
		}
	}
	for _, o := range d.list(ctx, readyKinds[4]) {
		ready, synced, _ := conditions(o)
		region, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "securityPolicyRef", "name")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\t\n", o.GetKind(), o.GetName(), ready, synced, region+"/"+policy, rules[region+"/"+policy])
	}
	orgPolicies := map[string]string{} // id -> parent/shortName
	for _, o := range d.list(ctx, readyKinds[6]) {
		ready, synced, _ := conditions(o)
		parent, _, _ := unstructured.NestedString(o.Object, "status", "atProvider", "parent")
		short, _, _ := unstructured.NestedString(o.Object, "status", "atProvider", "shortName")
		id, _, _ := unstructured.NestedString(o.Object, "status", "atProvider", "id")
		orgPolicies[id] = parent + "/" + short
		users, _, _ := unstructured.NestedSlice(o.Object, "status", "atProvider", "associations")
		var attached []string
		for _, u := range users {
			id, _, _ := unstructured.NestedString(u.(map[string]any), "attachmentId")
			attached = append(attached, id)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n", o.GetKind(), o.GetName(), ready, synced, orgPolicies[id], rules[orgPolicyKey(id)], strings.Join(attached, ","))
	}
	for _, o := range d.list(ctx, readyKinds[8]) {
		ready, synced, _ := conditions(o)
		id, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "securityPolicy")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\t\n", o.GetKind(), o.GetName(), ready, synced, orgPolicies[id], rules[orgPolicyKey(id)])
	}
	for _, o := range d.list(ctx, readyKinds[7]) {
		ready, synced, _ := conditions(o)
		id, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "attachmentId")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t(attached to %s)\t\t\t\n", o.GetKind(), o.GetName(), ready, synced, id)
	}
	for _, o := range d.list(ctx, readyKinds[5]) {
		ready, synced, _ := conditions(o)
		tier, _, _ := unstructured.NestedString(o.Object, "status", "atProvider", "cloudArmorTier")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t(project tier %s)\t\t\t\n", o.GetKind(), o.GetName(), ready, synced, tier)
	}
	for _, o := range d.list(ctx, readyKinds[10]) {
		ready, synced, _ := conditions(o)
		target, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "target", "name")
		field, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "field")
		value, _, _ := unstructured.NestedString(o.Object, "status", "atProvider", "value")
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\t\t(%s of %s)\n", o.GetKind(), o.GetName(), ready, synced, policyKey(value), field, target)
	}
	_ = w.Flush()
}

// composedFor names what an object was made for: the IPAllowlist that
// composed it, or the SecurityPolicyAllowlist that keeps it.
func composedFor(o *unstructured.Unstructured) string {
	if a := o.GetLabels()["cloudarmor.armorplane.io/allowlist"]; a != "" {
		return "allowlist/" + a
	}
	return o.GetLabels()["crossplane.io/composite"]
}

// usedBy names what uses a SecurityPolicy, from its status: the backend
// services (by name) or "-" for none.
func usedBy(o *unstructured.Unstructured) string {
	users, _, _ := unstructured.NestedSlice(o.Object, "status", "atProvider", "usedBy")
	if o.GetKind() != "SecurityPolicy" {
		return ""
	}
	if len(users) == 0 {
		return "-"
	}
	var names []string
	for _, u := range users {
		name, _, _ := unstructured.NestedString(u.(map[string]any), "name")
		names = append(names, name[strings.LastIndex(name, "/")+1:])
	}
	return strings.Join(names, ",")
}

// ruleCounts maps "region/name" ("global/name") of a project policy, and
// orgPolicyKey(id) of an organization policy, to the number of rules the
// emulator holds, read from its /_emulator/stats.
func ruleCounts(ctx context.Context, emulator string) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+emulator+"/_emulator/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	type rules struct {
		Rules []json.RawMessage `json:"rules"`
	}
	var stats struct {
		State map[string]rules `json:"state"`
		Org   map[string]rules `json:"organizationSecurityPolicies"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return nil, err
	}
	counts := map[string]string{}
	for path, p := range stats.State {
		counts[policyKey(path)] = fmt.Sprint(len(p.Rules))
	}
	for path, p := range stats.Org {
		counts[orgPolicyKey(path[strings.LastIndex(path, "/")+1:])] = fmt.Sprint(len(p.Rules))
	}
	return counts, nil
}

// orgPolicyKey is the key of ruleCounts for the organization policy of id.
func orgPolicyKey(id string) string { return "org/" + id }

// policyKey turns projects/p/global/securityPolicies/n into global/n and
// projects/p/regions/r/securityPolicies/n into r/n.
func policyKey(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) < 5 {
		return path
	}
	scope := parts[2]
	if scope == "regions" {
		scope = parts[3]
	}
	return scope + "/" + parts[len(parts)-1]
}

// gcpPolicyOf names the GCP policy a managed resource manages or belongs to.
func gcpPolicyOf(o *unstructured.Unstructured) string {
	region, ok, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
	if !ok {
		region = "global"
	}
	if o.GetKind() == "SecurityPolicyRule" {
		name, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "securityPolicy")
		return region + "/" + name
	}
	if name := o.GetAnnotations()["crossplane.io/external-name"]; name != "" {
		return region + "/" + name
	}
	return region + "/" + o.GetName()
}

func (d *demo) printNext(out io.Writer, kubeconfig, kubectl string) {
	fmt.Fprintf(out, `
Try next (in another terminal, as root):
  export KUBECONFIG=%[1]s
  alias kubectl=%[3]s
  kubectl get providers                                # one: %[4]s, Installed and Healthy
  kubectl get pods -A                                  # Crossplane, the provider, the functions, CoreDNS, the emulator
  kubectl get ipallowlists,securitypolicyallowlists,addresssets,securitypolicies,securitypolicyrules -A
  kubectl edit securitypolicyrule api-edge-office      # change srcIpRanges or action
  kubectl get securitypolicyrule api-edge-office -w    # watch it converge

  # Send a request through backend service web-pool (its policy kept by the IPAllowlist web-pool, which
  # allows the Nodes of pool web) on the emulator's data plane, as client 34.118.10.4: 403, no such Node.
  curl -si -H 'Host: web-pool.demo-project.backend.local' -H 'X-Emulator-Client-IP: 34.118.10.4' http://%[5]s/
  # Add a node with that address to the pool, and watch the policies follow:
  kubectl create -f - <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"gke-web-d","labels":{"cloud.google.com/gke-nodepool":"web"}},"spec":{"unschedulable":true}}'
  kubectl patch node gke-web-d --subresource=status --type=merge -p '{"status":{"addresses":[{"type":"ExternalIP","address":"34.118.10.4"}]}}'
  kubectl get ipallowlist web -n default -w            # IPS goes from 6 to 7
  curl -s http://%[2]s/compute/v1/projects/demo-project/global/securityPolicies/web-allowlist | grep -o '"srcIpRanges":[^]]*]'
  # A few seconds after the Node joined, the same curl answers 200, from the echo backend.
  curl -si -H 'Host: web-pool.demo-project.backend.local' -H 'X-Emulator-Client-IP: 34.118.10.4' http://%[5]s/
  kubectl delete node gke-web-d                        # and back: 403 again

  # Send a request through backend service web-frontend (policy office-allowlist) on the emulator's data plane,
  # as client 198.51.100.77: 403, not an office.
  curl -si -H 'Host: web-frontend.demo-project.backend.local' -H 'X-Emulator-Client-IP: 198.51.100.77' http://%[5]s/
  # Add it to the office ranges. A few seconds later the same curl answers 200, from the echo backend.
  kubectl patch securitypolicy office-allowlist --type=json -p '[{"op":"add","path":"/spec/forProvider/rules/0/match/config/srcIpRanges/-","value":"198.51.100.77/32"}]'
  curl -si -H 'Host: web-frontend.demo-project.backend.local' -H 'X-Emulator-Client-IP: 198.51.100.77' http://%[5]s/
  # Remove it again: 403 again.
  kubectl patch securitypolicy office-allowlist --type=json -p '[{"op":"test","path":"/spec/forProvider/rules/0/match/config/srcIpRanges/2","value":"198.51.100.77/32"},{"op":"remove","path":"/spec/forProvider/rules/0/match/config/srcIpRanges/2"}]'
  curl -si -H 'Host: web-frontend.demo-project.backend.local' -H 'X-Emulator-Client-IP: 198.51.100.77' http://%[5]s/

  curl -s http://%[2]s/_emulator/stats | head -c 600   # what GCP (the emulator pod) holds and was asked
  kubectl -n crossplane-system logs -l pkg.crossplane.io/provider=%[4]s --tail=20   # the provider pod
Press Ctrl-C to stop everything and leave the host as it was.
`, kubeconfig, d.emulator, kubectl, rbac.ProviderName, d.dataPlane)
}
