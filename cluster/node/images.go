package node

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user the images run as (distroless' nonroot).
const nonRoot = 65532

// image is one single-layer image: a static binary and the files it needs.
type image struct {
	repo, tag  string
	entrypoint []string
	user       int
	files      map[string]string // path in the image -> path on the host (file or tree)
}

// push builds img and writes it to registry (scheme and host).
func (img image) push(ctx context.Context, registry string) error {
	layer, err := img.layer()
	if err != nil {
		return fmt.Errorf("image %s: %w", img.repo, err)
	}
	// Uncompressed OCI layers: containerd takes them, and gzip of a 100 MB
	// binary would cost seconds on every boot.
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	i, err := mutate.Append(base, mutate.Addendum{Layer: static.NewLayer(layer, types.OCIUncompressedLayer)})
	if err != nil {
		return err
	}
	cf, err := i.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: img.entrypoint, User: fmt.Sprintf("%d:%d", img.user, img.user),
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/"}
	if i, err = mutate.ConfigFile(i, cf); err != nil {
		return err
	}
	if err := upload(ctx, registry, img.repo, img.tag, i); err != nil {
		return fmt.Errorf("push %s/%s:%s: %w", registry, img.repo, img.tag, err)
	}
	return nil
}

// upload pushes i with the registry API's monolithic uploads: each blob in
// one POST + PUT, then the manifest. (go-containerregistry's remote package
// would do the same, but brings the docker CLI's credential code along.)
func upload(ctx context.Context, base, repo, tag string, i v1.Image) error {
	blob := func(d v1.Hash, data []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v2/"+repo+"/blobs/uploads/", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("start upload: %s", resp.Status)
		}
		loc, err := resp.Location()
		if err != nil {
			return err
		}
		q := loc.Query()
		q.Set("digest", d.String())
		loc.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodPut, loc.String(), bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("upload %s: %s", d, resp.Status)
		}
		return nil
	}
	layers, err := i.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return err
		}
		if err := blob(d, data); err != nil {
			return err
		}
	}
	cfgName, err := i.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := i.RawConfigFile()
	if err != nil {
		return err
	}
	if err := blob(cfgName, cfg); err != nil {
		return err
	}
	manifest, err := i.RawManifest()
	if err != nil {
		return err
	}
	mt, err := i.MediaType()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(manifest))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", string(mt))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("put manifest: %s", resp.Status)
	}
	return nil
}

