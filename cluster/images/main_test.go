package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestImage(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := config{name: "provider-x", version: "v1.2.3", revision: "abc", source: "src", license: "Apache-2.0", desc: "d"}
	ca := []byte("-----BEGIN CERTIFICATE-----\n")
	img, err := image(c, "arm64", []byte("binary"), ca, created)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	diffID, err := layers[0].DiffID()
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		OS, Arch, User, Entrypoint, Version, Created string
		DiffIDs                                      int
		DiffIDMatches                                bool
	}
	got := summary{OS: cf.OS, Arch: cf.Architecture, User: cf.Config.User, Entrypoint: cf.Config.Entrypoint[0],
		Version: cf.Config.Labels["org.opencontainers.image.version"], Created: cf.Created.UTC().Format(time.RFC3339),
		DiffIDs: len(cf.RootFS.DiffIDs), DiffIDMatches: len(cf.RootFS.DiffIDs) == 1 && cf.RootFS.DiffIDs[0] == diffID}
	want := summary{OS: "linux", Arch: "arm64", User: "65532", Entrypoint: "/usr/local/bin/provider-x", Version: "v1.2.3",
		Created: "2026-01-02T03:04:05Z", DiffIDs: 1, DiffIDMatches: true}
	// The platform is set on a copy of the full config file: rewriting it
	// from scratch would drop the rootfs diff_ids xpkg build checks.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image config: -want +got:\n%s", diff)
	}

	files := map[string]string{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %s, want %s (reproducible images)", h.Name, h.ModTime, created)
		}
	}
	for name, want := range map[string]string{
		"usr/local/bin/provider-x":          "binary",
		"etc/ssl/certs/ca-certificates.crt": string(ca),
		"etc/group":                         "root:x:0:\nnonroot:x:65532:\n",
	} {
		if diff := cmp.Diff(want, files[name]); diff != "" {
			t.Errorf("%s: -want +got:\n%s", name, diff)
		}
	}
	if !bytes.Contains([]byte(files["etc/passwd"]), []byte("nonroot:x:65532:65532:")) {
		t.Errorf("etc/passwd lacks the non-root user:\n%s", files["etc/passwd"])
	}
}

func TestRunFailsWithoutCABundle(t *testing.T) {
	err := run(config{caBundle: "/nonexistent/ca.crt", platforms: "linux/amd64", out: t.TempDir()})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("apt-get install -y ca-certificates")) {
		t.Errorf("run without a CA bundle: want an error naming apt-get install, got %v", err)
	}
}
