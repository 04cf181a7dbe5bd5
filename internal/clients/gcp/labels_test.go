package gcp

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// GCP's label rules: keys start with a lowercase letter; keys and values
// hold lowercase letters, digits, '_' and '-', at most 63 of them.
var (
	gcpLabelKey   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	gcpLabelValue = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 70)
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Valid": {
			reason: "A valid value is kept as it is.",
			in:     "team-a_1",
			want:   "team-a_1",
		},
		"Empty": {
			reason: "GCP allows empty values.",
			in:     "",
			want:   "",
		},
		"Kind": {
			reason: "crossplane-runtime's kind tag has dots, which become underscores.",
			in:     "securitypolicy.cloudarmor.armorplane.io",
			want:   "securitypolicy_cloudarmor_armorplane_io",
		},
		"Uppercase": {
			reason: "Uppercase letters are lowered.",
			in:     "ProviderConfig",
			want:   "providerconfig",
		},
		"NonASCII": {
			reason: "Each character outside a-z, 0-9, '_' and '-' becomes one underscore.",
			in:     "é/x:y",
			want:   "__x_y",
		},
		"Exactly63": {
			reason: "63 characters fit.",
			in:     strings.Repeat("b", 63),
			want:   strings.Repeat("b", 63),
		},
		"TooLong": {
			reason: "A longer value keeps 54 characters and a hash of the whole value.",
			in:     long,
			want:   strings.Repeat("a", 54) + "-6bd5e503", // sha256 of the 70 characters
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := LabelValue(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nLabelValue(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if !gcpLabelValue.MatchString(got) {
				t.Errorf("\n%s\nLabelValue(%q) = %q, which GCP refuses", tc.reason, tc.in, got)
			}
		})
	}
}

func TestLabelValueLongStayApart(t *testing.T) {
	a := LabelValue(strings.Repeat("a", 60) + "-one")
	b := LabelValue(strings.Repeat("a", 60) + "-two")
	if a == b || len(a) != MaxLabelLength || len(b) != MaxLabelLength {
		t.Errorf("two long values sharing 60 characters: %q and %q, want distinct 63-character labels", a, b)
	}
	if a != LabelValue(strings.Repeat("a", 60)+"-one") {
		t.Errorf("LabelValue is not deterministic")
	}
}

func TestLabelKey(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"CrossplaneTag": {
			reason: "crossplane-runtime's tag keys are valid GCP keys.",
			in:     "crossplane-providerconfig-kind",
			want:   "crossplane-providerconfig-kind",
		},
		"Domain": {
			reason: "A Kubernetes-style key loses its dots and slash.",
			in:     "example.com/Team",
			want:   "example_com_team",
		},
		"Digit": {
			reason: "A key must start with a letter.",
			in:     "1st",
			want:   "x1st",
		},
		"Empty": {
			reason: "A key cannot be empty.",
			in:     "",
			want:   "x",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := LabelKey(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nLabelKey(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if !gcpLabelKey.MatchString(got) {
				t.Errorf("\n%s\nLabelKey(%q) = %q, which GCP refuses", tc.reason, tc.in, got)
			}
		})
	}
	if got := LabelKey("_" + strings.Repeat("k", 80)); !gcpLabelKey.MatchString(got) {
		t.Errorf("LabelKey of a long key starting with '_' = %q, which GCP refuses", got)
	}
}

func TestLabels(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     map[string]string
		want   map[string]string
	}{
		"Nil": {
			reason: "No labels stay no labels.",
		},
		"Sanitised": {
			reason: "Keys and values are both made GCP labels.",
			in:     map[string]string{"crossplane-kind": "securitypolicy.cloudarmor.armorplane.io", "crossplane-name": "edge"},
			want:   map[string]string{"crossplane-kind": "securitypolicy_cloudarmor_armorplane_io", "crossplane-name": "edge"},
		},
		"Collision": {
			reason: "Two keys that become one label keep the value of the key that sorts last, whatever the map order.",
			in:     map[string]string{"a.b": "first", "a/b": "second", "a_b": "third"},
			want:   map[string]string{"a_b": "third"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for range 20 { // map order varies between runs
				if diff := cmp.Diff(tc.want, Labels(tc.in)); diff != "" {
					t.Fatalf("\n%s\nLabels(...): -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
