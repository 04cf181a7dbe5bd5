// Package platform gives the suites that need Crossplane the real node `make
// test` boots once for all of them (cluster/local --ready-file): Crossplane
// installed from its Helm chart, our packages installed with `crossplane xpkg
// install` from the node's registry and run as pods by Crossplane's package
// runtime, under the permissions its RBAC manager and
// cluster/rbac/provider-runtime.yaml give them. Nothing here stands in for
// Crossplane: a suite only attaches to the node, reads and writes through its
// API server, and exposes the Cloud Armor emulator it runs in-process to the
// node's pods.
//
// The node is shared: each suite cleans up what it created before the next
// one runs (the suites run one package at a time).
package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

// AttachEnv names the file cluster/local --ready-file writes.
const AttachEnv = "NODE_ATTACH"

// Versions of what the node runs.
const (
	// CoreVersion is the Crossplane version the node installs.
	CoreVersion = node.CrossplaneVersion
	// AutoReadyTag is function-auto-ready's version, as built by `make tools`.
	AutoReadyTag = "v0.5.0"
	// Namespace is Crossplane's own namespace.
	Namespace = "crossplane-system"
)

// The names README.md's `crossplane xpkg install` commands give the packages
// (the provider by the name Crossplane's resolver would give it, the
// Configuration and the functions Crossplane names after their
// repositories).
const (
	ProviderName      = rbac.ProviderName
	ConfigurationName = "armorplane-configuration-ipallowlist"
	FunctionName      = "armorplane-function-ipallowlist"
	AutoReadyName     = "crossplane-contrib-function-auto-ready"
)

// Platform is the shared node, attached.
type Platform struct {
	// Node reaches the node's network namespace (Forward, Expose) and kubectl.
	Node *node.Attached
	// Kube is a client of the node's API server.
	Kube *controlplane.ControlPlane

	mu       sync.Mutex
	restarts map[string]int32  // of the package pods at Attach
	forwards map[string]string // host forwarder by pod IP
	checked  time.Time
	lastErr  error
	kinds    []schema.GroupVersionKind // managedKinds, once read
}

// Attach attaches to the shared node, or skips t when there is none: the
// suites that need Crossplane run on the node `make test` boots (or
// `make platform-test`, which boots one for them).
func Attach(t *testing.T, scheme *runtime.Scheme) *Platform {
	t.Helper()
	path := os.Getenv(AttachEnv)
	if path == "" {
		t.Skipf("runs on the real node make test boots (%s names it; `make platform-test` boots one)", AttachEnv)
	}
	n, err := node.Attach(path)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := controlplane.Connect(n.Kubeconfig, scheme)
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	p := &Platform{Node: n, Kube: kube}
	if p.restarts, err = p.packageRestarts(context.Background()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return p
}

// packageRestarts are the restart counts of the containers of Crossplane and
// of the packages' pods, by pod and container.
func (p *Platform) packageRestarts(ctx context.Context) (map[string]int32, error) {
	pods := &corev1.PodList{}
	if err := p.Kube.Client.List(ctx, pods, client.InNamespace(Namespace)); err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for _, pod := range pods.Items {
		for _, c := range pod.Status.ContainerStatuses {
			out[pod.Name+"/"+c.Name] = c.RestartCount
		}
	}
	return out, nil
}

// Err reports a Crossplane or package container that restarted since Attach
// (a crash the suite must not wait past) or a node that is gone. It reads the
// pods at most every two seconds.
func (p *Platform) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.checked) < 2*time.Second {
		return p.lastErr
	}
	p.checked = time.Now()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.Node.Holder)); err != nil {
		p.lastErr = errors.New("the shared node is gone")
		return p.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The real node must stay: without it Crossplane's and the packages'
	// pods are gone and cannot be scheduled.
	n := &corev1.Node{}
	if err := p.Kube.Client.Get(ctx, types.NamespacedName{Name: node.Name}, n); kerrors.IsNotFound(err) {
		p.lastErr = fmt.Errorf("the Node %s is gone: a test deleted it", node.Name)
		return p.lastErr
	}
	now, err := p.packageRestarts(ctx)
	if err != nil {
		return nil // a slow API server is not a crash
	}
	// Keyed by pod: a pod that replaced another (a new runtime config, a
	// deleted pod) starts from zero, so only its own restarts count.
	for c, n := range now {
		if n > p.restarts[c] {
			p.lastErr = fmt.Errorf("container %s/%s restarted (%d times since the suite attached)", Namespace, c, n-p.restarts[c])
			return p.lastErr
		}
	}
	return nil
}

