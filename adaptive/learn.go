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
	hLimit  int64 // limit per hWindow; 0 if never said
	hWindow int64 // ns
	hRem    int64 // remaining, as of hRemAt
	hReset  int64 // when Remaining refills, Unix ns
	hRemAt  int64 // when Remaining and reset were last said; 0 if never

	// Learned from throttles.
	rate    float64 // the learned rate cap, per second; 0 if none
	rMax    float64 // the rate the last cut was measured at: the quota estimate
	k       float64 // seconds of demand the cubic takes to get back to rMax
	tDemand float64 // seconds of demand since the last cut
	lastUpd int64   // last success or cut, Unix ns
	cutSeq  uint64  // the first admission number after the last cut
	cutAt   int64   // Unix ns of the last cut
	cutLast bool    // the last quota answer was a throttle that cut
	rtt     int64   // smoothed round trip of tickets, ns

	ok    meter  // successes over the last second
	aSeq  uint64 // admissions count at aAt, for the admitted rate
	aAt   int64
	first int64         // admission time of the first answer seen, Unix ns
	src   Source        // where the rate in force came from
	stale bool          // Remaining is older than HeaderTTL
	wlim  int64         // window limit in force
	wlen  time.Duration // its window

	rateNow  float64 // the rate in force
	burstNow int     // the burst in force
}

// meter counts events over the trailing second in ten 100 ms buckets.
type meter struct {
	e int64 // epoch (100 ms units) of the newest bucket
	c [11]uint32
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
	m.c[e%11]++
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

func mod11(i int64) int64 { return ((i % 11) + 11) % 11 }

// Observe learns from an answer not tied to a Ticket (for one tied to a
// Ticket, call the Ticket's Done instead, which also ties it to its
// admission). obs.At is taken as the time of the answer (time.Now if zero).
//
// What it learns, in order: fresh headers replace the limit, window,
// remaining and reset; a retry hint, or a reset with nothing remaining,
// closes the gate until then (capped by MaxPause; after a throttle one
// request probes first); a throttle cuts the rate (at most once per round
// trip), a success lets it grow back while there is demand. A Transient
// answer teaches nothing. Callers already waiting see the result as the
// Limiter doc describes.
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
	if now-s.aAt >= int64(time.Second) {
		s.aSeq, s.aAt = l.seq.Load(), now
	}
	switch {
	case o.Transient:
		// Not a quota signal. A probe that met one hands the probe on.
		if t != nil && t.probe != 0 {
			wake = l.g.release(t.probe)
		}
	default:
		l.readHeaders(&o, now)
		if ra := o.RetryAt(); !ra.IsZero() {
			if u := ra.UnixNano(); u > now {
				l.g.pause(min(u, now+p.maxPause), o.Throttled || o.Has(quota.FieldRetryAfter))
			}
		}
		if o.Throttled {
			l.cut(now, t, !o.RetryAt().IsZero())
			if t != nil && t.probe != 0 && l.g.release(t.probe) {
				wake = true // a throttled probe without a new pause: probe again
			}
		} else {
			s.ok.add(now)
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
	if l.recompute(now) {
		wake = true
	}
	// Spend Remaining evenly: when what is left is already in flight, pause
	// until the reset.
	if s.hRemAt > 0 && now-s.hRemAt < p.headerTTL && s.hReset > now && s.hRem-l.inflight.Load() <= 0 {
		l.g.pause(min(s.hReset, now+p.maxPause), false)
	}
	l.mu.Unlock()
	if wake {
		l.notify()
	}
}

// readHeaders takes the limit, window, remaining and reset the answer
// carries. l.mu is held.
func (l *Limiter) readHeaders(o *quota.Observation, now int64) {
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
		s.hLimit, s.hWindow = o.Limit, w
	}
	if o.Has(quota.FieldRemaining|quota.FieldReset) && !o.ResetAt.IsZero() {
		s.hRem, s.hReset, s.hRemAt = o.Remaining, o.ResetAt.UnixNano(), now
	}
}

// cut lowers the learned rate after a throttle. l.mu is held.
//
// A throttle that came with a retry hint or reset has its pause; it cuts to
// the measured rate, never below. One without, following another with no
// success between, cuts by the Decrease factor.
func (l *Limiter) cut(now int64, t *Ticket, hinted bool) {
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
		if meas >= 1 {
			// Successes per second, over the time since the first
			// answer if that is less than a second. Overestimating is
			// cheap (the next throttles cut again), underestimating
			// costs a slow climb.
			r = meas * p.headroom
			if s.first > 0 && now-s.first < int64(time.Second) {
				r *= 1e9 / float64(max(now-s.first, int64(10*time.Millisecond)))
			}
		} else if dt := now - s.aAt; dt >= int64(100*time.Millisecond) {
			r = float64(l.seq.Load()-s.aSeq) * 1e9 / float64(dt) / 2
		}
	case s.cutLast && !hinted: // throttled again with no success between: cut harder
		r = cur * p.decrease
	default:
		r = min(cur, max(cur*p.decrease, meas*p.headroom))
	}
	r = max(r, p.minRate)
	s.rate = r
	s.rMax = max(meas, r)
	s.k = math.Cbrt((1 - r/s.rMax) / p.increase)
	s.tDemand = 0
	s.lastUpd = now
	s.cutSeq = l.seq.Load() + 1
	s.cutAt = now
	s.cutLast = true
}

