package nodesuite

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

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
	if diff := cmp.Diff(stack.ReadmeInstall, cmds); diff != "" {
		t.Errorf("README.md's install commands are not the ones TestPackages runs (-test +README):\n%s", diff)
	}
	for _, c := range stack.ReadmeInstall {
		if _, err := stack.OnNode(c, "chart", repo.Root(), node.RegistryHost); err != nil {
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
	if !strings.Contains(section, "`"+stack.ReadmeRuntimeFile+"`") {
		t.Errorf("README.md's Install section does not name the file %s", stack.ReadmeRuntimeFile)
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
