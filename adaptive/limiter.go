package adaptive

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/quota"
	"github.com/tollgate-go/tollgate/window"
)

// Limiter keeps one tenant inside its server's quota: a token bucket, a
// sliding window and a pause gate (see the package doc), tuned by what the
// server's answers say.
//
// Admit a request with Wait (blocking, most callers want this), ReserveAt
// (non-blocking) or AllowAt (non-blocking, no answer to report). Wait and
// ReserveAt return a Ticket: call its Done with the answer's Observation, or
// Cancel if the request was never sent. Answers not tied to a ticket go to
// Observe.
//
// A hot update (an Observation that changes the limits) applies to every
// later decision at once. Callers that cannot go at once wait in the
// tenant's one line, in order of first arrival (a call retried by package
// retry's Do keeps the place of its first attempt); only the first in line
// looks at the limits, and a change of the rate that adds up to 5% or
// more, a window loosened, or the end of a probe wakes it to look again. A
// pause, a new rate or a full window shifts the line and never reorders
// it. ReserveAt and AllowAt never go ahead of the line: they admit only
// while no one waits in it. A token given back (Cancel, a deadline, a
// cancelled context) returns to the bucket only if no later one has been
// taken; otherwise it is lost, since handing it out again would let two
// requests go together.
//
// The zero Limiter is ready to use and behaves like New(Config{}): no rule,
// so it starts in slow start and learns the quota. Limiter is safe for
// concurrent use and must not be copied after first use.
type Limiter struct {
	p    *params          // nil means defaultParams
	rule quota.Rule       // the static starting point
	brk  *breaker.Breaker // the tenant's circuit breaker; nil if none

	b        bucket
	g        gate
	win      atomic.Pointer[window.Window] // nil: no window in force
	winLimit atomic.Int64                  // the limit win enforces

	seq      atomic.Uint64        // tickets issued so far; a ticket's number
	inflight atomic.Int64         // tickets neither done nor cancelled, and Wait's callers holding a place under slow start's cap
	sent     places               // requests sent and not yet answered, under the learned cap (see flight)
	line     atomic.Pointer[line] // the callers of Wait not admitted at once, in order; nil until the first
	capOff   atomic.Int64         // slow start's cap on inflight, less initialWindow; -1 for none (see inflightCap)
	rtt      atomic.Int64         // the smoothed round trip, ns (learnState.rtt, for Wait)
	blocked  atomic.Int64         // Unix ns of the last admission held back: demand
	used     atomic.Int64         // Unix ns of the last admission (or Registry.GetAt), to the second; evictedMark once dropped
	recheck  atomic.Int64         // Unix ns when the limits must be derived again (a reset passes); 0: never

	mu   sync.Mutex // guards s, wake and gen writes
	wake chan struct{}
	gen  atomic.Uint32 // bumped with every wake
	// The share of the quota spent here, float32 bits (it fills gen's
	// word); 0 stands for 1 (see SetShare).
	share atomic.Uint32
	s     learnState
}

// New returns a Limiter configured by cfg, starting from cfg.Rule.
func New(cfg Config) *Limiter {
	l := &Limiter{p: cfg.params(), rule: cfg.Rule}
	l.init()
	return l
}

func newWithParams(p *params, rule quota.Rule) *Limiter {
	l := &Limiter{p: p, rule: rule}
	l.init()
	return l
}

func (l *Limiter) init() {
	if l.rule == (quota.Rule{}) {
		return
	}
	l.mu.Lock()
	l.recompute(time.Now().UnixNano())
	l.mu.Unlock()
}

func (l *Limiter) params() *params {
	if l.p == nil {
		return defaultParams
	}
	return l.p
}

// Breaker returns the tenant's circuit breaker, made by the Registry's
// RegistryConfig.Breaker with the Limiter; nil if there is none (a nil
// *breaker.Breaker lets every request go). The Limiter itself never asks
// it: its user (transport.Transport) asks both, the breaker last, right
// before sending.
func (l *Limiter) Breaker() *breaker.Breaker { return l.brk }

// Allow is AllowAt(time.Now()).
func (l *Limiter) Allow() bool { return l.AllowAt(time.Now()) }

// AllowAt reports whether a request may be sent at now, and if so counts it
// against the bucket and the window. It never blocks, and never goes ahead
// of Wait's callers: while they wait in line it reports false. A request
// admitted by AllowAt is not counted in flight and its answer, if any,
// goes to Observe; if it happens to be the probe after a pause, the first
// success Observe sees ends the probe. Use ReserveAt to tie answers to
// admissions.
func (l *Limiter) AllowAt(now time.Time) bool {
	ns := now.UnixNano()
	_, _, _, wait := l.admit(now, ns, false, false)
	if wait != 0 {
		return false
	}
	touch(l, ns)
	return true
}

// ReserveAt admits a request at now if the bucket, the window and the gate
// all allow it and no caller of Wait waits in line, without blocking. On
// success the Ticket must be finished with Done or Cancel.
func (l *Limiter) ReserveAt(now time.Time) (Ticket, bool) {
	ns := now.UnixNano()
	probe, mark, level, wait := l.admit(now, ns, true, false)
	if wait != 0 {
		return Ticket{}, false
	}
	t := l.ticket(ns, probe, mark)
	t.level = int32(level)
	return t, true
}

