package addressset

import "time"

// outage is a watched source's current run of failed lists and watches: a
// remote cluster's Node informer, or a namespace source's informer. Its
// holder guards it with its own lock.
type outage struct {
	since time.Time // the first failure of the current run; zero while the source answers
	err   error     // the last failure
}

// record notes the outcome of a list or watch at now and says whether the
// source turned: an outage began, or the source answers again.
func (o *outage) record(err error, now time.Time) (turned bool) {
	turned = o.since.IsZero() != (err == nil)
	switch {
	case err == nil:
		*o = outage{}
	case o.since.IsZero():
		*o = outage{since: now, err: err}
	default:
		o.err = err
	}
	return turned
}

// failing says whether the source is in an outage.
func (o *outage) failing() bool { return !o.since.IsZero() }
