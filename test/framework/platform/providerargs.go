package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
)

// The provider's runtime, as a user changes it: its flags and containers are
// in the DeploymentRuntimeConfig it was installed with
// (cluster/rbac/provider-runtime.yaml; hack/shared-node.sh sets the node's
// flags there), and Crossplane rolls the provider's Deployment when it
// changes.
const (
	// RuntimeConfig is the provider's DeploymentRuntimeConfig, named as the
	// Provider.
	RuntimeConfig = rbac.ProviderName
	// ProviderContainer is the provider's container, as Crossplane names it.
	ProviderContainer = "package-runtime"
	// providerLease is the provider's leader election Lease (cmd/provider).
	providerLease = "crossplane-leader-election-provider-cloudarmor"
)

var runtimeConfigGVK = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1beta1", Kind: "DeploymentRuntimeConfig"}

// ProviderArgs are the provider container's args in its
// DeploymentRuntimeConfig.
func (p *Platform) ProviderArgs(ctx context.Context) ([]string, error) {
	drc := &unstructured.Unstructured{}
	drc.SetGroupVersionKind(runtimeConfigGVK)
	if err := p.Kube.Client.Get(ctx, types.NamespacedName{Name: RuntimeConfig}, drc); err != nil {
		return nil, err
	}
	spec, _ := drc.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	return ArgsIn(spec), nil
}

// WithArg returns args with flag (e.g. "--poll") set to value: an earlier
// value is replaced, not repeated.
func WithArg(args []string, flag, value string) []string {
	args = slices.DeleteFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
	return append(args, flag+"="+value)
}

// ReconfigureProvider changes the provider's DeploymentRuntimeConfig spec with
// edit, waits until the provider runs it (see ProviderReplaced) and, at t's
// cleanup, puts the spec back and waits again. Cleanups registered after it
// run while the provider still runs as edit made it.
func (p *Platform) ReconfigureProvider(t *testing.T, edit func(spec map[string]any)) {
	t.Helper()
	ctx := context.Background()
	drc := &unstructured.Unstructured{}
	drc.SetGroupVersionKind(runtimeConfigGVK)
	if err := p.Kube.Client.Get(ctx, types.NamespacedName{Name: RuntimeConfig}, drc); err != nil {
		t.Fatal(err)
	}
	orig, _ := drc.Object["spec"].(map[string]any)
	if orig == nil {
		orig = map[string]any{}
	}
	orig = runtime.DeepCopyJSON(orig)
	spec := runtime.DeepCopyJSON(orig)
	edit(spec)
	if equality.Semantic.DeepEqual(orig, spec) {
		return
	}
	// Registered first: a change that half happened is put back too.
	t.Cleanup(func() {
		start := time.Now()
		if err := p.setRuntimeSpec(ctx, orig); err != nil {
			t.Errorf("restore the provider's DeploymentRuntimeConfig: %v", err)
			return
		}
		t.Logf("provider's runtime config restored in %s", time.Since(start).Round(100*time.Millisecond))
	})
	start := time.Now()
	if err := p.setRuntimeSpec(ctx, spec); err != nil {
		t.Fatalf("reconfigure the provider: %v", err)
	}
	t.Logf("provider reconfigured, its new pod ready in %s: args %v", time.Since(start).Round(100*time.Millisecond), ArgsIn(spec))
}

// setRuntimeSpec writes spec into the DeploymentRuntimeConfig and waits for
// the provider's pod to be replaced, unless the config holds spec already.
func (p *Platform) setRuntimeSpec(ctx context.Context, spec map[string]any) error {
	old, err := p.providerPods(ctx)
	if err != nil {
		return err
	}
	changed := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		drc := &unstructured.Unstructured{}
		drc.SetGroupVersionKind(runtimeConfigGVK)
		if err := p.Kube.Client.Get(ctx, types.NamespacedName{Name: RuntimeConfig}, drc); err != nil {
			return err
		}
		if cur, _ := drc.Object["spec"].(map[string]any); equality.Semantic.DeepEqual(cur, spec) {
			return nil
		}
		changed = true
		drc.Object["spec"] = runtime.DeepCopyJSON(spec)
		return p.Kube.Client.Update(ctx, drc)
	})
	if err != nil || !changed {
		return err
	}
	_, err = p.ProviderReplaced(ctx, old)
	return err
}

