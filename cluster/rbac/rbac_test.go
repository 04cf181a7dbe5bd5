package rbac

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestProviderRuntimeIsClusterRoleMinusRBACManager: what the admin grants in
// provider-runtime.yaml is exactly what clusterrole.yaml (what the binary
// needs) holds and the RBAC manager does not grant: nothing the provider
// needs is missing live, and the admin grants nothing it does not need.
func TestProviderRuntimeIsClusterRoleMinusRBACManager(t *testing.T) {
	root := repo.Root()
	mgr, err := RBACManagerRules(filepath.Join(root, PackageDir))
	if err != nil {
		t.Fatal(err)
	}
	needs, err := ClusterRole(filepath.Join(root, ClusterRoleFile))
	if err != nil {
		t.Fatal(err)
	}
	extra, err := ClusterRole(filepath.Join(root, ProviderRuntimeFile))
	if err != nil {
		t.Fatal(err)
	}
	var missing []Grant
	for _, g := range Grants(needs.Rules) {
		if !Allows(mgr, g) {
			missing = append(missing, g)
		}
	}
	if diff := cmp.Diff(missing, Grants(extra.Rules)); diff != "" {
		t.Errorf("%s's ClusterRole is not %s minus what the RBAC manager grants (-needed +granted):\n%s",
			ProviderRuntimeFile, ClusterRoleFile, diff)
	}
	for _, g := range Grants(extra.Rules) {
		if g.Group == "*" || g.Resource == "*" || g.Verb == "*" {
			t.Errorf("%s grants a wildcard: %s", ProviderRuntimeFile, g)
		}
	}
}

// TestRBACManagerRules pins the model to this package: the RBAC manager
// gives each CRD's kind and status the system verbs, and safe-start adds CRDs.
func TestRBACManagerRules(t *testing.T) {
	rules, err := RBACManagerRules(filepath.Join(repo.Root(), PackageDir))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		grant Grant
		want  bool
	}{
		"own kind":                    {Grant{"cloudarmor.armorplane.io", "securitypolicies", "update"}, true},
		"own status":                  {Grant{"cloudarmor.armorplane.io", "securitypolicies/status", "patch"}, true},
		"own finalizers":              {Grant{"armorplane.io", "providerconfigs/finalizers", "update"}, true},
		"own kind, no delete":         {Grant{"armorplane.io", "providerconfigusages", "delete"}, false},
		"secrets":                     {Grant{"", "secrets", "get"}, true},
		"leases":                      {Grant{"coordination.k8s.io", "leases", "create"}, true},
		"CRDs, for safe-start":        {Grant{"apiextensions.k8s.io", "customresourcedefinitions", "watch"}, true},
		"namespaces":                  {Grant{"", "namespaces", "list"}, false},
		"nodes":                       {Grant{"", "nodes", "watch"}, false},
		"events.k8s.io is not events": {Grant{"events.k8s.io", "events", "create"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Allows(rules, tc.grant); got != tc.want {
				t.Errorf("Allows(%s) = %v, want %v", tc.grant, got, tc.want)
			}
		})
	}
}

// TestProviderRuntimeBinding: the binding names the ClusterRole and the
// ServiceAccount the DeploymentRuntimeConfig fixes, in Crossplane's
// namespace, all named after the Provider (ProviderName);
// examples/allowlist/rbac.yaml carries the same three objects.
func TestProviderRuntimeBinding(t *testing.T) {
	root := repo.Root()
	objs, err := Objects(filepath.Join(root, ProviderRuntimeFile))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = o
	}
	str := func(kind string, path ...string) string {
		o := byKind[kind]
		if o == nil {
			t.Fatalf("%s has no %s", ProviderRuntimeFile, kind)
		}
		s, _, _ := unstructured.NestedString(o.Object, path...)
		return s
	}
	sa := str("DeploymentRuntimeConfig", "spec", "serviceAccountTemplate", "metadata", "name")
	var binding rbacv1.ClusterRoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["ClusterRoleBinding"].Object, &binding); err != nil {
		t.Fatal(err)
	}
	want := rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: byKind["ClusterRole"].GetName()},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "crossplane-system"}},
	}
	if diff := cmp.Diff(want.RoleRef, binding.RoleRef); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Subjects, binding.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
	names := map[string]string{
		"DeploymentRuntimeConfig": str("DeploymentRuntimeConfig", "metadata", "name"),
		"ServiceAccount":          sa,
		"ClusterRole":             byKind["ClusterRole"].GetName(),
		"ClusterRoleBinding":      byKind["ClusterRoleBinding"].GetName(),
	}
	wantNames := map[string]string{
		"DeploymentRuntimeConfig": ProviderName,
		"ServiceAccount":          ProviderName,
		"ClusterRole":             ProviderName + ":beyond-rbac-manager",
		"ClusterRoleBinding":      ProviderName + ":beyond-rbac-manager",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("%s's names, which follow the Provider's (-want +got):\n%s", ProviderRuntimeFile, diff)
	}

	example, err := Objects(filepath.Join(root, "examples/allowlist/rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]*unstructured.Unstructured{}
	for _, o := range example {
		found[o.GetKind()+"/"+o.GetName()] = o
	}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if found[key] == nil {
			t.Errorf("examples/allowlist/rbac.yaml lacks %s of %s", key, ProviderRuntimeFile)
			continue
		}
		if diff := cmp.Diff(o.Object, found[key].UnstructuredContent()); diff != "" {
			t.Errorf("examples/allowlist/rbac.yaml's %s differs from %s's (-install +example):\n%s", key, ProviderRuntimeFile, diff)
		}
	}
}

// TestClusterRoleCoversManagedKinds: every managed resource kind the package
// defines (CRD category "managed") is in clusterrole.yaml as the reconciler
// needs it: read and watched, its status and finalizers written. A new kind
// missing here would leave the provider pod unable to list it (a "forbidden"
// per informer retry, and the kind never reconciled).
func TestClusterRoleCoversManagedKinds(t *testing.T) {
	root := repo.Root()
	role, err := ClusterRole(filepath.Join(root, ClusterRoleFile))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, PackageDir, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s/crds: %v", PackageDir, err)
	}
	managed := 0
	for _, f := range files {
		objs, err := Objects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			cats, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "names", "categories")
			if !slices.Contains(cats, "managed") {
				continue
			}
			managed++
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
			var want []Grant
			for _, v := range []string{"get", "list", "watch", "update", "patch"} {
				want = append(want, Grant{Group: group, Resource: plural, Verb: v})
			}
			for _, v := range []string{"get", "update", "patch"} {
				want = append(want, Grant{Group: group, Resource: plural + "/status", Verb: v})
			}
			want = append(want, Grant{Group: group, Resource: plural + "/finalizers", Verb: "update"})
			for _, g := range want {
				if !Allows(role.Rules, g) {
					t.Errorf("%s does not allow %s (%s)", ClusterRoleFile, g, filepath.Base(f))
				}
			}
		}
	}
	if managed == 0 {
		t.Errorf("no CRD of category managed in %s/crds: the test checks nothing", PackageDir)
	}
}
