// Command images builds the runtime images of the provider and the function
// without Docker: for each platform it cross-compiles a static, stripped,
// version-stamped binary (CGO off) and assembles an OCI image with
// go-containerregistry on an empty base holding only that binary, the Debian
// CA certificate bundle, /etc/passwd and /etc/group with a non-root user
// (65532) and a writable /tmp. The image runs as that user, with the binary as
// its entrypoint and OCI labels in its config. Each image is written as an OCI
// tarball that `crossplane xpkg build --embed-runtime-image-tarball` embeds.
//
//	go run ./cluster/images --main ./cmd/provider --name provider-cloudarmor \
//	    --version v0.1.0 --platforms linux/amd64,linux/arm64 --out _output/images
//
// writes _output/images/provider-cloudarmor-linux_amd64.tar and
// _output/images/provider-cloudarmor-linux_arm64.tar.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// versionVar is the linker symbol stamped with the build version.
	versionVar = "github.com/armorplane/provider-cloudarmor/internal/version.Version"

	// User is the non-root UID and GID the images run as (distroless' nonroot).
	User = 65532

	// binDir is where the binary goes; the entrypoint is binDir/<name>.
	binDir = "/usr/local/bin"

	// caBundlePath is both where the Debian bundle is read from on the build
	// machine and where it goes in the image (the path Go's crypto/x509 tries
	// first on Linux).
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
)

type config struct {
	main      string
	name      string
	version   string
	revision  string
	created   string
	source    string
	license   string
	desc      string
	platforms string
	out       string
	caBundle  string
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.StringVar(&c.main, "main", "./cmd/provider", "Go main package to build")
	fs.StringVar(&c.name, "name", "provider-cloudarmor", "image and binary name")
	fs.StringVar(&c.version, "version", "v0.0.0-dev", "version stamped into the binary and the labels")
	fs.StringVar(&c.revision, "revision", "", "VCS revision for the labels")
	fs.StringVar(&c.created, "created", "", "creation time (RFC 3339) of the image and its files; default 1970-01-01 for reproducible images")
	fs.StringVar(&c.source, "source", "https://github.com/armorplane/provider-cloudarmor", "source URL label")
	fs.StringVar(&c.license, "license", "Apache-2.0", "license label")
	fs.StringVar(&c.desc, "description", "Crossplane provider for Google Cloud Armor", "description label")
	fs.StringVar(&c.platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	fs.StringVar(&c.out, "out", "_output/images", "output folder")
	fs.StringVar(&c.caBundle, "ca-bundle", caBundlePath, "CA certificate bundle to copy into the image")
	return c, fs.Parse(args)
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	created := time.Unix(0, 0).UTC()
	if c.created != "" {
		t, err := time.Parse(time.RFC3339, c.created)
		if err != nil {
			return fmt.Errorf("--created: %w", err)
		}
		created = t.UTC()
	}
	ca, err := os.ReadFile(c.caBundle)
	if err != nil {
		return fmt.Errorf("cannot read the CA certificate bundle %s (%w): install Debian's ca-certificates "+
			"(apt-get install -y ca-certificates) or pass --ca-bundle", c.caBundle, err)
	}
	if !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		return fmt.Errorf("%s holds no PEM certificates", c.caBundle)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	for _, p := range strings.Split(c.platforms, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || osName != "linux" || arch == "" {
			return fmt.Errorf("platform %q: want linux/ARCH", p)
		}
		start := time.Now()
		bin, err := build(c, arch)
		if err != nil {
			return err
		}
		img, err := image(c, arch, bin, ca, created)
		if err != nil {
			return err
		}
		file, err := write(c, osName, arch, img)
		if err != nil {
			return err
		}
		size, err := compressedSize(img)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s/%s binary %.1f MiB, image %.1f MiB compressed (%s)\n", file, osName, arch,
			mib(int64(len(bin))), mib(size), time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// build cross-compiles c.main for linux/arch and returns the binary.
func build(c config, arch string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "images-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, c.name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+versionVar+"="+c.version, "-o", out, c.main)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for linux/%s: %w", c.main, arch, err)
	}
	return os.ReadFile(out)
}

// image assembles the runtime image for arch from one layer.
func image(c config, arch string, bin, ca []byte, created time.Time) (v1.Image, error) {
	layerTar, err := rootfs(c.name, bin, ca, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	// Edit a deep copy of the whole config file: mutate.Config would keep the
	// platform of empty.Image, and a fresh ConfigFile would lose the rootfs
	// diff_ids that `crossplane xpkg build` checks.
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: created}
	cf.Author = "provider-cloudarmor maintainers"
	cf.Config.Entrypoint = []string{path.Join(binDir, c.name)}
	cf.Config.Cmd = nil
	cf.Config.User = fmt.Sprint(User)
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "SSL_CERT_FILE=" + caBundlePath}
	cf.Config.Labels = labels(c, created)
	cf.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "cluster/images (go-containerregistry)",
		Comment: c.name + " " + c.version}}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations (as config labels) of an image.
func labels(c config, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       c.name,
		"org.opencontainers.image.description": c.desc,
		"org.opencontainers.image.version":     c.version,
		"org.opencontainers.image.source":      c.source,
		"org.opencontainers.image.url":         c.source,
		"org.opencontainers.image.licenses":    c.license,
		"org.opencontainers.image.vendor":      "armorplane",
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if c.revision != "" {
		l["org.opencontainers.image.revision"] = c.revision
	}
	return l
}

// rootfs returns the image's only layer as an uncompressed tar.
func rootfs(binName string, bin, ca []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", User, User)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", User)
	var errs []error
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs", "home", "usr", "usr/local", "usr/local/bin"} {
		errs = append(errs, dir(d, 0o755, 0))
	}
	errs = append(errs,
		dir("home/nonroot", 0o700, User),
		dir("tmp", 0o1777, 0),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		file(strings.TrimPrefix(caBundlePath, "/"), 0o644, ca),
		file(strings.TrimPrefix(path.Join(binDir, binName), "/"), 0o755, bin),
		tw.Close(),
	)
	return buf.Bytes(), errors.Join(errs...)
}

var notTagChar = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// write saves img as an OCI tarball named after c.name and the platform.
func write(c config, osName, arch string, img v1.Image) (string, error) {
	tag := notTagChar.ReplaceAllString(c.version, "-")
	ref, err := name.NewTag(fmt.Sprintf("build.local/armorplane/%s:%s-%s", c.name, tag, arch))
	if err != nil {
		return "", err
	}
	file := filepath.Join(c.out, fmt.Sprintf("%s-%s_%s.tar", c.name, osName, arch))
	return file, tarball.WriteToFile(file, ref, img)
}

func compressedSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
