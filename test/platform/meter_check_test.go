package platformsuite

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMeterCheck: what one sample of the gap meter requires, and whether it counts.
func TestMeterCheck(t *testing.T) {
	type want struct {
		Samples int
		Gaps    int
	}
	cases := map[string]struct {
		reason string
		before []string
		// samples are what GCP allowed and what the cluster wanted, sample after sample.
		samples [][2][]string
		want    want
	}{
		"NothingToCheck": {
			reason:  "A sample while nothing is wanted checks nothing and is not counted.",
			samples: [][2][]string{{{"a"}, {}}},
		},
		"AddedSourceSeenThenLost": {
			reason:  "During a burst of adds a source GCP allowed once must stay allowed while wanted: it used to be checked only after the burst.",
			before:  []string{"a"},
			samples: [][2][]string{{{"a", "b"}, {"a", "b"}}, {{"a"}, {"a", "b"}}},
			want:    want{Samples: 2, Gaps: 1},
		},
		"AddedSourceNotYetInGCP": {
			reason:  "A new source GCP has not allowed yet is not a gap: it is latency.",
			before:  []string{"a"},
			samples: [][2][]string{{{"a"}, {"a", "b"}}},
			want:    want{Samples: 1},
		},
		"RemovedSourceGoes": {
			reason:  "A source the cluster no longer wants may leave GCP; the others must stay.",
			before:  []string{"a", "b"},
			samples: [][2][]string{{{"a"}, {"a"}}, {{}, {"a"}}},
			want:    want{Samples: 2, Gaps: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := &meter{gaps: map[string]int{}, lost: map[string]string{}}
			m.setMust("change", tc.before, nil)
			for _, s := range tc.samples {
				m.check(s[0], s[1])
			}
			if diff := cmp.Diff(tc.want, want{Samples: m.samples, Gaps: m.gaps["change"]}); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFloorOf: the least GCP needs for a change, judged from what changed.
func TestFloorOf(t *testing.T) {
	type want struct {
		Writes int64
		After  time.Duration
	}
	cases := map[string]struct {
		reason        string
		before, after []string
		rules         bool
		burst         time.Duration
		want          want
	}{
		"NoChange": {
			reason: "Nothing changed: no write is needed.",
			before: []string{"a"}, after: []string{"a"}, rules: true,
		},
		"RulesAtOnce": {
			reason: "Twenty-five sources added at once need three range rules, one operation after another.",
			after:  sources(25), rules: true,
			want: want{Writes: 3, After: 3 * opLatency},
		},
		"RulesTrickled": {
			reason: "A trickle that took longer than its writes leaves one operation after its last write.",
			after:  sources(25), rules: true, burst: 2500 * time.Millisecond,
			want: want{Writes: 3, After: opLatency},
		},
		"RulesRemoved": {
			reason: "Removals count like additions.",
			before: sources(11), after: sources(1), rules: true,
			want: want{Writes: 1, After: opLatency},
		},
		"Group": {
			reason: "In mode addressGroup one call adds every item.",
			after:  sources(200),
			want:   want{Writes: 1, After: opLatency},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes, after := floorOf(changedSources(tc.before, tc.after), tc.rules, tc.burst)
			if diff := cmp.Diff(tc.want, want{Writes: writes, After: after}); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWritesAllowed: the writes target of an addition in mode rules.
func TestWritesAllowed(t *testing.T) {
	cases := map[string]struct {
		reason string
		floor  int64
		want   int64
	}{
		"SmallFloor": {
			reason: "Twenty ranges may share a first write with the rule the earlier ones left partly filled, and write a rule still filling when the batch window ends: 4 writes for a floor of 2.",
			floor:  2, want: 4,
		},
		"Floor10": {
			reason: "100 ranges: 1.3 times the floor.",
			floor:  10, want: 13,
		},
		"Floor20": {
			reason: "200 ranges: 1.3 times the floor.",
			floor:  20, want: 26,
		},
		"Floor50": {
			reason: "500 ranges: 1.3 times the floor.",
			floor:  50, want: 65,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, writesAllowed(tc.floor)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func sources(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.%d.%d/32", i/256, i%256)
	}
	return out
}
