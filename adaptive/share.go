package adaptive

import (
	"math"
	"time"
)

// Pace is the pacer a Limiter has in force, as a store that shares a
// tenant's quota among processes needs it (see Limiter.Pace): admissions
// spaced Interval apart with bursts of up to Burst, and at most Limit in
// any trailing Window where the bucket does not already imply it.
type Pace struct {
	Interval time.Duration // between two admissions; 0 means no pacing
	Burst    int           // how many may go at once; 0 when Interval is 0
	Limit    int64         // at most Limit per Window; 0 means no window
	Window   time.Duration // the window Limit applies to
	Source   Source        // where the pace comes from
}

// Said reports whether the pace is one every process that spends the
// tenant's quota derives alike: a static rule, or the server's rate-limit
// headers. A learned pace is this process's estimate from its own answers.
func (p Pace) Said() bool {
	return p.Interval > 0 && (p.Source == SourceRule || p.Source == SourceHeaders)
}

// Pace returns the pacer in force, without taking the Limiter's lock. It
// is scaled by the share (see SetShare).
func (l *Limiter) Pace() Pace {
	p := Pace{Source: Source(l.srcNow.Load())}
	if t := l.b.interval.Load(); t > 0 {
		p.Interval = time.Duration(t)
		p.Burst = int(l.b.tau.Load()/t) + 1
	}
	if w := l.win.Load(); w != nil {
		p.Limit, p.Window = l.winLimit.Load(), w.Len()
	}
	return p
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
