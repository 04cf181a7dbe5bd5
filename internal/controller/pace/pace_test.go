package pace

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestDue(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	t0 := time.Unix(1000, 0)
	type look struct {
		at          time.Duration
		fingerprint string
		written     bool
	}
	type answer struct {
		Due   bool
		After time.Duration
	}
	cases := map[string]struct {
		reason string
		looks  []look
		want   []answer
	}{
		"FirstLookWritesAtOnce": {
			reason: "After a start nothing is known of the data's movement: a status that differs is written at once.",
			looks:  []look{{0, "a", false}},
			want:   []answer{{true, 0}},
		},
		"FirstLookAlreadyWritten": {
			reason: "A status that holds the data is not written.",
			looks:  []look{{0, "a", true}},
			want:   []answer{{false, 0}},
		},
		"SingleChangeWaitsQuiet": {
			reason: "A change is written once the data has been quiet for 2 s.",
			looks:  []look{{0, "a", true}, {10 * time.Second, "b", false}, {12 * time.Second, "b", false}},
			want:   []answer{{false, 0}, {false, 2 * time.Second}, {true, 0}},
		},
		"BurstWrittenOnceQuiet": {
			reason: "Changes 1 s apart keep postponing the write until the data is quiet.",
			looks: []look{{0, "a", true}, {1 * time.Second, "b", false}, {2 * time.Second, "c", false},
				{3 * time.Second, "d", false}, {4500 * time.Millisecond, "d", false}, {5 * time.Second, "d", false}},
			want: []answer{{false, 0}, {false, 2 * time.Second}, {false, 2 * time.Second},
				{false, 2 * time.Second}, {false, 500 * time.Millisecond}, {true, 0}},
		},
		"TrickleWrittenEveryMax": {
			reason: "Data that never stays quiet is written 30 s after its first unwritten change.",
			looks:  []look{{0, "a", true}, {1 * time.Second, "b", false}, {30 * time.Second, "c", false}, {31 * time.Second, "d", false}},
			want:   []answer{{false, 0}, {false, 2 * time.Second}, {false, 1 * time.Second}, {true, 0}},
		},
		"WritesKeptEveryApart": {
			reason: "Data changing just slower than Quiet, for ever, is written at most every 5 s: each write costs the composite about four of the breaker's tokens, which refills one a second.",
			looks: []look{{0, "a", false}, {2500 * time.Millisecond, "b", false}, {4500 * time.Millisecond, "b", false},
				{5 * time.Second, "b", false}, {7500 * time.Millisecond, "c", false}, {9500 * time.Millisecond, "c", false}, {10 * time.Second, "c", false}},
			want: []answer{{true, 0}, {false, 2 * time.Second}, {false, 500 * time.Millisecond},
				{true, 0}, {false, 2 * time.Second}, {false, 500 * time.Millisecond}, {true, 0}},
		},
		"QuietWriteAfterEveryIsNotDelayed": {
			reason: "A change long after the last write waits for Quiet only.",
			looks:  []look{{0, "a", false}, {10 * time.Second, "b", false}, {12 * time.Second, "b", false}},
			want:   []answer{{true, 0}, {false, 2 * time.Second}, {true, 0}},
		},
		"ChangeBackNeedsNoWrite": {
			reason: "Data that changes back to what the status holds needs no write, and clears the wait.",
			looks:  []look{{0, "a", true}, {1 * time.Second, "b", false}, {2 * time.Second, "a", true}, {40 * time.Second, "c", false}},
			want:   []answer{{false, 0}, {false, 2 * time.Second}, {false, 0}, {false, 2 * time.Second}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := New(DefaultQuiet, DefaultMax, DefaultEvery)
			got := make([]answer, 0, len(tc.looks))
			for _, l := range tc.looks {
				due, after := p.Due(key, l.fingerprint, l.written, t0.Add(l.at))
				if due {
					p.Written(key, l.fingerprint, t0.Add(l.at))
				}
				got = append(got, answer{due, after})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nDue(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWrittenAtOnce(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	t0 := time.Unix(1000, 0)
	p := New(DefaultQuiet, DefaultMax, DefaultEvery)
	// Written for another reason (a new spec): the next change is paced, not
	// taken for a first look.
	p.Written(key, "a", t0)
	if due, after := p.Due(key, "b", false, t0.Add(250*time.Millisecond)); due || after != DefaultQuiet {
		t.Errorf("Due after Written: want false and %s, got %t and %s", DefaultQuiet, due, after)
	}
}

func TestForget(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	t0 := time.Unix(1000, 0)
	p := New(DefaultQuiet, DefaultMax, DefaultEvery)
	p.Due(key, "a", true, t0)
	if due, _ := p.Due(key, "b", false, t0.Add(time.Second)); due {
		t.Fatalf("Due right after a change: want false")
	}
	p.Forget(key)
	if due, _ := p.Due(key, "b", false, t0.Add(time.Second)); !due {
		t.Errorf("Due after Forget: want true (a first look writes at once)")
	}
}
