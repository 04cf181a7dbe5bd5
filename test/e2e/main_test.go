// Package e2e tests the provider the way users run it: the built binary runs
// as a separate process against a real kube-apiserver + etcd and the Cloud
// Armor emulator. Tests drive it only through API calls (as kubectl would)
// and check GCP state through the emulator's API and counters.
//
// The binary is built once per run into a temporary folder, or taken from
// E2E_PROVIDER_BIN when set (e.g. by `make`, which has already built it).
// The suite is skipped with -short.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// providerBin is the provider binary under test, set by TestMain.
var providerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv("E2E_PROVIDER_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: E2E_PROVIDER_BIN=%s: %v\n", bin, err)
			return 1
		}
		if _, err := os.Stat(abs); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: E2E_PROVIDER_BIN: %v\n", err)
			return 1
		}
		providerBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "provider-cloudarmor-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // best effort
	providerBin = filepath.Join(dir, "provider")
	if err := buildProvider(providerBin); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot build the provider: %v\n", err)
		return 1
	}
	return m.Run()
}

// buildProvider builds ./cmd/provider the way `make build` does (static,
// CGO_ENABLED=0), printing progress because a cold build takes minutes.
func buildProvider(out string) error {
	start := time.Now()
	fmt.Fprintln(os.Stderr, ">> e2e: building ./cmd/provider (set E2E_PROVIDER_BIN to reuse a built binary)")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/provider")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, ">> e2e: provider built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
