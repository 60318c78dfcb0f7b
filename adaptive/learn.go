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
	sent      meter         // admissions of answered tickets over the last second, by admission time
	phaseAt   float64       // tDemand when the phase began
	phaseMark int64         // Unix ns: in the step, when it may be judged to have gone through; in the ramp, when its gains were last taken into rMax
	stepAt    int64         // Unix ns of the window start the step ends at; 0 for a step of a whole second
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

// meter counts events over the trailing second in ten 100 ms buckets (and
// the one leaving). A bucket saturates at 65535 events, 655k a second: far
// past any quota a client learns from throttles.
type meter struct {
	e int64 // epoch (100 ms units) of the newest bucket
	c [11]uint16
}

// inc counts one event in bucket i, saturating.
func (m *meter) inc(i int64) {
	if m.c[i] < math.MaxUint16 {
		m.c[i]++
	}
}

const meterWidth = int64(100 * time.Millisecond)

func (m *meter) roll(now int64) int64 {
	e := now / meterWidth
	if e > m.e {
		for i := max(m.e+1, e-10); i <= e; i++ {
			m.c[i%11] = 0
		}
		m.e = e
	}
	return m.e
}

func (m *meter) add(now int64) {
	e := m.roll(now)
	m.inc(e % 11)
}

// sum returns the events in (now-1s, now], counting the oldest bucket by the
// fraction of it still inside.
func (m *meter) sum(now int64) float64 {
	e := m.roll(now)
	var s float64
	for i := e - 9; i <= e; i++ {
		s += float64(m.c[mod11(i)])
	}
	frac := float64(now%meterWidth) / float64(meterWidth)
	return s + float64(m.c[mod11(e-10)])*(1-frac)
}

// addAt counts an event that happened at at (Unix ns), if it is still
// within the meter's last second as of its newest bucket.
func (m *meter) addAt(at int64) {
	e := at / meterWidth
	switch {
	case e > m.e:
		m.add(at)
	case e > m.e-11 && e >= 0:
		m.inc(e % 11)
	}
}

func mod11(i int64) int64 { return ((i % 11) + 11) % 11 }

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
	// until the earliest moment the reset may come.
	if s.hRemAt > 0 && now-s.hRemAt < p.headerTTL && s.hWake > now && l.left() <= 0 {
		wake = l.pause(now, min(s.hWake, now+p.maxPause), false) || wake
	}
	l.mu.Unlock()
	if wake {
		l.notify()
	}
}

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

// cut lowers the learned rate after a throttle. l.mu is held.
//
// A probe that fails goes back to the quota estimate it probed from (a
// failed ramp to what got through, if more). Any other throttle cuts to
// Headroom times the success rate measured over the last second, but by at
// least Headroom and at most the Decrease factor at once. A burst of
// throttles with successes still coming in (the tail of a fixed window
// that is full) thus keeps the rate near the quota, while throttles with
// no success (the quota fell) cut by Decrease once per round trip.
func (l *Limiter) cut(now int64, t *Ticket) {
	s := &l.s
	p := l.params()
	if t != nil {
		if t.seq < s.cutSeq {
			return // sent before the last cut took effect
		}
	} else if s.cutAt != 0 && now-s.cutAt < max(s.rtt, int64(10*time.Millisecond)) {
		return
	}
	meas := s.ok.sum(now)
	cur, _ := l.b.rate()
	var r float64
	switch {
	case cur == 0: // unlimited until now: start from what got through
		s.early = true
		if meas >= 1 {
			// Successes per second, over the time since the first
			// answer if that is less than a second. Overestimating is
			// cheap (the next throttles cut again), underestimating
			// costs a slow climb.
			r = meas * p.headroom
			if s.first > 0 && now-s.first < int64(time.Second) {
				r *= 1e9 / float64(max(now-s.first, int64(500*time.Millisecond)))
			}
		} else {
			// No success seen yet: half of what was admitted, per
			// second. The next throttles cut further, once per round
			// trip.
			r = float64(l.seq.Load()) / 2
		}
	case s.rate > 0 && s.phase == phaseStep && !s.early:
		// The step failed: the quota is the whole number of requests per
		// second just below the step, which the hold's windows held. Its
		// throttle was the one request too many in a window, at the end
		// of it: a window starts about when it reached the server.
		s.rMax = max(s.rMax, step(s.rMax)-1)
		r = s.rMax
		s.bound = l.arrival(now, t)
	case s.rate > 0 && s.phase != phaseHold && !s.early:
		// A probe above the quota estimate failed: back to the estimate,
		// which held without a throttle; or, if the probe had got past
		// its first step, to what got through, which may be more.
		r = s.rMax
		if s.phase == phaseRamp {
			if a := l.arrival(now, t); s.bound != 0 && windowOf(a, s.bound) == s.winIdx {
				// The window the throttle fell in is full: what it
				// admitted is the quota.
				r = max(r, float64(s.winOK))
			} else {
				r = max(r, min(cur, meas*p.headroom))
			}
		}
	default:
		// A throttle at the rate in force: the quota is below it, by at
		// least the headroom however many got through (a last second that
		// straddles two fixed windows can hold more than either).
		s.early = false
		r = min(cur*p.headroom, max(cur*p.decrease, meas*p.headroom))
		if s.hLimit > 0 {
			// The server says its limit: a throttle at that pace is a
			// request that crossed a window's edge in transit, or a
			// quota the headers do not tell (then the next throttles cut
			// again, once per round trip). Back off by the headroom only.
			r = cur * p.headroom
		}
		if s.bound == 0 && meas*p.headroom >= 0.9*cur {
			// Near the quota, the throttle was of a request one too many
			// in a window, at its end: a first guess of where windows
			// start, until a step fails.
			s.bound = l.arrival(now, t)
		}
	}
	r = max(r, p.minRate)
	s.rate, s.phase = r, phaseHold
	// The quota estimate: the rate the throttle came at, the lower of the
	// pace and the measured success rate (which a fixed window can
	// inflate, when the last second straddles two of them).
	switch {
	case r == s.rMax:
		// The probe's failure confirms it.
	case cur > 0:
		s.rMax = max(min(meas, cur), r)
	default:
		s.rMax = max(meas, r)
	}
	s.k = holdFor(p, s.rMax)
	s.tDemand, s.phaseAt = 0, 0
	s.lastUpd = now
	s.cutSeq = l.seq.Load() + 1
	s.cutAt = now
}

