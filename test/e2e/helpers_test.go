package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

type unstructuredObject = unstructured.Unstructured

// fieldOwner owns what the suite applies, as kubectl's field manager would.
const fieldOwner = "e2e"

// readObjects decodes every YAML document of the *.yaml files under paths
// (folders are walked recursively, in name order), except the folders of
// examplesNotApplied.
func readObjects(t *testing.T, paths ...string) []*unstructuredObject {
	t.Helper()
	var files []string
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if why, skip := examplesNotApplied[path]; skip && d.IsDir() {
				t.Logf("not applying %s: %s", path, why)
				return filepath.SkipDir
			}
			if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	var objs []*unstructuredObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(m) > 0 {
				objs = append(objs, &unstructuredObject{Object: m})
			}
		}
	}
	if len(objs) == 0 {
		t.Fatalf("no objects in %v", paths)
	}
	return objs
}

// applyRank orders objects so that what others depend on comes first:
// Secrets, then provider configs, then managed resources.
func applyRank(o *unstructuredObject) int {
	switch o.GetKind() {
	case "Namespace":
		return 0
	case "Secret", "ConfigMap":
		return 1
	case "ClusterProviderConfig", "ProviderConfig":
		return 2
	default:
		return 3
	}
}

// isProviderConfig reports whether o is one of this provider's
// ProviderConfig kinds, whose spec.endpoint the suite points at the emulator.
func isProviderConfig(o *unstructuredObject) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "armorplane.io" && (gvk.Kind == "ClusterProviderConfig" || gvk.Kind == "ProviderConfig")
}

// ownGroups are the API groups this provider serves (package/crds).
var ownGroups = []string{"armorplane.io", v1beta1.Group}

// apply server-side applies objs, dependencies first, as the test's: what
// names armor.Namespace is moved to the test's namespace (see inTestNamespace)
// and every ProviderConfig's endpoint is the emulator's as the provider's
// pod reaches it (the examples name the one `make run` runs). Objects of
// kinds the API server does not serve and that are not this provider's are
// skipped and logged; it returns the objects applied.
func (s *suite) apply(t *testing.T, objs []*unstructuredObject) []*unstructuredObject {
	t.Helper()
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructuredObject) int { return applyRank(a) - applyRank(b) })
	applied := make([]*unstructuredObject, 0, len(objs))
	for _, o := range objs {
		if g := o.GroupVersionKind().Group; !slices.Contains(ownGroups, g) {
			if _, err := s.kube.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version); apimeta.IsNoMatchError(err) {
				t.Logf("skipping %s %s: the API server does not serve %s (it needs more than this provider)", o.GetKind(), client.ObjectKeyFromObject(o), o.GroupVersionKind())
				continue
			}
		}
		s.inTestNamespace(o)
		if o.GetKind() == "ClusterProviderConfig" && s.ns != "" {
			if ns, _, _ := unstructured.NestedString(o.Object, "spec", "credentials", "secretRef", "namespace"); ns == armor.Namespace {
				if err := unstructured.SetNestedField(o.Object, s.ns, "spec", "credentials", "secretRef", "namespace"); err != nil {
					t.Fatal(err)
				}
			}
			s.grantsInTestNamespace(t, o)
		}
		applied = append(applied, o)
		o = o.DeepCopy()
		if isProviderConfig(o) {
			if err := unstructured.SetNestedField(o.Object, s.endpoint, "spec", "endpoint"); err != nil {
				t.Fatal(err)
			}
			// The scenarios name projects besides the config's own (quota,
			// tiers), which the platform team grants.
			if o.GroupVersionKind().Kind == "ClusterProviderConfig" {
				if err := unstructured.SetNestedStringSlice(o.Object, []string{"*"}, "spec", "allowedProjects"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.kube.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
			client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return applied
}

// inTestNamespace moves o to the test's namespace when it is in
// armor.Namespace, where the examples and armor's objects are: the shared
// node's "default" namespace outlives every test, the test's own namespace
// goes with everything in it.
func (s *suite) inTestNamespace(o client.Object) {
	if s.ns != "" && o.GetNamespace() == armor.Namespace {
		o.SetNamespace(s.ns)
	}
}

// eventually polls cond until it returns nil, failing the test with what and
// cond's last error after timeout, or at once if the provider has crashed.
func (s *suite) eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, timeout, what, cond, wait.AbortOn(s.abort))
}

