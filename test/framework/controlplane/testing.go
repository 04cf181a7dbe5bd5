package controlplane

import (
	"context"
	"testing"
)

// StartT starts a control plane for a test and stops it when the test ends. Missing
// binaries fail the test rather than skip it: a skipped integration test in CI looks
// like a passing one, so CI must run `make tools` first. When the test fails, the end
// of each log is printed before the temporary folders go.
func StartT(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	cp, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("controlplane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controlplane logs (%s):%s", cp.LogDir, cp.logs.tails())
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("controlplane: stop: %v", err)
		}
	})
	return cp
}
