package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReferenceIsCurrent fails when docs/reference.md does not match the
// CRDs, and checks every field of every CRD is in it with its description.
func TestReferenceIsCurrent(t *testing.T) {
	defs, err := load(filepath.Join("..", "..", "package", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	render(&want, defs)
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatalf("%v: run `make generate`", err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("docs/reference.md is stale; run `make generate`: -want +got:\n%s", diff)
	}
	for _, c := range defs {
		spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		for _, name := range sortedKeys(spec.Properties) {
			d := spec.Properties[name].Description
			if !strings.Contains(want.String(), "| `spec."+name+"` |") {
				t.Errorf("%s: spec.%s is missing", c.Spec.Names.Kind, name)
			}
			if d != "" && !strings.Contains(want.String(), cell(d)) {
				t.Errorf("%s: the description of spec.%s is missing", c.Spec.Names.Kind, name)
			}
		}
	}
}

func TestCell(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Pipe":      {reason: "A | would end the table cell.", in: "a|b", want: `a\|b`},
		"Paragraph": {reason: "Paragraphs stay apart in one cell.", in: "one\ntwo\n\nthree", want: "one two<br>three"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, cell(tc.in)); diff != "" {
				t.Errorf("%s\ncell(%q): -want +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}
