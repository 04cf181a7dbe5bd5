package wafset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	type want struct {
		Set Set
		OK  bool
	}
	cases := map[string]struct {
		reason string
		name   string
		want   want
	}{
		"V33":        {"A CRS 3.3 set.", "sqli-v33-stable", want{Set{Family: "sqli", Version: VersionCRS33}, true}},
		"V422Canary": {"A CRS 4.22 canary set.", "generic-v422-canary", want{Set{Family: "generic", Version: VersionCRS422, Canary: true}, true}},
		"V30":        {"A CRS 3.0 set has no version.", "xss-stable", want{Set{Family: "xss", Version: VersionCRS30}, true}},
		"NoNodejs30": {"CRS 3.0 has no nodejs set.", "nodejs-stable", want{}},
		"NoGeneric":  {"CRS 3.3 has nodejs, not generic.", "generic-v33-stable", want{}},
		"Other":      {"cve-canary is no CRS family.", "cve-canary", want{}},
		"Unknown":    {"An unknown name.", "sqli-v34-stable", want{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, ok := Parse(tc.name)
			if diff := cmp.Diff(tc.want, want{s, ok}); diff != "" {
				t.Errorf("\n%s\nParse(%q): -want, +got:\n%s", tc.reason, tc.name, diff)
			}
		})
	}
}

func TestNames(t *testing.T) {
	n := Names()
	for _, name := range []string{"sqli-v33-stable", "nodejs-v33-canary", "generic-v422-stable", "php-canary", "cve-canary", "json-sqli-canary"} {
		if !n[name] {
			t.Errorf("Names(): %s missing", name)
		}
		if _, ok := Parse(name); !ok && name != "cve-canary" && name != "json-sqli-canary" {
			t.Errorf("Parse(%q): a name of Names() does not parse", name)
		}
	}
	if got, want := len(n), 2*(12+12+10)+2; got != want {
		t.Errorf("len(Names()) = %d, want %d", got, want)
	}
}
