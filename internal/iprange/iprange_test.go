package iprange

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type priorityRange struct{ First, Last int64 }

// pack is Pack with no priority taken.
func pack(ranges []netip.Prefix, current map[int64][]netip.Prefix, r priorityRange) ([]Rule, error) {
	return Pack(ranges, current, r.First, r.Last, nil)
}

func ips(from, n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := from; i < from+n; i++ {
		a := netip.AddrFrom4([4]byte{198, 51, byte(i / 256), byte(i % 256)})
		out = append(out, netip.PrefixFrom(a, 32))
	}
	return out
}

func mustPrefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// asObserved turns rules into what Crossplane observes on the next reconcile.
func asObserved(rules []Rule) map[int64][]netip.Prefix {
	out := map[int64][]netip.Prefix{}
	for _, r := range rules {
		out[r.Priority] = r.Ranges
	}
	return out
}

// changed counts the rules that differ between two assignments: added, removed or modified.
func changed(before, after []Rule) int {
	b, a := asObserved(before), asObserved(after)
	n := 0
	for p, rs := range b {
		if !cmp.Equal(rs, a[p], cmpopts.EquateComparable(netip.Prefix{})) {
			n++
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			n++
		}
	}
	return n
}

var cmpPrefix = cmpopts.EquateComparable(netip.Prefix{})

func TestParse(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"CIDRv4":          {in: "203.0.113.0/24", want: "203.0.113.0/24"},
		"BareIPv4":        {in: "203.0.113.7", want: "203.0.113.7/32"},
		"BareIPv6":        {in: "2001:db8::1", want: "2001:db8::1/128"},
		"CIDRv6":          {in: "2001:db8:abcd::/48", want: "2001:db8:abcd::/48"},
		"MappedIPv4":      {in: "::ffff:203.0.113.7", want: "203.0.113.7/32"},
		"Spaces":          {in: " 10.0.0.0/8 ", want: "10.0.0.0/8"},
		"HostBitsSet":     {in: "203.0.113.7/24", wantErr: true},
		"NotAnAddress":    {in: "office", wantErr: true},
		"BadPrefixLength": {in: "10.0.0.0/33", wantErr: true},
		"Wildcard":        {in: "*", wantErr: true},
		"Zone":            {in: "fe80::1%eth0", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q): err = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if err == nil && got.String() != tc.want {
				t.Errorf("Parse(%q): -want, +got:\n%s", tc.in, cmp.Diff(tc.want, got.String()))
			}
		})
	}
}

func TestPackChunking(t *testing.T) {
	r := priorityRange{First: 1000, Last: 1009}
	cases := map[string]struct {
		n        int
		wantSize []int
	}{
		"Zero":        {n: 0, wantSize: []int{}},
		"One":         {n: 1, wantSize: []int{1}},
		"Ten":         {n: 10, wantSize: []int{10}},
		"Eleven":      {n: 11, wantSize: []int{10, 1}},
		"ThirtySeven": {n: 37, wantSize: []int{10, 10, 10, 7}},
		"Full":        {n: 100, wantSize: []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pack(ips(0, tc.n), nil, r)
			if err != nil {
				t.Fatal(err)
			}
			sizes := []int{}
			for i, rule := range got {
				sizes = append(sizes, len(rule.Ranges))
				if rule.Priority != r.First+int64(i) {
					t.Errorf("rule %d: priority %d, want %d", i, rule.Priority, r.First+int64(i))
				}
			}
			if diff := cmp.Diff(tc.wantSize, sizes); diff != "" {
				t.Errorf("pack(%d ranges): rule sizes -want, +got:\n%s", tc.n, diff)
			}
		})
	}
}

func TestPackOverflow(t *testing.T) {
	r := priorityRange{First: 1000, Last: 1002}
	_, err := pack(ips(0, 31), nil, r)
	want := "31 source ranges need 4 rules of 10, but priorityRange 1000-1002 reserves only 3: widen the range or remove sources"
	if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
		t.Errorf("pack(31 ranges, 3 rules): -want error, +got error:\n%s", diff)
	}
	if _, err := pack(ips(0, 30), nil, r); err != nil {
		t.Errorf("pack(30 ranges, 3 rules): %v", err)
	}
}

