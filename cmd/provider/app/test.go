package app

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/armorplane/provider-cloudarmor/internal/testcmd"
)

// testCommand adds `test` to app: evaluate request cases against
// SecurityPolicy, SecurityPolicyRule and AddressGroup manifests offline, or
// with --live against a policy as GCP holds it (docs/evaluation.md). It
// returns the command and a function that runs it once app has parsed the
// command line. timeout is the provider's --timeout, which bounds --live's
// reads.
func testCommand(app *kingpin.Application, timeout *time.Duration) (*kingpin.CmdClause, func() int) {
	cmd := app.Command("test", "Evaluate request cases against SecurityPolicy, SecurityPolicyRule and AddressGroup manifests, offline. "+
		"Prints PASS or FAIL per case; exits 0 when all pass, 1 when any fails, 2 on bad input.")
	var cfg testcmd.Config
	cmd.Flag("filename", "A manifest file or directory (YAML, several documents allowed); repeat for more. "+
		"Optional when the cases file lists its manifests.").Short('f').StringsVar(&cfg.Manifests)
	cmd.Flag("cases", "The cases file: the policy under test and its cases.").Required().StringVar(&cfg.Cases)
	cmd.Flag("explain", "Say for every rule why it matched or not.").BoolVar(&cfg.Explain)
	cmd.Flag("live", "Run the cases against a policy as GCP holds it, with the address groups its rules name, instead of manifests: "+
		"projects/PROJECT/global/securityPolicies/NAME or projects/PROJECT/regions/REGION/securityPolicies/NAME. "+
		"Reaches GCP with the flags below, as validate does.").StringVar(&cfg.Live)
	gcpFlags(cmd, &cfg.Endpoint, &cfg.Credentials)
	return cmd, func() int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		cfg.Timeout = *timeout
		return testcmd.RunContext(ctx, cfg, os.Stdout, os.Stderr)
	}
}

// testUsageStatus is the exit status of a command line kingpin refuses when
// it is test's: its documented 2, bad input. Otherwise fallback.
func testUsageStatus(args []string, fallback int) int {
	if slices.Contains(args, "test") {
		return testcmd.ExitUsage
	}
	return fallback
}