// PodSpecIn returns the pod spec of a DeploymentRuntimeConfig spec, adding
// it (and what holds it) when it is not there.
func PodSpecIn(spec map[string]any) map[string]any {
	podSpec := spec
	for _, k := range []string{"deploymentTemplate", "spec", "template", "spec"} {
		next, ok := podSpec[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			podSpec[k] = next
		}
		podSpec = next
	}
	if dt := spec["deploymentTemplate"].(map[string]any)["spec"].(map[string]any); dt["selector"] == nil {
		dt["selector"] = map[string]any{} // the schema requires it; Crossplane fills it in
	}
	return podSpec
}

// ContainerIn returns the container name of a DeploymentRuntimeConfig spec,
// adding it when it is not there.
func ContainerIn(spec map[string]any, name string) map[string]any {
	podSpec := PodSpecIn(spec)
	containers, _ := podSpec["containers"].([]any)
	for _, x := range containers {
		if m, ok := x.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	c := map[string]any{"name": name}
	podSpec["containers"] = append(containers, c)
	return c
}

// ArgsIn returns the provider container's args in a DeploymentRuntimeConfig
// spec.
func ArgsIn(spec map[string]any) []string {
	raw, _ := ContainerIn(runtime.DeepCopyJSON(spec), ProviderContainer)["args"].([]any)
	args := make([]string, 0, len(raw))
	for _, a := range raw {
		args = append(args, fmt.Sprint(a))
	}
	return args
}

// SetArgsIn sets the provider container's args in a DeploymentRuntimeConfig
// spec.
func SetArgsIn(spec map[string]any, args []string) {
	raw := make([]any, 0, len(args))
	for _, a := range args {
		raw = append(raw, a)
	}
	ContainerIn(spec, ProviderContainer)["args"] = raw
}

// ProviderPod is the name and IP of the provider's running pod.
func (p *Platform) ProviderPod(ctx context.Context) (name, ip string, err error) {
	return p.PackagePod(ctx, "Provider", ProviderName)
}

// providerPods are the names of the provider's pods, whatever their phase.
func (p *Platform) providerPods(ctx context.Context) (map[string]bool, error) {
	pods := &corev1.PodList{}
	if err := p.Kube.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabels{"pkg.crossplane.io/provider": ProviderName}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, pod := range pods.Items {
		out[pod.Name] = true
	}
	return out, nil
}

// RestartProvider deletes the provider's pods and waits for the Deployment's
// replacement (see ProviderReplaced). With kill, each pod's provider process
// is first sent SIGKILL, as a node failure or the OOM killer ends it (no
// clean stop: in-flight work is cut off, nothing is released), and
// the pod is then deleted with no grace period, before the kubelet restarts
// the container in it: the Deployment replaces the pod, as it would a lost
// node's. It returns the new pod.
func (p *Platform) RestartProvider(ctx context.Context, kill bool) (string, error) {
	old, err := p.providerPods(ctx)
	if err != nil {
		return "", err
	}
	var opts []client.DeleteOption
	if kill {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	for name := range old {
		if kill {
			if err := p.killProvider(name); err != nil {
				return "", err
			}
		}
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = Namespace, name
		if err := p.Kube.Client.Delete(ctx, pod, opts...); err != nil && !kerrors.IsNotFound(err) {
			return "", err
		}
	}
	return p.ProviderReplaced(ctx, old)
}

// providerExe is the base name of the provider's executable in its image.
const providerExe = "provider-cloudarmor"

// killProvider sends SIGKILL to the provider process of pod, found among the
// node's processes by its executable and its HOSTNAME, which the runtime
// sets to the pod's name.
func (p *Platform) killProvider(pod string) error {
	pids, err := procstat.NamespacePIDs(p.Node.Holder)
	if err != nil {
		return err
	}
	killed := 0
	for _, pid := range pids {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || filepath.Base(exe) != providerExe {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "HOSTNAME="+pod) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill the provider of pod %s (PID %d): %w", pod, pid, err)
		}
		killed++
	}
	if killed == 0 {
		return fmt.Errorf("no %s process of pod %s among the node's processes", providerExe, pod)
	}
	return nil
}

// ProviderReplaced waits, up to three minutes, until none of the old pods is
// left and a new provider pod runs with every container ready, its
// Deployment rolled out, and holds the provider's leader election Lease (when
// there is one), so that it is the one reconciling. It returns the new pod.
func (p *Platform) ProviderReplaced(ctx context.Context, old map[string]bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last error
	for {
		pod, err := p.replacement(ctx, old)
		if err == nil {
			return pod, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the provider's pod was not replaced in 3 minutes: %w", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// replacement is the new provider pod once it is ready and leading, or why
// it is not yet.
func (p *Platform) replacement(ctx context.Context, old map[string]bool) (string, error) {
	pods := &corev1.PodList{}
	if err := p.Kube.Client.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabels{"pkg.crossplane.io/provider": ProviderName}); err != nil {
		return "", err
	}
	var fresh *corev1.Pod
	var states []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		ready := pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && len(pod.Status.ContainerStatuses) > 0
		for _, c := range pod.Status.ContainerStatuses {
			ready = ready && c.Ready
		}
		states = append(states, fmt.Sprintf("%s %s ready=%t old=%t", pod.Name, pod.Status.Phase, ready, old[pod.Name]))
		if old[pod.Name] {
			continue
		}
		if ready {
			fresh = pod
		}
	}
	if fresh == nil || len(pods.Items) != 1 {
		return "", fmt.Errorf("pods: %v", states)
	}
	if err := p.rolledOut(ctx, fresh); err != nil {
		return "", err
	}
	lease := &coordinationv1.Lease{}
	err := p.Kube.Client.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: providerLease}, lease)
	if kerrors.IsNotFound(err) {
		return fresh.Name, nil
	}
	if err != nil {
		return "", err
	}
	// controller-runtime's identity is the pod's host name, then "_" and a UUID.
	if h := lease.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, fresh.Name+"_") {
		return "", fmt.Errorf("pod %s is ready but the Lease %s is held by %v", fresh.Name, providerLease, deref(lease.Spec.HolderIdentity))
	}
	return fresh.Name, nil
}

