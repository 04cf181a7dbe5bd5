// Package xpkg checks the Crossplane packages `make xpkg` (hack/xpkg.sh) writes
// into _output/xpkg/ the way a user's cluster depends on them: the package
// metadata, every CRD or composition object, and the embedded runtime image
// (its user, entrypoint, labels, files, and a binary that starts).
package xpkg

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	// buildCommand makes what this test opens.
	buildCommand = "make xpkg"

	// nonRootUser is the user the runtime images must run as.
	nonRootUser = "65532"

	// maxImageMiB is the budget for a runtime image (compressed layers, what a
	// node pulls); maxConfigurationMiB for a package without an image.
	maxImageMiB         = 30
	maxConfigurationMiB = 1
)

// defaultPlatforms matches hack/xpkg.sh; PLATFORMS overrides both.
var defaultPlatforms = []string{"linux/amd64", "linux/arm64"}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// source is one package folder of the repository.
type source struct {
	dir     string
	kind    string
	name    string
	objects []*unstructured.Unstructured // everything but crossplane.yaml
}

// sources finds the package folders as hack/xpkg.sh does: package/ and
// package/*/ with a crossplane.yaml, nested ones excluded from their parent.
func sources(t *testing.T) []source {
	t.Helper()
	root := filepath.Join(repoRoot(), "package")
	dirs := []string{root}
	subs, err := filepath.Glob(filepath.Join(root, "*", "crossplane.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		dirs = append(dirs, filepath.Dir(s))
	}
	var out []source
	for _, d := range dirs {
		metas, err := readFile(filepath.Join(d, "crossplane.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(metas) != 1 {
			t.Fatalf("%s/crossplane.yaml: want one object, got %d", d, len(metas))
		}
		s := source{dir: d, kind: metas[0].GetKind(), name: metas[0].GetName()}
		err = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && p != d && slices.Contains(dirs, p) {
				return filepath.SkipDir
			}
			if e.IsDir() || filepath.Base(p) == "crossplane.yaml" || !isYAML(p) {
				return nil
			}
			objs, err := readFile(p)
			s.objects = append(s.objects, objs...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func isYAML(p string) bool { return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") }

func readFile(p string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	objs, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return objs, nil
}

// decode parses a YAML stream into objects, skipping empty documents.
func decode(b []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func platforms() []string {
	if p := os.Getenv("PLATFORMS"); p != "" {
		return strings.Fields(p)
	}
	return defaultPlatforms
}

func TestPackages(t *testing.T) {
	srcs := sources(t)
	kinds := map[string]bool{}
	for _, s := range srcs {
		kinds[s.kind] = true
		if s.kind == "Configuration" {
			t.Run(s.name, func(t *testing.T) {
				checkPackage(t, s, filepath.Join(repoRoot(), "_output", "xpkg", s.name+".xpkg"), "")
			})
			continue
		}
		for _, p := range platforms() {
			_, arch, _ := strings.Cut(p, "/")
			t.Run(s.name+"/"+arch, func(t *testing.T) {
				checkPackage(t, s, filepath.Join(repoRoot(), "_output", "xpkg", "linux_"+arch, s.name+".xpkg"), arch)
			})
		}
	}
	if !kinds["Provider"] {
		t.Errorf("no Provider package under package/")
	}
}

// checkPackage opens one .xpkg built from s; arch is "" for packages without
// a runtime image.
func checkPackage(t *testing.T, s source, file, arch string) {
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("%v: run `%s` first", err, buildCommand)
	}
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("%s is not an OCI image tarball: %v", file, err)
	}
	fs, err := flatten(img)
	if err != nil {
		t.Fatal(err)
	}
	stream, ok := fs["package.yaml"]
	if !ok {
		t.Fatalf("%s has no package.yaml", file)
	}
	objs, err := decode(stream.data)
	if err != nil {
		t.Fatalf("package.yaml: %v", err)
	}
	checkMeta(t, s, objs[0])
	checkObjects(t, s, objs[1:])

	compressed, err := runtimeSize(img)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Join(repoRoot(), "_output"), file)
	if arch == "" {
		t.Logf("%s: package %.3f MiB", rel, mib(fi.Size()))
		if mib(fi.Size()) > maxConfigurationMiB {
			t.Errorf("package is %.2f MiB, over the %d MiB budget", mib(fi.Size()), maxConfigurationMiB)
		}
		return
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	entry := checkConfig(t, s, cf, arch)
	checkFiles(t, fs)
	bin, ok := fs[strings.TrimPrefix(entry, "/")]
	if !ok {
		t.Fatalf("entrypoint %s is not in the image", entry)
	}
	checkBinary(t, bin.data, arch, cf.Config.Labels["org.opencontainers.image.version"])
	var rootfs int64
	for _, f := range fs {
		rootfs += int64(len(f.data))
	}
	t.Logf("%s: package %.1f MiB, runtime image %.1f MiB compressed, %.1f MiB unpacked (binary %.1f MiB); budget %d MiB",
		rel, mib(fi.Size()), mib(compressed), mib(rootfs), mib(int64(len(bin.data))), maxImageMiB)
	if mib(compressed) > maxImageMiB {
		t.Errorf("runtime image is %.1f MiB compressed, over the %d MiB budget", mib(compressed), maxImageMiB)
	}
}

// checkMeta checks the package metadata names the kind and name of the
// package folder's crossplane.yaml.
func checkMeta(t *testing.T, s source, meta *unstructured.Unstructured) {
	t.Helper()
	got := []string{meta.GetAPIVersion(), meta.GetKind(), meta.GetName()}
	want := []string{"meta.pkg.crossplane.io/v1", s.kind, s.name}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("package.yaml metadata (apiVersion, kind, name): -want +got:\n%s", diff)
	}
	for _, a := range []string{"meta.crossplane.io/maintainer", "meta.crossplane.io/source", "meta.crossplane.io/license", "meta.crossplane.io/description"} {
		if meta.GetAnnotations()[a] == "" {
			t.Errorf("package.yaml metadata lacks annotation %s", a)
		}
	}
	if s.kind == "Provider" {
		caps, _, _ := unstructured.NestedStringSlice(meta.Object, "spec", "capabilities")
		if !slices.Contains(caps, "safe-start") {
			t.Errorf("provider capabilities %v lack safe-start", caps)
		}
	}
}

// checkObjects checks the package holds exactly the folder's objects (every
// CRD, XRD, Composition), with the same spec: a stale package fails here.
func checkObjects(t *testing.T, s source, got []*unstructured.Unstructured) {
	t.Helper()
	key := func(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }
	inPkg := map[string]*unstructured.Unstructured{}
	for _, u := range got {
		inPkg[key(u)] = u
	}
	if len(s.objects) == 0 && s.kind != "Function" {
		t.Errorf("%s holds no objects besides crossplane.yaml", s.dir)
	}
	for _, want := range s.objects {
		u, ok := inPkg[key(want)]
		if !ok {
			t.Errorf("package lacks %s from %s", key(want), s.dir)
			continue
		}
		delete(inPkg, key(want))
		if diff := cmp.Diff(want.Object["spec"], u.Object["spec"]); diff != "" {
			t.Errorf("%s in the package differs from %s (stale package? run `%s`): -source +package:\n%s", key(want), s.dir, buildCommand, diff)
		}
	}
	for k := range inPkg {
		t.Errorf("package holds %s, which is not in %s", k, s.dir)
	}
}

// checkConfig checks the image config and returns the entrypoint.
func checkConfig(t *testing.T, s source, cf *v1.ConfigFile, arch string) string {
	t.Helper()
	want := []string{"linux", arch, nonRootUser, "/usr/local/bin/" + s.name}
	got := []string{cf.OS, cf.Architecture, cf.Config.User, strings.Join(cf.Config.Entrypoint, " ")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image config (os, architecture, user, entrypoint): -want +got:\n%s", diff)
	}
	for _, l := range []string{"title", "version", "source", "licenses", "revision", "created", "description"} {
		if cf.Config.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("image lacks label org.opencontainers.image.%s", l)
		}
	}
	if got := cf.Config.Labels["org.opencontainers.image.title"]; got != s.name {
		t.Errorf("label org.opencontainers.image.title: want %q, got %q", s.name, got)
	}
	if len(cf.Config.Entrypoint) == 0 {
		t.Fatalf("image has no entrypoint")
	}
	return cf.Config.Entrypoint[0]
}

// checkFiles checks the CA bundle and the non-root user exist.
func checkFiles(t *testing.T, fs map[string]file) {
	t.Helper()
	if ca := fs["etc/ssl/certs/ca-certificates.crt"]; bytes.Count(ca.data, []byte("BEGIN CERTIFICATE")) < 50 {
		t.Errorf("etc/ssl/certs/ca-certificates.crt holds %d certificates, want the Debian bundle", bytes.Count(ca.data, []byte("BEGIN CERTIFICATE")))
	}
	if !bytes.Contains(fs["etc/passwd"].data, []byte(":"+nonRootUser+":"+nonRootUser+":")) {
		t.Errorf("etc/passwd has no user %s:\n%s", nonRootUser, fs["etc/passwd"].data)
	}
	if tmp, ok := fs["tmp"]; !ok || tmp.mode&0o1777 != 0o1777 {
		t.Errorf("image has no world-writable /tmp")
	}
}

// checkBinary checks the entrypoint is a static, stripped binary for arch with
// the version stamped in, and runs it with --help when arch is this machine's.
func checkBinary(t *testing.T, bin []byte, arch, version string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("entrypoint is not an ELF binary: %v", err)
	}
	if f.Machine != elfMachine[arch] {
		t.Errorf("entrypoint is built for %v, want %v", f.Machine, elfMachine[arch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("entrypoint is dynamically linked (has an interpreter); want CGO_ENABLED=0")
		}
	}
	if f.Section(".symtab") != nil {
		t.Errorf("entrypoint has a symbol table; want it stripped (-s -w)")
	}
	if version == "" || !bytes.Contains(bin, []byte(version)) {
		t.Errorf("entrypoint does not contain its version %q (ldflags -X .../internal/version.Version)", version)
	}
	if arch != runtime.GOARCH {
		return
	}
	path := filepath.Join(t.TempDir(), "entrypoint")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("entrypoint --help: %v\n%s", err, out)
	}
	if !strings.Contains(strings.ToLower(string(out)), "usage") {
		t.Errorf("entrypoint --help printed no usage:\n%s", out)
	}
}

// file is a regular file or folder of a flattened image.
type file struct {
	mode int64
	data []byte
}

// flatten returns every file of img's filesystem by path (no leading /).
func flatten(img v1.Image) (map[string]file, error) {
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	fs := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fs, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		fs[strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")] = file{mode: h.Mode, data: data}
	}
}

// runtimeSize is the compressed size of img's layers other than the ones
// `crossplane xpkg build` adds (package.yaml, examples), which carry the
// io.crossplane.xpkg annotation: what a node pulls to run the package.
func runtimeSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range m.Layers {
		if _, ok := l.Annotations["io.crossplane.xpkg"]; !ok {
			total += l.Size
		}
	}
	return total, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
