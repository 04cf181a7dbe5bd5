package nodesuite

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upgradeState is a policy and an address group as GET /_emulator/stats
// shows them.
const upgradeState = `{"state": {"projects/` + project + `/global/securityPolicies/p": {"rules": [
  {"priority": 999, "action": "allow", "match": {"config": {"srcIpRanges": ["192.0.2.9/32"]}}},
  {"priority": 1000, "action": "allow", "match": {"config": {"srcIpRanges": ["198.51.100.1", "198.51.100.0/24"]}}},
  {"priority": 1001, "action": "allow", "preview": true, "match": {"config": {"srcIpRanges": ["198.51.100.2/32"]}}},
  {"priority": 1002, "action": "deny(403)", "match": {"config": {"srcIpRanges": ["198.51.100.3/32"]}}},
  {"priority": 1003, "action": "allow", "match": {"expr": {"expression": "evaluateAddressGroup('g', origin.ip)"}}}]}},
  "addressGroups": {"projects/` + project + `/locations/global/addressGroups/g": {"items": ["10.244.0.1/32", "2001:db8::1"]}}}`

// TestUpgradeAllowed checks what TestUpgrade counts as allowed: the ranges of
// allow rules in the XR's range that are not previewed, and the items of the
// groups they evaluate, as GCP stores them. It needs no node.
func TestUpgradeAllowed(t *testing.T) {
	var st emulatorStats
	if err := json.Unmarshal([]byte(upgradeState), &st); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		x    upgradeXR
		want []string
	}{
		"RulesAndGroupInRange": {
			x:    upgradeXR{policy: "p", first: 1000, last: 1009},
			want: []string{"10.244.0.1/32", "198.51.100.0/24", "198.51.100.1/32", "2001:db8::1/128"},
		},
		"RangeBelow": {
			x:    upgradeXR{policy: "p", first: 0, last: 999},
			want: []string{"192.0.2.9/32"},
		},
		"NoSuchPolicy": {
			x:    upgradeXR{policy: "q", first: 0, last: 2000},
			want: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, st.allowed(tc.x)); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpgradeWrites checks which emulator methods TestUpgrade counts as
// writes, and as removals.
func TestUpgradeWrites(t *testing.T) {
	cases := map[string]struct {
		method        string
		read, removal bool
	}{
		"Get":          {method: "securityPolicies.get", read: true},
		"GetRule":      {method: "securityPolicies.getRule", read: true},
		"Operation":    {method: "globalOperations.get", read: true},
		"GroupList":    {method: "addressGroups.list", read: true},
		"PatchRule":    {method: "securityPolicies.patchRule"},
		"AddItems":     {method: "addressGroups.addItems"},
		"RemoveRule":   {method: "securityPolicies.removeRule", removal: true},
		"RemoveItems":  {method: "addressGroups.removeItems", removal: true},
		"DeletePolicy": {method: "securityPolicies.delete", removal: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := reads(tc.method); got != tc.read {
				t.Errorf("reads(%q) = %t, want %t", tc.method, got, tc.read)
			}
			if got := removes(tc.method); got != tc.removal {
				t.Errorf("removes(%q) = %t, want %t", tc.method, got, tc.removal)
			}
		})
	}
}