// PackagePod is the name and IP of the running pod of a package (a Provider
// or Function name).
func (p *Platform) PackagePod(ctx context.Context, kind, name string) (string, string, error) {
	label := map[string]string{"Provider": "pkg.crossplane.io/provider", "Function": "pkg.crossplane.io/function"}[kind]
	pods := &corev1.PodList{}
	if err := p.Kube.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabels{label: name}); err != nil {
		return "", "", err
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
			return pod.Name, pod.Status.PodIP, nil
		}
	}
	return "", "", fmt.Errorf("no running pod of %s %s", kind, name)
}

// composedKinds are the kinds an IPAllowlist composes, and those its
// SecurityPolicyAllowlist keeps.
var composedKinds = []schema.GroupVersionKind{
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAttachmentList"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "SecurityPolicyAllowlistList"},
	{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicyRuleList"},
	{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicyList"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "AddressSetList"},
	{Group: "cloudarmor.armorplane.io", Version: "v1alpha1", Kind: "AddressGroupList"},
}

// Cleanup leaves the node as the install left it for the next test: it
// deletes every IPAllowlist (resumed first: Crossplane does not finish
// deleting a paused one), waits until they and what they composed are gone, and
// deletes every Node but the real one. Register it after the test's emulator
// starts, so that it runs first and the provider's deletes still reach GCP.
func (p *Platform) Cleanup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "platform.armorplane.io", Version: "v1alpha1", Kind: "IPAllowlistList"})
	if err := p.Kube.Client.List(ctx, l); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	for i := range l.Items {
		xr := &l.Items[i]
		if _, paused := xr.GetAnnotations()["crossplane.io/paused"]; paused {
			patch := []byte(`{"metadata":{"annotations":{"crossplane.io/paused":null}}}`)
			if err := p.Kube.Client.Patch(ctx, xr, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Errorf("cleanup: resume %s: %v", xr.GetName(), err)
			}
		}
		if err := p.Kube.Client.Delete(ctx, xr); err != nil && !kerrors.IsNotFound(err) {
			t.Errorf("cleanup: delete %s: %v", xr.GetName(), err)
		}
	}
	for {
		var left []string
		for _, gvk := range append([]schema.GroupVersionKind{l.GroupVersionKind()}, composedKinds...) {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk)
			if err := p.Kube.Client.List(ctx, l); err != nil {
				continue
			}
			for _, it := range l.Items {
				left = append(left, it.GetKind()+" "+it.GetNamespace()+"/"+it.GetName())
			}
		}
		if len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Errorf("cleanup: still there after 3 minutes: %v", left)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	nodes := &corev1.NodeList{}
	if err := p.Kube.Client.List(ctx, nodes); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Name == node.Name {
			continue
		}
		if err := p.Kube.Client.Delete(ctx, &nodes.Items[i]); err != nil && !kerrors.IsNotFound(err) {
			t.Errorf("cleanup: delete Node %s: %v", nodes.Items[i].Name, err)
		}
	}
}

// managedKinds are the namespaced kinds of the provider, read from the CRDs
// the package installed (group cloudarmor.armorplane.io, at their storage
// version), so that a kind added to the provider is cleaned up without a
// list here to keep: a fixed list once missed two new kinds, whose objects
// kept the ClusterProviderConfig they used. Rules and associations come
// first, so they are deleted before the policies they belong to. The CRDs
// do not change while a suite runs: they are read once, not on each of a
// cleanup's polls.
func (p *Platform) managedKinds(ctx context.Context) ([]schema.GroupVersionKind, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kinds != nil {
		return p.kinds, nil
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := p.Kube.Client.List(ctx, crds); err != nil {
		return nil, err
	}
	var out []schema.GroupVersionKind
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if group != "cloudarmor.armorplane.io" || scope != "Namespaced" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			v, _ := v.(map[string]any)
			if storage, _ := v["storage"].(bool); storage {
				name, _ := v["name"].(string)
				out = append(out, schema.GroupVersionKind{Group: group, Version: name, Kind: kind + "List"})
			}
		}
	}
	first := func(k string) bool { return strings.Contains(k, "Rule") || strings.Contains(k, "Association") }
	sort.SliceStable(out, func(i, j int) bool {
		if first(out[i].Kind) != first(out[j].Kind) {
			return first(out[i].Kind)
		}
		return out[i].Kind < out[j].Kind
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRD of group cloudarmor.armorplane.io: is the provider installed?")
	}
	p.kinds = out
	return out, nil
}

