package adaptive

import (
	"math"
	"time"

	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/window"
)

// learnState is what a Limiter knows and has learned; Limiter.mu guards it.
type learnState struct {
	// The server's headers.
	hLimit  int64  // limit per hWindow; 0 if never said
	hWindow int64  // ns
	hRem    int64  // remaining, as the server counted at admission hRemSeq
	hRemSeq uint64 // admissions up to this one are counted in hRem
	hReset  int64  // when Remaining refills at the latest, Unix ns
	hEarly  int64  // when it may refill at the earliest (hReset − ResetSlack)
	hRemAt  int64  // when Remaining and reset were last said; 0 if never
	hWake   int64  // when a pause for Remaining spent ends: hEarly plus the slack, up to wakeSlack

	// Learned from throttles.
	rate    float64 // the learned rate cap, per second; 0 if none
	rMax    float64 // the rate the last cut was measured at: the quota estimate
	k       float64 // seconds of demand to hold at the cut before probing
	tDemand float64 // seconds of demand since the last cut
	lastUpd int64   // last success or cut, Unix ns
	cutSeq  uint64  // the first admission number after the last cut
	cutAt   int64   // Unix ns of the last cut
	rtt     int64   // smoothed round trip of tickets, ns
	hintEnd int64   // Unix ns when the last pause shortened by a hint's slack ended
	hintSeq uint64  // the first admission after it
	hintGap int64   // the last wait added after a throttled probe, ns

	ok        meter         // successes over the last second
	sent      meter         // admissions the server counted (answered, not throttled) over the last second, by admission time
	phaseAt   float64       // tDemand when the phase began
	phaseMark int64         // Unix ns: in the step, when it may be judged to have gone through; in the ramp, when its gains were last taken into rMax
	stepAt    int64         // Unix ns of the window start a timed step ends at; 0 for an untimed step
	stepRate  float64       // the rate until stepAt
	bound     int64         // Unix ns of a moment a server window started, as a failed step showed; 0 if unknown
	winIdx    int32         // the server window (see windowOf) winOK counts
	winOK     int32         // successes that reached the server in it
	first     int64         // admission time of the first answer seen, Unix ns
	wlim      int64         // window limit in force
	wlen      time.Duration // its window
	winNeeded int64         // Unix ns when the window was last needed

	rateNow  float64 // the rate in force
	burstNow int     // the burst in force

	early bool   // the last cut was the first, from unlimited: successes still returning raise the rate
	phase uint8  // of the probe: phaseHold, phaseStep or phaseRamp
	src   Source // where the rate in force came from
	stale bool   // Remaining is older than HeaderTTL
}

// Observe learns from an answer not tied to a Ticket (for one tied to a
// Ticket, call the Ticket's Done instead, which also ties it to its
// admission). obs.At is taken as the time of the answer (time.Now if zero).
//
// What it learns, in order: fresh headers replace the limit, window,
// remaining and reset; a retry hint, or the reset of a throttle, closes the
// gate until then (capped by MaxPause) and one request probes first; a
// throttle cuts the rate (at most once per round trip), a success lets it
// grow back while there is demand; when what is left of Remaining is
// spent, the gate closes until the earliest moment the reset may come (no
// probe). A Transient answer teaches nothing. Callers already waiting see
// the result as the Limiter doc describes.
func (l *Limiter) Observe(obs quota.Observation) { l.observe(obs, nil) }

