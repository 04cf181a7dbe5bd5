package securitypolicyattachment

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

func TestFightDecide(t *testing.T) {
	const (
		ours   = "projects/p/global/securityPolicies/ours"
		theirs = "projects/p/global/securityPolicies/theirs"
	)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	atp := func(d time.Duration) *metav1.Time { t := at(d); return &t }
	f := Fight{Limit: 3, Window: 10 * time.Minute, Backoff: 10 * time.Second}
	contest := &v1alpha1.ContestObservation{Value: theirs, Reversals: 3, LastReversalTime: at(time.Minute), Generation: 1}

	cases := map[string]struct {
		reason string
		in     Input
		want   Decision
	}{
		"FirstAttach": {
			reason: "A field this object never wrote is written at once: nothing was undone.",
			in:     Input{Now: t0, Desired: ours, Held: theirs, Generation: 1},
			want:   Decision{Action: Apply},
		},
		"Holds": {
			reason: "A field naming our policy needs nothing.",
			in: Input{Now: t0.Add(time.Minute), Desired: ours, Held: ours, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(0)}},
			want: Decision{Action: Hold},
		},
		"FirstReversalWaits": {
			reason: "Our write undone: counted once, and written again after Backoff.",
			in: Input{Now: t0.Add(3 * time.Second), Desired: ours, Held: theirs, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(0)}},
			want: Decision{Action: Wait, At: t0.Add(13 * time.Second), Reversals: []metav1.Time{at(3 * time.Second)}},
		},
		"SameReversalCountedOnce": {
			reason: "Seeing the same reversal again while waiting does not count it again.",
			in: Input{Now: t0.Add(8 * time.Second), Desired: ours, Held: theirs, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(0),
					ReversalTimes: []metav1.Time{at(3 * time.Second)}}},
			want: Decision{Action: Wait, At: t0.Add(13 * time.Second), Reversals: []metav1.Time{at(3 * time.Second)}},
		},
		"BackoffOver": {
			reason: "Once the backoff has passed, write again.",
			in: Input{Now: t0.Add(14 * time.Second), Desired: ours, Held: theirs, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(0),
					ReversalTimes: []metav1.Time{at(3 * time.Second)}}},
			want: Decision{Action: Apply, Reversals: []metav1.Time{at(3 * time.Second)}},
		},
		"SecondReversalDoublesTheDelay": {
			reason: "Undone again after writing again: the second reversal waits twice as long.",
			in: Input{Now: t0.Add(20 * time.Second), Desired: ours, Held: theirs, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(14 * time.Second),
					ReversalTimes: []metav1.Time{at(3 * time.Second)}}},
			want: Decision{Action: Wait, At: t0.Add(40 * time.Second), Reversals: []metav1.Time{at(3 * time.Second), at(20 * time.Second)}},
		},
		"ThirdReversalStops": {
			reason: "The Limit-th reversal within the window stops writing and records the contest.",
			in: Input{Now: t0.Add(time.Minute), Desired: ours, Held: theirs, Generation: 1, Reapply: "a",
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(41 * time.Second),
					ReversalTimes: []metav1.Time{at(3 * time.Second), at(20 * time.Second)}}},
			want: Decision{Action: Stop, Reversals: []metav1.Time{at(3 * time.Second), at(20 * time.Second), at(time.Minute)},
				Contest: &v1alpha1.ContestObservation{Value: theirs, Reversals: 3, LastReversalTime: at(time.Minute), Generation: 1, Reapply: "a"}},
		},
		"OldReversalsForgotten": {
			reason: "Reversals older than the window do not count toward a contest.",
			in: Input{Now: t0.Add(20 * time.Minute), Desired: ours, Held: theirs, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(15 * time.Minute),
					ReversalTimes: []metav1.Time{at(3 * time.Second), at(20 * time.Second)}}},
			want: Decision{Action: Wait, At: t0.Add(20*time.Minute + 10*time.Second), Reversals: []metav1.Time{at(20 * time.Minute)}},
		},
		"ContestStands": {
			reason: "A contested attachment writes nothing while the field names another policy, whatever it names now.",
			in: Input{Now: t0.Add(time.Hour), Desired: ours, Held: "", Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(41 * time.Second), Contest: contest,
					ReversalTimes: []metav1.Time{at(3 * time.Second), at(20 * time.Second), at(time.Minute)}}},
			want: Decision{Action: Stop, Contest: contest,
				Reversals: []metav1.Time{at(3 * time.Second), at(20 * time.Second), at(time.Minute)}},
		},
		"SpecChangeEndsContest": {
			reason: "A new generation ends the contest: write again, counting afresh.",
			in: Input{Now: t0.Add(time.Hour), Desired: ours, Held: theirs, Generation: 2,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(41 * time.Second), Contest: contest,
					ReversalTimes: []metav1.Time{at(3 * time.Second), at(20 * time.Second), at(time.Minute)}}},
			want: Decision{Action: Apply},
		},
		"ReapplyAnnotationEndsContest": {
			reason: "A new value of the reapply annotation ends the contest too.",
			in: Input{Now: t0.Add(time.Hour), Desired: ours, Held: theirs, Generation: 1, Reapply: "now",
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(41 * time.Second), Contest: contest}},
			want: Decision{Action: Apply},
		},
		"ContestEndsWhenOursHolds": {
			reason: "Once GCP names our policy again, the contest is over.",
			in: Input{Now: t0.Add(time.Hour), Desired: ours, Held: ours, Generation: 1,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(41 * time.Second), Contest: contest}},
			want: Decision{Action: Hold},
		},
		"NewPolicyIsNoReversal": {
			reason: "After a spec change to another policy, the field naming the old one is not a reversal.",
			in: Input{Now: t0.Add(time.Minute), Desired: "projects/p/global/securityPolicies/new", Held: ours, Generation: 2,
				Observed: v1alpha1.SecurityPolicyAttachmentObservation{AppliedPolicy: ours, LastAppliedTime: atp(0)}},
			want: Decision{Action: Apply},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := f.Decide(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFightBounded plays an attachment against a writer that undoes each
// write at once, polled every few seconds for an hour: the attachment
// writes Limit times, then stops.
func TestFightBounded(t *testing.T) {
	const ours, theirs = "ours", "theirs"
	f := DefaultFight
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var o v1alpha1.SecurityPolicyAttachmentObservation
	held, writes := theirs, 0
	for range 1200 {
		now = now.Add(3 * time.Second)
		d := f.Decide(Input{Now: now, Desired: ours, Held: held, Observed: o, Generation: 1})
		o.ReversalTimes, o.Contest = d.Reversals, d.Contest
		if d.Action == Apply {
			writes++
			t := metav1.NewTime(now)
			o.AppliedPolicy, o.LastAppliedTime = ours, &t
			held = theirs // the other writer undoes it before the next poll
		}
	}
	if writes != f.Limit || o.Contest == nil || o.Contest.Reversals != f.Limit {
		t.Errorf("writes %d (want %d), contest %+v", writes, f.Limit, o.Contest)
	}
}
