package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// pause closes the gate from now until u, asking for a probe after it if
// probe. If that extends the pause past now, the head must be woken to
// wait for its end, and pause reports so; the line keeps its order, the
// head going first, the others paced after it. Where the learner paused
// to a refill it predicts (refill), the window then begins afresh, and so
// does the bucket, at u. A pause the server asked for (a retry hint, a
// Remaining spent) only ever delays: the bucket's next token stays where
// its pace put it if that is later. (Started at u, a pause shorter than
// the pace, as a whole-second hint's shortened one is, let the next
// request go at once: see TestPauseNeverHastens.) A pause that is over
// already only asks for the probe: the bucket keeps its pace, and the head
// meets the probe at the gate when its token is due; it must be woken all
// the same if it waits for the answer of a probe that no longer counts.
// l.mu is held.
func (l *Limiter) pause(now, u int64, probe, refill bool) (wake bool) {
	if !l.g.pause(u, probe) || u <= now {
		return probe // the head may sleep on a probe that is void now
	}
	if refill {
		l.b.startAt(u)
	} else {
		l.b.stall(u)
	}
	return true
}

// pauseUntil returns when the pause an answer asks for ends (Unix ns), 0
// for none: the retry hint if there is one that asks to wait (see
// quota.Observation.HintWaits and hintPause), else the reset
// of a throttle. (A Remaining of 0 on a success pauses only until the
// earliest moment the reset may come: see observe.) short reports that the
// pause was shortened and one request probes before the others go, even if
// it is over already. l.mu is held.
func (l *Limiter) pauseUntil(o *quota.Observation, t *Ticket) (u int64, short bool) {
	switch {
	case o.Has(quota.FieldRetryAfter) && o.HintWaits():
		return l.hintPause(o, t)
	case o.Throttled && o.Has(quota.FieldReset):
		return o.ResetAt.UnixNano(), false
	}
	return 0, false
}

// hintPause returns the pause a retry hint asks for, weighed by how well
// the tenant's hints have predicted throttles.
//
// A hint says the server will throttle whatever comes before it ends. The
// requests sent right after the hinted answer test that: hintRun of them
// throttled, the hint held; one through, it did not (a gateway shedding
// load answers Retry-After whatever the rate). The tenant's trust in its
// hints is the share of tests they held (see hintTrust). The first hint is
// taken at its word; after it, a hint is tested, with no pause, until the
// trust reaches hintTrusted, and every hintSample-th hint all the same. A
// hint pauses the tenant when it is trusted, or when it held and its test
// made the trust reach hintTrusted:
//
// A hint in whole seconds is the server's wait rounded up: the pause lasts
// only until the earliest moment that wait may end (the hint less its
// slack), short reports so, and one request probes before the others go
// (even if the shortened pause is over already: that probe is a test). If
// that probe is throttled too, the pause doubles from hintGap until it
// reaches the slack, then the hint holds in full. Taking "Retry-After: 1"
// at its word would stop a tenant for most of a one-second window each
// time it reaches the end of one. Without a ticket, a throttle within the
// slack of the last shortened pause is taken as the probe's. l.mu is held.
func (l *Limiter) hintPause(o *quota.Observation, t *Ticket) (u int64, short bool) {
	s := &l.s
	at := o.At.UnixNano()
	u = at + int64(o.RetryAfter)
	slack := int64(max(o.RetrySlack, 0))
	next := l.seq.Load() + 1
	tested := s.hintTest != 0 && (t == nil || t.seq >= s.hintTest)
	held := false
	if tested {
		// Sent after the last hint, and throttled: it may hold. One
		// throttle is enough for a hint taken at its word.
		s.hintFails++
		run := uint32(hintRun)
		if s.hints <= 1 || s.hintTrust() >= hintTrusted {
			run = 1
		}
		if held = s.hintFails >= run; held {
			s.hintTest = 0
			s.hintTested(true)
		}
	} else if t != nil && t.seq < s.hintSeq {
		return 0, false // sent before the last hint was acted on: nothing new
	}
	again := t == nil && at < s.hintEnd+slack
	if t != nil {
		again = t.probe != 0 && s.hintProbe // the probe after a hint's pause
	}
	s.hintProbe = false
	if !tested && !again {
		s.hints++
	}
	switch {
	case tested && !held && again:
		// The probe that tests the hint was throttled: one more says, at
		// once.
		u = at
	case tested && !held:
		return 0, false // the next answer says
	case held && !again && s.hintTrust() < hintTrusted:
		// It held, but the tenant does not trust its hints yet: the
		// requests to come test the next hint.
		return 0, false
	case !held && !again && s.hints > 1 && (s.hintTrust() < hintTrusted || s.hints%hintSample == 0):
		// Test the hint: no pause; the next answers say if it held.
		s.hintTest, s.hintFails, s.hintSeq, s.hintGap = next, 0, next, 0
		return 0, false
	case slack == 0:
		return u, false
	case again:
		// The probe after a shortened pause was throttled too: try again
		// after twice as long, until that reaches the slack.
		s.hintGap = max(2*s.hintGap, hintGap)
		if s.hintGap >= slack {
			s.hintGap = 0
			return u, false
		}
		u = at + s.hintGap
	default:
		s.hintGap = 0
		u = max(u-slack, at)
		if u == at {
			s.hintTest, s.hintFails = next, 0 // the probe goes at once: a test
		}
	}
	s.hintEnd, s.hintSeq, s.hintProbe = u, next, true
	return u, true
}

// hintWeighed takes a success of the request at t (nil: an answer without
// a ticket): if it tested the last hint, the hint did not hold. l.mu is
// held.
func (l *Limiter) hintWeighed(t *Ticket) {
	s := &l.s
	if s.hintTest != 0 && (t == nil || t.seq >= s.hintTest) {
		s.hintTest = 0
		s.hintTested(false)
	}
	if t != nil && t.probe != 0 {
		s.hintProbe = false
	}
}

// hintTested counts a test of a hint, held or not.
func (s *learnState) hintTested(held bool) {
	if s.hintTests >= 2*hintHorizon {
		s.hintTests, s.hintHeld = s.hintTests/2, s.hintHeld/2
	}
	s.hintTests++
	if held {
		s.hintHeld++
	}
}

// hintTrust is the tenant's trust in its hints: the share of tests they
// held, (held+1)/(tests+2), ½ before any.
func (s *learnState) hintTrust() float64 {
	return float64(s.hintHeld+1) / float64(s.hintTests+2)
}

// hintTrusted is the trust from which a hint pauses the tenant untested:
// three tests held in a row, from none.
const hintTrusted = 0.8

// hintRun is how many answers to requests sent after a hint, throttled in
// a row, show that it held, unless the hint is trusted (then one does); one
// that gets through shows it did not. One alone would be a fifth of the
// time where a fifth of the answers are throttles the rate does not cause.
const hintRun = 2

// hintHorizon is about how many tests the trust is measured over: both
// counts halve when the tests reach twice as many.
const hintHorizon = 16

// hintSample is how often a trusted hint is tested all the same: one in
// eight, so that a tenant's trust follows a server that changed.
const hintSample = 8

// wakeSlack is how much of a reset's slack a pause for Remaining spent
// waits out: all of a fine one (a reset said in milliseconds, rounded up,
// is only that late), so that the first request after the pause does not
// reach the server a moment before its window resets; a reset in whole
// seconds is taken at its earliest, not to lose most of a second each time.
const wakeSlack = int64(50 * time.Millisecond)

// hintGap is the first wait added after a shortened pause whose probe was
// throttled too.
const hintGap = int64(100 * time.Millisecond)