// layer is the image's only layer as a tar: /tmp, /etc/passwd and /etc/group
// with the non-root user, and the files.
func (img image) layer() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	dir := func(p string, mode int64) error {
		if p == "." || p == "/" || dirs[p] {
			return nil
		}
		dirs[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Format: tar.FormatPAX})
	}
	parents := func(p string) error {
		parts := strings.Split(filepath.Dir(p), "/")
		for i := range parts {
			if err := dir(strings.Join(parts[:i+1], "/"), 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	file := func(p string, mode int64, data []byte) error {
		if err := parents(p); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := dir("tmp", 0o1777); err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot)
	if err := file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	dsts := make([]string, 0, len(img.files))
	for d := range img.files {
		dsts = append(dsts, d)
	}
	sort.Strings(dsts)
	for _, dst := range dsts {
		src := img.files[dst]
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if info.Mode()&0o111 != 0 {
				mode = 0o755
			}
			return file(strings.TrimPrefix(filepath.Join(dst, rel), "/"), mode, data)
		})
		if err != nil {
			return nil, err
		}
	}
	// The toolchain builds with cgo on, as `go build` does by default: give
	// dynamic binaries the loader and libraries ldd names, at the same paths.
	libs, err := sharedLibs(img.files)
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		data, err := os.ReadFile(lib)
		if err != nil {
			return nil, err
		}
		if err := file(strings.TrimPrefix(lib, "/"), 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sharedLibs lists the shared libraries, loader included, of the dynamically
// linked executables among files (a file or the top of a tree each).
func sharedLibs(files map[string]string) ([]string, error) {
	set := map[string]bool{}
	for _, src := range files {
		f, err := elf.Open(src)
		if err != nil {
			continue // not an ELF file, or a tree
		}
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		_ = f.Close()
		if !dynamic {
			continue
		}
		out, err := exec.Command("ldd", src).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", src, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, field := range strings.Fields(line) {
				if strings.HasPrefix(field, "/") {
					set[field] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	sort.Strings(out)
	return out, nil
}

// nodeImages are the images the node itself runs: the sandbox, the cluster
// DNS and Crossplane core (the binary as /usr/local/bin/crossplane, as
// Crossplane's own image has it, its CRDs at /crds and its webhook
// configurations at /webhookconfigurations, where `core init` reads them).
func nodeImages(t Tools) []image {
	return []image{
		{repo: "pause", tag: "3.10", entrypoint: []string{"/pause"}, user: 65535, files: map[string]string{"/pause": t.Pause}},
		{repo: "coredns", tag: "v1.12.4", entrypoint: []string{"/coredns"}, user: nonRoot, files: map[string]string{"/coredns": t.CoreDNS}},
		{repo: "crossplane", tag: CrossplaneVersion, entrypoint: []string{"/usr/local/bin/crossplane"}, user: nonRoot, files: map[string]string{
			"/usr/local/bin/crossplane": t.CrossplaneCore,
			"/crds":                     filepath.Join(t.CrossplaneModule, "cluster/crds"),
			"/webhookconfigurations":    filepath.Join(t.CrossplaneModule, "cluster/webhookconfigurations"),
		}},
	}
}

// A Registry is where images are pushed from this host (Push) and the name
// the cluster pulls them by (Pull): one registry, which the node's network
// namespace and a user's cluster may reach at another address than the host.
type Registry struct {
	Push, Pull string
	// PlainHTTP pushes over HTTP (a local registry) instead of HTTPS.
	PlainHTTP bool
}

func (r Registry) base() string {
	if r.PlainHTTP {
		return "http://" + r.Push
	}
	return "https://" + r.Push
}

// Registry is the node's own registry: the host pushes to loopback, the node
// pulls from RegistryHost.
func (n *Node) Registry() Registry {
	return Registry{Push: n.HostRegistry, Pull: RegistryHost, PlainHTTP: true}
}

// PushImage builds a single-layer image running as uid 65532 (files maps a
// path in the image to a file or tree on the host; dynamic executables get
// their libraries) and pushes it to the node's registry. It returns the
// reference pods and Crossplane use: RegistryHost/repo:tag.
func (n *Node) PushImage(ctx context.Context, repo, tag string, entrypoint []string, files map[string]string) (string, error) {
	return PushImage(ctx, n.Registry(), repo, tag, entrypoint, files)
}

// PushImage is Node.PushImage for an attached node.
func (a *Attached) PushImage(ctx context.Context, repo, tag string, entrypoint []string, files map[string]string) (string, error) {
	return PushImage(ctx, Registry{Push: a.HostRegistry, Pull: RegistryHost, PlainHTTP: true}, repo, tag, entrypoint, files)
}

// PushImage builds a single-layer image running as uid 65532 from files (a
// path in the image to a file or tree on the host; dynamic executables get
// their libraries) and pushes it to r anonymously. It returns the reference
// the cluster pulls: r.Pull/repo:tag.
func PushImage(ctx context.Context, r Registry, repo, tag string, entrypoint []string, files map[string]string) (string, error) {
	img := image{repo: repo, tag: tag, entrypoint: entrypoint, user: nonRoot, files: files}
	if err := img.push(ctx, r.base()); err != nil {
		return "", err
	}
	debug.FreeOSMemory() // the layer's build copies; the registry keeps one
	return r.Pull + "/" + repo + ":" + tag, nil
}

// PushCrossplane pushes Crossplane core's image, built as the node builds it
// (the binary of the pinned module, its CRDs and webhook configurations), to
// r: a cluster the user already has then runs the same Crossplane as the
// node, from r. It returns the repository the chart's image.repository names.
func PushCrossplane(ctx context.Context, t Tools, r Registry) (string, error) {
	for _, img := range nodeImages(t) {
		if img.repo == "crossplane" {
			return r.Pull + "/crossplane", img.push(ctx, r.base())
		}
	}
	return "", fmt.Errorf("no Crossplane image among the node's images")
}
