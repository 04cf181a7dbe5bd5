package nodesuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// sidecarImage is the image docs/security.md's DeploymentRuntimeConfig names
// for Crossplane's change logs sidecar.
const sidecarImage = "xpkg.crossplane.io/crossplane/changelogs-sidecar:v0.0.1"

// checkChangeLogs runs change logs the way docs/security.md tells a user to:
// its DeploymentRuntimeConfig, verbatim but for the sidecar image's registry
// (the node has no network: cmd/changelogs-sidecar, which stands in for the
// sidecar, is pushed to the node's registry), replaces the provider's pod
// with one that runs the sidecar beside it on a shared emptyDir. A policy is
// created, edited and deleted, and the sidecar's log must hold one entry for
// each, in order. emu is the emulator pod's forwarder on the host.
func checkChangeLogs(ctx context.Context, t *testing.T, n *node.Node, emu string) {
	t.Helper()
	start := time.Now()
	bin := envOr("NODE_CHANGELOGS_BIN", filepath.Join(repo.Root(), "_output/bin/changelogs-sidecar"))
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run `make build`", err)
	}
	repoTag := strings.TrimPrefix(sidecarImage, "xpkg.crossplane.io/")
	repoName, tag, _ := strings.Cut(repoTag, ":")
	img, err := n.PushImage(ctx, repoName, tag, []string{"/changelogs-sidecar"}, map[string]string{"/changelogs-sidecar": bin})
	if err != nil {
		t.Fatal(err)
	}
	drc := docsChangeLogsDRC(t)
	if !strings.Contains(drc, sidecarImage) {
		t.Fatalf("docs/security.md's DeploymentRuntimeConfig no longer names %s", sidecarImage)
	}
	old := podLogs(ctx, t, n, rbac.ProviderName+"-")
	if err := n.Apply(ctx, strings.ReplaceAll(drc, sidecarImage, img)); err != nil {
		t.Fatal(err)
	}
	// The new pod, with both containers ready.
	var pod string
	for deadline := time.Now().Add(3 * time.Minute); pod == ""; {
		out, _ := n.Kubectl(ctx, "-n", "crossplane-system", "get", "pods", "-l", "pkg.crossplane.io/provider="+rbac.ProviderName, "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[*].ready}{"\n"}{end}`)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if _, was := old[f[0]]; len(f) == 3 && !was && f[1] == "true" && f[2] == "true" {
				pod = f[0]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no provider pod with the change logs sidecar ready in 3m:\n%s", out)
		}
		time.Sleep(time.Second)
	}
	// The old pod may still hold the leader lease for a moment: wait for it
	// to be gone, so the new pod is the one that writes.
	for p := range old {
		_, _ = n.Kubectl(ctx, "-n", "crossplane-system", "wait", "pod/"+p, "--for=delete", "--timeout=2m")
	}

	const name = "audited"
	if err := n.Apply(ctx, policy("tenant-a", name)); err != nil {
		t.Fatal(err)
	}
	waitSynced := func(what string) {
		t.Helper()
		if _, err := n.Kubectl(ctx, "-n", "tenant-a", "wait", "securitypolicy/"+name, "--for=condition=Ready", "--timeout=3m"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitSynced("created")
	if _, err := n.Kubectl(ctx, "-n", "tenant-a", "patch", "securitypolicy", name, "--type=merge",
		"-p", `{"spec":{"forProvider":{"description":"edited under audit"}}}`); err != nil {
		t.Fatal(err)
	}
	// Ready stays True through an edit: wait for GCP to hold the edit.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		got, err := gcpPolicy(emu, name)
		if err == nil && got.Description == "edited under audit" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit did not reach GCP in 2m: %+v, %v", got, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := n.Kubectl(ctx, "-n", "tenant-a", "delete", "securitypolicy", name, "--timeout=2m"); err != nil {
		t.Fatal(err)
	}

	type entry struct{ Kind, Name, Operation string }
	var got []entry
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err := n.Kubectl(ctx, "-n", "crossplane-system", "logs", pod, "-c", "changelogs-sidecar")
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e entry
			if json.Unmarshal([]byte(line), &e) == nil && e.Name == name {
				got = append(got, e)
			}
		}
		if len(got) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	want := []entry{
		{"SecurityPolicy", name, "OPERATION_TYPE_CREATE"},
		{"SecurityPolicy", name, "OPERATION_TYPE_UPDATE"},
		{"SecurityPolicy", name, "OPERATION_TYPE_DELETE"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the change log the sidecar beside the provider pod wrote (-want +got):\n%s", diff)
	}
	t.Logf("change logs: docs/security.md's DeploymentRuntimeConfig applied, the sidecar beside the provider pod logged %d entries for %s, %s in all",
		len(got), name, time.Since(start).Round(100*time.Millisecond))
}

// docsChangeLogsDRC is the yaml block of docs/security.md that configures
// the change logs sidecar.
func docsChangeLogsDRC(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repo.Root(), "docs/security.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range fenced(string(doc))["yaml"] {
		if strings.Contains(b, "kind: DeploymentRuntimeConfig") && strings.Contains(b, "changelogs-sidecar") {
			return b
		}
	}
	t.Fatal(fmt.Errorf("docs/security.md has no yaml block with the change logs DeploymentRuntimeConfig"))
	return ""
}
