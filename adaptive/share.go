package adaptive

import (
	"math"
	"time"
)

// Pace is the pace a rule or the server's rate-limit headers set for a
// tenant, as a store that shares the tenant's quota among processes needs
// it (see Fleet.Pace): admissions spaced Interval apart with bursts of
// up to Burst, and at most Limit in any trailing Window where the bucket
// does not already imply it.
type Pace struct {
	Interval time.Duration // between two admissions; 0 means no pace is said
	Burst    int           // how many may go at once
	Limit    int64         // at most Limit per Window; 0 means no window
	Window   time.Duration // the window Limit applies to
	Source   Source        // SourceRule or SourceHeaders, or SourceNone
}

// Said reports whether a pace is said: every process that spends the
// tenant's quota derives it alike, from a static rule or the limit in the
// server's headers.
func (p Pace) Said() bool { return p.Interval > 0 }

// Pace returns the pace said for the tenant: the server's limit per
// window, or else the rule's. It is not what the bucket paces at when it
// spends the server's Remaining evenly until the reset: that holds for one
// window only, and what this process knows of it only for its own
// requests, while a shared pace spans windows and processes. (A Remaining
// spent pauses the tenant instead: see Paused.) A pace learned from
// throttles is not said, nor a rule's once the learner has taken over
// from it (the server throttled at the rule's pace). It is what the pacer
// would pace at: scaled by the share (see SetShare), and, where the
// server said it, no slower than one request per MaxPause.
func (f Fleet) Pace() Pace {
	l := f.l
	l.mu.Lock()
	rate, burst, wlim, wlen, src := l.saidLimits()
	learned := l.s.src == SourceLearned
	l.mu.Unlock()
	if !(rate > 0) || learned {
		return Pace{}
	}
	rate, wlim = l.paced(rate, src), l.pacedLimit(wlim)
	if wlim > 0 && burst <= 1 && rate*wlen.Seconds() <= float64(wlim)*(1+1e-9) {
		wlim, wlen = 0, 0 // the bucket implies it
	}
	return Pace{Interval: intervalOf(rate), Burst: max(burst, 1), Limit: wlim, Window: wlen, Source: src}
}

// intervalOf returns the interval between two admissions at rate (per
// second, positive), at least 1 ns.
func intervalOf(rate float64) time.Duration {
	return time.Duration(max(int64(math.Min(1e9/rate, math.MaxInt64/4)), 1))
}

// SetShare sets the share of the tenant's quota this process spends on its
// own: the rate and window limit in force are scaled by it, whatever they
// come from (slow start's cap on requests in flight is not). A learner
// that has settled learns nothing while its share is less than whole: the
// count of a window spent would be its share's, not the quota's. A store that
// shares the quota among processes sets a share below 1 while it cannot
// reach the others (package transport, Config.Store), and 1 again when it
// can. A share outside (0, 1] means 1. Waiters see the change as they see
// any hot update.
func (f Fleet) SetShare(share float64) {
	l := f.l
	var bits uint32 // 0 stands for a share of 1, so the zero Limiter has it
	if share > 0 && share < 1 {
		bits = math.Float32bits(float32(share))
	}
	if l.share.Swap(bits) == bits {
		return
	}
	l.mu.Lock()
	big := l.recompute(time.Now().UnixNano())
	l.mu.Unlock()
	if big {
		l.notify()
	}
}

// Share returns the share set by SetShare: 1 unless it set a smaller one.
func (f Fleet) Share() float64 { return f.l.shareNow() }

// shareNow is Fleet.Share.
func (l *Limiter) shareNow() float64 {
	if bits := l.share.Load(); bits != 0 {
		return float64(math.Float32frombits(bits))
	}
	return 1
}

// Paused returns the end of the latest pause (the gate is closed before
// it), without taking the Limiter's lock; zero if there was none.
func (f Fleet) Paused() time.Time {
	l := f.l
	if u := l.g.until.Load(); u != 0 {
		return time.Unix(0, u)
	}
	return time.Time{}
}

// Fresh reports whether the Limiter knows nothing of its quota yet: no
// rule, no limit or Remaining from the server's headers, no throttle seen
// (slow start before its first throttle). A store that shares the
// tenant's quota may then pace it by what the other processes know.
func (f Fleet) Fresh() bool {
	l := f.l
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.src == SourceNone && l.s.e == nil
}
