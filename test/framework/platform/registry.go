package platform

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI registry served in this process on 127.0.0.1, the way a
// platform team's mirror serves packages: Crossplane's package manager pulls from
// it and lists its tags to resolve dependency constraints. It keeps blobs in
// memory and is gone when Close returns.
type Registry struct {
	// Host is 127.0.0.1:PORT. A dotted host, not "localhost": the Function CRD
	// requires a registry host with a dot or a port, and both go-containerregistry
	// and Crossplane speak plain HTTP to loopback addresses.
	Host string
	srv  *http.Server
}

// StartRegistry serves a registry on a free loopback port.
func StartRegistry(logf func(string, ...any)) (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	h := registry.New(registry.Logger(log.New(logWriter(logf), "registry: ", 0)))
	r := &Registry{Host: l.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// Close stops serving.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// Ref is the address of repository:tag in this registry.
func (r *Registry) Ref(repository, tag string) string {
	return r.Host + "/" + repository + ":" + tag
}

// Push pushes package files (one per platform for a multi-platform package)
// under repository:tag with `crossplane xpkg push`, as a release does.
func (r *Registry) Push(ctx context.Context, crossplane, repository, tag string, files ...string) error {
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("push %s: %w (run `make xpkg`)", repository, err)
		}
	}
	cmd := exec.CommandContext(ctx, crossplane, "xpkg", "push", "--package-files="+strings.Join(files, ","), r.Ref(repository, tag))
	// The CLI reads registry credentials from a docker config; an empty one keeps
	// a developer's own logins out of it.
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(os.TempDir(), "cloudarmor-no-docker-config"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("crossplane xpkg push %s: %w\n%s", r.Ref(repository, tag), err, out)
	}
	return nil
}

// logWriter adapts logf to an io.Writer for the registry's logger; it drops
// the registry's per-request lines, which are noise in test output.
type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	if w == nil {
		return len(p), nil
	}
	s := strings.TrimSpace(strings.TrimPrefix(string(p), "registry: "))
	for _, method := range []string{"GET ", "HEAD ", "PUT ", "POST ", "PATCH "} {
		if strings.HasPrefix(s, method) {
			return len(p), nil
		}
	}
	w("%s", s)
	return len(p), nil
}
