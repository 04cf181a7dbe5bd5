package argocd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// docObjects returns every object in the YAML blocks of docs/gitops.md.
func docObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, m := range yamlBlock.FindAllSubmatch(doc, -1) {
		for _, d := range strings.Split(string(m[1]), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
				t.Fatalf("docs/gitops.md: YAML block does not parse: %v\n%s", err, d)
			}
			out = append(out, u)
		}
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// TestDocCarriesHealthScript keeps docs/gitops.md and docs/argocd/health.lua
// in step: Argo CD must get the script the live test checks, for both groups.
func TestDocCarriesHealthScript(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	cm := find(docObjects(t), "ConfigMap", "argocd-cm")
	if cm == nil {
		t.Fatal("docs/gitops.md has no argocd-cm ConfigMap")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	custom := map[string]map[string]string{}
	if err := yaml.Unmarshal([]byte(data["resource.customizations"]), &custom); err != nil {
		t.Fatalf("resource.customizations does not parse as Argo CD reads it: %v", err)
	}
	for _, key := range []string{"armorplane.io/*", "*.armorplane.io/*"} {
		if diff := cmp.Diff(script, custom[key]["health.lua"]); diff != "" {
			t.Errorf("argocd-cm resource.customizations[%q].health.lua differs from docs/argocd/health.lua: -file +doc:\n%s", key, diff)
		}
	}
	var exclusions []struct {
		Kinds []string `json:"kinds"`
	}
	if err := yaml.Unmarshal([]byte(data["resource.exclusions"]), &exclusions); err != nil {
		t.Fatalf("resource.exclusions: %v", err)
	}
	if len(exclusions) == 0 || !slices.Contains(exclusions[0].Kinds, "ProviderConfigUsage") {
		t.Errorf("resource.exclusions does not exclude ProviderConfigUsage: %+v", exclusions)
	}
	if data["application.resourceTrackingMethod"] != "annotation" {
		t.Errorf("application.resourceTrackingMethod: want annotation, got %q", data["application.resourceTrackingMethod"])
	}
}

// TestDocApplicationSyncOptions checks the example Application and objects use
// the sync options that keep controller-written annotations.
func TestDocApplicationSyncOptions(t *testing.T) {
	objs := docObjects(t)
	app := find(objs, "Application", "cloud-armor")
	if app == nil {
		t.Fatal("docs/gitops.md has no example Application")
	}
	opts, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "syncPolicy", "syncOptions")
	for _, want := range []string{"ServerSideApply=true", "SkipDryRunOnMissingResource=true"} {
		if !slices.Contains(opts, want) {
			t.Errorf("Application syncOptions %v lack %s", opts, want)
		}
	}
	for _, u := range objs {
		if o := u.GetAnnotations()["argocd.argoproj.io/sync-options"] + strings.Join(opts, ","); strings.Contains(o, "Replace=true") {
			t.Errorf("%s %s syncs with Replace=true, which drops crossplane.io/external-name", u.GetKind(), u.GetName())
		}
	}
	cpc := find(objs, "ClusterProviderConfig", "default")
	if cpc == nil || !strings.Contains(cpc.GetAnnotations()["argocd.argoproj.io/sync-options"], "PruneLast=true") {
		t.Errorf("the example ClusterProviderConfig must sync with PruneLast=true")
	}
}
