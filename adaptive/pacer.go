package adaptive

import (
	"math"
	"time"

	"github.com/tollgate-go/tollgate/window"
)

// recompute derives the pacer in force (the bucket, the window and slow
// start's cap on requests in flight) from the rule, the headers and the
// learner's estimate, and installs it. It reports whether the change is
// big enough to wake the waiters. l.mu is held.
func (l *Limiter) recompute(now int64) (big bool) {
	s := &l.s
	p := l.params()
	var recheck int64
	if s.hLimit > 0 && now-s.hLimAt >= p.limitTTL {
		s.hLimit, s.hWindow = 0, 0 // not said again for LimitTTL: forgotten
	}
	rate, burst, wlim, wlen, src := l.saidLimits()
	if s.hLimit > 0 {
		recheck = s.hLimAt + p.limitTTL
		if sh := s.said; sh != nil && sh.share() < 1 && src == SourceHeaders && l.shareNow() >= 1 {
			// Others spend the limit said too: pace at our share of it
			// (the limit per window stands: no more than it is ours).
			// Not where a store out of reach set the share instead (see
			// SetShare): that share is of the same quota.
			rate *= sh.share()
		}
	}
	s.stale = s.hRemAt > 0 && now-s.hRemAt >= p.headerTTL
	if s.hRemAt > 0 && !s.stale && s.hEarly > now {
		// Spend what is left evenly until the earliest moment the reset
		// may come; after it, Remaining says nothing more.
		recheck = minSet(recheck, min(s.hEarly, s.hRemAt+p.headerTTL))
		if left := l.left(); left > 0 {
			if rr := float64(left) * 1e9 / float64(s.hEarly-now); rate == 0 || rr < rate {
				rate, burst = rr, 1
				if src == SourceNone {
					src = SourceHeaders
				}
			}
		}
	}
	// The learner, while the server does not say its limit: see the
	// package doc.
	capIn := int64(-1)
	fresh := false
	e := s.e
	if e == nil && l.learning() && src == SourceNone {
		capIn = s.coldCwnd // slow start
	}
	if e != nil && l.learning() {
		switch e.phase {
		case PhaseCold:
			if src == SourceNone {
				// Slow start goes on after a throttle its test found a
				// stray.
				capIn = e.cwnd
			}
		case PhaseMeasuring:
			// At most the window's budget until the window could end (the
			// gate holds the rest back until the next refill), unpaced
			// unless a rule paces: past W's lower bound and past the
			// stretch the window before outlasted (see
			// estimator.outlast), at least four round trips.
			src, wlim, wlen = SourceLearned, 0, 0
			if e.start != 0 {
				wlim = e.budget
				wlen = time.Duration(max(max(e.wlo, e.outlast)-l.spread(), 4*s.rtt, int64(time.Millisecond)))
				fresh = s.fresh
			}
		case PhaseSettled:
			fresh = s.fresh
			limit, win := e.paceAt(now, l.spread())
			if limit <= 0 || win <= 0 {
				break // cannot be: settling takes both
			}
			if e.spanEnd != 0 && now < e.spanAt {
				// A probe is due at the next window: derive the limits
				// again then.
				if recheck == 0 || e.spanAt < recheck {
					recheck = e.spanAt
				}
			}
			rate, burst, src = float64(limit)*1e9/float64(win), 1, SourceLearned
			wlim, wlen = 0, 0
		}
	}
	rate, wlim = l.paced(rate, src), l.pacedLimit(wlim)
	s.fresh = false
	l.capOff.Store(capIn)
	s.src, s.wlim, s.wlen = src, wlim, wlen
	if src == SourceLearned {
		// The window the learner paces by, for Snapshot.
		if limit, win := e.pace(l.spread()); limit > 0 && e.phase == PhaseSettled {
			s.wlim, s.wlen = limit, time.Duration(win)
		}
	}
	s.rateNow, s.burstNow = rate, int32(min(burst, math.MaxInt32))
	l.recheck.Store(recheck)
	big = l.b.set(now, rate, burst)
	if fresh && src == SourceLearned && rate > 0 {
		// Settled at a refill: the refill itself took the first place.
		l.b.startAt(max(l.b.tat.Load(), now+l.b.interval.Load()))
	}
	return l.setWindow(now, rate, burst, wlim, wlen, fresh) || big
}

