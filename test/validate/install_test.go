package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
)

// installDoc is the GKE runbook README.md's Install section links to.
const installDoc = "docs/install.md"

// installManifests returns docs/install.md's manifests (its ```yaml
// blocks), failing t on a block that does not parse.
func installManifests(t *testing.T) []docManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), installDoc))
	if err != nil {
		t.Fatal(err)
	}
	var out []docManifest
	blocks, lines := yamlBlocks(b)
	for i, block := range blocks {
		where := fmt.Sprintf("%s:%d", installDoc, lines[i])
		objs, err := decodeAll(block)
		if err != nil {
			t.Fatalf("%s: the yaml block does not parse: %v", where, err)
		}
		for _, o := range objs {
			out = append(out, docManifest{where: where, obj: o})
		}
	}
	return out
}

// TestInstallDoc: every manifest of docs/install.md of our kinds and
// Crossplane's validates against the schemas (package/crds, Crossplane
// v2.4.0's CRDs) with `crossplane resource validate`, as TestDocsManifests
// does for all the docs; the runbook shows each object a GKE install needs;
// its one DeploymentRuntimeConfig is provider-runtime.yaml's plus the
// Workload Identity annotation and leader election with more than one
// replica; and its commands are README.md's install commands.
func TestInstallDoc(t *testing.T) {
	manifests := installManifests(t)
	byKind := map[string][]*unstructured.Unstructured{}
	var validated []docManifest
	for _, m := range manifests {
		byKind[m.obj.GetKind()] = append(byKind[m.obj.GetKind()], m.obj)
		group, _, _ := strings.Cut(m.obj.GetAPIVersion(), "/")
		if validatedGroup(group) {
			validated = append(validated, m)
		}
	}
	for _, kind := range []string{"ImageConfig", "DeploymentRuntimeConfig", "ClusterProviderConfig", "SecurityPolicy", "SecurityPolicyAttachment"} {
		if len(byKind[kind]) == 0 {
			t.Errorf("%s shows no %s", installDoc, kind)
		}
	}
	if len(validated) < 6 {
		t.Fatalf("%s: %d manifests of ours or Crossplane's, want at least 6", installDoc, len(validated))
	}

	t.Run("Schemas", func(t *testing.T) {
		out, err := validateManifests(t, validated, "--error-on-missing-schemas")
		if err != nil {
			t.Errorf("crossplane resource validate failed on %s: %v\n%s", installDoc, err, out)
		}
		for _, m := range validated {
			want := fmt.Sprintf("[✓] %s, Kind=%s, %s validated successfully", m.obj.GetAPIVersion(), m.obj.GetKind(), m.obj.GetName())
			if !strings.Contains(out, want) {
				t.Errorf("%s: no success reported for %s %s (want %q)\n%s", m.where, m.obj.GetKind(), m.obj.GetName(), want, out)
			}
		}
		t.Logf("%d manifests of %s validated", len(validated), installDoc)
	})

	t.Run("RuntimeConfig", func(t *testing.T) {
		drcs := byKind["DeploymentRuntimeConfig"]
		if len(drcs) != 1 {
			t.Fatalf("%s shows %d DeploymentRuntimeConfigs; want the one that combines them all", installDoc, len(drcs))
		}
		drc := drcs[0]
		if drc.GetName() != rbac.ProviderName {
			t.Errorf("the DeploymentRuntimeConfig is %q; want %q, the name the install commands give --runtime-config", drc.GetName(), rbac.ProviderName)
		}
		str := func(path ...string) string {
			v, _, _ := unstructured.NestedString(drc.Object, path...)
			return v
		}
		if got := str("spec", "serviceAccountTemplate", "metadata", "name"); got != rbac.ProviderName {
			t.Errorf("its ServiceAccount is %q; want %q, which provider-runtime.yaml's ClusterRoleBinding names", got, rbac.ProviderName)
		}
		gsa := str("spec", "serviceAccountTemplate", "metadata", "annotations", "iam.gke.io/gcp-service-account")
		if !strings.HasSuffix(gsa, ".iam.gserviceaccount.com") {
			t.Errorf("its ServiceAccount has no iam.gke.io/gcp-service-account annotation naming a Google service account (got %q)", gsa)
		}
		var replicas float64 // decoded from JSON: a number
		switch r, _, _ := unstructured.NestedFieldNoCopy(drc.Object, "spec", "deploymentTemplate", "spec", "replicas"); r := r.(type) {
		case int64:
			replicas = float64(r)
		case float64:
			replicas = r
		}
		if replicas < 2 {
			t.Errorf("replicas %v; want 2 or more (docs/ha.md)", replicas)
		}
		containers, _, _ := unstructured.NestedSlice(drc.Object, "spec", "deploymentTemplate", "spec", "template", "spec", "containers")
		leader := false
		for _, c := range containers {
			c, _ := c.(map[string]any)
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			leader = leader || c["name"] == "package-runtime" && slices.Contains(args, "--leader-election")
		}
		if !leader {
			t.Errorf("the package-runtime container does not run with --leader-election: %v replicas would all write (docs/ha.md)", replicas)
		}

		// Applied after provider-runtime.yaml, it must keep all of that
		// file's DeploymentRuntimeConfig.
		b, err := os.ReadFile(filepath.Join(repoRoot(), rbac.ProviderRuntimeFile))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(string(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "DeploymentRuntimeConfig" {
				if missing := notIn(o.Object, drc.Object, ""); len(missing) > 0 {
					t.Errorf("%s's DeploymentRuntimeConfig lacks what %s's has: %v", installDoc, rbac.ProviderRuntimeFile, missing)
				}
			}
		}

		// Workload Identity binds that ServiceAccount.
		doc, err := os.ReadFile(filepath.Join(repoRoot(), installDoc))
		if err != nil {
			t.Fatal(err)
		}
		member := "[crossplane-system/" + rbac.ProviderName + "]"
		if !strings.Contains(string(doc), "roles/iam.workloadIdentityUser") || !strings.Contains(string(doc), member) {
			t.Errorf("%s does not bind roles/iam.workloadIdentityUser for %s", installDoc, member)
		}
	})

	t.Run("ProviderConfig", func(t *testing.T) {
		for _, c := range byKind["ClusterProviderConfig"] {
			if src, _, _ := unstructured.NestedString(c.Object, "spec", "credentials", "source"); src != "InjectedIdentity" {
				t.Errorf("ClusterProviderConfig %s: credentials.source %q; want InjectedIdentity (Workload Identity)", c.GetName(), src)
			}
			if _, ok, _ := unstructured.NestedMap(c.Object, "spec", "namespaceSelector"); !ok {
				t.Errorf("ClusterProviderConfig %s has no namespaceSelector", c.GetName())
			}
			if _, ok, _ := unstructured.NestedSlice(c.Object, "spec", "attachmentGrants"); !ok {
				t.Errorf("ClusterProviderConfig %s has no attachmentGrants: the runbook's attachment would be refused", c.GetName())
			}
		}
	})

	t.Run("READMECommands", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(repoRoot(), installDoc))
		if err != nil {
			t.Fatal(err)
		}
		cmds := shCommands(string(doc))
		for _, want := range stack.ReadmeInstall {
			if strings.Contains(want, "provider-runtime.yaml") {
				if !strings.Contains(string(doc), rbac.ProviderRuntimeFile) {
					t.Errorf("%s does not apply %s", installDoc, rbac.ProviderRuntimeFile)
				}
				continue
			}
			if !slices.Contains(cmds, want) {
				t.Errorf("%s does not run README.md's install command %q", installDoc, want)
			}
		}
	})
}