// TestPackChurn checks stability: each step starts from the rules the previous step produced,
// as Crossplane observes them, and may change at most the given number of rules.
func TestPackChurn(t *testing.T) {
	r := priorityRange{First: 1000, Last: 1099}
	base := ips(0, 37)
	cases := map[string]struct {
		reason      string
		next        []netip.Prefix
		wantChanged int
	}{
		"Unchanged": {
			reason:      "The same addresses change nothing.",
			next:        base,
			wantChanged: 0,
		},
		"ReplaceOne": {
			reason:      "One node replaced (one address out, one in) changes exactly one rule.",
			next:        append(append(append([]netip.Prefix{}, base[:13]...), base[14:]...), ips(500, 1)...),
			wantChanged: 1,
		},
		"ReplaceFirstWithLowerAddress": {
			reason:      "Even if the new address sorts first, only the rule that lost one changes.",
			next:        append(mustPrefixes(t, "10.0.0.1"), base[1:]...),
			wantChanged: 1,
		},
		"RemoveOne": {
			reason:      "One node removed changes one rule.",
			next:        append(append([]netip.Prefix{}, base[:5]...), base[6:]...),
			wantChanged: 1,
		},
		"AddOne": {
			reason:      "One node added changes one rule.",
			next:        append(append([]netip.Prefix{}, base...), ips(500, 1)...),
			wantChanged: 1,
		},
		"RemoveLastOfRule": {
			reason:      "Removing the only address of a rule removes that rule, nothing else.",
			next:        ips(0, 30),
			wantChanged: 1,
		},
		"AllReplaced": {
			reason:      "Every node replaced (the morning after a stopped night) rewrites every rule in place.",
			next:        ips(1000, 37),
			wantChanged: 4,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, err := pack(base, nil, r)
			if err != nil {
				t.Fatal(err)
			}
			after, err := pack(sorted(tc.next), asObserved(before), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := changed(before, after); got != tc.wantChanged {
				t.Errorf("%s\nchanged rules: want %d, got %d\nbefore: %v\nafter:  %v", tc.reason, tc.wantChanged, got, before, after)
			}
			for _, rule := range after {
				if len(rule.Ranges) == 0 || len(rule.Ranges) > MaxPerRule {
					t.Errorf("rule %d holds %d ranges", rule.Priority, len(rule.Ranges))
				}
			}
		})
	}
}

