package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// docManifest is one object from a ```yaml block of a Markdown file.
type docManifest struct {
	where string // file:line of the block
	obj   *unstructured.Unstructured
}

// validatedGroups are API groups whose schemas `crossplane resource
// validate` has offline: ours (package/crds, package XRDs) and Crossplane's.
func validatedGroup(group string) bool {
	return group == "armorplane.io" || strings.HasSuffix(group, ".armorplane.io") ||
		group == "crossplane.io" || strings.HasSuffix(group, ".crossplane.io")
}

// foreignKinds are the kinds of other projects that our documentation
// shows, by apiVersion, each checked against that project's reference. We
// ship none of their CRDs, so a manifest of these kinds is only parsed and
// its apiVersion and kind checked; anything else must be added here first.
var foreignKinds = map[string][]string{
	"v1":                                    {"ConfigMap", "Secret", "Namespace", "ServiceAccount", "Service"},
	"rbac.authorization.k8s.io/v1":          {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"},
	"argoproj.io/v1alpha1":                  {"Application", "ApplicationSet", "AppProject"},
	"networking.k8s.io/v1":                  {"Ingress"},
	"cloud.google.com/v1":                   {"BackendConfig"},
	"networking.gke.io/v1":                  {"GCPBackendPolicy", "HealthCheckPolicy"},
	"gateway.networking.k8s.io/v1":          {"Gateway", "HTTPRoute"},
	"compute.gcp.upbound.io/v1beta1":        {"BackendService", "BackendBucket"},
	"compute.gcp.upbound.io/v1beta2":        {"BackendService", "BackendBucket"},
	"compute.gcp.m.upbound.io/v1beta1":      {"BackendService", "BackendBucket"},
	"compute.cnrm.cloud.google.com/v1beta1": {"ComputeBackendService", "ComputeBackendBucket", "ComputeSecurityPolicy"},
	"iam.cnrm.cloud.google.com/v1beta1":     {"IAMCustomRole", "IAMPolicyMember", "IAMServiceAccount"},
}

// functionInputs are the inputs of other projects' composition functions
// that documented Compositions use, as the CLI names them; their schemas are
// not ours to ship.
var functionInputs = []string{"pt.fn.crossplane.io/v1beta1, Kind=Resources"}

// markdownFiles are the documents whose manifests are checked: README.md and
// every Markdown file under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	root := repoRoot()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// yamlBlocks returns the ```yaml fenced blocks of a Markdown document with
// the line each starts on. A fence indented inside a list item has its
// indentation removed from each line of the block, as Markdown does.
func yamlBlocks(doc []byte) (blocks []string, lines []int) {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur *strings.Builder
	start, indent := 0, 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yml"):
			cur, start = &strings.Builder{}, n
			indent = len(line) - len(strings.TrimLeft(line, " "))
		case cur != nil && trimmed == "```":
			blocks, lines = append(blocks, cur.String()), append(lines, start)
			cur = nil
		case cur != nil:
			drop := min(indent, len(line)-len(strings.TrimLeft(line, " ")))
			cur.WriteString(line[drop:] + "\n")
		}
	}
	return blocks, lines
}

// decodeAll decodes every YAML document of a block.
func decodeAll(block string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(block), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// docManifests parses every ```yaml block of the documentation. A block
// that does not parse, or an object without apiVersion or kind, fails t.
// A block fenced ```yaml cases is a `provider test` cases file, not an
// object, and is not one of them.
func docManifests(t *testing.T) []docManifest {
	t.Helper()
	root := repoRoot()
	var out []docManifest
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		blocks, lines := yamlBlocks(b)
		for i, block := range blocks {
			where := fmt.Sprintf("%s:%d", rel, lines[i])
			objs, err := decodeAll(block)
			if err != nil {
				t.Errorf("%s: the yaml block does not parse: %v", where, err)
				continue
			}
			for _, o := range objs {
				if o.GetAPIVersion() == "" || o.GetKind() == "" {
					t.Errorf("%s: a manifest without apiVersion or kind (got %q, %q): show whole objects", where, o.GetAPIVersion(), o.GetKind())
					continue
				}
				out = append(out, docManifest{where: where, obj: o})
			}
		}
	}
	return out
}