// condition is one entry of status.conditions.
type condition struct {
	Status, Reason, Message string
}

func (c condition) String() string {
	if c.Status == "" {
		return "absent"
	}
	return fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
}

func (s *suite) gvk(t *testing.T, o client.Object) schema.GroupVersionKind {
	t.Helper()
	if u, ok := o.(*unstructuredObject); ok {
		return u.GroupVersionKind()
	}
	gvk, err := apiutil.GVKForObject(o, s.kube.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}

// conditions reads o's current conditions from the API server, keyed by type.
func (s *suite) conditions(t *testing.T, o client.Object) (map[string]condition, error) {
	t.Helper()
	u := &unstructuredObject{}
	u.SetGroupVersionKind(s.gvk(t, o))
	if err := s.kube.Get(context.Background(), client.ObjectKeyFromObject(o), u); err != nil {
		return nil, err
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := map[string]condition{}
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := m[k].(string); return v }
		out[str("type")] = condition{Status: str("status"), Reason: str("reason"), Message: str("message")}
	}
	return out, nil
}

func describe(t *testing.T, s *suite, o client.Object) string {
	return fmt.Sprintf("%s %s", s.gvk(t, o).Kind, client.ObjectKeyFromObject(o))
}

// waitCondition waits until check accepts o's conditions.
func (s *suite) waitCondition(t *testing.T, o client.Object, what string, check func(map[string]condition) error) {
	t.Helper()
	s.waitConditionWithin(t, waitFor, o, what, check)
}

func (s *suite) waitConditionWithin(t *testing.T, timeout time.Duration, o client.Object, what string, check func(map[string]condition) error) {
	t.Helper()
	s.eventually(t, timeout, describe(t, s, o)+" "+what, func() error {
		conds, err := s.conditions(t, o)
		if err != nil {
			return err
		}
		return check(conds)
	})
}

// waitReady waits until o is Ready=True and Synced=True, then refreshes o.
func (s *suite) waitReady(t *testing.T, o client.Object) {
	t.Helper()
	s.waitReadyWithin(t, waitFor, o)
}

func (s *suite) waitReadyWithin(t *testing.T, timeout time.Duration, o client.Object) {
	t.Helper()
	s.waitConditionWithin(t, timeout, o, "to be Ready=True and Synced=True", func(c map[string]condition) error {
		for _, ct := range []string{"Ready", "Synced"} {
			if c[ct].Status != "True" {
				return fmt.Errorf("%s=%s", ct, c[ct])
			}
		}
		return nil
	})
	s.get(t, o)
}

// waitGone waits until o no longer exists: its finalizers were removed.
func (s *suite) waitGone(t *testing.T, o client.Object) {
	t.Helper()
	s.eventually(t, waitFor, describe(t, s, o)+" to be gone (finalizers removed)", func() error {
		err := s.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o)
		if kerrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there, finalizers %v, deletionTimestamp %v", o.GetFinalizers(), o.GetDeletionTimestamp())
	})
}

func (s *suite) get(t *testing.T, o client.Object) {
	t.Helper()
	if err := s.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		s.inTestNamespace(o)
		if err := s.kube.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", describe(t, s, o), err)
		}
	}
}

func (s *suite) delete(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := s.kube.Delete(context.Background(), o); err != nil {
			t.Fatalf("delete %s: %v", describe(t, s, o), err)
		}
	}
}

// update reads o, applies mutate and writes it back, retrying when the
// provider wrote the object in between.
func (s *suite) update(t *testing.T, o client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		mutate()
		return s.kube.Update(context.Background(), o)
	})
	if err != nil {
		t.Fatalf("update %s: %v", describe(t, s, o), err)
	}
}

// gcpPolicy reads a policy straight from the emulator.
func (s *suite) gcpPolicy(project, region, name string) (*compute.SecurityPolicy, error) {
	if region == "" {
		return s.gcp.SecurityPolicies.Get(project, name).Do()
	}
	return s.gcp.RegionSecurityPolicies.Get(project, region, name).Do()
}

