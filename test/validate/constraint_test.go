package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// TestConfigurationCrossplaneConstraint checks the Crossplane version the
// Configuration requires against what its package uses: each feature below
// names the first Crossplane release that has it, and the constraint must
// exclude every release older than one of them. It must also admit the
// release every suite runs (crossplaneVersion), and require no less: an
// older release is never tested, so the Configuration does not claim it.
func TestConfigurationCrossplaneConstraint(t *testing.T) {
	root := repoRoot()
	meta := map[string]any{}
	read(t, filepath.Join(root, "package", "configuration", "crossplane.yaml"), &meta)
	spec, _ := meta["spec"].(map[string]any)
	xp, _ := spec["crossplane"].(map[string]any)
	constraint, _ := xp["version"].(string)
	minimum, ok := strings.CutPrefix(constraint, ">=")
	if !ok || !semver.IsValid(minimum) {
		t.Fatalf("spec.crossplane.version %q: want a lower bound such as \">=v2.4.0\"", constraint)
	}

	xrd := map[string]any{}
	read(t, filepath.Join(root, "package", "configuration", "definition.yaml"), &xrd)
	comp := map[string]any{}
	read(t, filepath.Join(root, "package", "configuration", "composition.yaml"), &comp)
	compSpec, _ := comp["spec"].(map[string]any)

	provider := map[string]any{}
	read(t, filepath.Join(root, "package", "crossplane.yaml"), &provider)
	providerSpec, _ := provider["spec"].(map[string]any)
	capabilities, _ := providerSpec["capabilities"].([]any)
	fn, err := os.ReadFile(filepath.Join(root, "internal", "function", "fn.go"))
	if err != nil {
		t.Fatal(err)
	}

	features := []struct {
		name  string
		since string
		used  bool
	}{
		// A namespaced XR without claims is an apiextensions.crossplane.io/v2 XRD.
		{"XRD apiextensions.crossplane.io/v2 (namespaced XRs)", "v2.0.0", xrd["apiVersion"] == "apiextensions.crossplane.io/v2"},
		{"Composition mode Pipeline", "v1.14.0", compSpec["mode"] == "Pipeline"},
		// The function sets the XR's Current condition; core applies function
		// conditions to the XR, even with a fatal result, since v1.17.
		{"conditions from composition functions", "v1.17.0", strings.Contains(string(fn), "response.Condition")},
		// The provider's kinds are activated by a ManagedResourceActivationPolicy
		// (safe-start), which arrived with v2.0.
		{"ManagedResourceActivationPolicy (safe-start provider)", "v2.0.0", slices.Contains(capabilities, any("safe-start"))},
	}
	for _, f := range features {
		if !f.used {
			t.Errorf("%s: the package no longer uses it; update this table", f.name)
			continue
		}
		if semver.Compare(minimum, f.since) < 0 {
			t.Errorf("spec.crossplane.version %q admits releases before %s, which lack %s", constraint, f.since, f.name)
		}
	}
	if semver.Compare(minimum, crossplaneVersion) != 0 {
		t.Errorf("spec.crossplane.version %q: want \">=%s\", the release every suite runs; nothing older is tested", constraint, crossplaneVersion)
	}
}

func read(t *testing.T, path string, into *map[string]any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
