package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDialFlags checks that the dial flags take repeated values and comma
// lists, single addresses as host prefixes, and refuse what is neither.
func TestDialFlags(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		check  string // a host checked against the policy
		want   string // "" allowed, else a part of the error
	}{
		"DefaultRefusesPrivate": {
			reason: "Without a flag a private address is refused.",
			check:  "10.1.2.3:443",
			want:   "connection to 10.1.2.3:443 refused: private address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"CommaList": {
			reason: "A comma list allows each of its CIDRs.",
			args:   []string{"--allow-dial-cidr=192.168.0.0/16, 10.1.0.0/16"},
			check:  "10.1.2.3:443",
		},
		"SingleAddress": {
			reason: "A single address is allowed as itself.",
			args:   []string{"--allow-dial-cidr=10.0.0.1", "--allow-dial-cidr=10.1.2.3"},
			check:  "10.1.2.3",
		},
		"Deny": {
			reason: "--deny-dial-cidr refuses a public range too.",
			args:   []string{"--deny-dial-cidr=203.0.113.0/24"},
			check:  "203.0.113.9",
			want:   "connection to 203.0.113.9 refused: one of the cluster's own ranges (--deny-dial-cidr); the platform team can allow it with the provider flag --allow-dial-cidr",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			app, f, _, _ := newApp("provider")
			if _, err := app.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			p, err := dialPolicy(f)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := p.Check(tc.check); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(%q): -want, +got:\n%s", tc.reason, tc.check, diff)
			}
		})
	}
	app, f, _, _ := newApp("provider")
	if _, err := app.Parse([]string{"--allow-dial-cidr=not-a-cidr"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dialPolicy(f); err == nil {
		t.Error("dialPolicy: a value that is no CIDR is accepted")
	}
}