func (l *Limiter) observe(o quota.Observation, t *Ticket) {
	p := l.params()
	now := time.Now().UnixNano()
	if !o.At.IsZero() {
		now = o.At.UnixNano()
	}
	wake := false
	l.mu.Lock()
	s := &l.s
	if t != nil && now > t.at {
		if d := now - t.at; s.rtt == 0 {
			s.rtt = d
		} else {
			s.rtt += (d - s.rtt) / 8
		}
	}
	if s.first == 0 {
		s.first = now
		if t != nil {
			s.first = t.at
		}
	}
	if t != nil && !o.Throttled && !o.Transient {
		s.sent.addAt(t.at) // the server counted it
	}
	switch {
	case o.Transient:
		// Not a quota signal. A probe that met one hands the probe on.
		if t != nil && t.probe != 0 {
			wake = l.g.release(t.probe)
		}
	default:
		l.readHeaders(&o, now, t)
		if u, short := l.pauseUntil(&o, t); u > now || short {
			wake = l.pause(now, min(max(u, now), now+p.maxPause), true) || wake
		}
		if o.Throttled {
			l.cut(now, t)
			if t != nil && t.probe != 0 && l.g.release(t.probe) {
				wake = true // a throttled probe without a new pause: probe again
			}
		} else {
			s.ok.add(now)
			if s.bound != 0 {
				// Count what each server window admitted.
				if w := windowOf(l.arrival(now, t), s.bound); w != s.winIdx {
					s.winIdx, s.winOK = w, 0
				}
				s.winOK++
			}
			l.grow(now)
			if t != nil && t.probe != 0 {
				wake = l.g.resolve(t.probe)
			} else if t == nil {
				if pr := l.g.probe.Load(); pr > 0 {
					wake = l.g.resolve(pr)
				}
			}
		}
	}
	// A success that says nothing, to a Limiter that has learned nothing
	// and keeps no window, changes no limit: the common case is spared
	// deriving them again.
	quiet := o.Known == 0 && !o.Throttled && s.rate == 0 && s.hLimit == 0 && s.hRemAt == 0 && l.win.Load() == nil
	if !quiet && l.recompute(now) {
		wake = true
	}
	// Spend Remaining evenly: when what is left is already spent, pause
	// until the earliest moment the reset may come (and its slack, if fine:
	// see wakeSlack).
	if s.hRemAt > 0 && now-s.hRemAt < p.headerTTL && s.hWake > now && l.left() <= 0 {
		wake = l.pause(now, min(s.hWake, now+p.maxPause), false) || wake
	}
	l.mu.Unlock()
	if wake {
		l.notify()
	}
}

// left returns how much of the server's Remaining is left: Remaining less
// the requests admitted since those it counted. l.mu is held.
func (l *Limiter) left() int64 {
	return l.s.hRem - int64(l.seq.Load()-l.s.hRemSeq)
}

// readHeaders takes the limit, window, remaining and reset the answer
// carries. Remaining counts the requests the server had seen when it
// answered: with a ticket, those admitted up to the ticket's; without, all
// but those in flight. l.mu is held.
func (l *Limiter) readHeaders(o *quota.Observation, now int64, t *Ticket) {
	s := &l.s
	if o.Has(quota.FieldLimit) && o.Limit > 0 {
		w := int64(o.Window)
		if !o.Has(quota.FieldWindow) || w <= 0 {
			w = s.hWindow
		}
		if w <= 0 {
			_, _, _, rw := ruleLimits(l.rule)
			w = int64(max(rw, time.Second))
		}
		if s.hLimit > 0 && float64(o.Limit)/float64(w) > float64(s.hLimit)/float64(s.hWindow) {
			s.forget() // the server raised the quota: what throttles taught is past
		}
		s.hLimit, s.hWindow = o.Limit, w
	}
	if o.Has(quota.FieldRemaining|quota.FieldReset) && !o.ResetAt.IsZero() {
		// The reset may come as early as ResetSlack before ResetAt, and
		// earlier still by the answer's time in transit if the server said
		// it as a delay: the server counted it from the request's arrival,
		// at the earliest our admission.
		seq := l.seq.Load() - uint64(max(l.inflight.Load(), 0))
		reset := o.ResetAt.UnixNano()
		slack := int64(max(o.ResetSlack, 0))
		early := reset - slack
		if t != nil {
			seq = t.seq
			early -= max(now-t.at, 0)
		}
		s.hRem, s.hRemSeq, s.hReset, s.hEarly, s.hRemAt = o.Remaining, seq, reset, early, now
		s.hWake = early + min(slack, wakeSlack)
	}
}