// rolledOut fails unless pod's Deployment has finished its rollout, as
// `kubectl rollout status` has it: another new pod may follow otherwise.
func (p *Platform) rolledOut(ctx context.Context, pod *corev1.Pod) error {
	rsName := ""
	for _, o := range pod.OwnerReferences {
		if o.Kind == "ReplicaSet" {
			rsName = o.Name
		}
	}
	rs := &appsv1.ReplicaSet{}
	if err := p.Kube.Client.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: rsName}, rs); err != nil {
		return fmt.Errorf("pod %s's ReplicaSet: %w", pod.Name, err)
	}
	dName := ""
	for _, o := range rs.OwnerReferences {
		if o.Kind == "Deployment" {
			dName = o.Name
		}
	}
	d := &appsv1.Deployment{}
	if err := p.Kube.Client.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: dName}, d); err != nil {
		return fmt.Errorf("pod %s's Deployment: %w", pod.Name, err)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
		return fmt.Errorf("the Deployment %s is rolling out: generation %d observed %d, replicas %d updated %d available %d",
			d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "nobody"
	}
	return *s
}

// ProviderLog is the end of the running provider pod's log (its provider
// container), or why it cannot be read.
func (p *Platform) ProviderLog(ctx context.Context, tail int) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := p.Node.Kubectl(ctx, "-n", Namespace, "logs", "-l", "pkg.crossplane.io/provider="+ProviderName,
		"-c", ProviderContainer, fmt.Sprintf("--tail=%d", tail))
	if err != nil {
		return errors.Join(errors.New("cannot read the provider's log"), err).Error()
	}
	return out
}
