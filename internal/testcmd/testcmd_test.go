package testcmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestRun(t *testing.T) {
	type want struct {
		status int
		golden string // testdata/<golden>.golden holds stdout, then stderr after a "--- stderr" line
	}
	cases := map[string]struct {
		reason string
		cfg    Config
		want   want
	}{
		"Pass": {
			reason: "Every case passes: PASS lines, a preview rule reported, the claimed inline rule and the unresolvable selector noted.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/pass.cases.yaml"},
			want:   want{status: ExitPass, golden: "pass"},
		},
		"PassExplain": {
			reason: "--explain says for every rule why it matched or not.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/pass.cases.yaml", Explain: true},
			want:   want{status: ExitPass, golden: "pass-explain"},
		},
		"Fail": {
			reason: "A case that fails says what it wanted and what it got; the run exits 1.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/fail.cases.yaml"},
			want:   want{status: ExitFail, golden: "fail"},
		},
		"BadFields": {
			reason: "Every wrong field of the cases file is named, with the file; the run exits 2.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/bad-fields.cases.yaml"},
			want:   want{status: ExitUsage, golden: "bad-fields"},
		},
		"UnknownField": {
			reason: "A field the cases file does not have is refused.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/unknown-field.cases.yaml"},
			want:   want{status: ExitUsage, golden: "unknown-field"},
		},
		"NoPolicy": {
			reason: "A policy that is not among the manifests (namespace default by default) is bad input.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}, Cases: "testdata/no-policy.cases.yaml"},
			want:   want{status: ExitUsage, golden: "no-policy"},
		},
		"BadManifest": {
			reason: "A manifest of ours that does not decode is bad input, named by file and document.",
			cfg:    Config{Manifests: []string{"testdata/bad-manifest.yaml"}, Cases: "testdata/pass.cases.yaml"},
			want:   want{status: ExitUsage, golden: "bad-manifest"},
		},
		"NoCases": {
			reason: "--cases is required.",
			cfg:    Config{Manifests: []string{"testdata/manifests.yaml"}},
			want:   want{status: ExitUsage, golden: "no-cases"},
		},
		"MissingCasesManifest": {
			reason: "A manifest path the cases file lists that does not exist is named by its field.",
			cfg:    Config{Cases: "testdata/missing-manifest.cases.yaml"},
			want:   want{status: ExitUsage, golden: "missing-cases-manifest"},
		},
		"ManifestsFromCasesFile": {
			reason: "Manifests the cases file lists are read relative to it, a directory for its YAML files.",
			cfg:    Config{Cases: "testdata/dir.cases.yaml"},
			want:   want{status: ExitPass, golden: "dir"},
		},
		"Stream": {
			reason: "A stream counts requests per rate-limit key on a simulated clock, over a sliding window.",
			cfg:    Config{Cases: "testdata/stream.cases.yaml"},
			want:   want{status: ExitPass, golden: "stream"},
		},
		"MissingManifest": {
			reason: "A manifest path that does not exist is bad input.",
			cfg:    Config{Manifests: []string{"testdata/nope.yaml"}, Cases: "testdata/pass.cases.yaml"},
			want:   want{status: ExitUsage, golden: "missing-manifest"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := Run(tc.cfg, &out, &errOut)
			got := out.String() + "--- stderr\n" + errOut.String()
			path := filepath.Join("testdata", tc.want.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(tc.want.status, status); diff != "" {
				t.Errorf("\n%s\nRun(...): -want status, +got status:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(string(golden), got); diff != "" {
				t.Errorf("\n%s\nRun(...): -want output, +got output:\n%s", tc.reason, diff)
			}
		})
	}
}
