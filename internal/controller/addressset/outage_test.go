package addressset

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestOutageRecord: an outage starts at its first failure, keeps that start
// through later failures while naming the last, and ends at the first
// answer; only the first failure and the answer turn it.
func TestOutageRecord(t *testing.T) {
	now := time.Unix(1000, 0)
	refused, reset := errors.New("refused"), errors.New("reset")
	type want struct {
		Turned bool
		Since  time.Time
		Err    error
	}
	steps := []struct {
		reason string
		err    error
		at     time.Time
		want   want
	}{
		{reason: "An answer while answering turns nothing.", at: now, want: want{}},
		{reason: "The first failure starts the outage.", err: refused, at: now.Add(time.Second), want: want{Turned: true, Since: now.Add(time.Second), Err: refused}},
		{reason: "A later failure keeps the start and names the last failure.", err: reset, at: now.Add(2 * time.Second), want: want{Since: now.Add(time.Second), Err: reset}},
		{reason: "An answer ends the outage.", at: now.Add(3 * time.Second), want: want{Turned: true}},
	}
	var o outage
	for _, s := range steps {
		turned := o.record(s.err, s.at)
		got := want{Turned: turned, Since: o.since, Err: o.err}
		if diff := cmp.Diff(s.want, got, cmpopts.EquateErrors()); diff != "" {
			t.Errorf("%s\nrecord(...): -want, +got:\n%s", s.reason, diff)
		}
		if o.failing() != (s.err != nil) {
			t.Errorf("%s\nfailing() = %t after an error of %v", s.reason, o.failing(), s.err)
		}
	}
}
