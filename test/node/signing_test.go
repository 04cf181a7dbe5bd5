package nodesuite

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// checkSignatures checks the signatures `make xpkg` made (hack/sign,
// docs/security.md "Signed packages and SBOM") against the packages on the
// node, after they were pushed with `crossplane xpkg push` and installed:
//
//   - each package's signature and SBOM attestation, pushed from its
//     <name>.cosign layout as `cosign load` would, verify with the test key
//     for the tag the crossplane CLI pushed, through cosign's own
//     verification (`sign verify`, as `cosign verify --insecure-ignore-tlog`);
//   - the revision Crossplane installed is of that very digest (its name is
//     a hash of the digest and the package's generation);
//   - a tampered provider (a layer more) carrying the genuine signature is
//     refused.
//
// Crossplane's own verification (ImageConfig spec.verification) is not
// used: Crossplane v2.4.0 cannot verify offline, as docs/security.md says.
func checkSignatures(ctx context.Context, t *testing.T, n *node.Node, xpkgDir string) {
	t.Helper()
	checkSigned(ctx, t, n.HostRegistry, xpkgDir, installedRevisions(ctx, t, n))
}

// checkSigned is checkSignatures against the registry host, with the
// packages Crossplane installed.
func checkSigned(ctx context.Context, t *testing.T, host, xpkgDir string, installed map[string]revision) {
	t.Helper()
	signer := signerPath(t)
	if _, err := os.Stat(signer); err != nil {
		t.Errorf("%v: hack/xpkg.sh builds the signer; run make node-test or make xpkg", err)
		return
	}
	pub := filepath.Join(repo.Root(), "hack/testdata/cosign-test.pub")
	home := t.TempDir()
	sign := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, signer, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+filepath.Join(home, ".docker"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}

	reg := registryClient{ctx: ctx, host: host}
	var provider, providerRepo string
	for _, p := range stack.Packages {
		dir := strings.TrimSuffix(filepath.Join(xpkgDir, p.File), ".xpkg") + ".cosign"
		signed, err := layoutDigest(dir)
		if err != nil {
			t.Errorf("%s: %v", p.Repo, err)
			continue
		}
		ref := host + "/" + p.Repo + ":" + stack.PackageTag
		_, _, pushed, err := reg.manifest(p.Repo, stack.PackageTag)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		if pushed != signed.String() {
			t.Errorf("%s: crossplane xpkg push uploaded %s, make xpkg signed %s", ref, pushed, signed)
			continue
		}
		// The layout's image to a tag of its own; its signature and
		// attestation go to the digest's tags, which the CLI's upload shares.
		if out, err := sign("push", dir, host+"/"+p.Repo+":signed"); err != nil {
			t.Errorf("sign push %s: %v\n%s", dir, err, out)
			continue
		}
		out, err := sign("verify", "--key", pub, "--attestation", ref)
		if err != nil {
			t.Errorf("%s as crossplane xpkg push uploaded it: not verified: %v\n%s", ref, err, out)
			continue
		}
		t.Logf("%s", out)
		if strings.HasPrefix(p.File, "linux_amd64/provider-") {
			provider, providerRepo = signed.String(), p.Repo
		}

		rev, ok := installed[p.Repo]
		if !ok {
			t.Errorf("%s: Crossplane installed no package of it", p.Repo)
			continue
		}
		if want := revisionName(rev.name, signed.Hex, rev.generation); rev.current != want {
			t.Errorf("%s: Crossplane's current revision is %s, want %s (of the signed digest %s)", p.Repo, rev.current, want, signed)
		}
	}
	if provider == "" {
		t.Error("no signed provider to tamper with")
		return
	}

	// The provider with a layer more, and the genuine signature copied to
	// its digest's signature tag: the payload names the other digest.
	td, err := reg.tamper(providerRepo, provider, "tampered")
	if err != nil {
		t.Fatal(err)
	}
	out, err := sign("verify", "--key", pub, host+"/"+providerRepo+":tampered")
	if err == nil {
		t.Errorf("a tampered provider carrying the genuine signature was accepted:\n%s", out)
	} else if !strings.Contains(out, "invalid or missing digest in claim") {
		t.Errorf("the tampered provider: refused with %q, want the claim's digest mismatch", out)
	} else {
		t.Logf("the tampered provider %s: refused: %s", td, out)
	}
}

// registryClient speaks the registry API to the node's registry with
// net/http, as checkImage does.
type registryClient struct {
	ctx  context.Context
	host string
}

const manifestTypes = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json"

