package adaptive

import (
	"context"
	"math"
	"time"
)

// Wait blocks until a request may be sent, or ctx is done. It returns a
// Ticket to finish with Done or Cancel.
//
// A waiter takes its place in the bucket's queue at once and sleeps on one
// timer until its token is due (no goroutine per waiter); then it re-checks
// the gate and the window. If ctx is cancelled meanwhile, the token goes back
// and Wait returns ctx.Err(). If ctx has a deadline and the token, the window
// or a pause would come later than it, Wait fails at once with a *WaitError
// (errors.Is(err, context.DeadlineExceeded)) that says how long it would have
// been. A wait for a probe's answer, or for a place under the learned cap
// on requests in flight (callers wait in line for it, first come first),
// has no known length and is not failed early; it ends with ctx.
func (l *Limiter) Wait(ctx context.Context) (Ticket, error) { return l.wait(ctx, false) }

// WaitPaced is Wait for a request whose pace is kept elsewhere: a store
// that shares the tenant's pace among processes (see Pace, and package
// transport's Config.Store) has already held it to its turn. The bucket is
// not asked again, which would make it later than its turn and waste it;
// the gate, the window and the caps on requests in flight are.
func (f Fleet) WaitPaced(ctx context.Context) (Ticket, error) { return f.l.wait(ctx, true) }

