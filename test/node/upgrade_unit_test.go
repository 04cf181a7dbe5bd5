package nodesuite

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

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

// TestReportProviders checks what TestUpgrade reads from its samples of the
// Providers: how many there were at once, which, and the longest one was not
// Healthy. It needs no node.
func TestReportProviders(t *testing.T) {
	const p, dup = "armorplane-provider-cloudarmor", "provider-cloudarmor"
	at := func(s int, healthy map[string]bool) providerSample {
		return providerSample{at: time.Duration(s) * time.Second, healthy: healthy}
	}
	cases := map[string]struct {
		reason  string
		samples []providerSample
		want    providerReport
	}{
		"Healthy": {
			reason:  "One Provider Healthy throughout.",
			samples: []providerSample{at(0, map[string]bool{p: true}), at(1, map[string]bool{p: true})},
			want:    providerReport{samples: 2, most: 1, names: []string{p}},
		},
		"Roll": {
			reason: "A revision roll: unhealthy from the first sample that shows it to the first that shows it Healthy again.",
			samples: []providerSample{at(0, map[string]bool{p: true}), at(2, map[string]bool{p: false}), at(5, map[string]bool{p: false}),
				at(9, map[string]bool{p: true}), at(10, map[string]bool{p: false}), at(11, map[string]bool{p: true})},
			want: providerReport{samples: 6, most: 1, names: []string{p}, unhealthy: 7 * time.Second, which: p},
		},
		"SecondProvider": {
			reason: "A second Provider of the package: two at once, both unhealthy to the last sample.",
			samples: []providerSample{at(0, map[string]bool{p: true}), at(3, map[string]bool{p: false, dup: false}),
				at(90, map[string]bool{p: false, dup: false})},
			want: providerReport{samples: 3, most: 2, names: []string{p, dup}, unhealthy: 87 * time.Second},
		},
		"Gone": {
			reason: "A Provider deleted while unhealthy: its span ends with it.",
			samples: []providerSample{at(0, map[string]bool{dup: false}), at(4, map[string]bool{}),
				at(30, map[string]bool{dup: false}), at(31, map[string]bool{dup: true})},
			want: providerReport{samples: 4, most: 1, names: []string{dup}, unhealthy: time.Second, which: dup},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := reportProviders(tc.samples)
			if name == "SecondProvider" {
				got.which = "" // either Provider: both are unhealthy as long
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(providerReport{})); diff != "" {
				t.Errorf("\n%s\nreportProviders(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestMoveSteps: docs/allowlist.md's steps to the derived name are ones
// TestMoveToDerivedName can run as written (kubectl or the crossplane CLI,
// words split as the shell splits them). It needs no node.
func TestMoveSteps(t *testing.T) {
	steps := moveSteps(t)
	if len(steps) < 5 {
		t.Fatalf("docs/allowlist.md's steps: %q", steps)
	}
	for _, s := range steps {
		w, err := shellWords(s.line)
		if err != nil {
			t.Error(err)
			continue
		}
		if w[0] != "kubectl" && w[0] != "crossplane" {
			t.Errorf("%q: neither kubectl nor the crossplane CLI", s.line)
		}
		if s.stdin != "" && !slices.Equal(w, []string{"kubectl", "apply", "-f", "-"}) {
			t.Errorf("%q: a here-document only for kubectl apply -f -", s.line)
		}
	}
}

func TestShellWords(t *testing.T) {
	cases := map[string]struct {
		line string
		want []string
		err  bool
	}{
		"Plain":  {line: "kubectl delete providers.pkg.crossplane.io provider-cloudarmor", want: []string{"kubectl", "delete", "providers.pkg.crossplane.io", "provider-cloudarmor"}},
		"Quoted": {line: `kubectl patch p x --type=merge -p '{"spec":{"a":"b c"}}'`, want: []string{"kubectl", "patch", "p", "x", "--type=merge", "-p", `{"spec":{"a":"b c"}}`}},
		"Joined": {line: "kubectl wait --for=jsonpath='{.status.x}' p", want: []string{"kubectl", "wait", "--for=jsonpath={.status.x}", "p"}},
		"Pipe":   {line: "kubectl get p | jq .", err: true},
		"Open":   {line: "kubectl patch -p '{", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := shellWords(tc.line)
			if (err != nil) != tc.err {
				t.Fatalf("shellWords(%q): error %v, want error %t", tc.line, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shellWords(%q): -want, +got:\n%s", tc.line, diff)
			}
		})
	}
}

func TestDocSteps(t *testing.T) {
	cases := map[string]struct {
		block string
		want  []docStep
		err   bool
	}{
		"Lines": {
			block: "# a comment\nkubectl apply -f a.yaml\n\nkubectl wait p \\\n  --for=condition=Healthy\n",
			want:  []docStep{{line: "kubectl apply -f a.yaml"}, {line: "kubectl wait p --for=condition=Healthy"}},
		},
		"HereDocument": {
			block: "kubectl apply -f - <<'EOF'\nkind: Provider\nspec:\n  package: x\nEOF\nkubectl get p\n",
			want:  []docStep{{line: "kubectl apply -f -", stdin: "kind: Provider\nspec:\n  package: x\n"}, {line: "kubectl get p"}},
		},
		"Unterminated": {
			block: "kubectl apply -f - <<'EOF'\nkind: Provider\n",
			err:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := docSteps(tc.block)
			if (err != nil) != tc.err {
				t.Fatalf("docSteps(...): error %v, want error %t", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(docStep{})); diff != "" {
				t.Errorf("docSteps(...): -want, +got:\n%s", diff)
			}
		})
	}
}
