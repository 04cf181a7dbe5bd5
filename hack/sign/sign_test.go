package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

const (
	testKey = "../testdata/cosign-test.key"
	testPub = "../testdata/cosign-test.pub"
)

// testPackage writes a package file like the ones crossplane xpkg build
// writes: an image whose one layer holds a Go binary (this test's own) and
// whose config labels a layer, as package.yaml's layer is labelled.
func testPackage(t *testing.T, dir, arch string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"package.yaml", 0o644, []byte("apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata: {name: test}\n")},
		{"usr/local/bin/provider", 0o755, b}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Labels = map[string]string{"io.crossplane.xpkg:" + ld.String(): "base"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "linux_"+arch, "provider-test.xpkg")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(file, nil, img); err != nil {
		t.Fatal(err)
	}
	return file
}

func pubKey(t *testing.T, file string) crypto.PublicKey {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	k, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSignPushVerify signs a package as `make xpkg` does, pushes it to an
// in-process registry as `sign push` does and verifies it with cosign's
// verification code; a tampered image, a signature copied onto another
// image and a signature by another key are refused.
func TestSignPushVerify(t *testing.T) {
	t.Setenv("COSIGN_PASSWORD", "")
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	file := testPackage(t, dir, "amd64")
	if err := packageFiles([]string{file}, strings.TrimSuffix(file, ".xpkg"), testKey, host+"/armorplane/provider-test", "v0.0.1"); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(file, ".xpkg")
	pub := pubKey(t, testPub)

	// The SBOM beside the package names the binary and its modules.
	sbom, err := os.ReadFile(base + ".spdx.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(sbom, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" {
		t.Errorf("SBOM: %s, %s, want SPDX-2.3, CC0-1.0", doc.SPDXVersion, doc.DataLicense)
	}
	names := map[string]string{}
	for _, p := range doc.Packages {
		names[p.Name] = p.VersionInfo
	}
	for _, want := range []string{"/usr/local/bin/provider", "stdlib", "github.com/sigstore/cosign/v3", "github.com/google/go-containerregistry"} {
		if _, ok := names[want]; !ok {
			t.Errorf("SBOM: no package %q", want)
		}
	}
	if v := names["github.com/sigstore/cosign/v3"]; v != "v3.0.6" {
		t.Errorf("SBOM: cosign version %q, want v3.0.6 (this test binary's)", v)
	}

	ref, err := name.ParseReference(host + "/armorplane/provider-test:v0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	opts := []ociremote.Option{ociremote.WithRemoteOptions(remote.WithContext(ctx))}
	signedDigest, err := pushLayout(base+".cosign", ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := verify(ctx, ref, pub, true, opts...)
	if err != nil {
		t.Fatalf("the signed package: %v", err)
	}
	if res.Signatures != 1 || res.SBOMPackages != len(doc.Packages) {
		t.Errorf("verified %+v, want 1 signature and an SBOM of %d packages", res, len(doc.Packages))
	}

	// Crossplane's CosignValidator builds cosign's options with the key
	// and without IgnoreTlog or a Rekor client: a signature without a Rekor
	// bundle is refused there, whatever the key.
	co, err := checkOpts(pub, opts...)
	if err != nil {
		t.Fatal(err)
	}
	co.IgnoreTlog = false
	if _, _, err := cosign.VerifyImageSignatures(ctx, ref, co); err == nil ||
		!strings.Contains(err.Error(), "rekor client not provided for online verification") {
		t.Errorf("with Crossplane's check options: %v, want rekor client not provided for online verification", err)
	}

	// A tampered image: the signed one with a layer more, pushed over the
	// tag. Its digest changed, so the signature does not name it.
	signed, err := remote.Image(ref.Context().Digest(signedDigest.String()))
	if err != nil {
		t.Fatal(err)
	}
	extra, err := random.Layer(512, "application/vnd.oci.image.layer.v1.tar")
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := mutate.AppendLayers(signed, extra)
	if err != nil {
		t.Fatal(err)
	}
	tamperedRef, err := name.ParseReference(host + "/armorplane/provider-test:tampered")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tamperedRef, tampered); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(ctx, tamperedRef, pub, false, opts...); err == nil {
		t.Error("a tampered image without a signature was accepted")
	} else {
		t.Logf("tampered, unsigned: refused: %v", err)
	}
	// The genuine signature copied to the tampered image's signature tag:
	// its payload names the other digest.
	sigTag, err := ociremote.SignatureTag(ref.Context().Digest(signedDigest.String()))
	if err != nil {
		t.Fatal(err)
	}
	sigImg, err := remote.Image(sigTag)
	if err != nil {
		t.Fatal(err)
	}
	tamperedDigest, err := tampered.Digest()
	if err != nil {
		t.Fatal(err)
	}
	tamperedSigTag, err := ociremote.SignatureTag(ref.Context().Digest(tamperedDigest.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tamperedSigTag, sigImg); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(ctx, tamperedRef, pub, false, opts...); err == nil {
		t.Error("a tampered image with the genuine signature copied onto it was accepted")
	} else {
		t.Logf("tampered, signature copied: refused: %v", err)
	}

	// A signature by another key.
	other := filepath.Join(dir, "other")
	if err := runGenkey([]string{other}); err != nil {
		t.Fatal(err)
	}
	otherDir := filepath.Join(dir, "other-key")
	if err := os.MkdirAll(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	otherFile := filepath.Join(otherDir, "provider-test.xpkg")
	if err := os.Link(file, otherFile); err != nil {
		t.Fatal(err)
	}
	if err := packageFiles([]string{otherFile}, strings.TrimSuffix(otherFile, ".xpkg"), other+".key", host+"/armorplane/provider-other", "v0.0.1"); err != nil {
		t.Fatal(err)
	}
	otherRef, err := name.ParseReference(host + "/armorplane/provider-other:v0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pushLayout(filepath.Join(otherDir, "provider-test.cosign"), otherRef, opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(ctx, otherRef, pubKey(t, other+".pub"), true, opts...); err != nil {
		t.Errorf("signed by the other key, verified with it: %v", err)
	}
	if _, err := verify(ctx, otherRef, pub, false, opts...); err == nil {
		t.Error("a package signed by another key was accepted with the test key")
	} else {
		t.Logf("another key: refused: %v", err)
	}
}

// TestCrossplanePushDigest pushes packages with the crossplane CLI, as
// README.md and the node test do, one package file and a multi-platform
// index of two, and checks that the signatures `sign package` made
// beforehand verify for what the CLI pushed: what it signs is byte for byte
// what `crossplane xpkg push` uploads. SIGN_TEST_XPKG (package files,
// comma-separated) replaces the generated ones, to check real packages.
func TestCrossplanePushDigest(t *testing.T) {
	cli := os.Getenv("CROSSPLANE_BIN")
	if cli == "" {
		t.Skip("CROSSPLANE_BIN is not set (the crossplane CLI, as make xpkg builds it)")
	}
	t.Setenv("COSIGN_PASSWORD", "")
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	sets := [][]string{{testPackage(t, dir, "amd64")}, {testPackage(t, dir, "amd64"), testPackage(t, dir, "arm64")}}
	if v := os.Getenv("SIGN_TEST_XPKG"); v != "" {
		sets = [][]string{strings.Split(v, ",")}
	}
	for i, files := range sets {
		repo := fmt.Sprintf("%s/armorplane/provider-test-%d", host, i)
		out := filepath.Join(dir, fmt.Sprintf("set-%d", i))
		if err := packageFiles(files, out, testKey, repo, "v0.0.1"); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cli, "xpkg", "push", "-f", strings.Join(files, ","), repo+":cli")
		cmd.Env = append(os.Environ(), "HOME="+dir, "DOCKER_CONFIG="+filepath.Join(dir, ".docker"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("crossplane xpkg push: %v\n%s", err, out)
		}
		ref, err := name.ParseReference(repo + ":cli")
		if err != nil {
			t.Fatal(err)
		}
		opts := []ociremote.Option{ociremote.WithRemoteOptions(remote.WithContext(ctx))}
		// The layout's image or index goes to another tag; its signature
		// and attestation to the digest's tags, which the CLI's upload
		// shares when the digests agree.
		layoutRef, err := name.ParseReference(repo + ":layout")
		if err != nil {
			t.Fatal(err)
		}
		signedDigest, err := pushLayout(out+".cosign", layoutRef, opts...)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil {
			t.Fatal(err)
		}
		if desc.Digest != signedDigest {
			t.Fatalf("%d package file(s): crossplane xpkg push uploaded %s (%s), sign package signed %s", len(files), desc.Digest, desc.MediaType, signedDigest)
		}
		res, err := verify(ctx, ref, pubKey(t, testPub), true, opts...)
		if err != nil {
			t.Errorf("%d package file(s) as the crossplane CLI pushed them: %v", len(files), err)
		}
		t.Logf("%d package file(s): %s %s, %+v", len(files), desc.MediaType, desc.Digest, res)
	}
}
