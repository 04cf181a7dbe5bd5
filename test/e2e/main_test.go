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
	"os"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

// providerBin is the provider binary under test, set by TestMain.
var providerBin string

func TestMain(m *testing.M) {
	os.Exit(provider.Main(m, "e2e", &providerBin, provider.BinEnv))
}