// windowOf returns the number of the one-second server window that at falls
// in, counting from one that started at bound (modulo 2^32: only equality
// matters).
func windowOf(at, bound int64) int32 {
	d := at - bound
	w := d / int64(time.Second)
	if d < 0 && d%int64(time.Second) != 0 {
		w--
	}
	return int32(w)
}

// forget drops the learned rate cap and its probe.
func (s *learnState) forget() {
	s.rate, s.phase = 0, phaseHold
}

// arrival estimates when the request of ticket t, answered at now,
// reached the server: half a round trip after it was sent. l.mu is held.
func (l *Limiter) arrival(now int64, t *Ticket) int64 {
	if t != nil {
		return t.at + l.s.rtt/2
	}
	return now - l.s.rtt/2
}

// grow raises the learned rate after a success, counting only time when
// the Limiter held requests back as demand: see probe. l.mu is held.
func (l *Limiter) grow(now int64) {
	s := &l.s
	dt := now - s.lastUpd
	s.lastUpd = now
	if s.rate == 0 {
		return // nothing learned
	}
	if s.early && now-s.cutAt < int64(time.Second) {
		// Successes still coming back from before the first cut show what
		// got through: the quota is at least that.
		if m := s.ok.sum(now) * l.params().headroom; m > s.rate {
			s.rate, s.rMax = m, max(s.rMax, m)
			s.k = holdFor(l.params(), s.rMax)
		}
	}
	if dt <= 0 || now-l.blocked.Load() > int64(time.Second) {
		return // idle: never grow without demand
	}
	// Between successes, at most the longer of 100 ms and two intervals
	// of the learned rate counts as demand.
	s.tDemand += float64(min(dt, max(int64(100*time.Millisecond), int64(2e9/s.rate)))) / 1e9
	l.probe(now)
}

// The phases of the probe above the quota estimate, after a cut.
const (
	phaseHold = iota // at the estimate, for the hold
	phaseStep        // one request per second above it
	phaseRamp        // the step went through: growing fast
)