func (l *Limiter) wait(ctx context.Context, paced bool) (Ticket, error) {
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	deadline, hasDeadline := ctx.Deadline()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// sleep waits d, a wake, or ctx; it reports whether it was woken early.
	slept := false // whether the caller was held back at all
	sleep := func(d int64, wake <-chan struct{}) (bool, error) {
		slept = true
		if timer == nil {
			timer = time.NewTimer(time.Duration(d))
		} else {
			timer.Reset(time.Duration(d))
		}
		select {
		case <-timer.C:
			return false, nil
		case <-wake:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	fail := func(now time.Time, wait int64, reason string) error {
		return &WaitError{Wait: time.Duration(wait), Left: deadline.Sub(now), Reason: reason}
	}
	p := l.params()
	for {
		now := time.Now()
		ns := now.UnixNano()
		l.refresh(ns)
		maxWait := int64(math.MaxInt64 / 4)
		if hasDeadline {
			maxWait = deadline.Sub(now).Nanoseconds()
		}

		// The gate: a pause, or a probe in flight.
		gw, probe := l.g.enter(ns, p.probeTimeout)
		if gw > 0 {
			l.markBlocked(ns)
			wake := l.wakeCh() // then look again, so no wake is missed
			if gw, probe = l.g.enter(ns, p.probeTimeout); gw == 0 {
				l.unprobe(probe)
				continue
			}
			if hasDeadline && ns < l.g.until.Load() && gw > maxWait {
				return Ticket{}, fail(now, gw, reasonPause)
			}
			if _, err := sleep(gw, wake); err != nil {
				return Ticket{}, err
			}
			continue
		}

		// Slow start's cap on requests in flight: take a place, or wait
		// for an answer to free one.
		if !l.takePlace(true) {
			l.markBlocked(ns)
			wake := l.wakeCh() // then look again, so no wake is missed
			if !l.takePlace(true) {
				l.unprobeQuiet(probe)
				// An answer wakes us; ProbeTimeout bounds the sleep in
				// case the cap is lifted by a change that wakes no one.
				if _, err := sleep(p.probeTimeout, wake); err != nil {
					return Ticket{}, err
				}
				continue
			}
		}

		// The bucket: take a place in the queue, and keep it. If the rate
		// changes while we sleep, the bucket rescales its queue, and we
		// rescale our own due time the same way. If a pause voids the
		// queue (the bucket's epoch moves on), we queue again.
		epoch := l.b.epoch.Load()
		due, mark, ok := ns, int64(0), true
		switch {
		case probe != 0:
			mark = l.b.force(ns) // the probe goes first
		case !paced:
			due, mark, ok = l.b.reserve(ns, maxWait)
		}
		if !ok {
			l.dropPlace(true)
			l.unprobe(probe)
			return Ticket{}, fail(now, due-ns, reasonRate)
		}
		interval, reservedAt := l.b.interval.Load(), ns
		for due > ns && l.b.epoch.Load() == epoch {
			l.markBlocked(ns)
			if _, err := sleep(due-ns, l.wakeCh()); err != nil {
				l.b.giveBack(mark)
				l.dropPlace(true)
				l.unprobe(probe)
				return Ticket{}, err
			}
			now = time.Now()
			ns = now.UnixNano()
			l.refresh(ns)
			if t := l.b.interval.Load(); t != interval {
				due = rescale(due, max(l.b.changed.Load(), reservedAt), interval, t)
				interval, reservedAt = t, ns
				if hasDeadline && due > deadline.UnixNano() {
					l.b.giveBack(mark)
					l.dropPlace(true)
					l.unprobe(probe)
					return Ticket{}, fail(now, due-ns, reasonRate)
				}
			}
		}
		if l.b.epoch.Load() != epoch && probe == 0 {
			l.dropPlace(true)
			continue // our place was voided by a pause
		}
		if reservedAt != ns && probe == 0 {
			if w, pr := l.g.enter(ns, p.probeTimeout); w > 0 {
				l.b.giveBack(mark) // a pause began while we slept
				l.dropPlace(true)
				continue
			} else {
				probe = pr
			}
		}

		// The window. When it is full and the bucket paces, the request
		// gives up its place and the bucket's queue waits for the window:
		// the first place after the stall is due when the window has room,
		// the rest paced after it (see bucket.stall). Keeping the places
		// instead would release every holder together when the window
		// frees, a burst that then stays in the window a window later. The
		// probe waits for the window in place; requests when nothing paces
		// wait for it, then queue again from the gate.
		voided := false
		for {
			w, limit := l.win.Load(), l.winLimit.Load()
			if w == nil || w.TryAdd(now, 1, limit) {
				break
			}
			l.markBlocked(ns)
			free := w.NextFree(now, 1, limit)
			d := max(free.Sub(now).Nanoseconds(), 1)
			if hasDeadline && d > deadline.Sub(now).Nanoseconds() {
				l.b.giveBack(mark)
				l.dropPlace(true)
				l.unprobe(probe)
				return Ticket{}, fail(now, d, reasonWindow)
			}
			if probe == 0 && l.b.interval.Load() > 0 {
				l.b.giveBack(mark)
				if l.b.stall(free.UnixNano(), epoch) {
					l.notify()
				}
				voided = true
				break
			}
			if _, err := sleep(d, l.wakeCh()); err != nil {
				l.b.giveBack(mark)
				l.dropPlace(true)
				l.unprobe(probe)
				return Ticket{}, err
			}
			now = time.Now()
			ns = now.UnixNano()
			if probe == 0 {
				// Look at the gate again: a pause or a probe may have
				// begun while we slept.
				l.b.giveBack(mark)
				voided = true
				break
			}
		}
		if voided {
			l.dropPlace(true)
			continue
		}
		// The learned cap on requests in flight (see flight): with the
		// token in hand, wait in line for an answer to free a place. A
		// pause begun meanwhile voids the token.
		level := l.sent.take(true)
		if level == 0 {
			l.markBlocked(ns)
			var w *waiter
			if level, w = l.sent.wait(); w != nil {
				select {
				case <-w.handed:
					level = w.level
				case <-ctx.Done():
					l.sent.drop(l.sent.leave(w))
					l.b.giveBack(mark)
					l.dropPlace(true)
					l.unprobe(probe)
					return Ticket{}, ctx.Err()
				}
				slept = true
				now = time.Now()
				ns = now.UnixNano()
				if wait, pr := l.g.enter(ns, p.probeTimeout); wait > 0 && probe == 0 {
					l.b.giveBack(mark)
					l.sent.drop(level)
					l.dropPlace(true)
					continue
				} else if probe == 0 {
					probe = pr
				}
			}
		}
		if rtt := l.rtt.Load(); hasDeadline && deadline.Sub(now).Nanoseconds() < rtt {
			// Too late: the answer would come after the deadline, and
			// the server would count the request for nothing.
			l.b.giveBack(mark)
			l.dropPlace(true)
			l.sent.drop(level)
			l.unprobe(probe)
			return Ticket{}, fail(now, rtt, reasonRoundTrip)
		}
		t := l.ticket(ns, probe, mark)
		t.waited = slept
		t.level = int32(level)
		return t, nil
	}
}

// rescale moves a due time taken at interval old to interval t, as the
// bucket rescaled its queue at the time at.
func rescale(due, at, old, t int64) int64 {
	if old == 0 || t == 0 || due <= at {
		return min(due, at)
	}
	return at + int64(float64(due-at)*float64(t)/float64(old))
}
