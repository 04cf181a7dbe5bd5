// Package ha tests the provider's high availability the way Crossplane runs
// it with two replicas: two provider processes with --leader-election
// against one real kube-apiserver + etcd and the Cloud Armor emulator. Only
// the holder of the Lease reconciles. The leader is killed with SIGKILL
// while it is still writing to GCP; the standby must take the Lease over
// once it expires and finish the work, with GCP ending exactly at the
// desired state and no write made twice. A clean stop (SIGTERM) must hand
// the Lease over at the standby's next retry, without waiting for it to
// expire. The failover figures are printed with t.Logf.
//
// The binary is built once per run, or taken from E2E_PROVIDER_BIN. Skipped
// with -short.
package ha

import (
	"os"
	"testing"

	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

// providerBin is the provider binary under test, set by TestMain.
var providerBin string

func TestMain(m *testing.M) {
	os.Exit(provider.Main(m, "ha", &providerBin, provider.BinEnv))
}
