package adaptive

import (
	"math"
	"time"
)

// Pace is the pace a rule or the server's rate-limit headers set for a
// tenant, as a store that shares the tenant's quota among processes needs
// it (see Limiter.Pace): admissions spaced Interval apart with bursts of
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

// Pace returns the pace said for the tenant, without taking the Limiter's
// lock: the server's limit per window, or else the rule's. It is not what
// the bucket paces at when it spends the server's Remaining evenly until
// the reset: that holds for one window only, and what this process knows
// of it only for its own requests, while a shared pace spans windows and
// processes. (A Remaining spent pauses the tenant instead: see Paused.) A
// pace learned from throttles is not said. It is scaled by the share (see
// SetShare).
func (l *Limiter) Pace() Pace {
	p := Pace{
		Interval: time.Duration(l.saidIv.Load()),
		Limit:    l.saidLim.Load(),
		Window:   time.Duration(l.saidLen.Load()),
	}
	if p.Interval == 0 {
		return Pace{}
	}
	p.Burst, p.Source = int(l.saidBurst.Load()), Source(l.saidSrc.Load())
	return p
}

// setSaid stores the pace said (see Pace): rate and burst, and the window
// limit wlim per wlen where the bucket does not imply it. l.mu is held.
func (l *Limiter) setSaid(rate float64, burst int, wlim int64, wlen time.Duration) {
	src := SourceRule
	if l.s.hLimit > 0 {
		src = SourceHeaders
	}
	var iv int64
	if rate > 0 {
		iv = max(int64(math.Min(1e9/rate, math.MaxInt64/4)), 1)
	}
	if wlim > 0 && burst <= 1 && rate*wlen.Seconds() <= float64(wlim)*(1+1e-9) {
		wlim, wlen = 0, 0 // the bucket implies it
	}
	l.saidIv.Store(iv)
	l.saidBurst.Store(int64(max(burst, 1)))
	l.saidLim.Store(wlim)
	l.saidLen.Store(int64(wlen))
	l.saidSrc.Store(uint32(src))
}

// SetShare sets the share of the tenant's quota this process spends on its
// own: the rate and window limit in force are scaled by it, whatever they
// come from (slow start's cap on requests in flight is not). A store that
// shares the quota among processes sets a share below 1 while it cannot
// reach the others (package transport, Config.Store), and 1 again when it
// can. A share outside (0, 1] means 1. Waiters see the change as they see
// any hot update.
func (l *Limiter) SetShare(f float64) {
	var bits uint64 // 0 stands for a share of 1, so the zero Limiter has it
	if f > 0 && f < 1 {
		bits = math.Float64bits(f)
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
func (l *Limiter) Share() float64 {
	if bits := l.share.Load(); bits != 0 {
		return math.Float64frombits(bits)
	}
	return 1
}

// Paused returns the end of the latest pause (the gate is closed before
// it), without taking the Limiter's lock; zero if there was none.
func (l *Limiter) Paused() time.Time {
	if u := l.g.until.Load(); u != 0 {
		return time.Unix(0, u)
	}
	return time.Time{}
}
