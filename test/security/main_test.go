// Package security tests what the provider promises about hostile input,
// credentials and tenant isolation, running the built provider binary as a
// user bound only to the shipped ClusterRole (cluster/rbac/clusterrole.yaml)
// against a real kube-apiserver + etcd and the Cloud Armor emulator.
// docs/security.md maps each promise to its test. Skipped with -short.
package security

import (
	"os"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

// providerBin is the provider binary under test: $PROVIDER_BIN or
// $E2E_PROVIDER_BIN when set, else ./cmd/provider built by TestMain.
var providerBin string

func TestMain(m *testing.M) {
	os.Exit(provider.Main(m, "security", &providerBin, "PROVIDER_BIN", provider.BinEnv))
}