// waitGCPRules waits until the emulator holds exactly want for the policy.
func (s *suite) waitGCPRules(t *testing.T, project, region, name string, want []string) {
	t.Helper()
	s.waitGCPRulesWithin(t, waitFor, project, region, name, want)
}

func (s *suite) waitGCPRulesWithin(t *testing.T, timeout time.Duration, project, region, name string, want []string) {
	t.Helper()
	s.eventually(t, timeout, "GCP rules of "+policyPath(project, region, name), func() error {
		sp, err := s.gcpPolicy(project, region, name)
		if err != nil {
			return err
		}
		if got := armor.RulesOf(sp); !slices.Equal(got, want) {
			return fmt.Errorf("want %v, got %v", want, got)
		}
		return nil
	})
}

// waitGCPGone waits until the emulator no longer holds the policy.
func (s *suite) waitGCPGone(t *testing.T, project, region, name string) {
	t.Helper()
	s.eventually(t, waitFor, policyPath(project, region, name)+" to be deleted in GCP", func() error {
		_, err := s.gcpPolicy(project, region, name)
		if err == nil {
			return errors.New("still there")
		}
		if !strings.Contains(err.Error(), "404") {
			return err
		}
		return nil
	})
}

// gcpDo runs a direct write (drift, set-up) and waits for its operation,
// retrying while another operation on the policy is still running.
func (s *suite) gcpDo(t *testing.T, project, region string, call func() (*compute.Operation, error)) {
	t.Helper()
	var op *compute.Operation
	s.eventually(t, 10*time.Second, "a direct GCP write to be accepted", func() error {
		var err error
		op, err = call()
		if err != nil && !strings.Contains(err.Error(), "resourceNotReady") {
			t.Fatalf("direct GCP write: %v", err)
		}
		return err
	})
	s.waitOperation(t, 10*time.Second, project, region, op)
}

// waitOperation waits up to timeout for a direct GCP write's operation to be
// DONE, failing the test if it failed.
func (s *suite) waitOperation(t *testing.T, timeout time.Duration, project, region string, op *compute.Operation) {
	t.Helper()
	s.eventually(t, timeout, "operation "+op.Name, func() error {
		var err error
		if region == "" {
			op, err = s.gcp.GlobalOperations.Wait(project, op.Name).Do()
		} else {
			op, err = s.gcp.RegionOperations.Wait(project, region, op.Name).Do()
		}
		if err != nil {
			return err
		}
		if op.Status != "DONE" {
			return fmt.Errorf("status %s", op.Status)
		}
		if op.Error != nil && len(op.Error.Errors) > 0 {
			t.Fatalf("direct GCP write failed: %s: %s", op.Error.Errors[0].Code, op.Error.Errors[0].Message)
		}
		return nil
	})
}

// isWrite reports whether an emulator method name changes a policy.
func isWrite(method string) bool {
	switch method[strings.LastIndex(method, ".")+1:] {
	case "insert", "patch", "delete", "addRule", "patchRule", "removeRule", "setLabels":
		return strings.HasPrefix(method, "securityPolicies.") || strings.HasPrefix(method, "regionSecurityPolicies.")
	}
	return false
}

// calls returns the emulator's per-method request counts for a policy.
func (s *suite) calls(path string) map[string]int64 {
	return s.emu.Stats().Policies[path]
}

// writes counts write requests (accepted or not) for a policy.
func (s *suite) writes(path string) int64 {
	var n int64
	for m, c := range s.calls(path) {
		if isWrite(m) {
			n += c
		}
	}
	return n
}

// grantsInTestNamespace moves o's attachment grants for armor.Namespace
// (namespaceSelector matchLabels kubernetes.io/metadata.name: default, as
// the examples grant) to the test's namespace, as the objects they grant
// are moved.
func (s *suite) grantsInTestNamespace(t *testing.T, o *unstructuredObject) {
	t.Helper()
	grants, _, _ := unstructured.NestedSlice(o.Object, "spec", "attachmentGrants")
	for _, g := range grants {
		g, _ := g.(map[string]any)
		if ns, _, _ := unstructured.NestedString(g, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); ns == armor.Namespace {
			if err := unstructured.SetNestedField(g, s.ns, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if grants != nil {
		if err := unstructured.SetNestedSlice(o.Object, grants, "spec", "attachmentGrants"); err != nil {
			t.Fatal(err)
		}
	}
}
