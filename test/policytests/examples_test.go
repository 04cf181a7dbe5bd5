// Package policytests runs the request cases of examples/tests against the
// example policies they name, with the provider's `test` command: a change
// to an example that changes what it does to a request fails here (and in
// make test, which runs every package).
package policytests

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/armorplane/provider-cloudarmor/internal/testcmd"
)

func TestExampleCases(t *testing.T) {
	files, err := filepath.Glob("../../examples/tests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no case files in examples/tests")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if status := testcmd.Run(testcmd.Config{Cases: f, Explain: true}, &out, &errOut); status != testcmd.ExitPass {
				t.Errorf("provider test --cases %s --explain: exit status %d\n%s%s", f, status, out.String(), errOut.String())
			}
		})
	}
}

// TestExamplePoliciesHaveCases: every example SecurityPolicy of the
// directories below has a case file that tests it.
func TestExamplePoliciesHaveCases(t *testing.T) {
	want := map[string]string{
		"examples/securitypolicy":     "allowlist-inline.yaml",
		"examples/securitypolicyrule": "policy-with-rules.yaml",
		"examples/regional":           "regional.yaml",
		"examples/import":             "import.yaml",
	}
	for dir, cases := range want {
		if m, _ := filepath.Glob(filepath.Join("../..", dir, "*.yaml")); len(m) == 0 {
			t.Errorf("%s: no manifests (moved?): update this test and examples/tests", dir)
		}
		if m, _ := filepath.Glob(filepath.Join("../../examples/tests", cases)); len(m) == 0 {
			t.Errorf("%s: no examples/tests/%s", dir, cases)
		}
	}
}
