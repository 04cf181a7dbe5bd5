package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	grantsFile := write("grants.json", `{"token-a": {"read": ["proj-a"], "write": ["proj-a"]}, "reader": {"read": ["*"]}}`)
	typoFile := write("typo.json", `{"token-a": {"writes": ["proj-a"]}}`)
	nullFile := write("null.json", `null`)
	defaults := emulator.Options{Auth: "require", WaitTimeout: 2 * time.Minute,
		Faults: emulator.Faults{Global: emulator.FaultRule{ErrorCodes: []int{429, 500, 503}}, RetryAfterSeconds: 1}}
	withGrants := func(g map[string]emulator.Grant) emulator.Options {
		o := defaults
		o.Grants = g
		return o
	}
	cases := map[string]struct {
		reason string
		args   []string
		want   emulator.Options
		addr   string
		// dataPlane is what the data plane flags say.
		dataPlane dataPlaneFlags
		err       bool
	}{
		"Defaults": {
			reason: "No flags: strict auth, no faults, no grants.",
			want:   defaults,
			addr:   "127.0.0.1:8085",
		},
		"PerMethodFaults": {
			reason: "--fault-methods scopes the fault rule to those methods.",
			args: []string{"--listen=:9000", "--op-latency=100ms", "--auth=token", "--token=t", "--fault-rate=0.2",
				"--fault-codes=429", "--fault-methods=securityPolicies.get,securityPolicies.patch", "--seed=3",
				"--quota-rules=50", "--latency=5ms", "--state-file=/tmp/s.json"},
			want: emulator.Options{Auth: "token", Token: "t", OpLatency: 100 * time.Millisecond, WaitTimeout: 2 * time.Minute,
				Seed: 3, StateFile: "/tmp/s.json", Faults: emulator.Faults{RetryAfterSeconds: 1, Quota: emulator.Quota{Rules: 50},
					Methods: map[string]emulator.FaultRule{
						"securityPolicies.get":   {ErrorRate: 0.2, ErrorCodes: []int{429}, Latency: emulator.Duration(5 * time.Millisecond)},
						"securityPolicies.patch": {ErrorRate: 0.2, ErrorCodes: []int{429}, Latency: emulator.Duration(5 * time.Millisecond)},
					}}},
			addr: ":9000",
		},
		"DataPlane": {
			reason:    "--data-plane serves the data plane; trusting the client IP header is a flag of its own.",
			args:      []string{"--data-plane=127.0.0.1:8788", "--data-plane-trust-client-ip-header"},
			want:      defaults,
			addr:      "127.0.0.1:8085",
			dataPlane: dataPlaneFlags{addr: "127.0.0.1:8788", trustClientIP: true},
		},
		"BadCodes": {reason: "Codes must be numbers.", args: []string{"--fault-codes=x"}, err: true},
		"DefaultTier": {
			reason: "--default-tier is the tier of projects never set (emulator.New checks the value).",
			args:   []string{"--default-tier=CA_ENTERPRISE_PAYGO"},
			want: func() emulator.Options {
				o := defaults
				o.DefaultTier = emulator.TierEnterprisePaygo
				return o
			}(),
			addr: "127.0.0.1:8085",
		},
		"GrantFlags": {
			reason: "--grant repeats; rw grants write (which implies read), r grants read.",
			args: []string{"--grant=token-a=proj-a:rw", "--grant=token-a=proj-c:r", "--grant=reader=*:r",
				"--grant=dG9r==example.com:proj:rw"},
			want: withGrants(map[string]emulator.Grant{
				"token-a": {Read: []string{"proj-c"}, Write: []string{"proj-a"}},
				"reader":  {Read: []string{"*"}},
				"dG9r=":   {Write: []string{"example.com:proj"}},
			}),
			addr: "127.0.0.1:8085",
		},
		"GrantsFile": {
			reason: "--grants-file is read as token -> {read, write}; --grant adds to it.",
			args:   []string{"--grants-file=" + grantsFile, "--grant=token-b=proj-b:rw"},
			want: withGrants(map[string]emulator.Grant{
				"token-a": {Read: []string{"proj-a"}, Write: []string{"proj-a"}},
				"reader":  {Read: []string{"*"}},
				"token-b": {Write: []string{"proj-b"}},
			}),
			addr: "127.0.0.1:8085",
		},
		"GrantsFileNull": {
			reason: "A file holding null grants nothing; --grant still adds.",
			args:   []string{"--grants-file=" + nullFile, "--grant=t=p:r"},
			want:   withGrants(map[string]emulator.Grant{"t": {Read: []string{"p"}}}),
			addr:   "127.0.0.1:8085",
		},
		"GrantBadMode":      {reason: "The mode is r or rw.", args: []string{"--grant=t=p:w"}, err: true},
		"GrantNoMode":       {reason: "The mode is required.", args: []string{"--grant=t=p"}, err: true},
		"GrantNoToken":      {reason: "The token is required.", args: []string{"--grant==p:r"}, err: true},
		"GrantNoProject":    {reason: "The project is required.", args: []string{"--grant=t=:rw"}, err: true},
		"GrantsFileMissing": {reason: "A missing file is an error.", args: []string{"--grants-file=" + filepath.Join(dir, "none.json")}, err: true},
		"GrantsFileTypo":    {reason: "Unknown fields are refused.", args: []string{"--grants-file=" + typoFile}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, sf, err := parseFlags(tc.args)
			if (err != nil) != tc.err {
				t.Fatalf("\n%s\nerr: %v", tc.reason, err)
			}
			if tc.err {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(emulator.Options{}, "Logf")); diff != "" || sf.addr != tc.addr || sf.dataPlane != tc.dataPlane {
				t.Errorf("\n%s\nparseFlags(...): -want, +got:\n%s\naddr %q, data plane %+v", tc.reason, diff, sf.addr, sf.dataPlane)
			}
		})
	}
}
