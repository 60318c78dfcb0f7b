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

	// Learned from throttles.
	rate    float64 // the learned rate cap, per second; 0 if none
	rMax    float64 // the rate the last cut was measured at: the quota estimate
	k       float64 // seconds of demand to hold at the cut before probing
	tDemand float64 // seconds of demand since the last cut
	lastUpd int64   // last success or cut, Unix ns
	cutSeq  uint64  // the first admission number after the last cut
	cutAt   int64   // Unix ns of the last cut
	rtt     int64   // smoothed round trip of tickets, ns

	ok        meter         // successes over the last second
	sent      meter         // admissions of answered tickets over the last second, by admission time
	early     bool          // the last cut was the first, from unlimited: successes still returning raise the rate
	first     int64         // admission time of the first answer seen, Unix ns
	src       Source        // where the rate in force came from
	stale     bool          // Remaining is older than HeaderTTL
	wlim      int64         // window limit in force
	wlen      time.Duration // its window
	winNeeded int64         // Unix ns when the window was last needed

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

// addAt counts an event that happened at at (Unix ns), if it is still
// within the meter's last second as of its newest bucket.
func (m *meter) addAt(at int64) {
	e := at / meterWidth
	switch {
	case e > m.e:
		m.add(at)
	case e > m.e-11 && e >= 0:
		m.c[e%11]++
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
	if t != nil {
		s.sent.addAt(t.at)
	}
	switch {
	case o.Transient:
		// Not a quota signal. A probe that met one hands the probe on.
		if t != nil && t.probe != 0 {
			wake = l.g.release(t.probe)
		}
	default:
		l.readHeaders(&o, now, t)
		if u := pauseUntil(&o); u > now {
			wake = l.pause(now, min(u, now+p.maxPause), true) || wake
		}
		if o.Throttled {
			l.cut(now, t)
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
	// Spend Remaining evenly: when what is left is already spent, pause
	// until the earliest moment the reset may come.
	if s.hRemAt > 0 && now-s.hRemAt < p.headerTTL && s.hEarly > now && l.left() <= 0 {
		wake = l.pause(now, min(s.hEarly, now+p.maxPause), false) || wake
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
func pauseUntil(o *quota.Observation) int64 {
	switch {
	case o.Has(quota.FieldRetryAfter):
		return o.At.Add(o.RetryAfter).UnixNano()
	case o.Throttled && o.Has(quota.FieldReset):
		return o.ResetAt.UnixNano()
	}
	return 0
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
			s.rate = 0 // the server raised the quota: what throttles taught is past
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
		early := reset - int64(max(o.ResetSlack, 0))
		if t != nil {
			seq = t.seq
			early -= max(now-t.at, 0)
		}
		s.hRem, s.hRemSeq, s.hReset, s.hEarly, s.hRemAt = o.Remaining, seq, reset, early, now
	}
}

// cut lowers the learned rate after a throttle. l.mu is held.
//
// The cut is to Headroom times the success rate measured over the last
// second, but never by more than the Decrease factor at once, and never up.
// A burst of throttles with successes still coming in (the tail of a fixed
// window that is full) thus keeps the rate near the quota, while throttles
// with no success (the quota fell) cut by Decrease once per round trip.
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
	default:
		s.early = false
		r = min(cur, max(cur*p.decrease, meas*p.headroom))
	}
	r = max(r, p.minRate)
	s.rate = r
	// The quota estimate: the rate the throttle came at, the lower of the
	// pace and the measured success rate (which a fixed window can
	// inflate, when the last second straddles two of them).
	s.rMax = max(meas, r)
	if cur > 0 {
		s.rMax = max(min(meas, cur), r)
	}
	// Each probe past the quota costs a throttle or two: hold longer at low
	// rates, so that it stays a small share of the requests.
	s.k = max(p.hold, holdRequests/max(s.rMax, 1))
	s.tDemand = 0
	s.lastUpd = now
	s.cutSeq = l.seq.Load() + 1
	s.cutAt = now
}

// grow raises the learned rate after a success: after the hold, a probe
// above the quota estimate whose overshoot doubles every ProbeDoubling,
// counting only time when the Limiter held requests back. l.mu is held.
func (l *Limiter) grow(now int64) {
	s := &l.s
	dt := now - s.lastUpd
	s.lastUpd = now
	if s.rate == 0 || dt <= 0 || now-l.blocked.Load() > int64(time.Second) {
		return // nothing learned, or idle: never grow without demand
	}
	// Between successes, at most the longer of 100 ms and two intervals
	// of the learned rate counts as demand.
	s.tDemand += float64(min(dt, max(int64(100*time.Millisecond), int64(2e9/s.rate)))) / 1e9
	if s.early && now-s.cutAt < int64(time.Second) {
		// Successes still coming back from before the first cut show what
		// got through: the quota is at least that.
		if m := s.ok.sum(now) * l.params().headroom; m > s.rate {
			s.rate, s.rMax = m, max(s.rMax, m)
		}
	}
	if r := s.rMax * (1 + probeGain(s.tDemand-s.k, l.params().probeDoubling)); r > s.rate {
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
	case wlim == 0 || !need && cur != nil && now-s.winNeeded >= int64(max(cur.Len(), wlen)):
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

// holdRequests is how many requests, at least, a hold lasts.
const holdRequests = 20.0

// probeStart is the first step of a probe above the quota estimate.
const probeStart = 0.02

// probeGain is how far above the quota estimate the rate probes x seconds
// of demand after the hold: nothing before, then 2% doubling every
// doubling seconds.
func probeGain(x, doubling float64) float64 {
	if x <= 0 {
		return 0
	}
	return probeStart * (math.Exp2(x/doubling) - 1)
}
