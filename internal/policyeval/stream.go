package policyeval

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// A Stream evaluates a sequence of requests against one policy on a
// simulated clock, counting the requests that throttle and rate_based_ban
// rules see per rate-limit key. Counting is exact over a sliding window of
// rateLimitThreshold.intervalSec (Cloud Armor's own counting is approximate
// and distributed; see docs/evaluation.md).
type Stream struct {
	e *Evaluator
	p Policy

	mu          sync.Mutex
	last        time.Duration
	rate        map[string][]time.Duration // rule|key -> times counted against rateLimitThreshold
	ban         map[string][]time.Duration // rule|key -> times counted against banThreshold
	bannedUntil map[string]time.Duration   // rule|key -> end of its ban
	// expires is when nothing of a rule|key counts any more: its last
	// counted time plus its interval, or its ban's end. Keys are what
	// clients send (addresses, header values), so the state of those that
	// stopped counting is dropped (sweep), or a client changing its key on
	// every request would grow it for ever.
	expires map[string]time.Duration
	// sweepAt is the number of keys at which the next sweep runs: twice
	// the keys the last one left, so sweeping costs O(1) a request; and a
	// sweep runs at least sweepEvery after the last, so keys that stopped
	// counting do not wait for the stream to double.
	sweepAt   int
	lastSweep time.Duration
}

const (
	// minSweep is the fewest keys a stream sweeps at.
	minSweep = 1024
	// sweepEvery is the longest a stream goes without a sweep.
	sweepEvery = time.Minute
)

// NewStream returns a stream of requests to p, starting at time 0.
func (e *Evaluator) NewStream(p Policy) *Stream {
	return &Stream{e: e, p: p, rate: map[string][]time.Duration{}, ban: map[string][]time.Duration{},
		bannedUntil: map[string]time.Duration{}, expires: map[string]time.Duration{}, sweepAt: minSweep}
}

// Evaluate evaluates r arriving at time at (since the stream's start). Times
// must not go back. For a throttle or rate_based_ban rule the verdict's
// Effective is what happens to this request: the conformAction, or the
// exceedAction when the key is over its rate or banned.
func (s *Stream) Evaluate(at time.Duration, r Request) (Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at < s.last {
		return Verdict{}, fmt.Errorf("time %s is before the previous request's %s", at, s.last)
	}
	s.last = at
	s.sweep(at)
	v, err := s.e.Evaluate(s.p, r)
	if err != nil || v.NotEvaluable != "" || v.RateLimit == nil {
		return v, err
	}
	o := v.RateLimit
	key, problem := rateKey(o, s.p, r)
	if problem != "" {
		v.NotEvaluable = "not evaluable offline: " + problem
		return v, nil
	}
	v.RateKey = key
	id := strconv.FormatInt(v.Priority, 10) + "|" + key
	conform, exceed := "allow", "deny(429)"
	if o.ConformAction != nil {
		conform = *o.ConformAction
	}
	if o.ExceedAction != nil {
		exceed = *o.ExceedAction
	}
	if until, ok := s.bannedUntil[id]; ok && at < until {
		v.Effective, v.Banned = exceed, true
		return v, nil
	}
	delete(s.bannedUntil, id)
	over := false
	if t := o.RateLimitThreshold; t != nil {
		window := s.window(s.rate, id, at, t.IntervalSec)
		over = int64(len(window)) >= t.Count
		// A throttle counts what it admits, so it admits count per
		// interval; a rate_based_ban counts every request of the key.
		if !over || v.Action != v1beta1.ActionThrottle {
			s.rate[id] = append(window, at)
			s.keep(id, at+time.Duration(t.IntervalSec)*time.Second)
		}
	}
	v.Effective = conform
	if over {
		v.Effective = exceed
	}
	if v.Action != v1beta1.ActionRateBasedBan {
		return v, nil
	}
	banFor := time.Duration(0)
	if o.BanDurationSec != nil {
		banFor = time.Duration(*o.BanDurationSec) * time.Second
	}
	switch b := o.BanThreshold; {
	case b == nil && over:
		// Without banThreshold, exceeding the rate bans the key.
		s.ban[id] = nil
		s.bannedUntil[id] = at + banFor
		s.keep(id, at+banFor)
		v.Banned = banFor > 0
	case b != nil:
		window := append(s.window(s.ban, id, at, b.IntervalSec), at)
		s.ban[id] = window
		s.keep(id, at+time.Duration(b.IntervalSec)*time.Second)
		if int64(len(window)) > b.Count {
			s.ban[id] = nil
			s.bannedUntil[id] = at + banFor
			s.keep(id, at+banFor)
			v.Effective, v.Banned = exceed, banFor > 0
		}
	}
	return v, nil
}

