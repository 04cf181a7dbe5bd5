package argocd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// argoManager is the field manager Argo CD applies with under ServerSideApply=true.
	argoManager = "argocd-controller"
	// exampleEndpoint is where the examples expect the emulator (`make run`).
	exampleEndpoint = "http://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8787/compute/v1/"
)

// providerGroups are the API groups of package/crds.
var providerGroups = map[string]bool{"armorplane.io": true, "cloudarmor.armorplane.io": true}

// exampleObjects reads every object under examples/ that this provider
// serves (and the core Secrets they need), with the emulator endpoint
// replaced by e's. Other kinds (composite resources, RBAC) need Crossplane
// itself and are checked by test/validate.
func (e *env) exampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	err := filepath.WalkDir(filepath.Join(repoRoot(), "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(exampleEndpoint), []byte(e.emu.Endpoint()))
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			group, _, _ := strings.Cut(u.GetAPIVersion(), "/")
			if len(u.Object) == 0 || !(u.GetAPIVersion() == "v1" || providerGroups[group]) {
				continue
			}
			out = append(out, u)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply server-side applies objs as Argo CD does and returns them as stored.
func (e *env) apply(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u := o.DeepCopy()
		if err := e.kube.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(argoManager), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out = append(out, e.get(t, o))
	}
	return out
}

func (e *env) get(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), u); err != nil {
		t.Fatalf("get %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return u
}

func isManaged(u *unstructured.Unstructured) bool {
	return strings.HasPrefix(u.GetAPIVersion(), "cloudarmor.armorplane.io/")
}

// TestServerSideApplyIsStable applies every example as Argo CD does, waits
// until each managed resource is Ready, re-applies the same files and checks
// nothing changed: no spec field or generation, and no spec field owned by
// anyone but the applier, except the values Crossplane resolves from a
// reference (spec.forProvider.securityPolicy from securityPolicyRef). A field the provider rewrote would show as
// OutOfSync in Argo CD and make it fight the provider.
func TestServerSideApplyIsStable(t *testing.T) {
	begin := time.Now()
	e := start(t)
	// examples/import adopts a policy someone made in the console.
	svc, err := e.emu.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SecurityPolicies.Insert("demo-project", &compute.SecurityPolicy{Name: "legacy-console-policy",
		Description: "made in the console"}).Do(); err != nil {
		t.Fatal(err)
	}
	// examples/features/attachment.yaml attaches a policy to a backend
	// service made elsewhere.
	if _, err := svc.BackendServices.Insert("demo-project", &compute.BackendService{Name: "web-frontend",
		LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do(); err != nil {
		t.Fatal(err)
	}
	objs := e.exampleObjects(t)
	e.apply(t, objs)

	// Ready, then a few polls more: late writes by the provider would show.
	deadline := time.Now().Add(readyLimit)
	for _, o := range objs {
		if !isManaged(o) {
			continue
		}
		for {
			u := e.get(t, o)
			r, _, _ := condition(u, "Ready")
			s, _, msg := condition(u, "Synced")
			if r == "True" && s == "True" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s %s not Ready and Synced within %s: Ready=%q Synced=%q %s", o.GetKind(), o.GetName(), readyLimit, r, s, msg)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second)
	before := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		before[o.GetKind()+"/"+o.GetName()] = e.get(t, o)
	}

	after := e.apply(t, objs)
	for _, u := range after {
		key := u.GetKind() + "/" + u.GetName()
		b := before[key]
		if u.GetGeneration() != b.GetGeneration() {
			t.Errorf("%s: re-applying changed metadata.generation %d -> %d", key, b.GetGeneration(), u.GetGeneration())
		}
		for _, field := range []string{"spec", "data"} {
			if diff := cmp.Diff(b.Object[field], u.Object[field]); diff != "" {
				t.Errorf("%s: re-applying changed %s: -before +after:\n%s", key, field, diff)
			}
		}
		for _, mf := range u.GetManagedFields() {
			if mf.Manager == argoManager || mf.Subresource == "status" || mf.FieldsV1 == nil {
				continue
			}
			var fields map[string]any
			if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
				t.Fatal(err)
			}
			for _, p := range leaves(fields, nil) {
				if p[0] != "spec" || isResolvedReference(u, p) {
					continue
				}
				t.Errorf("%s: field manager %q (%s) owns %s, which Argo CD would report as drift or fight over",
					key, mf.Manager, mf.Operation, strings.Join(p, "."))
			}
		}
	}
	t.Logf("%d example objects applied, Ready and re-applied without change in %s", len(objs), time.Since(begin).Round(100*time.Millisecond))
}

// leaves returns the paths of the fields in a managedFields fieldsV1 set.
func leaves(set map[string]any, prefix []string) [][]string {
	var out [][]string
	for k, v := range set {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue // k: and v: entries key list items; the list itself is the field
		}
		p := append(append([]string(nil), prefix...), name)
		sub, _ := v.(map[string]any)
		if child := leaves(sub, p); len(child) > 0 {
			out = append(out, child...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// isResolvedReference reports whether path is a field Crossplane's reference
// resolver fills from a fooRef or fooSelector beside it in u's spec: the
// provider owns it under its own field manager, Git holds the reference, and
// a server-side apply leaves it alone.
func isResolvedReference(u *unstructured.Unstructured, path []string) bool {
	parent, _, _ := unstructured.NestedMap(u.Object, path[:len(path)-1]...)
	name := path[len(path)-1]
	return parent[name+"Ref"] != nil || parent[name+"Selector"] != nil
}
