// Package docs_test checks docs/troubleshooting.md and docs/metrics.md against the code:
// every condition reason and event reason the provider declares has a row in the
// troubleshooting guide, and every metric it defines, with its labels and their fixed
// values, is listed in the metrics guide.
package docs_test

import (
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// module is the repository's Go module.
const module = "github.com/armorplane/provider-cloudarmor"

// sourceDirs are the folders whose code the docs describe. apis/ declares the reasons
// the controllers share (dry run, SecurityPolicyAllowlist).
var sourceDirs = []string{"internal", "cmd", "apis"}

const (
	troubleshooting = "docs/troubleshooting.md"
	metricsDoc      = "docs/metrics.md"
)

var (
	parseOnce sync.Once
	parsed    *source
	parseErr  error
)

// repoSource parses the repository's code once for all tests.
func repoSource(t *testing.T) *source {
	t.Helper()
	parseOnce.Do(func() { parsed, parseErr = parseSource(repo.Root(), module, sourceDirs...) })
	if parseErr != nil {
		t.Fatalf("cannot parse the repository's code: %v", parseErr)
	}
	return parsed
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// tableWords returns the backquoted words of a Markdown file's table rows.
func tableWords(t *testing.T, doc string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, line := range tableRows(t, doc) {
		for _, m := range backquoted.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// tableRows returns the lines of a Markdown file's tables, header rows included.
func tableRows(t *testing.T, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(repo.Path(doc))
	if err != nil {
		t.Fatalf("cannot read %s: %v", doc, err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			rows = append(rows, line)
		}
	}
	return rows
}

// missing returns the names of d not in words, each with where the code declares it.
func missing(d decls, words map[string]bool) []string {
	var out []string
	for _, n := range d.names() {
		if !words[n] {
			out = append(out, n+" (declared at "+d.where(n)+")")
		}
	}
	return out
}

// atLeast fails t if the code yielded fewer than min names: a collector that finds
// nothing would otherwise pass.
func atLeast(t *testing.T, what string, d decls, min int) {
	t.Helper()
	if len(d) < min {
		t.Errorf("found %d %s in %v, want at least %d: the collector no longer finds them: %v", len(d), what, sourceDirs, min, d.names())
	}
}

func TestTroubleshootingHasEveryReason(t *testing.T) {
	type want struct {
		min int
	}
	cases := map[string]struct {
		reason  string
		collect func(*source) (decls, []string)
		want    want
	}{
		"ConditionReasons": {
			reason:  "Every condition reason the code declares (a ConditionReason constant, or a Reason* string of the composition function) has a row in " + troubleshooting + ".",
			collect: (*source).conditionReasons,
			want:    want{min: 30},
		},
		"EventReasons": {
			reason:  "Every event reason the code declares (an event.Reason constant, or a literal given to event.Warning or event.Normal) has a row in " + troubleshooting + ".",
			collect: (*source).eventReasons,
			want:    want{min: 5},
		},
	}
	words := tableWords(t, troubleshooting)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, unresolved := tc.collect(repoSource(t))
			if diff := cmp.Diff([]string(nil), unresolved); diff != "" {
				t.Errorf("\n%s\nreasons the test cannot evaluate: -want, +got:\n%s", tc.reason, diff)
			}
			atLeast(t, name, got, tc.want.min)
			if m := missing(got, words); len(m) > 0 {
				t.Errorf("\n%s\n%d reasons have no `Reason` in a table row of %s:\n\t%s", tc.reason, len(m), troubleshooting, strings.Join(m, "\n\t"))
			}
			t.Logf("%d %s: %s", len(got), name, strings.Join(got.names(), " "))
		})
	}
}

func TestMetricsDocListsEveryMetric(t *testing.T) {
	s := repoSource(t)
	names, labels, unresolved := s.metrics()
	if diff := cmp.Diff([]string(nil), unresolved); diff != "" {
		t.Errorf("metrics the test cannot evaluate: -want, +got:\n%s", diff)
	}
	words := tableWords(t, metricsDoc)

	cases := map[string]struct {
		reason string
		got    decls
		min    int
	}{
		"Metrics": {
			reason: "Every metric the code defines (prometheus.*Opts, prometheus.NewDesc) has a row in " + metricsDoc + ".",
			got:    names,
			min:    10,
		},
		"Labels": {
			reason: "Every label name of those metrics has a row in " + metricsDoc + ".",
			got:    labels,
			min:    4,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			atLeast(t, name, tc.got, tc.min)
			if m := missing(tc.got, words); len(m) > 0 {
				t.Errorf("\n%s\n%d are not backquoted in a table row of %s:\n\t%s", tc.reason, len(m), metricsDoc, strings.Join(m, "\n\t"))
			}
			t.Logf("%d %s: %s", len(tc.got), name, strings.Join(tc.got.names(), " "))
		})
	}
}