// Reserve is ReserveAt(time.Now()).
func (l *Limiter) Reserve() (Ticket, bool) { return l.ReserveAt(time.Now()) }

// ticket issues the ticket of a request admitted at now, whose place in
// flight admit or Wait has taken.
func (l *Limiter) ticket(now, probe, mark int64) Ticket {
	touch(l, now)
	return Ticket{l: l, seq: l.seq.Add(1), at: now, probe: probe, mark: mark}
}

// Hold-back reasons, for WaitError.
const (
	reasonPause  = "pause"
	reasonRate   = "rate"
	reasonWindow = "window"
	// Admitted with less than a round trip left: its answer would come
	// after the deadline, and the server would count it for nothing.
	reasonRoundTrip = "round trip"
)

// admit runs the checks at now (ns is now in Unix ns): the line (no one
// may be in it), the gate, slow start's cap on requests in flight, the
// learned cap on requests sent, the bucket (unless paced: see WaitPaced)
// and the window. With place, an admitted request takes its place
// in flight and is counted as sent, at the level it returns. It returns
// wait 0 on success, with the probe deadline if the caller is the probe
// and the token's mark; otherwise how long until a retry could succeed (at
// least 1 ns).
func (l *Limiter) admit(now time.Time, ns int64, place, paced bool) (probe, mark, level, wait int64) {
	if !l.lineEmpty() {
		l.refresh(ns)
		l.markBlocked(ns)
		return 0, 0, 0, 1 // the line goes first
	}
	l.refresh(ns)
	wait, probe = l.g.enter(ns, l.params().probeTimeout)
	if wait > 0 {
		l.markBlocked(ns)
		return 0, 0, 0, wait
	}
	if !l.takePlace(place) {
		l.unprobeQuiet(probe)
		l.markBlocked(ns)
		return 0, 0, 0, 1
	}
	if level = l.sent.take(place); level == 0 {
		l.dropPlace(place)
		l.unprobeQuiet(probe)
		l.markBlocked(ns)
		return 0, 0, 0, 1
	}
	if !place {
		level = 0
	}
	switch {
	case probe != 0:
		mark = l.b.force(ns)
	case !paced: // else the store has held the request to its turn
		if wait, mark = l.b.take(ns); wait > 0 {
			l.dropPlace(place)
			l.sent.drop(level)
			l.unprobe(probe)
			l.markBlocked(ns)
			return 0, 0, 0, wait
		}
	}
	if w := l.win.Load(); w != nil && probe != 0 {
		w.Add(now, 1) // the probe asks the server past the window (see wait)
	} else if w != nil {
		if limit := l.winLimit.Load(); !w.TryAdd(now, 1, limit) {
			l.b.giveBack(mark)
			l.dropPlace(place)
			l.sent.drop(level)
			l.unprobe(probe)
			l.markBlocked(ns)
			return 0, 0, 0, max(w.NextFree(now, 1, limit).Sub(now).Nanoseconds(), 1)
		}
	}
	return probe, mark, level, 0
}

// takePlace takes a place in flight (only checks there is one, without
// place) under slow start's cap, if one is in force. It reports whether
// there was one.
func (l *Limiter) takePlace(place bool) bool {
	c := l.inflightCap()
	if c == 0 {
		if place {
			l.inflight.Add(1)
		}
		return true
	}
	for {
		n := l.inflight.Load()
		if n >= c {
			return false
		}
		if !place || l.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// dropPlace gives back a place in flight taken by takePlace(place) for a
// request not sent, waking the waiters if slow start's cap binds.
func (l *Limiter) dropPlace(place bool) {
	if !place {
		return
	}
	if n := l.inflight.Add(-1); l.inflightCap() > 0 && n+1 >= l.inflightCap() {
		l.notify()
	}
}

// refresh derives the limits again if a reset or the header TTL has passed
// since they were last derived: the spending rate R/T ends at the reset.
func (l *Limiter) refresh(now int64) {
	if r := l.recheck.Load(); r == 0 || now < r {
		return
	}
	if !l.mu.TryLock() {
		return // someone else is at it
	}
	big := l.recompute(now)
	l.mu.Unlock()
	if big {
		l.notify()
	}
}

// unprobeQuiet hands back the probe a caller claimed but cannot send for
// want of a place in flight, waking no one: no one can go before an answer
// frees a place, and that answer wakes all. (Waking them would have each
// claim the probe, find no place and wake the rest, with no time passing.)
func (l *Limiter) unprobeQuiet(probe int64) {
	if probe != 0 {
		l.g.release(probe)
	}
}

// unprobe hands back the probe a caller claimed but will not send.
func (l *Limiter) unprobe(probe int64) {
	if probe != 0 && l.g.release(probe) {
		l.notify()
	}
}

// held reports whether callers are held back: some wait in line, or one
// was held back within d before now. It is the learner's sign of demand.
func (l *Limiter) held(now, d int64) bool {
	return !l.lineEmpty() || now-l.blocked.Load() < d
}

// markBlocked records demand: an admission was held back at now.
func (l *Limiter) markBlocked(now int64) {
	if now-l.blocked.Load() > int64(time.Millisecond) {
		l.blocked.Store(now)
	}
}

// wakeCh returns a channel closed at the next wake.
func (l *Limiter) wakeCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return l.wake
}

// notify wakes every waiter to re-check.
func (l *Limiter) notify() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen.Add(1)
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}
