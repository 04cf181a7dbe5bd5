package node

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// readmeInstall is the install section of README.md, the commands a user
// runs in order. TestPackages runs them on the node (through onNode);
// TestREADMEInstall checks README.md shows exactly these.
var readmeInstall = []string{
	"helm repo add crossplane-stable https://charts.crossplane.io/stable",
	"helm install crossplane crossplane-stable/crossplane --version 2.4.0 --namespace crossplane-system --create-namespace --wait",
	"kubectl apply -f provider-runtime.yaml",
	"crossplane xpkg install provider xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0 provider-cloudarmor --runtime-config=provider-cloudarmor --wait=5m",
	"crossplane xpkg install configuration xpkg.crossplane.io/armorplane/configuration-ipallowlist:v0.1.0 --wait=5m",
}

// readmeRuntimeFile is the file name the README's `kubectl apply -f` uses for
// cluster/rbac/provider-runtime.yaml, which it shows whole.
const readmeRuntimeFile = "provider-runtime.yaml"

// A step is one README command as the node runs it: a tool and its arguments,
// or nothing to run.
type step struct {
	tool string // helm, kubectl or crossplane
	args []string
	why  string // why it runs differently on the node, if it does
}

// onNode translates a README command for the node. The registry is the one
// difference: the node has no network, so the Crossplane chart comes from its
// module (the same v2.4.0 the README names; the chart there is unversioned)
// with the image from the node's registry, and the packages come from the
// node's registry through an ImageConfig that the test applies first; the
// `crossplane xpkg install` commands run unchanged.
func onNode(cmd, chartDir string) (step, error) {
	f := strings.Fields(cmd)
	switch {
	case len(f) > 3 && f[0] == "helm" && f[1] == "repo" && f[2] == "add":
		return step{why: "no chart repository: the chart is in the Crossplane module"}, nil
	case len(f) > 3 && f[0] == "helm" && f[1] == "install":
		var args []string
		for i := 1; i < len(f); i++ {
			switch {
			case f[i] == "crossplane-stable/crossplane":
				args = append(args, chartDir)
			case f[i] == "--version" && i+1 < len(f):
				if want := strings.TrimPrefix(node.CrossplaneVersion, "v"); f[i+1] != want {
					return step{}, fmt.Errorf("%q: the node runs Crossplane %s", cmd, want)
				}
				i++
			default:
				args = append(args, f[i])
			}
		}
		args = append(args, "--set", "image.repository="+node.RegistryHost+"/crossplane",
			"--set", "image.tag="+node.CrossplaneVersion, "--timeout", "5m")
		return step{tool: "helm", args: args, why: "chart from the module, image from the node's registry"}, nil
	case len(f) == 4 && f[0] == "kubectl" && f[1] == "apply" && f[2] == "-f" && f[3] == readmeRuntimeFile:
		return step{tool: "kubectl", args: []string{"apply", "-f", filepath.Join(repo.Root(), rbac.ProviderRuntimeFile)}}, nil
	case len(f) > 2 && f[0] == "crossplane" && f[1] == "xpkg" && f[2] == "install":
		return step{tool: "crossplane", args: f[1:]}, nil
	}
	return step{}, fmt.Errorf("no translation for the README command %q", cmd)
}

// TestREADMEInstall: README.md's install section shows the commands
// TestPackages runs and cluster/rbac/provider-runtime.yaml whole, and every
// command has a translation for the node.
func TestREADMEInstall(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repo.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := readmeSection(string(readme), "## Install")
	if section == "" {
		t.Fatal("README.md has no Install section")
	}
	blocks := fenced(section)
	var cmds []string
	for _, b := range blocks["sh"] {
		if strings.Contains(b, "helm install crossplane") {
			cmds = shellLines(b)
			break
		}
	}
	if diff := cmp.Diff(readmeInstall, cmds); diff != "" {
		t.Errorf("README.md's install commands are not the ones TestPackages runs (-test +README):\n%s", diff)
	}
	for _, c := range readmeInstall {
		if _, err := onNode(c, "chart"); err != nil {
			t.Error(err)
		}
	}

	runtime, err := os.ReadFile(filepath.Join(repo.Root(), rbac.ProviderRuntimeFile))
	if err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, b := range blocks["yaml"] {
		shown = shown || b == string(runtime)
	}
	if !shown {
		t.Errorf("README.md's Install section does not show %s verbatim as a yaml block", rbac.ProviderRuntimeFile)
	}
	if !strings.Contains(section, "`"+readmeRuntimeFile+"`") {
		t.Errorf("README.md's Install section does not name the file %s", readmeRuntimeFile)
	}
}

// readmeSection returns the text under heading up to the next heading of the
// same level.
func readmeSection(doc, heading string) string {
	level := strings.SplitN(heading, " ", 2)[0] + " "
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// fenced returns the fenced code blocks of doc by info string, each with a
// final newline.
func fenced(doc string) map[string][]string {
	out := map[string][]string{}
	var lang string
	var cur *strings.Builder
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang, cur = strings.TrimPrefix(line, "```"), &strings.Builder{}
		case cur != nil && line == "```":
			out[lang] = append(out[lang], cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// shellLines joins backslash continuations and drops blank lines and
// comments, with runs of spaces as one.
func shellLines(block string) []string {
	var out []string
	var cur string
	for _, line := range strings.Split(block, "\n") {
		t := strings.TrimSpace(line)
		if cont, ok := strings.CutSuffix(t, "\\"); ok {
			cur += cont + " "
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