// probe moves the learned rate through the phases of the probe, counting
// seconds of demand (s.tDemand):
//
//   - hold at the quota estimate for the hold (Config.Hold, and at least
//     holdRequests requests);
//   - step: one request more in one server window. Once a failed step has
//     shown where the server's windows start (s.bound), the step is timed
//     to end as a window ends: a little faster for the last 200 ms or so
//     of a window, then back to the estimate, and judged a round trip
//     after the window ended. Before that, it is a whole second at the
//     next whole number of requests per second above the estimate, until
//     a second's successes show it went through. Either way a probe
//     against an unchanged quota costs one throttle;
//   - ramp, if the step went through: 20% above the step, the overshoot
//     doubling every ProbeDoubling, to find a raised quota fast; what got
//     through is taken into the estimate every second.
//
// The step is skipped when the server says its limit: the learned rate is
// then a cap below the headers' pace, which bound how far the ramp can go.
// A throttle ends the probe (see cut). l.mu is held.
func (l *Limiter) probe(now int64) {
	s := &l.s
	meas := s.ok.sum(now)
	x := s.tDemand - s.phaseAt
	switch s.phase {
	case phaseHold:
		if x < s.k {
			break
		}
		s.stepAt = 0
		if s.hLimit == 0 && s.bound != 0 && s.rtt+minLead < int64(time.Second)/2 {
			// A failed step showed where the server's windows start:
			// step just before one starts, by one request more in the
			// window ending then. (With a round trip of half a second
			// or more, there is no telling which window a request
			// lands in: the step is a whole one.)
			next := s.bound + (now-s.bound)/int64(time.Second)*int64(time.Second)
			for next <= now {
				next += int64(time.Second)
			}
			if next-now > stepLead(s.rate, s.rtt) || next-now < s.rtt+minLead {
				break // too early, or too late for the request to arrive in time
			}
			s.stepAt = next
		}
		// Without an aligned step, two seconds: one whole window at least.
		s.phase, s.phaseAt, s.phaseMark, s.early, x = phaseStep, s.tDemand, now+2*int64(time.Second), false, 0
		if s.stepAt != 0 {
			// Enough more before the window ends that it holds step(est)
			// requests, one more than the estimate rounded up.
			s.phaseMark = s.stepAt + s.rtt + stepGrace
			s.stepRate = s.rMax + (step(s.rMax)-s.rMax)*1e9/float64(s.stepAt-s.rtt-now)
		}
		if s.hLimit == 0 {
			break
		}
		fallthrough
	case phaseStep:
		if s.hLimit == 0 && (now < s.phaseMark || s.stepAt == 0 && meas < step(s.rMax)-0.5) {
			break
		}
		// The step went through: the quota is at least what got through.
		if s.stepAt != 0 {
			s.rMax = max(s.rMax, math.Floor(s.rMax+1e-9)+1)
		} else {
			s.rMax = max(s.rMax, min(meas, s.rate))
		}
		s.phase, s.phaseAt, s.phaseMark, x = phaseRamp, s.tDemand, now, 0
	case phaseRamp:
		if now-s.phaseMark >= int64(time.Second) {
			// A second of the ramp without a throttle: what got through
			// in it is within the quota.
			s.rMax = max(s.rMax, min(meas, s.rate))
			s.phaseMark = now
		}
	}
	var r float64
	switch s.phase {
	case phaseHold:
		r = s.rMax
	case phaseStep:
		if s.stepAt == 0 {
			r = step(s.rMax)
			break
		}
		// Fast enough to send one request more before the window ends,
		// then back to the estimate.
		if now < s.stepAt-s.rtt {
			r = s.stepRate
		} else {
			r = s.rMax
		}
		s.rate = r
	case phaseRamp:
		r = step(s.rMax) * (1 + probeStart*(math.Exp2(x/l.params().probeDoubling)-1))
	}
	// Never probe more than three times above what gets through: the
	// requests must follow the rate for a throttle to tell anything.
	s.rate = max(s.rate, min(r, 3*max(s.rMax, meas)))
}

// stepGrace is how long after its answer is due a step just before a
// window starts is judged.
const stepGrace = int64(20 * time.Millisecond)

// minLead is how long, at least, the request one more takes to send before
// its round trip.
const minLead = int64(50 * time.Millisecond)

// stepLead is how long before a window starts the step may begin: two
// intervals of the rate, so that a success lands in time to begin it, at
// least 200 ms, and at least 150 ms more than the latest it may begin (a
// round trip and minLead before the window starts).
func stepLead(rate float64, rtt int64) int64 {
	return max(int64(200*time.Millisecond), int64(2e9/max(rate, 1)), rtt+minLead+int64(150*time.Millisecond))
}

// step is the whole number of requests per second just above est.
func step(est float64) float64 {
	return math.Ceil(est-1e-9) + 1
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

// holdRequests is how many requests, at least, a hold lasts, up to
// maxHold.
const holdRequests = 20.0

// maxHold is the longest hold, in seconds of demand, however low the rate.
const maxHold = 5.0

// holdFor returns how long to hold at the quota estimate est before
// probing, in seconds of demand: each probe of an unchanged quota costs a
// throttle, so hold longer at low rates, that it stays a small share of
// the requests.
func holdFor(p *params, est float64) float64 {
	return max(p.hold, min(holdRequests/max(est, 1), maxHold))
}

// probeStart is the first step of the ramp above the quota estimate.
const probeStart = 0.2
