// Package rbac holds the provider's permissions in two forms and the model
// that relates them:
//
//   - clusterrole.yaml: everything the provider binary needs (test/security
//     runs the binary bound to only this role);
//   - provider-runtime.yaml: what an admin grants on top of Crossplane's RBAC
//     manager when the provider runs as a package (a DeploymentRuntimeConfig
//     with a fixed ServiceAccount name, a ClusterRole and its binding);
//   - RBACManagerRules: what Crossplane v2.4's RBAC manager grants a provider
//     package by itself, computed from the package's CRDs and capabilities.
//
// The unit test here requires clusterrole.yaml minus the RBAC manager's grant
// to equal provider-runtime.yaml's ClusterRole; test/node compares
// RBACManagerRules with the ClusterRole the RBAC manager really creates.
package rbac

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ProviderName is the name the provider is installed under, and the name of
// provider-runtime.yaml's DeploymentRuntimeConfig and ServiceAccount. It is
// the name Crossplane's dependency resolver derives from the package path
// (<org>-<repo> of xpkg.crossplane.io/armorplane/provider-cloudarmor): when it
// resolves the Configuration's dependency on the provider and finds no
// Provider of that name, it installs a second one, and two Providers of one
// package are both unhealthy and run no pod.
const ProviderName = "armorplane-provider-cloudarmor"

// Files, relative to the repository root.
const (
	ClusterRoleFile     = "cluster/rbac/clusterrole.yaml"
	ProviderRuntimeFile = "cluster/rbac/provider-runtime.yaml"
	PackageDir          = "package"
)

// Crossplane v2.4.0's provider RBAC (internal/controller/rbac/provider/roles):
// the system role bound to a provider's ServiceAccount gets these verbs on
// every kind the package's CRDs define and their status, update on
// <group>/*/finalizers, every verb on Secrets, ConfigMaps, Events and Leases,
// and, with the safe-start capability, read access to CRDs.
var (
	verbsSystem = []string{"get", "list", "watch", "update", "patch", "create"}
	extraRule   = rbacv1.PolicyRule{
		APIGroups: []string{"", "coordination.k8s.io"},
		Resources: []string{"secrets", "configmaps", "events", "leases"},
		Verbs:     []string{rbacv1.VerbAll},
	}
	safeStartRule = rbacv1.PolicyRule{
		APIGroups: []string{"apiextensions.k8s.io"},
		Resources: []string{"customresourcedefinitions"},
		Verbs:     []string{"get", "list", "watch"},
	}
)

// RBACManagerRules returns the rules of the system ClusterRole Crossplane
// v2.4's RBAC manager creates for the provider package in dir (crossplane.yaml
// and crds/), in the RBAC manager's order.
func RBACManagerRules(dir string) ([]rbacv1.PolicyRule, error) {
	meta, err := os.ReadFile(filepath.Join(dir, "crossplane.yaml"))
	if err != nil {
		return nil, err
	}
	var pkg struct {
		Spec struct {
			Capabilities []string `json:"capabilities"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(meta, &pkg); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "crossplane.yaml"), err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s/crds: %v", dir, err)
	}
	type resource struct{ group, plural string }
	var rs []resource
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		rs = append(rs, resource{crd.Spec.Group, crd.Spec.Names.Plural})
	}
	// The RBAC manager sorts by plural+group and groups in first-seen order.
	sort.Slice(rs, func(i, j int) bool { return rs[i].plural+rs[i].group < rs[j].plural+rs[j].group })
	var groups []string
	byGroup := map[string][]string{}
	for _, r := range rs {
		if _, ok := byGroup[r.group]; !ok {
			groups = append(groups, r.group)
		}
		byGroup[r.group] = append(byGroup[r.group], r.plural, r.plural+"/status")
	}
	var rules []rbacv1.PolicyRule
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: byGroup[g], Verbs: verbsSystem})
	}
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: groups, Resources: []string{"*/finalizers"}, Verbs: []string{"update"}},
		extraRule)
	if hasCapability(pkg.Spec.Capabilities, "safe-start") {
		rules = append(rules, safeStartRule)
	}
	return rules, nil
}

// hasCapability matches as Crossplane does: only letters and digits count,
// case-insensitively ("SafeStart" is "safe-start").
func hasCapability(caps []string, key string) bool {
	norm := func(s string) string {
		return strings.ToLower(regexp.MustCompile("[^a-zA-Z0-9]+").ReplaceAllString(s, ""))
	}
	for _, c := range caps {
		if norm(c) == norm(key) {
			return true
		}
	}
	return false
}

// A Grant is one verb on one resource of one API group.
type Grant struct{ Group, Resource, Verb string }

func (g Grant) String() string { return g.Group + "/" + g.Resource + " " + g.Verb }

// Grants expands rules into sorted single grants. Wildcards stay as they are.
func Grants(rules []rbacv1.PolicyRule) []Grant {
	set := map[Grant]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					set[Grant{g, res, v}] = true
				}
			}
		}
	}
	out := make([]Grant, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Allows reports whether rules allow g, with the wildcards RBAC knows: "*" as
// a group, verb or resource, and "*/sub" for a subresource of any resource.
func Allows(rules []rbacv1.PolicyRule, g Grant) bool {
	for _, r := range rules {
		if has(r.APIGroups, g.Group) && has(r.Verbs, g.Verb) && resourceMatch(r.Resources, g.Resource) {
			return true
		}
	}
	return false
}

func has(list []string, s string) bool {
	for _, l := range list {
		if l == s || l == "*" {
			return true
		}
	}
	return false
}

func resourceMatch(list []string, res string) bool {
	_, sub, isSub := strings.Cut(res, "/")
	for _, l := range list {
		if l == res || l == "*" || (isSub && l == "*/"+sub) {
			return true
		}
	}
	return false
}

// Objects reads the YAML documents of file as unstructured objects.
func Objects(file string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

// ClusterRole reads the one ClusterRole in file.
func ClusterRole(file string) (*rbacv1.ClusterRole, error) {
	objs, err := Objects(file)
	if err != nil {
		return nil, err
	}
	var found *rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s: more than one ClusterRole", file)
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		found = &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(b, found); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no ClusterRole", file)
	}
	return found, nil
}