// recompute derives the bucket and window in force from the rule, the
// headers and the learned rate, and installs them. It reports whether the
// change is big enough to wake the waiters. l.mu is held.
func (l *Limiter) recompute(now int64) (big bool) {
	s := &l.s
	p := l.params()
	rate, burst, wlim, wlen := ruleLimits(l.rule)
	src := SourceNone
	if rate > 0 || wlim > 0 {
		src = SourceRule
	}
	if s.hLimit > 0 {
		// Pace at L per W: with a burst of 1, no W ever holds more than L.
		rate = float64(s.hLimit) * 1e9 / float64(s.hWindow)
		burst, wlim, wlen = 1, s.hLimit, time.Duration(s.hWindow)
		src = SourceHeaders
	}
	base := rate
	s.stale = s.hRemAt > 0 && now-s.hRemAt >= p.headerTTL
	var recheck int64
	if s.hRemAt > 0 && !s.stale && s.hEarly > now {
		// Spend what is left evenly until the earliest moment the reset
		// may come; after it, Remaining says nothing more.
		recheck = min(s.hEarly, s.hRemAt+p.headerTTL)
		if left := l.left(); left > 0 {
			if rr := float64(left) * 1e9 / float64(s.hEarly-now); rate == 0 || rr < rate {
				rate, burst = rr, 1
				if src == SourceNone {
					src = SourceHeaders
				}
			}
		}
	}
	if s.rate > 0 && base > 0 && s.rate >= base {
		s.forget() // grown past the rule or headers: no longer binding
	}
	learned := s.rate > 0 && (rate == 0 || s.rate < rate)
	if learned {
		// Pace at the learned rate, and keep a learned window of as many
		// per second: right after a cut, the last second may hold more
		// than that, and a fixed-window server is still counting them.
		rate, burst, src = s.rate, 1, SourceLearned
		wlim, wlen = int64(math.Ceil(s.rate)), time.Second
	}
	s.src, s.wlim, s.wlen = src, wlim, wlen
	s.rateNow, s.burstNow = rate, burst
	l.recheck.Store(recheck)
	big = l.b.set(now, rate, burst)

	// The window, when the bucket does not already imply it: with a burst
	// of 1 and a rate of at most wlim/wlen, no wlen ever holds more than
	// wlim. Once in force, it stays until it has not been needed for a
	// whole window (the recent past may hold a burst); it costs up to one
	// bucket of its capacity (see package window).
	cur := l.win.Load()
	need := learned && now-s.cutAt < int64(wlen) ||
		wlim > 0 && (rate == 0 || burst > 1 || rate*wlen.Seconds() > float64(wlim)*(1+1e-9))
	if need {
		s.winNeeded = now
	}
	switch {
	case wlim == 0 || !need && cur != nil && (learned || now-s.winNeeded >= int64(max(cur.Len(), wlen))):
		if cur != nil {
			l.win.Store(nil)
		}
	case cur != nil && cur.Len() == wlen:
		l.winLimit.Store(wlim)
	case need || cur != nil:
		w := windowFor(wlen, p.windowBuckets)
		t := time.Unix(0, now)
		switch {
		case cur != nil:
			w.Add(t, int(cur.Count(t))) // carried over, conservatively
		case learned:
			// A fixed-window server still counts what was sent in the last
			// second: a new learned window starts with it, at the times
			// it was sent, and with what is in flight.
			s.sent.roll(now)
			for e := s.sent.e - 9; e <= s.sent.e; e++ {
				if n := s.sent.c[mod11(e)]; n > 0 && e >= 0 {
					w.Add(time.Unix(0, e*meterWidth), int(n))
				}
			}
			w.Add(t, int(max(l.inflight.Load(), 0)))
		}
		l.winLimit.Store(wlim)
		l.win.Store(w)
	}
	return big
}

func windowFor(d time.Duration, buckets int) *window.Window {
	return window.New(d, buckets)
}
