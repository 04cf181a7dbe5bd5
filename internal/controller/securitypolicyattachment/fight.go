package securitypolicyattachment

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// Another writer may set the field back after the attachment set it: a GKE
// controller reconciling a BackendConfig, an upjet BackendService whose spec
// lacks the policy, a Terraform run. Writing it again at every poll would
// flap forever, each side undoing the other. A Fight decides, from what the
// attachment recorded in its status, whether to write, wait or stop.

// A Fight is how an attachment meets another writer of its field.
type Fight struct {
	// Limit is how many reversals within Window end in a contest: the
	// attachment stops writing.
	Limit int
	// Window is how long a reversal counts.
	Window time.Duration
	// Backoff is how long the attachment waits after the first reversal
	// before writing again; it doubles with each further reversal. At
	// least a second.
	Backoff time.Duration
}

// DefaultFight stops writing after 3 reversals within 10 minutes, having
// written again 10 s after the first and 20 s after the second: at most 3
// writes of the attachment's own in 10 minutes against a writer that
// always wins.
var DefaultFight = Fight{Limit: 3, Window: 10 * time.Minute, Backoff: 10 * time.Second}

// An Action is what a Fight decides.
type Action int

// Actions.
const (
	// Hold: the field names the attachment's policy; nothing to write.
	Hold Action = iota
	// Apply: write the field now.
	Apply
	// Wait: the field was set back; write it again at Decision.At.
	Wait
	// Stop: the field was set back too often; write nothing until the
	// user acts (a spec change, or a new value of the reapply annotation).
	Stop
)

// An Input is what a Fight decides from.
type Input struct {
	Now time.Time
	// Desired is the relative name of the attachment's policy, Held what
	// GCP's field names ("" for none).
	Desired, Held string
	// Observed is what the attachment recorded.
	Observed v1alpha1.SecurityPolicyAttachmentObservation
	// Generation and Reapply are the object's generation and
	// reapply annotation: a change of either ends a contest.
	Generation int64
	Reapply    string
}

// A Decision is what to do, and what to record in the status.
type Decision struct {
	Action Action
	// At is when to write again (Wait).
	At time.Time
	// Reversals and Contest replace the status's.
	Reversals []metav1.Time
	Contest   *v1alpha1.ContestObservation
}

// Decide decides what the attachment does with its field. It is pure: the
// status it reads is the attachment's own record of its writes and of the
// reversals it found.
func (f Fight) Decide(in Input) Decision {
	o := in.Observed
	contest, reversals := o.Contest, o.ReversalTimes
	if contest != nil && (contest.Generation != in.Generation || contest.Reapply != in.Reapply) {
		// The user acted: write again at once, counting reversals afresh
		// from that write.
		if in.Held == in.Desired {
			return Decision{Action: Hold}
		}
		return Decision{Action: Apply}
	}
	if in.Held == in.Desired {
		return Decision{Action: Hold, Reversals: f.recent(reversals, in.Now)}
	}
	if contest != nil {
		return Decision{Action: Stop, Reversals: reversals, Contest: contest}
	}
	if f.reversed(in, reversals) {
		reversals = append(append([]metav1.Time(nil), reversals...), metav1.NewTime(in.Now))
	}
	reversals = f.recent(reversals, in.Now)
	n := len(reversals)
	if n >= f.Limit {
		return Decision{Action: Stop, Reversals: reversals, Contest: &v1alpha1.ContestObservation{Value: in.Held, Reversals: n,
			LastReversalTime: reversals[n-1], Generation: in.Generation, Reapply: in.Reapply}}
	}
	if n > 0 && pending(o, reversals[n-1]) {
		at := reversals[n-1].Add(f.Backoff << (n - 1))
		if in.Now.Before(at) {
			return Decision{Action: Wait, At: at, Reversals: reversals}
		}
	}
	return Decision{Action: Apply, Reversals: reversals}
}

// reversed reports whether GCP's field no longer names the policy the
// attachment last wrote there, and that was not counted yet: no reversal
// was recorded since the write.
func (f Fight) reversed(in Input, reversals []metav1.Time) bool {
	o := in.Observed
	if o.LastAppliedTime == nil || o.AppliedPolicy != in.Desired {
		return false
	}
	// Strictly after: status times have a resolution of one second, and a
	// reversal found in the second of the write is the write's (Backoff is
	// at least a second, so a later write is always a later second).
	return len(reversals) == 0 || o.LastAppliedTime.After(reversals[len(reversals)-1].Time)
}

// pending reports whether the last reversal came after the attachment's
// last write: it has not written again since.
func pending(o v1alpha1.SecurityPolicyAttachmentObservation, last metav1.Time) bool {
	return o.LastAppliedTime == nil || o.LastAppliedTime.Before(&last)
}

// recent returns the reversals within the window.
func (f Fight) recent(reversals []metav1.Time, now time.Time) []metav1.Time {
	var out []metav1.Time
	for _, r := range reversals {
		if now.Sub(r.Time) < f.Window {
			out = append(out, r)
		}
	}
	return out
}

// Messages of the decisions that stop a write: deterministic for as long as
// the decision stands.
func (f Fight) waitMessage(field, target, held string, d Decision) string {
	return fmt.Sprintf("another writer set %s of %s back to %s after this object set it (%d times within the window): "+
		"this object sets it again at %s, and stops writing it after %d", field, target, orNone(held), len(d.Reversals),
		d.At.UTC().Format(time.RFC3339), f.Limit)
}

func contestMessage(field, target string, c *v1alpha1.ContestObservation) string {
	return fmt.Sprintf("contested: another writer set %s of %s back %d times after this object set it, last at %s, to %s: "+
		"this object writes it no more. Stop the other writer (or make it name this policy), then change this object's spec "+
		"or set the annotation %s to a new value", field, target, c.Reversals, c.LastReversalTime.UTC().Format(time.RFC3339),
		orNone(c.Value), v1alpha1.AnnotationReapply)
}

func orNone(v string) string {
	if v == "" {
		return "no policy"
	}
	return v
}
