// Package chaos runs the built provider binary against kube-apiserver + etcd
// and a Cloud Armor emulator that fails 20% of calls, answers slowly and
// fails operations, while the provider is SIGKILLed and restarted, and checks
// that GCP ends up exactly as desired at a bounded API cost.
//
// The short version runs in `make test`; CHAOS_LONG=1 selects the long one
// (10 policies x 50 rules, a kill every 30 s), run by `make chaos`. Both are
// skipped with -short.
package chaos

import (
	"os"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

// providerBin is the provider binary under test: $PROVIDER_BIN or
// $E2E_PROVIDER_BIN when set, else ./cmd/provider built by TestMain.
var providerBin string

func TestMain(m *testing.M) {
	os.Exit(provider.Main(m, "chaos", &providerBin, "PROVIDER_BIN", provider.BinEnv))
}
