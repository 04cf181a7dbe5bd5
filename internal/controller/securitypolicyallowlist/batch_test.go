package securitypolicyallowlist

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/pace"
)

func TestBatcher(t *testing.T) {
	partial := ruleChange{deferrable: true}
	full := ruleChange{complete: true, deferrable: true}
	moved := ruleChange{}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type ask struct {
		at      time.Duration // since the start
		changes map[int64]ruleChange
	}
	type answer struct {
		Wait  []int64
		After time.Duration
	}
	cases := map[string]struct {
		reason string
		asks   []ask
		want   []answer
	}{
		"FirstChangeAtOnce": {
			reason: "Nothing was written before: the change goes at once.",
			asks:   []ask{{at: 0, changes: map[int64]ruleChange{1000: partial}}},
			want:   []answer{{}},
		},
		"AfterQuietAtOnce": {
			reason: "A change a whole window after the last write is a single change: it goes at once.",
			asks:   []ask{{at: 0, changes: map[int64]ruleChange{1000: partial}}, {at: ms(2000), changes: map[int64]ruleChange{1000: partial}}},
			want:   []answer{{}, {}},
		},
		"InBurstWaits": {
			reason: "A change moments after a write waits for the rest of the burst, at most a window from when it first waited.",
			asks: []ask{
				{at: 0, changes: map[int64]ruleChange{1000: partial}},
				{at: ms(100), changes: map[int64]ruleChange{1000: partial}},
				{at: ms(1500), changes: map[int64]ruleChange{1000: partial}},
				{at: ms(2100), changes: map[int64]ruleChange{1000: partial}},
			},
			want: []answer{{}, {Wait: []int64{1000}, After: ms(2000)}, {Wait: []int64{1000}, After: ms(600)}, {}},
		},
		"FullRuleAtOnce": {
			reason: "A rule that ends full goes at once, nothing later would write it again; the partial one beside it waits.",
			asks: []ask{
				{at: 0, changes: map[int64]ruleChange{1000: partial}},
				{at: ms(100), changes: map[int64]ruleChange{1000: full, 1001: partial}},
			},
			want: []answer{{}, {Wait: []int64{1001}, After: ms(2000)}},
		},
		"MovedRangeAtOnce": {
			reason: "A change that takes a range from another rule is never held back: that rule may lose it now.",
			asks: []ask{
				{at: 0, changes: map[int64]ruleChange{1000: partial}},
				{at: ms(100), changes: map[int64]ruleChange{1000: moved}},
			},
			want: []answer{{}, {}},
		},
		"EachRuleItsOwnWindow": {
			reason: "Each rule waits a window from when it began to wait, not from when another rule did: a trickle writes each rule once, full.",
			asks: []ask{
				{at: 0, changes: map[int64]ruleChange{1000: partial}},
				{at: ms(100), changes: map[int64]ruleChange{1001: partial}},
				{at: ms(1000), changes: map[int64]ruleChange{1001: full, 1002: partial}},
				{at: ms(2500), changes: map[int64]ruleChange{1002: partial}},
			},
			want: []answer{{}, {Wait: []int64{1001}, After: ms(2000)}, {Wait: []int64{1002}, After: ms(2000)}, {Wait: []int64{1002}, After: ms(500)}},
		},
	}
	key := types.NamespacedName{Namespace: "team-a", Name: "web"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBatcher(2 * time.Second)
			start := time.Unix(1_700_000_000, 0)
			var got []answer
			for _, a := range tc.asks {
				wait, after := b.hold(key, a.changes, start.Add(a.at))
				var prios []int64
				for p := range wait {
					prios = append(prios, p)
				}
				slices.Sort(prios)
				got = append(got, answer{Wait: prios, After: after})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestBatchRanges trickles ranges into an allowlist, one every 100 ms as a
// pool of Nodes scaling up does, and counts the range rule writes GCP sees.
func TestBatchRanges(t *testing.T) {
	cases := map[string]struct {
		reason string
		window time.Duration
		add    int
		// maxWrites bounds the range rule writes; wantWrites, when set, is
		// exact.
		maxWrites, wantWrites int
	}{
		"Trickle": {
			reason:    "Forty ranges trickled in are written about once per rule: ceil(40/10) = 4 rules, each created when it gets its first range or once full.",
			window:    rangeBatchWindow,
			add:       40,
			maxWrites: 4 + 2,
		},
		"NoWindow": {
			reason:     "Without a window every step writes the rule that grew: the cost this batching removes.",
			window:     0,
			add:        40,
			wantWrites: 40,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cidrs := spread(tc.add)
			g := newGCP(t, true, allowlist(v1alpha1.AllowlistModeRules, nil, 1099))
			g.r.pacer = pace.New(0, 0, 0)
			g.r.batch = newBatcher(tc.window)
			clock := time.Unix(1_700_000_000, 0)
			g.r.now = func() time.Time { return clock }
			writes := map[string]bool{}
			count := func() {
				for _, o := range g.objects() {
					// The fake API server keeps generations still: a write
					// is a rule holding ranges it did not hold before.
					if r, ok := o.(*v1beta1.SecurityPolicyRule); ok && r.GetLabels()[LabelRole] == RoleRanges {
						writes[fmt.Sprintf("%s %v", r.GetName(), ruleRanges(r))] = true
					}
				}
			}
			for i := 1; i <= tc.add; i++ {
				g.step(allowlist(v1alpha1.AllowlistModeRules, nil, 1099, cidrs[:i]...))
				count()
				clock = clock.Add(100 * time.Millisecond)
			}
			// The burst is over: the last changes go once the window passes.
			for range 4 {
				clock = clock.Add(time.Second)
				g.step(allowlist(v1alpha1.AllowlistModeRules, nil, 1099, cidrs...))
				count()
			}
			t.Logf("%d range rule writes for %d ranges trickled in", len(writes), tc.add)
			if l := g.lacking(cidrs); len(l) > 0 {
				t.Errorf("%s\nafter the burst GCP lacks %v", tc.reason, l)
			}
			if tc.wantWrites != 0 && len(writes) != tc.wantWrites {
				t.Errorf("%s\nrange rule writes: want %d, got %d", tc.reason, tc.wantWrites, len(writes))
			}
			if tc.maxWrites != 0 && len(writes) > tc.maxWrites {
				t.Errorf("%s\nrange rule writes: want at most %d, got %d", tc.reason, tc.maxWrites, len(writes))
			}
		})
	}
}

// spread returns n /32 ranges no two of which are adjacent, so none merge.
func spread(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{203, 0, 113, byte(2 * i)}).String()+"/32")
	}
	return out
}