// TestDocsManifests checks every manifest in README.md and docs/: those of
// our kinds and Crossplane's are validated with `crossplane resource
// validate` against the same schemas as the examples; the kinds of other
// projects (GKE, Gateway API, upjet's provider-gcp, Config Connector, Argo
// CD) must be ones foreignKinds lists.
func TestDocsManifests(t *testing.T) {
	manifests := docManifests(t)
	if len(manifests) == 0 {
		t.Fatal("no manifests found in README.md and docs/")
	}
	var validated []docManifest
	for _, m := range manifests {
		gv := m.obj.GetAPIVersion()
		group, _, _ := strings.Cut(gv, "/")
		if !strings.Contains(gv, "/") {
			group = ""
		}
		if validatedGroup(group) {
			validated = append(validated, m)
			continue
		}
		kinds, ok := foreignKinds[gv]
		if !ok {
			t.Errorf("%s: %s %s: apiVersion %q is neither ours, Crossplane's nor in foreignKinds", m.where, m.obj.GetKind(), m.obj.GetName(), gv)
			continue
		}
		if !slices.Contains(kinds, m.obj.GetKind()) {
			t.Errorf("%s: kind %q is not a kind of %s (known: %v)", m.where, m.obj.GetKind(), gv, kinds)
		}
	}
	t.Logf("%d manifests in the documentation, %d validated against schemas, %d checked by apiVersion and kind",
		len(manifests), len(validated), len(manifests)-len(validated))
	if len(validated) == 0 {
		return
	}

	// Without --error-on-missing-schemas, because a Composition's function
	// inputs are validated too and we ship no schema for other projects'
	// functions: each missing schema must be one of functionInputs, and
	// every manifest must be reported valid by name.
	out, err := validateManifests(t, validated)
	if err != nil {
		t.Errorf("crossplane resource validate failed on documentation manifests: %v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if missing, ok := strings.CutPrefix(line, "[!] could not find CRD/XRD for: "); ok && !slices.Contains(functionInputs, missing) {
			t.Errorf("no schema for %s, and it is not a function input in functionInputs:\n%s", missing, out)
		}
	}
	for _, m := range validated {
		want := fmt.Sprintf("[✓] %s, Kind=%s, %s validated successfully", m.obj.GetAPIVersion(), m.obj.GetKind(), m.obj.GetName())
		if !strings.Contains(out, want) {
			t.Errorf("%s: no success reported for %s %s (want %q)", m.where, m.obj.GetKind(), m.obj.GetName(), want)
		}
	}
}

// TestDocsManifestsCatchMistakes guards against a vacuous pass: a block
// with a misspelt field of ours, and one of an unknown foreign kind, must be
// reported.
func TestDocsManifestsCatchMistakes(t *testing.T) {
	doc := []byte("text\n```yaml\napiVersion: cloud.google.com/v1\nkind: BackendConfg\nmetadata: {name: x}\n```\n" +
		"```yaml\napiVersion: armorplane.io/v1beta1\nkind: ClusterProviderConfig\nmetadata: {name: y}\nspec: {projectId: p}\n```\n")
	blocks, lines := yamlBlocks(doc)
	if len(blocks) != 2 || lines[0] != 2 || lines[1] != 7 {
		t.Fatalf("yamlBlocks: want 2 blocks at lines 2 and 7, got %d at %v", len(blocks), lines)
	}
	objs, err := decodeAll(blocks[0])
	if err != nil || len(objs) != 1 {
		t.Fatalf("decodeAll: %v, %d objects", err, len(objs))
	}
	if slices.Contains(foreignKinds[objs[0].GetAPIVersion()], objs[0].GetKind()) {
		t.Errorf("kind %s accepted for %s", objs[0].GetKind(), objs[0].GetAPIVersion())
	}

	cli := crossplaneCLI(t)
	cache := seedCache(t, crossplaneCRDs(t))
	extensions, _ := inputs(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(blocks[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := validate(t, cli, cache, copyInto(t, extensions), bad)
	if err == nil || !strings.Contains(out, "projectId") {
		t.Errorf("a ClusterProviderConfig with a misspelt field validated (err %v):\n%s", err, out)
	}
}

// TestYAMLBlocksInListItems: a block indented under a list item is read as
// Markdown renders it, so its document separators still separate.
func TestYAMLBlocksInListItems(t *testing.T) {
	doc := []byte("1. Apply:\n\n   ```yaml\n   apiVersion: v1\n   kind: Namespace\n   metadata:\n     name: a\n   ---\n   apiVersion: v1\n   kind: Namespace\n   metadata: {name: b}\n   ```\n")
	blocks, _ := yamlBlocks(doc)
	if len(blocks) != 1 {
		t.Fatalf("yamlBlocks: want 1 block, got %d", len(blocks))
	}
	objs, err := decodeAll(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("names of the objects in an indented block: -want, +got:\n%s", diff)
	}
}

// validateManifests runs crossplane resource validate over manifests, against
// Crossplane's CRDs and our packages', with args added to its command line.
func validateManifests(t *testing.T, manifests []docManifest, args ...string) (string, error) {
	t.Helper()
	cli := crossplaneCLI(t)
	cache := seedCache(t, crossplaneCRDs(t))
	extensions, _ := inputs(t)
	dir := t.TempDir()
	for i, m := range manifests {
		b, err := m.obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.yaml", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return validateWith(t, cli, cache, copyInto(t, extensions), dir, args...)
}
