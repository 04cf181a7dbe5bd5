// Package validate runs `crossplane resource validate` (CLI v2.5.0, built by
// `make tools`) on every file under examples/ and on the Configuration's
// Composition and XRD, against package/crds, the XRDs under package/ and
// Crossplane v2.4.0's own CRDs, all offline: the CLI's schema cache is
// seeded with Crossplane's CRDs from the Go module cache, so it never
// downloads a package. The manifests in README.md and docs/ are checked too
// (docs_test.go).
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
)

const (
	cliVersion        = "v2.5.0"
	crossplaneModule  = "github.com/crossplane/crossplane/v2"
	crossplaneVersion = "v2.4.0"
	crossplaneImage   = "xpkg.crossplane.io/crossplane/crossplane:" + crossplaneVersion
	toolsHint         = "run `make tools` (cluster/toolchain/build.sh crossplane)"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// crossplaneCLI returns the cached CLI binary; it never builds it.
func crossplaneCLI(t *testing.T) string {
	t.Helper()
	cache, err := controlplane.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "bin", "crossplane-"+cliVersion, "crossplane")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("crossplane CLI %s not found at %s: %s", cliVersion, bin, toolsHint)
	}
	return bin
}

// crossplaneCRDs returns the folder of Crossplane's own CRDs in the module
// the crossplane-core wrapper pins (downloaded through the module proxy once).
func crossplaneCRDs(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", crossplaneModule)
	cmd.Dir = filepath.Join(repoRoot(), "cluster", "toolchain", "crossplane-core")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v: %s", crossplaneModule, err, toolsHint)
	}
	var mod struct{ Dir, Version string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Version != crossplaneVersion {
		t.Fatalf("cluster/toolchain/crossplane-core pins %s %s, want %s", crossplaneModule, mod.Version, crossplaneVersion)
	}
	return filepath.Join(mod.Dir, "cluster", "crds")
}

// seedCache writes Crossplane's CRDs where the CLI looks for the schemas of
// --crossplane-image, and returns the cache folder.
func seedCache(t *testing.T, crds string) string {
	t.Helper()
	cache := t.TempDir()
	dir := filepath.Join(cache, strings.ReplaceAll(crossplaneImage, ":", "@"))
	files, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Crossplane CRDs in %s (%v)", crds, err)
	}
	var all bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString("---\n")
		all.Write(b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.yaml"), all.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return cache
}

// yamlFiles lists the YAML files under dir.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyInto copies files into a new folder, flattening their paths.
func copyInto(t *testing.T, files []string) string {
	t.Helper()
	dir := t.TempDir()
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d-%s", i, filepath.Base(f))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func objects(t *testing.T, files []string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

// inputs returns the extension files (our CRDs and XRDs) and the resources to
// validate: every example, and every package object that is not a CRD or
// package metadata (Compositions, XRDs).
func inputs(t *testing.T) (extensions, resources []string) {
	t.Helper()
	root := repoRoot()
	for _, f := range yamlFiles(t, filepath.Join(root, "package")) {
		if filepath.Base(f) == "crossplane.yaml" {
			continue // metadata: its dependencies would be downloaded
		}
		objs := objects(t, []string{f})
		kind := ""
		if len(objs) > 0 {
			kind = objs[0].GetKind()
		}
		switch kind {
		case "CustomResourceDefinition":
			extensions = append(extensions, f)
		case "CompositeResourceDefinition":
			extensions = append(extensions, f)
			resources = append(resources, f)
		default:
			resources = append(resources, f)
		}
	}
	for _, f := range yamlFiles(t, filepath.Join(root, "examples")) {
		// examples/tests holds `provider test` cases, not objects.
		if !strings.HasPrefix(f, filepath.Join(root, "examples", "tests")+string(filepath.Separator)) {
			resources = append(resources, f)
		}
	}
	return extensions, resources
}

// validate runs the CLI and returns its output and whether it succeeded.
func validate(t *testing.T, cli, cache, extensions, resources string) (string, error) {
	t.Helper()
	return validateWith(t, cli, cache, extensions, resources, "--error-on-missing-schemas")
}

// validateWith runs the CLI with extra flags.
func validateWith(t *testing.T, cli, cache, extensions, resources string, flags ...string) (string, error) {
	t.Helper()
	args := append([]string{"resource", "validate", "--cache-dir=" + cache, "--crossplane-image=" + crossplaneImage}, flags...)
	cmd := exec.Command(cli, append(args, extensions, resources)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no user config or cache
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestExamplesValidate checks every object of every example and package file
// is reported valid by name.
func TestExamplesValidate(t *testing.T) {
	cli := crossplaneCLI(t)
	cache := seedCache(t, crossplaneCRDs(t))
	extensions, resources := inputs(t)
	out, err := validate(t, cli, cache, copyInto(t, extensions), copyInto(t, resources))
	t.Logf("crossplane resource validate:\n%s", out)
	if err != nil {
		t.Fatalf("crossplane resource validate failed: %v", err)
	}
	if strings.Contains(out, "downloading") {
		t.Errorf("validate downloaded schemas; it must run offline from the seeded cache")
	}
	for _, u := range objects(t, resources) {
		gv := u.GetAPIVersion()
		want := fmt.Sprintf("[✓] %s, Kind=%s, %s validated successfully", gv, u.GetKind(), u.GetName())
		if !strings.Contains(out, want) {
			t.Errorf("no success reported for %s %s %s (want %q)", gv, u.GetKind(), u.GetName(), want)
		}
	}
}

// TestInvalidExampleFails guards against a vacuous pass: an object with an
// unknown field and a wrong type must fail validation against our CRDs.
func TestInvalidExampleFails(t *testing.T) {
	cli := crossplaneCLI(t)
	cache := seedCache(t, crossplaneCRDs(t))
	extensions, _ := inputs(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: bad
  namespace: default
spec:
  forProvider:
    descriptoin: typo
    rules:
      - priority: high
        action: allow
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := validate(t, cli, cache, copyInto(t, extensions), bad)
	if err == nil {
		t.Fatalf("an invalid SecurityPolicy validated:\n%s", out)
	}
	for _, want := range []string{"descriptoin", "priority"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output does not name %q:\n%s", want, out)
		}
	}
}
