package app

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/armorplane/provider-cloudarmor/internal/validatecmd"
)

// validateCommand adds `validate` to app: ask GCP, with validateOnly, whether
// it would accept SecurityPolicy and SecurityPolicyRule manifests. It
// returns the command and a function that runs it once app has parsed the
// command line. timeout is the provider's --timeout, which bounds the run.
func validateCommand(app *kingpin.Application, timeout *time.Duration) (*kingpin.CmdClause, func() int) {
	cmd := app.Command("validate", "Ask GCP whether it would accept SecurityPolicy and SecurityPolicyRule manifests, without writing anything. "+
		"Prints one line per document; exits 0 when GCP accepts all, 1 when it refuses any, 2 when it could not be asked.")
	var cfg validatecmd.Config
	cmd.Flag("filename", "A manifest file (YAML, several documents allowed); repeat for more.").Short('f').Required().ExistingFilesVar(&cfg.Files)
	cmd.Flag("project", "GCP project of objects without spec.forProvider.project, like a ProviderConfig's projectID.").StringVar(&cfg.Project)
	gcpFlags(cmd, &cfg.Endpoint, &cfg.Credentials)
	return cmd, func() int {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		cfg.Timeout = *timeout
		return validatecmd.Run(ctx, cfg, os.Stdout, os.Stderr)
	}
}

// gcpFlags adds the flags that reach GCP as a ProviderConfig would: the
// endpoint and the credential sources. validate and test --live share them.
func gcpFlags(cmd *kingpin.CmdClause, endpoint *string, c *validatecmd.Credentials) {
	cmd.Flag("endpoint", "Compute API base URL, like a ProviderConfig's endpoint (a private endpoint, the emulator).").StringVar(endpoint)
	cmd.Flag("credentials-file", "Credentials JSON file (service account key, external account, authorized user), like the Filesystem source. "+
		"Without credential flags, Application Default Credentials are used, like InjectedIdentity.").StringVar(&c.CredentialsFile)
	cmd.Flag("access-token-file", "File holding an OAuth2 access token, like the AccessToken source.").StringVar(&c.AccessTokenFile)
	cmd.Flag("impersonate-service-account", "Service account email to act as, starting from --credentials-file or Application Default Credentials.").
		StringVar(&c.ImpersonateServiceAccount)
}

// usageStatus is the exit status of a command line kingpin refuses:
// validate's documented 2, which a CI step tells apart from a refusal (1);
// kingpin's own 1 for the provider, as before validate existed.
func usageStatus(args []string) int {
	if slices.Contains(args, "validate") {
		return validatecmd.ExitUsage
	}
	return 1
}
