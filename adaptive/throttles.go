package adaptive

import (
	"math"
	"time"
)

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
//     after the window ended. Before that (or with a round trip too long
//     to time it), it is two seconds at the next whole number of requests
//     per second above the estimate, enough to fill one whole window
//     whatever its phase, and until a second's successes show it went
//     through. Either way a probe against an unchanged quota costs one
//     throttle;
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
		// The step went through: the quota is at least what got through
		// (after a timed step, one more than the estimate rounded down,
		// to be safe: the window held that at least).
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
