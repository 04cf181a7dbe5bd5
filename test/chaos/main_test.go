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
	dir, err := os.MkdirTemp("", "provider-cloudarmor-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	providerBin, err = harness.BuildProvider(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: cannot build the provider: %v\n", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