// notIn returns the paths of the leaves of want that got lacks or holds
// another value at.
func notIn(want, got map[string]any, prefix string) []string {
	var out []string
	for k, w := range want {
		p := prefix + "." + k
		g, ok := got[k]
		if wm, isMap := w.(map[string]any); isMap {
			gm, _ := g.(map[string]any)
			out = append(out, notIn(wm, gm, p)...)
			continue
		}
		if !ok || !cmp.Equal(w, g) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

var fence = regexp.MustCompile("^\\s*```")

// shCommands returns the commands of a Markdown document's ```sh blocks,
// backslash continuations joined, runs of spaces as one, comments and
// here-documents left out.
func shCommands(doc string) []string {
	var out []string
	in, heredoc := false, ""
	var cur string
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case !in && t == "```sh":
			in = true
			continue
		case in && heredoc == "" && fence.MatchString(line):
			in = false
			continue
		case !in:
			continue
		case heredoc != "":
			if t == heredoc {
				heredoc = ""
			}
			continue
		}
		if i := strings.Index(t, "<<'"); i >= 0 {
			heredoc = strings.TrimSuffix(t[i+3:], "'")
		}
		if c, ok := strings.CutSuffix(t, "\\"); ok {
			cur += c + " "
			continue
		}
		cur += t
		if cur != "" && !strings.HasPrefix(cur, "#") {
			out = append(out, strings.Join(strings.Fields(cur), " "))
		}
		cur = ""
	}
	return out
}