func TestMetricsDocListsEveryLabelValue(t *testing.T) {
	s := repoSource(t)
	cases := map[string]struct {
		reason string
		label  string
		values decls
		min    int
	}{
		"Method": {
			reason: "The method label takes the names of gcp.methodNames, one per GCP client method.",
			label:  "method",
			values: s.tableValues("internal/clients/gcp", "methodNames"),
			min:    20,
		},
		"Result": {
			reason: "The result label takes the names of gcp.opResultNames.",
			label:  "result",
			values: s.tableValues("internal/clients/gcp", "opResultNames"),
			min:    4,
		},
		"Code": {
			reason: "The code label is an HTTP status or one of the gcp.Code* constants.",
			label:  "code",
			values: s.prefixedConsts("internal/clients/gcp", "Code"),
			min:    2,
		},
		"Reason": {
			reason: "The reason label of the ownership counter takes the ownership.Conflict* constants.",
			label:  "reason",
			values: s.prefixedConsts("internal/controller/ownership", "Conflict"),
			min:    4,
		},
		"Kind": {
			reason: "The kind label takes the kinds the ownership counters are given, by WithLabelValues, CountConflicts, or the table of pairs made at start.",
			label:  "kind",
			values: s.kindArgs("WithLabelValues", "CountConflicts"),
			min:    4,
		},
	}
	rows := tableRows(t, metricsDoc)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			atLeast(t, name+" values", tc.values, tc.min)
			// The label's row in the labels table: its first cell is `label`.
			prefix := "| `" + tc.label + "` |"
			var row []string
			for _, r := range rows {
				if strings.HasPrefix(strings.TrimSpace(r), prefix) {
					row = append(row, r)
				}
			}
			if len(row) != 1 {
				t.Fatalf("\n%s\n%s has %d rows starting %q, want 1", tc.reason, metricsDoc, len(row), prefix)
			}
			words := map[string]bool{}
			for _, m := range backquoted.FindAllStringSubmatch(row[0], -1) {
				words[m[1]] = true
			}
			if m := missing(tc.values, words); len(m) > 0 {
				t.Errorf("\n%s\n%d values are not backquoted in the %s row of %s:\n\t%s", tc.reason, len(m), tc.label, metricsDoc, strings.Join(m, "\n\t"))
			}
			t.Logf("%d %s values: %s", len(tc.values), tc.label, strings.Join(tc.values.names(), " "))
		})
	}
}

// TestCollectors checks the collectors on small files, so that a collector broken by a
// change of this test cannot make the checks above pass vacuously.
func TestCollectors(t *testing.T) {
	files := map[string]string{
		"internal/a/a.go": `package a

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/armorplane/provider-cloudarmor/apis/b"
)

const ReasonSingle xpv2.ConditionReason = "Single"

const (
	ReasonTyped xpv2.ConditionReason = "Typed"
	reasonRef   xpv2.ConditionReason = b.ReasonShared
	untyped                          = "NotAReason"
	evt         event.Reason         = "Evt"
)

const msgHere = "Here"

var m = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ns", Subsystem: "sub", Name: "thing"}, []string{"l1", "l2"})
var d = prometheus.NewDesc("whole_name_total", "help", []string{"l3"}, nil)
var n = prometheus.NewCounter(prometheus.CounterOpts{Name: "plain_total"})

var names = [2]string{0: "One", 1: "Two"}

func f(r event.Recorder) {
	r.Event(nil, event.Warning("Literal", nil))
	r.Event(nil, event.Normal(evt, ""))
	r.Event(nil, event.Normal(msgHere, ""))
	conflicts.WithLabelValues(b.WidgetKind, "x")
	for _, kr := range [][2]string{{b.GadgetKind, "y"}} {
		_ = kr
	}
}
`,
		"apis/b/b.go": `package b

type ConditionReason string

const (
	ReasonShared = "Shared"
	ReasonOwn ConditionReason = "Own"
)
`,
		"internal/fn/fn.go": `package fn

import "github.com/crossplane/function-sdk-go/response"

const (
	ReasonComposed = "Composed"
	ReasonOther    = "Other"
	TypeCurrent    = "Current"
)

var _ = response.ConditionTrue
`,
	}
	s, err := parseFiles(module, files)
	if err != nil {
		t.Fatal(err)
	}
	cr, cu := s.conditionReasons()
	er, eu := s.eventReasons()
	mn, ml, mu := s.metrics()

	type want struct {
		Names      []string
		Unresolved []string
	}
	cases := map[string]struct {
		reason string
		got    decls
		gotU   []string
		want   want
	}{
		"ConditionReasons": {
			reason: "Typed constants in and out of blocks, one valued by another package's constant, a package's own ConditionReason type, and the function's Reason* strings; untyped constants elsewhere are not reasons.",
			got:    cr, gotU: cu,
			want: want{Names: []string{"Composed", "Other", "Own", "Shared", "Single", "Typed"}},
		},
		"EventReasons": {
			reason: "An event.Reason constant, a literal, and a constant given to event.Warning or event.Normal.",
			got:    er, gotU: eu,
			want: want{Names: []string{"Evt", "Here", "Literal"}},
		},
		"Metrics": {
			reason: "Namespace, Subsystem and Name joined by _, NewDesc's name, and a plain Name.",
			got:    mn, gotU: mu,
			want: want{Names: []string{"ns_sub_thing", "plain_total", "whole_name_total"}},
		},
		"Labels": {
			reason: "The labels of New*Vec and of NewDesc.",
			got:    ml,
			want:   want{Names: []string{"l1", "l2", "l3"}},
		},
		"TableValues": {
			reason: "The values of a keyed array literal.",
			got:    s.tableValues("internal/a", "names"),
			want:   want{Names: []string{"One", "Two"}},
		},
		"PrefixedConsts": {
			reason: "The untyped constants of a package by prefix.",
			got:    s.prefixedConsts("internal/fn", "Reason"),
			want:   want{Names: []string{"Composed", "Other"}},
		},
		"Kinds": {
			reason: "Kinds given to WithLabelValues, and in a table of pairs.",
			got:    s.kindArgs("WithLabelValues"),
			want:   want{Names: []string{"Gadget", "Widget"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, want{Names: tc.got.names(), Unresolved: tc.gotU}); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}

	// Every name carries where it is declared.
	if got, wantAt := cr.where("Single"), "internal/a/a.go:11"; got != wantAt {
		t.Errorf("where Single is declared: got %q, want %q", got, wantAt)
	}
}
