package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/internal/testcmd"
)

// TestTestCommand parses test's command line beside the provider's own
// flags and runs it over an example case file: the flags reach the run, and
// the run's status is the command's.
func TestTestCommand(t *testing.T) {
	app, _, _, _ := newApp("provider")
	timeout := time.Minute
	test, run := testCommand(app, &timeout)
	command, err := app.Parse([]string{"test", "--cases", "../../../examples/tests/regional.yaml",
		"-f", "../../../examples/regional/regional-policy.yaml", "--explain"})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if command != test.FullCommand() {
		t.Fatalf("Parse: command %q, want %q", command, test.FullCommand())
	}
	if got := run(); got != testcmd.ExitPass {
		t.Errorf("run(): status %d, want %d", got, testcmd.ExitPass)
	}
	if _, err := app.Parse([]string{"test"}); err == nil {
		t.Errorf("Parse(test without --cases): want an error")
	}
}

// TestTestUsageStatus: kingpin's refusals exit 2 for test, as bad input.
func TestTestUsageStatus(t *testing.T) {
	got := []int{testUsageStatus([]string{"test", "--bogus"}, 1), testUsageStatus([]string{"--bogus"}, 1)}
	if diff := cmp.Diff([]int{testcmd.ExitUsage, 1}, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}