// DeleteNamespaces deletes the namespaces a test made and waits until they
// are gone: their managed resources first go through the provider (register
// it after the test's emulator starts, so that it runs while the emulator
// still answers the provider's deletes). A managed resource whose deletion
// the provider cannot finish in 90 s (one whose Observe GCP refuses, e.g. an
// observe-only object without read access: crossplane-runtime observes before
// it deletes) is logged with its Synced message and its finalizer removed, as
// an admin would; DeleteNamespaces returns those, as kind namespace/name.
func (p *Platform) DeleteNamespaces(t *testing.T, names ...string) (forcedOut []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, n := range names {
		ns := &corev1.Namespace{}
		ns.Name = n
		if err := p.Kube.Client.Delete(ctx, ns); err != nil && !kerrors.IsNotFound(err) {
			t.Errorf("cleanup: delete namespace %s: %v", n, err)
		}
	}
	gone := func() []string {
		var left []string
		for _, n := range names {
			if err := p.Kube.Client.Get(ctx, types.NamespacedName{Name: n}, &corev1.Namespace{}); !kerrors.IsNotFound(err) {
				left = append(left, n)
			}
		}
		return left
	}
	forced := false
	for begin := time.Now(); ; time.Sleep(250 * time.Millisecond) {
		left := gone()
		if len(left) == 0 {
			return forcedOut
		}
		if ctx.Err() != nil {
			t.Errorf("cleanup: namespaces %v still there after 3 minutes", left)
			return forcedOut
		}
		if forced || time.Since(begin) < 90*time.Second {
			continue
		}
		forced = true
		forcedOut = append(forcedOut, p.forceOut(ctx, t, left)...)
	}
}

// forceOut logs the provider's log and removes the finalizers of the managed
// resources left in namespaces, logging each with its Synced message.
func (p *Platform) forceOut(ctx context.Context, t *testing.T, namespaces []string) (forcedOut []string) {
	t.Logf("cleanup: the provider's log, last 60 lines:\n%s", p.ProviderLog(ctx, 60))
	for _, n := range namespaces {
		left, _ := p.managed(ctx, n)
		for _, o := range left {
			_, _, msg := ConditionOf(o, "Synced")
			t.Logf("cleanup: %s %s/%s not deleted after 90 s (Synced: %s); removing its finalizers", o.GetKind(), n, o.GetName(), msg)
			forcedOut = append(forcedOut, o.GetKind()+" "+n+"/"+o.GetName())
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if err := p.Kube.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch)); err != nil && !kerrors.IsNotFound(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
	}
	return forcedOut
}

// managed lists the managed resources in namespace.
func (p *Platform) managed(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	kinds, err := p.managedKinds(ctx)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, gvk := range kinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := p.Kube.Client.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return out, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// DeleteManaged deletes every managed resource in namespaces and waits until
// they are gone, each through the provider while the namespace's Secrets and
// ProviderConfigs are still there (register it after the test's emulator
// starts, so that GCP still answers). What is left after 90 s is forced out
// as DeleteNamespaces does, and returned.
func (p *Platform) DeleteManaged(t *testing.T, namespaces ...string) (forcedOut []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, n := range namespaces {
		mrs, err := p.managed(ctx, n)
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, o := range mrs {
			if err := p.Kube.Client.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
				t.Errorf("cleanup: delete %s %s/%s: %v", o.GetKind(), n, o.GetName(), err)
			}
		}
	}
	forced := false
	for begin := time.Now(); ; time.Sleep(250 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Errorf("cleanup: managed resources still in %v after 3 minutes", namespaces)
			return forcedOut
		}
		var left []string
		for _, n := range namespaces {
			if mrs, err := p.managed(ctx, n); err != nil || len(mrs) > 0 {
				left = append(left, n)
			}
		}
		if len(left) == 0 {
			return forcedOut
		}
		if forced || time.Since(begin) < 90*time.Second {
			continue
		}
		forced = true
		forcedOut = append(forcedOut, p.forceOut(ctx, t, left)...)
	}
}

// Condition returns the status ("Unknown" when absent) and message of the
// condition typ of a Crossplane object.
func Condition(o *unstructured.Unstructured, typ string) (status, message string) {
	status, _, message = ConditionOf(o, typ)
	return status, message
}

// ConditionOf returns the status ("Unknown" when absent), reason and message
// of the condition typ of a Crossplane object.
func ConditionOf(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
		return status, reason, message
	}
	return "Unknown", "", ""
}
