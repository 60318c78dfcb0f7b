package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// pause closes the gate from now until u, asking for a probe after it if
// probe. If that extends the pause, the bucket's queue restarts at u (the
// places reserved before it are void) and the waiters must be woken to
// queue again: pause reports so. l.mu is held.
func (l *Limiter) pause(now, u int64, probe bool) (wake bool) {
	if !l.g.pause(u, probe) {
		return false
	}
	l.b.restart(u)
	return true
}

// pauseUntil returns when the pause an answer asks for ends (Unix ns), 0
// for none: the retry hint if there is one, else the reset of a throttle.
// (A Remaining of 0 on a success pauses only until the earliest moment the
// reset may come: see observe.)
//
// A hint in whole seconds is the server's wait rounded up: the pause lasts
// only until the earliest moment that wait may end (the hint less its
// slack), short reports so, and one request probes before the others go
// (even if the shortened pause is over already). If that probe is throttled
// too, its hint holds in full. Taking "Retry-After: 1" at its word would
// stop a tenant for most of a one-second window each time it reaches the
// end of one. Without a ticket, a throttle within the slack of the last
// shortened pause is taken as the probe's. l.mu is held.
func (l *Limiter) pauseUntil(o *quota.Observation, t *Ticket) (u int64, short bool) {
	switch {
	case o.Has(quota.FieldRetryAfter):
		at := o.At.UnixNano()
		u := at + int64(o.RetryAfter)
		slack := int64(max(o.RetrySlack, 0))
		if slack == 0 {
			return u, false
		}
		s := &l.s
		again := at < s.hintEnd+slack
		if t != nil {
			if t.seq < s.hintSeq {
				return 0, false // sent before the last shortened pause: nothing new
			}
			again = t.probe != 0
		}
		if again {
			// The probe after a shortened pause was throttled too: try
			// again after twice as long, until that reaches the slack.
			s.hintGap = max(2*s.hintGap, hintGap)
			if s.hintGap >= slack {
				s.hintGap = 0
				return u, false
			}
			u = at + s.hintGap
		} else {
			s.hintGap = 0
			u = max(u-slack, at)
		}
		s.hintEnd, s.hintSeq = u, l.seq.Load()+1
		return u, true
	case o.Throttled && o.Has(quota.FieldReset):
		return o.ResetAt.UnixNano(), false
	}
	return 0, false
}

// wakeSlack is how much of a reset's slack a pause for Remaining spent
// waits out: all of a fine one (a reset said in milliseconds, rounded up,
// is only that late), so that the first request after the pause does not
// reach the server a moment before its window resets; a reset in whole
// seconds is taken at its earliest, not to lose most of a second each time.
const wakeSlack = int64(50 * time.Millisecond)

// hintGap is the first wait added after a shortened pause whose probe was
// throttled too.
const hintGap = int64(100 * time.Millisecond)
