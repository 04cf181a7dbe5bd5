package setup

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
)

// byExternalName groups objects by their external name, as the SecurityPolicy
// controller does.
func byExternalName(mg resource.Managed) string { return meta.GetExternalName(mg) }

func named(n string) resource.Managed {
	mg := &fake.Managed{}
	meta.SetExternalName(mg, n)
	return mg
}

func TestUntilWindow(t *testing.T) {
	const minute = time.Minute
	epoch := time.Unix(0, 0)
	cases := map[string]struct {
		reason string
		now    time.Time
		phase  time.Duration
		want   time.Duration
	}{
		"PolledInItsWindow": {
			reason: "An object polled at its window's start next polls one interval later.",
			now:    epoch.Add(10 * minute).Add(20 * time.Second),
			phase:  20 * time.Second,
			want:   minute,
		},
		"PolledLateInItsWindow": {
			reason: "An object polled 3 s into its window next polls at the next window's start.",
			now:    epoch.Add(10 * minute).Add(23 * time.Second),
			phase:  20 * time.Second,
			want:   57 * time.Second,
		},
		"WindowSoon": {
			reason: "A window less than half an interval away is skipped: no object polls twice in quick succession.",
			now:    epoch.Add(10 * minute).Add(10 * time.Second),
			phase:  20 * time.Second,
			want:   70 * time.Second,
		},
		"WindowHalfAway": {
			reason: "A window exactly half an interval away is taken.",
			now:    epoch.Add(10 * minute).Add(50 * time.Second),
			phase:  20 * time.Second,
			want:   30 * time.Second,
		},
		"WindowJustOverHalfAway": {
			reason: "A window just over half an interval away is taken.",
			now:    epoch.Add(10 * minute).Add(49 * time.Second),
			phase:  20 * time.Second,
			want:   31 * time.Second,
		},
		"BeforeTheEpoch": {
			reason: "Offsets are computed the same way for instants before the Unix epoch.",
			now:    epoch.Add(-minute).Add(50 * time.Second),
			phase:  20 * time.Second,
			want:   30 * time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := untilWindow(tc.now, minute, tc.phase)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nuntilWindow(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPollHook(t *testing.T) {
	const interval = time.Minute
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) // a whole minute since the epoch
	cases := map[string]struct {
		reason   string
		objects  []resource.Managed
		polledAt []time.Duration // after start, one per object
		random   float64
		want     []time.Duration // offset of each next poll in the interval
	}{
		"OnePolicyPolledTogether": {
			reason:   "Objects of one policy reconciled at different times next poll at the same offset in the interval: their window's start plus the spread's offset.",
			objects:  []resource.Managed{named("a"), named("a"), named("a")},
			polledAt: []time.Duration{0, 17 * time.Second, 44 * time.Second},
			random:   0.5,
			want:     repeat(phase("a", interval)+2500*time.Millisecond, 3),
		},
		"NoGroupJitters": {
			reason:   "An object whose policy is not known yet polls an interval plus the jitter after its reconcile.",
			objects:  []resource.Managed{named("")},
			polledAt: []time.Duration{5 * time.Second},
			random:   1,
			want:     []time.Duration{15 * time.Second},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := make([]time.Duration, len(tc.objects))
			for i, mg := range tc.objects {
				now := start.Add(tc.polledAt[i])
				h := hook(byExternalName, 5*time.Second, 10*time.Second, func() time.Time { return now }, func() float64 { return tc.random })
				wait := h(mg, interval)
				if wait < interval/2 || wait > interval*3/2 {
					t.Errorf("%s\nobject %d polls %s after its reconcile; want between half and one and a half intervals", tc.reason, i, wait)
				}
				got[i] = (tc.polledAt[i] + wait) % interval
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\noffsets of the next polls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestPhaseSpreadsPolicies(t *testing.T) {
	// Policies should not all share a window: with 100 policies the phases
	// should fall into most of the 12 five-second windows of a minute.
	seen := map[time.Duration]bool{}
	for i := range 100 {
		seen[phase("policy-"+string(rune('a'+i%26))+string(rune('a'+i/26)), time.Minute)/(5*time.Second)] = true
	}
	if len(seen) < 10 {
		t.Errorf("phases of 100 policies fell into %d of 12 five-second windows; want at least 10", len(seen))
	}
}
