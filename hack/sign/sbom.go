package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Document is the part of an SPDX 2.3 JSON document this tool writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says who made a Document, when.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Package is an SPDX package: the image, a binary, a Go module.
type Package struct {
	SPDXID                string        `json:"SPDXID"`
	Name                  string        `json:"name"`
	VersionInfo           string        `json:"versionInfo,omitempty"`
	DownloadLocation      string        `json:"downloadLocation"`
	FilesAnalyzed         bool          `json:"filesAnalyzed"`
	LicenseConcluded      string        `json:"licenseConcluded"`
	LicenseDeclared       string        `json:"licenseDeclared"`
	CopyrightText         string        `json:"copyrightText"`
	PrimaryPackagePurpose string        `json:"primaryPackagePurpose,omitempty"`
	Checksums             []Checksum    `json:"checksums,omitempty"`
	ExternalRefs          []ExternalRef `json:"externalRefs,omitempty"`
	Comment               string        `json:"comment,omitempty"`
}

// Checksum is an SPDX checksum.
type Checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

// ExternalRef is an SPDX external reference (here a package URL).
type ExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// Relationship is an SPDX relationship.
type Relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

// binary is a Go executable found in an image.
type binary struct {
	path   string
	sha256 string
	info   *buildinfo.BuildInfo
}

// goBinaries walks img's layers (the last layer's file wins) and returns the
// Go executables in it with their build information.
func goBinaries(img v1.Image) ([]binary, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	found := map[string]binary{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			p := "/" + strings.TrimPrefix(h.Name, "./")
			p = strings.TrimPrefix(p, "//")
			if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 || h.Size < 4 {
				continue
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				rc.Close()
				return nil, err
			}
			if !bytes.HasPrefix(b, []byte("\x7fELF")) {
				continue
			}
			bi, err := buildinfo.Read(bytes.NewReader(b))
			if err != nil {
				continue // not a Go binary
			}
			sum := sha256.Sum256(b)
			found[p] = binary{path: p, sha256: hex.EncodeToString(sum[:]), info: bi}
		}
		rc.Close()
	}
	out := make([]binary, 0, len(found))
	for _, b := range found {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// purlGo is the package URL of a Go module version.
func purlGo(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" && version != "(devel)" {
		p += "@" + strings.ReplaceAll(url.PathEscape(version), "+", "%2B")
	}
	return p
}

func purlRef(locator string) []ExternalRef {
	return []ExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: locator}}
}

