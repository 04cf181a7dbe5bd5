// Package provider builds or locates the provider binary and runs it as a
// child process against a kubeconfig, the way users run it: one log file
// across restarts, SIGKILL or a graceful stop, and the end of the log on
// failure. The e2e, chaos, security, argocd and bench suites share it.
package provider

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// BinEnv names the built provider binary to test instead of building one;
// `make` sets it after `make build`.
const BinEnv = "E2E_PROVIDER_BIN"

// FromEnv returns the absolute path of the binary named by the first of envs
// that is set, or "" when none is.
func FromEnv(envs ...string) (string, error) {
	for _, env := range envs {
		bin := os.Getenv(env)
		if bin == "" {
			continue
		}
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, bin, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return abs, nil
	}
	return "", nil
}

// Build builds ./cmd/provider into out the way `make build` does (static,
// CGO_ENABLED=0), printing progress because a cold build takes minutes.
func Build(out string) error {
	start := time.Now()
	fmt.Fprintf(os.Stderr, ">> building ./cmd/provider (set %s to reuse a built binary)\n", BinEnv)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/provider")
	cmd.Dir = repo.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, ">> provider built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// Binary returns the binary named by envs (see FromEnv), else builds
// ./cmd/provider into dir.
func Binary(dir string, envs ...string) (string, error) {
	if bin, err := FromEnv(envs...); bin != "" || err != nil {
		return bin, err
	}
	out := filepath.Join(dir, "provider")
	return out, Build(out)
}

// Main is the TestMain of a suite that runs the provider binary: it sets
// *bin to the binary (see Binary; built into a temporary folder removed
// afterwards), runs the tests and returns the exit code. With -short nothing
// is built. suite names the temporary folder and the error messages.
func Main(m *testing.M, suite string, bin *string, envs ...string) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "provider-cloudarmor-"+suite+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // best effort
	if *bin, err = Binary(dir, envs...); err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot build the provider: %v\n", suite, err)
		return 1
	}
	return m.Run()
}