// keep records that id counts until at least until.
func (s *Stream) keep(id string, until time.Duration) {
	if until > s.expires[id] {
		s.expires[id] = until
	}
}

// sweep drops the state of every key that no longer counts at at, once
// there are sweepAt keys or sweepEvery has passed.
func (s *Stream) sweep(at time.Duration) {
	if len(s.expires) < s.sweepAt && at-s.lastSweep < sweepEvery {
		return
	}
	s.lastSweep = at
	for id, until := range s.expires {
		if until <= at {
			delete(s.rate, id)
			delete(s.ban, id)
			delete(s.bannedUntil, id)
			delete(s.expires, id)
		}
	}
	s.sweepAt = max(minSweep, 2*len(s.expires))
}

// window is the times of m[id] within intervalSec before at.
func (s *Stream) window(m map[string][]time.Duration, id string, at time.Duration, intervalSec int64) []time.Duration {
	from := at - time.Duration(intervalSec)*time.Second
	ts := m[id]
	i := 0
	for i < len(ts) && ts[i] <= from {
		i++
	}
	return append([]time.Duration(nil), ts[i:]...)
}

// rateKey is the rate-limit key of r under o, as Cloud Armor's rate limiting
// overview describes the key types; a problem when it cannot be known.
func rateKey(o *v1beta1.RateLimitOptions, p Policy, r Request) (string, string) {
	type part struct{ typ, name string }
	var parts []part
	for _, c := range o.EnforceOnKeyConfigs {
		name := ""
		if c.EnforceOnKeyName != nil {
			name = *c.EnforceOnKeyName
		}
		parts = append(parts, part{c.EnforceOnKeyType, name})
	}
	if len(parts) == 0 {
		pt := part{typ: "ALL"}
		if o.EnforceOnKey != nil && *o.EnforceOnKey != "" {
			pt.typ = *o.EnforceOnKey
		}
		if o.EnforceOnKeyName != nil {
			pt.name = *o.EnforceOnKeyName
		}
		parts = append(parts, pt)
	}
	headers := map[string]any{}
	for k, v := range r.Headers {
		headers[strings.ToLower(k)] = v
	}
	ip, _ := netip.ParseAddr(strings.TrimSpace(r.IP))
	ip = ip.Unmap()
	var keys []string
	for _, pt := range parts {
		var k string
		switch pt.typ {
		case "ALL":
			k = ""
		case "IP":
			k = ip.String()
		case "USER_IP":
			k = userIP(p, r, headers, ip)
		case "XFF_IP":
			// The first address of X-Forwarded-For; the source address
			// when there is none.
			k = ip.String()
			if v, ok := headers["x-forwarded-for"].(string); ok {
				first, _, _ := strings.Cut(v, ",")
				if a, err := netip.ParseAddr(strings.TrimSpace(first)); err == nil {
					k = a.Unmap().String()
				}
			}
		case "HTTP_HEADER":
			// A request without the header falls under ALL.
			k, _ = headers[strings.ToLower(pt.name)].(string)
		case "HTTP_COOKIE":
			k, _ = cookies(headers)[pt.name].(string)
		case "HTTP_PATH":
			k = or(r.Path, "/")
		case "REGION_CODE":
			if r.RegionCode == "" {
				return "", "rate-limit key REGION_CODE (give regionCode in the request)"
			}
			k = strings.ToUpper(r.RegionCode)
		case "ASN":
			if r.ASN == nil {
				return "", "rate-limit key ASN (give asn in the request)"
			}
			k = strconv.FormatInt(*r.ASN, 10)
		case "TLS_JA3_FINGERPRINT":
			k = r.TLSJA3Fingerprint
		case "TLS_JA4_FINGERPRINT":
			k = r.TLSJA4Fingerprint
		default:
			return "", "rate-limit key " + pt.typ
		}
		label := pt.typ
		if pt.name != "" {
			label += " " + pt.name
		}
		keys = append(keys, label+"="+k)
	}
	return strings.Join(keys, ", "), ""
}
