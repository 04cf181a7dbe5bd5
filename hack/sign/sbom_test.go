package main

import (
	"bytes"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"
)

// TestSBOMValid reads the SBOMs of a package image and of a two-platform
// index with spdx/tools-golang, as an SPDX 2.3 consumer would, and
// validates them with its spdxlib: the version, unique element IDs, and
// relationships that name elements of the document.
func TestSBOMValid(t *testing.T) {
	dir := t.TempDir()
	amd, arm := testPackage(t, dir, "amd64"), testPackage(t, dir, "arm64")
	for _, files := range [][]string{{amd}, {amd, arm}} {
		var loaded []v1.Image
		for _, f := range files {
			img, err := tarball.ImageFromPath(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if img, err = pushForm(img); err != nil {
				t.Fatal(err)
			}
			loaded = append(loaded, img)
		}
		subject, err := loaded[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		index := len(loaded) > 1
		if index {
			idx, err := indexForm(loaded)
			if err != nil {
				t.Fatal(err)
			}
			if subject, err = idx.Digest(); err != nil {
				t.Fatal(err)
			}
		}
		b, err := buildSBOM(subject, index, loaded, "provider-test", "v0.0.1", "example.com/armorplane/provider-test")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := spdxjson.Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%d image(s): spdx/tools-golang cannot read the SBOM: %v", len(files), err)
		}
		if err := spdxlib.ValidateDocument(doc); err != nil {
			t.Errorf("%d image(s): spdxlib: %v", len(files), err)
		}
		if doc.SPDXVersion != "SPDX-2.3" {
			t.Errorf("%d image(s): %s, want SPDX-2.3", len(files), doc.SPDXVersion)
		}
		described, err := spdxlib.GetDescribedPackageIDs(doc)
		if err != nil || len(described) != 1 {
			t.Errorf("%d image(s): described packages %v (%v), want the image or index", len(files), described, err)
		}
		bins := 0
		for _, p := range doc.Packages {
			if p.PrimaryPackagePurpose == "APPLICATION" {
				bins++
			}
			for _, r := range p.PackageExternalReferences {
				if r.RefType == "purl" && !strings.HasPrefix(r.Locator, "pkg:") {
					t.Errorf("%s: purl %q", p.PackageName, r.Locator)
				}
			}
		}
		if bins != len(files) {
			t.Errorf("%d image(s): %d binaries in the SBOM, want one per image", len(files), bins)
		}
	}
}