// buildSBOM is an SPDX 2.3 JSON document of the package pkgName at version
// as published to repo: its image (or, for a multi-platform package, its
// index and each platform's image), each Go binary in it and the Go modules
// (and standard library) compiled into each, from the binaries' own build
// information. subject is the digest of img, or of the index of imgs.
func buildSBOM(subject v1.Hash, index bool, imgs []v1.Image, pkgName, version, repo string) ([]byte, error) {
	var created time.Time
	var platforms []string
	for _, img := range imgs {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if c := cfg.Created.UTC(); c.After(created) {
			created = c
		}
		platforms = append(platforms, platformOf(cfg))
	}
	if created.Year() < 2000 {
		created = time.Now().UTC()
	}
	doc := Document{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        fmt.Sprintf("%s %s (%s)", pkgName, version, strings.Join(platforms, ", ")),
		// A URI unique to this document: the digest is.
		DocumentNamespace: fmt.Sprintf("https://github.com/armorplane/provider-cloudarmor/spdx/%s/%s-%s", pkgName, subject.Algorithm, subject.Hex),
		CreationInfo: CreationInfo{
			Created:  created.Format(time.RFC3339),
			Creators: []string{"Organization: armorplane", "Tool: provider-cloudarmor-hack-sign"},
		},
	}
	ids := map[string]bool{}
	id := func(prefix, s string) string {
		base := "SPDXRef-" + prefix + "-" + strings.Trim(spdxIDChars.ReplaceAllString(s, "-"), "-")
		out := base
		for i := 2; ids[out]; i++ {
			out = fmt.Sprintf("%s-%d", base, i)
		}
		ids[out] = true
		return out
	}
	ociPackage := func(spdxID string, d v1.Hash, comment string) Package {
		return Package{
			SPDXID:                spdxID,
			Name:                  pkgName,
			VersionInfo:           version,
			DownloadLocation:      noAssertion,
			LicenseConcluded:      noAssertion,
			LicenseDeclared:       noAssertion,
			CopyrightText:         noAssertion,
			PrimaryPackagePurpose: "CONTAINER",
			Checksums:             []Checksum{{Algorithm: "SHA256", ChecksumValue: d.Hex}},
			ExternalRefs: purlRef(fmt.Sprintf("pkg:oci/%s@%s?repository_url=%s",
				pkgName, d.Algorithm+"%3A"+d.Hex, url.QueryEscape(repo))),
			Comment: comment,
		}
	}
	top := ociPackage("SPDXRef-Package-image",
		subject, "The Crossplane package image as `crossplane xpkg push` uploads it; the checksum is its manifest digest.")
	if index {
		top = ociPackage("SPDXRef-Package-index", subject,
			"The Crossplane package's multi-platform index as `crossplane xpkg push` uploads it (one package file per platform); the checksum is its digest.")
	}
	doc.Packages = append(doc.Packages, top)
	doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", top.SPDXID})
	ids[top.SPDXID] = true

	modules := map[string]string{} // path@version -> SPDXID
	for i, img := range imgs {
		holder := top
		if index {
			d, err := img.Digest()
			if err != nil {
				return nil, err
			}
			holder = ociPackage(id("Package-image", platforms[i]), d, "The package image for "+platforms[i]+".")
			doc.Packages = append(doc.Packages, holder)
			doc.Relationships = append(doc.Relationships, Relationship{top.SPDXID, "CONTAINS", holder.SPDXID})
		}
		bins, err := goBinaries(img)
		if err != nil {
			return nil, err
		}
		for _, b := range bins {
			bi := b.info
			binVersion := bi.Main.Version
			if binVersion == "" || binVersion == "(devel)" {
				binVersion = version // built from this checkout: the package's version
			}
			idName := b.path
			if index {
				idName = platforms[i] + b.path
			}
			bin := Package{
				SPDXID:                id("Binary", idName),
				Name:                  b.path,
				VersionInfo:           binVersion,
				DownloadLocation:      noAssertion,
				LicenseConcluded:      noAssertion,
				LicenseDeclared:       noAssertion,
				CopyrightText:         noAssertion,
				PrimaryPackagePurpose: "APPLICATION",
				Checksums:             []Checksum{{Algorithm: "SHA256", ChecksumValue: b.sha256}},
				ExternalRefs:          purlRef(purlGo(bi.Main.Path, bi.Main.Version)),
				Comment:               fmt.Sprintf("Go binary of %s (package %s) for %s, built with %s.", bi.Main.Path, bi.Path, platforms[i], bi.GoVersion),
			}
			doc.Packages = append(doc.Packages, bin)
			doc.Relationships = append(doc.Relationships, Relationship{holder.SPDXID, "CONTAINS", bin.SPDXID})

			type dep struct{ path, version, comment string }
			deps := []dep{{"stdlib", bi.GoVersion, "The Go standard library and runtime."}}
			for _, m := range bi.Deps {
				switch {
				case m.Replace != nil && m.Replace.Version == "":
					deps = append(deps, dep{m.Replace.Path, "", "Local replacement of " + m.Path + " " + m.Version + "."})
				case m.Replace != nil:
					deps = append(deps, dep{m.Replace.Path, m.Replace.Version, "Replaces " + m.Path + " " + m.Version + "."})
				default:
					deps = append(deps, dep{m.Path, m.Version, ""})
				}
			}
			for _, m := range deps {
				key := m.path + "@" + m.version
				mid, ok := modules[key]
				if !ok {
					mid = id("Go", key)
					modules[key] = mid
					pkg := Package{
						SPDXID:           mid,
						Name:             m.path,
						VersionInfo:      m.version,
						DownloadLocation: noAssertion,
						LicenseConcluded: noAssertion,
						LicenseDeclared:  noAssertion,
						CopyrightText:    noAssertion,
						ExternalRefs:     purlRef(purlGo(m.path, m.version)),
						Comment:          m.comment,
					}
					if m.path != "stdlib" {
						pkg.PrimaryPackagePurpose = "LIBRARY"
					}
					doc.Packages = append(doc.Packages, pkg)
				}
				doc.Relationships = append(doc.Relationships, Relationship{bin.SPDXID, "DEPENDS_ON", mid})
			}
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// platformOf is an image config's os/arch[/variant], "any" for a
// Configuration's image, which names none.
func platformOf(cfg *v1.ConfigFile) string {
	if cfg.OS == "" {
		return "any"
	}
	p := cfg.OS + "/" + cfg.Architecture
	if cfg.Variant != "" {
		p += "/" + cfg.Variant
	}
	return p
}