func (r registryClient) do(method, path, contentType string, body []byte) (*http.Response, []byte, error) {
	u := path
	if !strings.HasPrefix(path, "http") {
		u = "http://" + r.host + path
	}
	req, err := http.NewRequestWithContext(r.ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", manifestTypes)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		return resp, b, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return resp, b, nil
}

// manifest is a manifest's bytes, media type and digest.
func (r registryClient) manifest(repo, ref string) (body []byte, mediaType, digest string, err error) {
	resp, b, err := r.do(http.MethodGet, "/v2/"+repo+"/manifests/"+ref, "", nil)
	if err != nil {
		return nil, "", "", err
	}
	sum := sha256.Sum256(b)
	return b, resp.Header.Get("Content-Type"), "sha256:" + hex.EncodeToString(sum[:]), nil
}

func (r registryClient) putManifest(repo, ref, mediaType string, body []byte) error {
	_, _, err := r.do(http.MethodPut, "/v2/"+repo+"/manifests/"+ref, mediaType, body)
	return err
}

// tamper pushes to tag the image digest with a layer of random bytes more,
// and copies digest's signature manifest to the new digest's signature tag.
// It returns the new digest.
func (r registryClient) tamper(repo, digest, tag string) (string, error) {
	body, mt, _, err := r.manifest(repo, digest)
	if err != nil {
		return "", err
	}
	m, err := v1.ParseManifest(bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	blob := make([]byte, 1024)
	if _, err := rand.Read(blob); err != nil {
		return "", err
	}
	sum := sha256.Sum256(blob)
	h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	resp, _, err := r.do(http.MethodPost, "/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		return "", err
	}
	loc := resp.Header.Get("Location")
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	if _, _, err := r.do(http.MethodPut, loc+sep+"digest="+h.String(), "application/octet-stream", blob); err != nil {
		return "", err
	}
	layerType := m.Layers[len(m.Layers)-1].MediaType
	m.Layers = append(m.Layers, v1.Descriptor{MediaType: layerType, Size: int64(len(blob)), Digest: h})
	tampered, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if err := r.putManifest(repo, tag, mt, tampered); err != nil {
		return "", err
	}
	tsum := sha256.Sum256(tampered)
	td := "sha256:" + hex.EncodeToString(tsum[:])
	sig, sigType, _, err := r.manifest(repo, sigTag(digest))
	if err != nil {
		return "", err
	}
	return td, r.putManifest(repo, sigTag(td), sigType, sig)
}

// sigTag is cosign's signature tag of a digest: sha256-<hex>.sig.
func sigTag(digest string) string {
	return strings.Replace(digest, ":", "-", 1) + ".sig"
}

// layoutDigest is the digest of the signed image, or index, in a layout
// hack/sign wrote (cosign save's format: the kind annotation names it).
func layoutDigest(dir string) (v1.Hash, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, d := range m.Manifests {
		switch d.Annotations["kind"] {
		case "dev.cosignproject.cosign/image", "dev.cosignproject.cosign/imageIndex":
			return d.Digest, nil
		}
	}
	return v1.Hash{}, fmt.Errorf("%s: no signed image", dir)
}

type revision struct {
	name, current string
	generation    int64
}

// installedRevisions are Crossplane's packages by repository (the part of
// spec.package after the registry, before the tag).
func installedRevisions(ctx context.Context, t *testing.T, n *node.Node) map[string]revision {
	t.Helper()
	out, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io,functions.pkg.crossplane.io,configurations.pkg.crossplane.io", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name       string `json:"name"`
				Generation int64  `json:"generation"`
			} `json:"metadata"`
			Spec struct {
				Package string `json:"package"`
			} `json:"spec"`
			Status struct {
				CurrentRevision string `json:"currentRevision"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	revs := map[string]revision{}
	var seen []string
	for _, it := range list.Items {
		ref, err := name.ParseReference(it.Spec.Package)
		if err != nil {
			t.Errorf("%s: spec.package %q: %v", it.Metadata.Name, it.Spec.Package, err)
			continue
		}
		revs[ref.Context().RepositoryStr()] = revision{it.Metadata.Name, it.Status.CurrentRevision, it.Metadata.Generation}
		seen = append(seen, it.Spec.Package)
	}
	sort.Strings(seen)
	t.Logf("installed packages: %s", strings.Join(seen, ", "))
	return revs
}

// revisionName is the name Crossplane v2.4.0 gives a package's revision of
// a digest (internal/controller/pkg/manager: xpkg.FriendlyID of the
// package's name and sha256("<digest hex>|<generation>")).
func revisionName(pkg, digestHex string, generation int64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s|%d", digestHex, generation))
	id := hex.EncodeToString(h[:])
	return dnsLabel(truncate(pkg, 50) + "-" + truncate(id, 12))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// dnsLabel is crossplane-runtime v2.4.0's xpkg.ToDNSLabel.
func dnsLabel(s string) string {
	var b strings.Builder
	for i := range s {
		c := s[i]
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b.WriteByte(c)
		}
		if (c == '.' || c == '/' || c == ':' || c == '-') && (i != 0 && i != 62 && i != len(s)-1) {
			b.WriteByte('-')
		}
		if i == 62 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// signerPath is where hack/xpkg.sh (and make xpkg) build hack/sign: the
// tool cache, under a hash of the signer's sources.
func signerPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SIGN"); p != "" {
		return p
	}
	// As `LC_ALL=C ls go.mod go.sum *.go | grep -v _test.go | xargs cat`.
	dir := filepath.Join(repo.Root(), "hack/sign")
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	for _, f := range names {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, filepath.Base(f))
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache := os.Getenv("PROVIDER_CLOUDARMOR_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "provider-cloudarmor")
	}
	return filepath.Join(cache, "bin", "sign-"+hex.EncodeToString(h.Sum(nil))[:12], "sign")
}