// paced returns the rate the pacer paces at for rate from src: scaled by
// the share (another process spends the rest, see SetShare), and,
// however slow the pace the server's answers set, one request per
// MaxPause, whose answer may correct it (a rule's pace is the user's).
func (l *Limiter) paced(rate float64, src Source) float64 {
	if sh := l.shareNow(); sh < 1 {
		rate *= sh
	}
	if floor := 1e9 / float64(l.params().maxPause); rate > 0 && rate < floor && src != SourceRule {
		rate = floor
	}
	return rate
}

// pacedLimit returns the window limit the pacer enforces for wlim: scaled
// by the share, at least 1 (0 for none).
func (l *Limiter) pacedLimit(wlim int64) int64 {
	if sh := l.shareNow(); sh < 1 && wlim > 0 {
		return max(int64(float64(wlim)*sh), 1)
	}
	return wlim
}

// saidLimits returns the pace a rule or the limit in the server's headers
// sets (see Pace): the headers' if they said one, else the rule's; and its
// Source (SourceNone for neither). l.mu is held.
func (l *Limiter) saidLimits() (rate float64, burst int, wlim int64, wlen time.Duration, src Source) {
	rate, burst, wlim, wlen = ruleLimits(l.rule)
	if rate > 0 || wlim > 0 {
		src = SourceRule
	}
	if s := &l.s; s.hLimit > 0 {
		// Pace at L per W: with a burst of 1, no W ever holds more than L.
		rate = float64(s.hLimit) * 1e9 / float64(s.hWindow)
		burst, wlim, wlen = 1, s.hLimit, time.Duration(s.hWindow)
		src = SourceHeaders
		if s.hWindow > l.params().maxPause {
			wlim, wlen = 0, 0 // the floor paces; a window would outlast it
		}
	}
	return rate, burst, wlim, wlen, src
}

// setWindow installs the sliding window of at most wlim per wlen, when the
// bucket does not already imply it: with a burst of 1 and a rate of at most
// wlim/wlen, no wlen ever holds more than wlim. Once in force, it stays
// until it has not been needed for a whole window (the recent past may
// hold a burst); it costs up to one bucket of its capacity (see package
// window). fresh starts an empty one: a measured window's budget, less the
// refill that began it. It reports whether a window in force was loosened
// (see recompute). l.mu is held.
func (l *Limiter) setWindow(now int64, rate float64, burst int, wlim int64, wlen time.Duration, fresh bool) (looser bool) {
	s := &l.s
	cur := l.win.Load()
	before := l.winLimit.Load()
	need := wlim > 0 && (rate == 0 || burst > 1 || rate*wlen.Seconds() > float64(wlim)*(1+1e-9))
	if need {
		s.winNeeded = now
	}
	t := time.Unix(0, now)
	switch {
	case wlim == 0 || !need && cur != nil && now-s.winNeeded >= int64(max(cur.Len(), wlen)):
		if cur != nil {
			l.win.Store(nil)
		}
	case fresh:
		w := window.New(wlen, l.params().windowBuckets)
		w.Add(t, 1)
		l.winLimit.Store(wlim)
		l.win.Store(w)
	case cur != nil && cur.Len() == wlen:
		l.winLimit.Store(wlim)
	case need || cur != nil:
		w := window.New(wlen, l.params().windowBuckets)
		if cur != nil {
			w.Add(t, int(cur.Count(t))) // carried over, conservatively
		}
		l.winLimit.Store(wlim)
		l.win.Store(w)
	}
	// A window taken away, raised or made anew may have room for the
	// head of the line sooner than it sleeps for.
	return cur != nil && (l.win.Load() != cur || l.winLimit.Load() > before)
}

// inflightCap returns slow start's cap on requests in flight, 0 for none.
func (l *Limiter) inflightCap() int64 {
	c := l.capOff.Load()
	if c < 0 {
		return 0
	}
	return c + initialWindow
}

// minSet returns the earlier of two times, 0 standing for none.
func minSet(a, b int64) int64 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
