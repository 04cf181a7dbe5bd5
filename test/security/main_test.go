// Package security tests what the provider promises about hostile input,
// credentials and tenant isolation, running the built provider binary as a
// user bound only to the shipped ClusterRole (cluster/rbac/clusterrole.yaml)
// against a real kube-apiserver + etcd and the Cloud Armor emulator.
// docs/security.md maps each promise to its test. Skipped with -short.
package security

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/chaos/harness"
)

var providerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "provider-cloudarmor-security-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	providerBin, err = harness.BuildProvider(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "security: cannot build the provider: %v\n", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