// TestPackLongChurn replaces one node at a time, many times over, and checks that each step
// changes exactly one rule and that no rule ever loses an address that is still wanted.
func TestPackLongChurn(t *testing.T) {
	r := priorityRange{First: 1000, Last: 1004}
	cur := ips(0, 37)
	rules, err := pack(cur, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 200 {
		out := (step * 7) % len(cur)
		next := append(append(append([]netip.Prefix{}, cur[:out]...), cur[out+1:]...), ips(1000+step, 1)...)
		after, err := pack(sorted(next), asObserved(rules), r)
		if err != nil {
			t.Fatal(err)
		}
		if got := changed(rules, after); got != 1 {
			t.Fatalf("step %d: %d rules changed, want 1", step, got)
		}
		where := map[netip.Prefix]int64{}
		for _, rule := range rules {
			for _, p := range rule.Ranges {
				where[p] = rule.Priority
			}
		}
		for _, rule := range after {
			for _, p := range rule.Ranges {
				if prio, ok := where[p]; ok && prio != rule.Priority {
					t.Fatalf("step %d: %s moved from rule %d to %d", step, p, prio, rule.Priority)
				}
			}
		}
		cur, rules = next, after
	}
}

func TestPackObserved(t *testing.T) {
	r := priorityRange{First: 1000, Last: 1002}
	cases := map[string]struct {
		reason   string
		ranges   []netip.Prefix
		observed map[int64][]netip.Prefix
		want     []Rule
	}{
		"FillHoleBeforeNewRule": {
			reason:   "A new address goes to the first rule with space, not to a new rule.",
			ranges:   sorted(append(ips(0, 12), ips(100, 1)...)),
			observed: map[int64][]netip.Prefix{1000: ips(0, 10), 1001: ips(10, 2)},
			want:     []Rule{{Priority: 1000, Ranges: ips(0, 10)}, {Priority: 1001, Ranges: append(ips(10, 2), ips(100, 1)...)}},
		},
		"ReuseLowestFreePriority": {
			reason:   "When every rule is full, a new rule opens at the lowest free priority.",
			ranges:   sorted(append(ips(0, 10), ips(100, 1)...)),
			observed: map[int64][]netip.Prefix{1001: ips(0, 10)},
			want:     []Rule{{Priority: 1000, Ranges: ips(100, 1)}, {Priority: 1001, Ranges: ips(0, 10)}},
		},
		"OutOfRangeIgnored": {
			reason:   "Rules observed outside the reserved range are not kept.",
			ranges:   ips(0, 2),
			observed: map[int64][]netip.Prefix{5000: ips(0, 2)},
			want:     []Rule{{Priority: 1000, Ranges: ips(0, 2)}},
		},
		"DuplicateAcrossRules": {
			reason:   "An address observed in two rules stays in the first only.",
			ranges:   ips(0, 2),
			observed: map[int64][]netip.Prefix{1000: ips(0, 1), 1001: ips(0, 2)},
			want:     []Rule{{Priority: 1000, Ranges: ips(0, 1)}, {Priority: 1001, Ranges: ips(1, 1)}},
		},
		"EmptiedRuleDropped": {
			reason:   "A rule whose addresses all left is dropped, never emitted empty.",
			ranges:   ips(0, 1),
			observed: map[int64][]netip.Prefix{1000: ips(0, 1), 1001: ips(50, 3)},
			want:     []Rule{{Priority: 1000, Ranges: ips(0, 1)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pack(tc.ranges, tc.observed, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpPrefix); diff != "" {
				t.Errorf("%s\npack(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// sorted returns ps in the order Collect produces.
func sorted(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, netip.Prefix.Compare)
	return out
}

// FuzzPack checks Assign's invariants on arbitrary address sets and a churned second pass: every
// range lands in exactly one rule, no rule is empty or over the limit, priorities stay in range,
// and ranges kept between the passes do not move.
func FuzzPack(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{2, 3, 4})
	f.Add(make([]byte, 37), []byte{0, 9, 200})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		r := priorityRange{First: 100, Last: 129}
		set := func(b []byte) []netip.Prefix {
			seen := map[netip.Prefix]bool{}
			for i, x := range b {
				seen[ips(int(x)+256*(i%3), 1)[0]] = true
			}
			return sorted(slices.Collect(maps.Keys(seen)))
		}
		check := func(in []netip.Prefix, rules []Rule) {
			t.Helper()
			got := map[netip.Prefix]int{}
			for _, rule := range rules {
				if len(rule.Ranges) == 0 || len(rule.Ranges) > MaxPerRule || rule.Priority < r.First || rule.Priority > r.Last {
					t.Fatalf("bad rule %+v", rule)
				}
				for _, p := range rule.Ranges {
					got[p]++
				}
			}
			if len(got) != len(in) {
				t.Fatalf("%d ranges in, %d placed", len(in), len(got))
			}
			for _, p := range in {
				if got[p] != 1 {
					t.Fatalf("%s placed %d times", p, got[p])
				}
			}
		}
		a, b := set(first), set(second)
		before, err := pack(a, nil, r)
		if err != nil {
			return // more than 300 ranges: refused, as it should be
		}
		check(a, before)
		after, err := pack(b, asObserved(before), r)
		if err != nil {
			return
		}
		check(b, after)
		where := map[netip.Prefix]int64{}
		for _, rule := range before {
			for _, p := range rule.Ranges {
				where[p] = rule.Priority
			}
		}
		for _, rule := range after {
			for _, p := range rule.Ranges {
				if prio, ok := where[p]; ok && prio != rule.Priority {
					t.Fatalf("%s moved from rule %d to %d", p, prio, rule.Priority)
				}
			}
		}
	})
}