// grow raises the learned rate after a success, along the cubic, counting
// only time when the Limiter held requests back. l.mu is held.
func (l *Limiter) grow(now int64) {
	s := &l.s
	s.cutLast = false
	dt := now - s.lastUpd
	s.lastUpd = now
	if s.rate == 0 || dt <= 0 || now-l.blocked.Load() > int64(time.Second) {
		return // nothing learned, or idle: never grow without demand
	}
	s.tDemand += float64(min(dt, int64(100*time.Millisecond))) / 1e9
	x := s.tDemand - s.k
	if r := s.rMax * (1 + l.params().increase*x*x*x); r > s.rate {
		s.rate = min(r, 1e9)
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
		// Pace at L per W plus half a round trip: requests admitted exactly
		// W/L apart may reach the server closer together than that, by up
		// to the spread of their one-way delays.
		rate = float64(s.hLimit) * 1e9 / float64(s.hWindow+s.rtt/2)
		burst, wlim, wlen = 1, s.hLimit, time.Duration(s.hWindow)
		src = SourceHeaders
	}
	base := rate
	s.stale = s.hRemAt > 0 && now-s.hRemAt >= p.headerTTL
	var recheck int64
	if s.hRemAt > 0 && !s.stale && s.hReset > now {
		recheck = min(s.hReset, s.hRemAt+p.headerTTL)
		if left := s.hRem - l.inflight.Load(); left > 0 {
			if rr := float64(left) * 1e9 / float64(s.hReset-now); rate == 0 || rr < rate {
				rate, burst = rr, 1
				if src == SourceNone {
					src = SourceHeaders
				}
			}
		}
	}
	if s.rate > 0 && base > 0 && s.rate >= base {
		s.rate = 0 // grown past the rule or headers: no longer binding
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
	// wlim. Once in force, it stays (the recent past may hold a burst).
	cur := l.win.Load()
	need := learned || wlim > 0 && (rate == 0 || burst > 1 || rate*wlen.Seconds() > float64(wlim)*(1+1e-9))
	switch {
	case wlim == 0:
		if cur != nil {
			l.win.Store(nil)
		}
	case cur != nil && cur.Len() == wlen:
		l.winLimit.Store(wlim)
	case need || cur != nil:
		w := windowFor(wlen, p.windowBuckets)
		if cur != nil {
			t := time.Unix(0, now)
			w.Add(t, int(cur.Count(t))) // carried over, conservatively
		}
		l.winLimit.Store(wlim)
		l.win.Store(w)
	}
	return big
}

func windowFor(d time.Duration, buckets int) *window.Window {
	return window.New(d, buckets)
}
