package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the control plane binaries built by cluster/toolchain/build.sh. They name
// the cache folders, so they must match the script.
const (
	KubernetesVersion = "v1.35.4"
	EtcdVersion       = "v3.6.6"
)

// Binaries envtest needs in its assets folder. kubectl is optional: envtest only
// runs it when a caller asks for a Kubectl wrapper.
var requiredBinaries = []string{"kube-apiserver", "etcd"}

// ToolsCommand is what a developer runs to build the binaries AssetsDir looks for.
const ToolsCommand = "make tools"

// CacheDir is the root folder cluster/toolchain/build.sh builds into:
// $PROVIDER_CLOUDARMOR_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor.
// It deliberately mirrors the shell logic rather than os.UserCacheDir, which differs
// on macOS and would look somewhere the script never wrote.
func CacheDir() (string, error) {
	if d := os.Getenv("PROVIDER_CLOUDARMOR_CACHE"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot locate the tool cache: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "provider-cloudarmor"), nil
}

// AssetsDir returns the folder holding kube-apiserver and etcd for envtest:
// KUBEBUILDER_ASSETS when set, else the folder
// envtest-<kube version>-etcd-<etcd version> in CacheDir that `make tools` (or
// `build.sh assets`) fills with symlinks. It never builds anything: a test that silently spent five
// minutes compiling Kubernetes would look hung, so a missing binary is an error
// that names the command to run.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if err := checkAssets(d); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", d, err)
		}
		return d, nil
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	d := filepath.Join(cache, "envtest-"+KubernetesVersion+"-etcd-"+EtcdVersion)
	if err := checkAssets(d); err != nil {
		return "", fmt.Errorf("control plane binaries not built (%w): run `%s` "+
			"(cluster/toolchain/build.sh assets) or set KUBEBUILDER_ASSETS", err, ToolsCommand)
	}
	return d, nil
}

// checkAssets reports the required binaries missing from dir, following symlinks so
// a dangling link into a wiped cache counts as missing.
func checkAssets(dir string) error {
	var problems []string
	for _, name := range requiredBinaries {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			problems = append(problems, "missing "+p)
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			problems = append(problems, p+" is not executable")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Tool returns the path of a tool binary cluster/toolchain/build.sh caches: the
// value of env when set, else <CacheDir>/bin/<name>-<version>/<name>. It never
// builds anything (see AssetsDir); a missing binary is an error naming the
// command that builds it.
func Tool(env, name, version string) (string, error) {
	p := os.Getenv(env)
	if p == "" {
		cache, err := CacheDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(cache, "bin", name+"-"+version, name)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s %s not found at %s: set %s, or run `%s` (cluster/toolchain/build.sh %s)",
			name, version, p, env, ToolsCommand, name)
	}
	return p, nil
}
