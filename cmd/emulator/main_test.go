package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

func TestParseFlags(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   []string
		want   emulator.Options
		addr   string
		err    bool
	}{
		"Defaults": {
			reason: "No flags: strict auth, no faults.",
			want: emulator.Options{Auth: "require", WaitTimeout: 2 * time.Minute,
				Faults: emulator.Faults{Global: emulator.FaultRule{ErrorCodes: []int{429, 500, 503}}, RetryAfterSeconds: 1}},
			addr: "127.0.0.1:8085",
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
		"BadCodes": {reason: "Codes must be numbers.", args: []string{"--fault-codes=x"}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, addr, err := parseFlags(tc.args)
			if (err != nil) != tc.err {
				t.Fatalf("\n%s\nerr: %v", tc.reason, err)
			}
			if tc.err {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(emulator.Options{}, "Logf")); diff != "" || addr != tc.addr {
				t.Errorf("\n%s\nparseFlags(...): -want, +got:\n%s\naddr %q", tc.reason, diff, addr)
			}
		})
	}
}
