package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/validatecmd"
)

// TestValidateCommand parses validate's command line beside the provider's
// own flags and runs it against an emulator: the flags reach the run, and
// the run's status is the command's.
func TestValidateCommand(t *testing.T) {
	em := emulator.Start(t, emulator.Options{Auth: emulator.AuthToken, Token: "cmd-token"})
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("cmd-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join("..", "..", "..", "examples", "securitypolicy", "allowlist-inline.yaml")
	cases := map[string]struct {
		reason string
		args   []string
		want   int
	}{
		"Accepted": {
			reason: "An example GCP accepts exits 0.",
			args:   []string{"validate", "-f", example, "--project", "p", "--endpoint", em.URL(), "--access-token-file", tokenFile},
			want:   validatecmd.ExitOK,
		},
		"NoProject": {
			reason: "Without a project the command cannot ask GCP: 2.",
			args:   []string{"validate", "-f", example, "--endpoint", em.URL(), "--access-token-file", tokenFile},
			want:   validatecmd.ExitUsage,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			app := kingpin.New("provider-cloudarmor", "")
			timeout := app.Flag("timeout", "").Default("2m").Duration()
			app.Command("run", "").Default()
			validate, run := validateCommand(app, timeout)
			command, err := app.Parse(tc.args)
			if err != nil || command != validate.FullCommand() {
				t.Fatalf("parse: command %q, error %v", command, err)
			}
			if diff := cmp.Diff(tc.want, run()); diff != "" {
				t.Errorf("%s\nexit status: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if n := len(em.Snapshot()); n != 0 {
		t.Errorf("%d policies in GCP after validating", n)
	}
}

// TestUsageStatus: kingpin's refusals exit 2 for validate, 1 for the
// provider as before.
func TestUsageStatus(t *testing.T) {
	got := []int{usageStatus([]string{"validate", "--bogus"}), usageStatus([]string{"--bogus"})}
	if diff := cmp.Diff([]int{validatecmd.ExitUsage, 1}, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}
