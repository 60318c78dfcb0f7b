package adaptive

import (
	"context"
	"math"
	"time"

	"github.com/tollgate-go/tollgate/internal/call"
)

// Wait blocks until a request may be sent, or ctx is done. It returns a
// Ticket to finish with Done or Cancel.
//
// A caller the limits let through at once, with no one in line, goes at
// once. Otherwise it takes its place in the tenant's line (see line): by
// the class ctx carries (WithPriority; Default if none), then in order of
// arrival, where a call retried by package retry's Do arrives when its
// first attempt did, ahead of the calls that came after it; a lower class
// goes ahead when it is owed its floor share (Config.PriorityFloor). The
// caller whose turn it is waits for the gate, the bucket, the window and
// the caps on requests in flight, on one timer; the others sleep until
// their turn (no goroutine per waiter). A pause or a new rate shifts the
// line and never reorders it. If ctx is cancelled meanwhile, the caller
// leaves the line at once and Wait returns ctx.Err(). If ctx has a
// deadline that the caller's estimated admission (the token, the window,
// a pause, and one pace per caller ahead in line, or fewer by its class's
// floor) and a round trip after it would pass, Wait fails as soon as that
// is known, with a *WaitError (errors.Is(err, context.DeadlineExceeded))
// that says how long it would have been. A wait for a probe's answer, or for a place under the caps
// on requests in flight, has no known length and is not failed early; it
// ends with ctx.
func (l *Limiter) Wait(ctx context.Context) (Ticket, error) { return l.wait(ctx, false) }

// WaitPaced is Wait for a request whose pace is kept elsewhere: a store
// that shares the tenant's pace among processes (see Pace, and package
// transport's Config.Store) has already held it to its turn. The bucket is
// not asked again, which would make it later than its turn and waste it;
// the line, the gate, the window and the caps on requests in flight are.
func (f Fleet) WaitPaced(ctx context.Context) (Ticket, error) { return f.l.wait(ctx, true) }

// wait is Wait, and WaitPaced where paced. A ticket that goes as the
// probe is marked in the call's record (see call.Probed), so that package
// retry does not count its throttle among the call's attempts.
func (l *Limiter) wait(ctx context.Context, paced bool) (Ticket, error) {
	t, err := l.turn(ctx, paced)
	if t.probe != 0 {
		call.Probed(ctx)
	}
	return t, err
}

// turn waits for the request's turn and admits it (see Wait).
func (l *Limiter) turn(ctx context.Context, paced bool) (Ticket, error) {
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	deadline, hasDeadline := ctx.Deadline()
	now := time.Now()
	ns := now.UnixNano()
	if l.lineEmpty() {
		// The fast path: no one to go behind.
		probe, mark, level, wait := l.admit(now, ns, true, paced)
		if wait == 0 {
			t := l.ticket(ns, probe, mark)
			t.level = int32(level)
			if rtt := l.rtt.Load(); hasDeadline && deadline.Sub(now).Nanoseconds() < rtt {
				t.Cancel()
				return Ticket{}, tooLate(rtt, deadline.Sub(now))
			}
			return t, nil
		}
	}
	arrived := ns
	if first := call.First(ctx); !first.IsZero() && first.Before(now) {
		arrived = first.UnixNano()
	}
	var dl int64
	if hasDeadline {
		dl = deadline.UnixNano()
	}
	ln := l.queue()
	w, refused := ln.join(ns, arrived, dl, PriorityFrom(ctx), call.Attempts(ctx))
	if refused != nil {
		return Ticket{}, refused
	}
	t, err := l.waitInLine(ctx, ln, w, paced)
	ln.leave(w, err == nil)
	return t, err
}

// waitInLine waits for w's turn at the head of the line, then for its
// admission.
func (l *Limiter) waitInLine(ctx context.Context, ln *line, w *queued, paced bool) (Ticket, error) {
	deadline, hasDeadline := ctx.Deadline()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// sleep waits d, a wake, a change of the head, or ctx.
	slept := false // whether the caller was held back at all
	sleep := func(d int64, wake <-chan struct{}) error {
		slept = true
		if r := l.recheck.Load(); r > 0 {
			// The limits are derived again then (see refresh): no
			// one else looks while others wait in line.
			d = min(d, max(r-time.Now().UnixNano(), 1))
		}
		if timer == nil {
			timer = time.NewTimer(time.Duration(d))
		} else {
			timer.Reset(time.Duration(d))
		}
		select {
		case <-timer.C:
			return nil
		case <-wake:
		case <-w.turn:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !timer.Stop() {
			select { // drained, so that a Reset starts afresh
			case <-timer.C:
			default:
			}
		}
		return nil
	}
	p := l.params()
	for {
		// Wait for the turn at the head of the line.
		if !ln.isHead(w) {
			slept = true
			select {
			case <-w.turn:
			case <-ctx.Done():
				return Ticket{}, ctx.Err()
			}
			if w.refused != nil { // written before w.turn was signalled
				return Ticket{}, w.refused
			}
			continue
		}

		now := time.Now()
		ns := now.UnixNano()
		// Every wake from here on counts: one that came while the
		// limits were looked at would otherwise be missed.
		wake := l.wakeCh()
		l.refresh(ns)
		maxWait := int64(math.MaxInt64 / 4)
		if hasDeadline {
			maxWait = deadline.Sub(now).Nanoseconds()
		}
		rtt := l.rtt.Load()
		// hold sleeps d for what reason says, unless the deadline passes
		// first: then it fails at once. The callers behind expect to go
		// one interval after another from then on.
		hold := func(d int64, reason string) error {
			l.markBlocked(ns)
			if hasDeadline && d+rtt > maxWait {
				return &WaitError{Wait: time.Duration(d), Left: time.Duration(maxWait), Reason: reason}
			}
			ln.expect(w, ns, ns+d, l.b.interval.Load(), rtt, reason)
			return sleep(d, wake)
		}

		// The gate: a pause, or a probe in flight. A retry lets a first
		// attempt probe (see line.yieldProbe).
		if l.g.probeWanted(ns) && ln.yieldProbe(w) {
			continue
		}
		gw, probe := l.g.enter(ns, p.probeTimeout)
		if gw > 0 {
			if ns < l.g.until.Load() {
				if err := hold(gw, reasonPause); err != nil {
					return Ticket{}, err
				}
				continue
			}
			// Waiting for a probe's answer: no known length.
			l.markBlocked(ns)
			ln.expect(w, ns, 0, 0, 0, "")
			if err := sleep(gw, wake); err != nil {
				return Ticket{}, err
			}
			continue
		}

		// The bucket: wait for the token to be due.
		if bw := l.b.due(ns); bw > 0 && probe == 0 && !paced {
			if err := hold(bw, reasonRate); err != nil {
				return Ticket{}, err
			}
			continue
		}

		// Slow start's cap on requests in flight: take a place, or wait
		// for an answer to free one.
		if !l.takePlace(true) {
			l.markBlocked(ns)
			l.unprobeQuiet(probe)
			ln.expect(w, ns, 0, 0, 0, "")
			// An answer wakes us; ProbeTimeout bounds the sleep in case
			// the cap is lifted by a change that wakes no one.
			if err := sleep(p.probeTimeout, wake); err != nil {
				return Ticket{}, err
			}
			continue
		}

		// The token. The probe goes first, into debt if it must.
		var mark int64
		switch {
		case probe != 0:
			mark = l.b.force(ns)
		case !paced:
			var bw int64
			if bw, mark = l.b.take(ns); bw > 0 {
				l.dropPlace(true) // taken meanwhile by a caller of ReserveAt
				continue
			}
		}

		// The window. When it is full, the token goes back, and the
		// bucket starts again when the window has room: the first token
		// then, the rest paced after it. Keeping the tokens instead would
		// let every caller in line go together when the window frees, a
		// burst that then stays in the window a window later. The probe
		// is counted in the window but not held by it: it asks the
		// server what the window cannot know, when the gate says (a
		// measured window starts at its first request, later than the
		// server's may have, and would hold the probe past the refill it
		// seeks).
		win, limit := l.win.Load(), l.winLimit.Load()
		if win != nil && probe != 0 {
			win.Add(now, 1)
		} else if win != nil && !win.TryAdd(now, 1, limit) {
			free := win.NextFree(now, 1, limit)
			l.b.giveBack(mark)
			l.dropPlace(true)
			if l.b.interval.Load() > 0 {
				l.b.stall(free.UnixNano())
			}
			if err := hold(max(free.Sub(now).Nanoseconds(), 1), reasonWindow); err != nil {
				return Ticket{}, err
			}
			continue
		}

		// The learned cap on requests in flight (see flight): with the
		// token in hand, wait in line for an answer to free a place. A
		// pause begun meanwhile takes the token back.
		level := l.sent.take(true)
		if level == 0 {
			l.markBlocked(ns)
			var sw *waiter
			if level, sw = l.sent.wait(); sw != nil {
				ln.expect(w, ns, 0, 0, 0, "")
				select {
				case <-sw.handed:
					level = sw.level
				case <-ctx.Done():
					l.sent.drop(l.sent.leave(sw))
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
		if hasDeadline && deadline.Sub(now).Nanoseconds() < rtt {
			// Too late: the answer would come after the deadline, and
			// the server would count the request for nothing.
			l.b.giveBack(mark)
			l.dropPlace(true)
			l.sent.drop(level)
			l.unprobe(probe)
			return Ticket{}, tooLate(rtt, deadline.Sub(now))
		}
		t := l.ticket(ns, probe, mark)
		t.waited = slept
		t.level = int32(level)
		return t, nil
	}
}

// tooLate is the refusal of a request with left before its deadline, less
// than the round trip rtt: its answer would come after the deadline, and
// the server would count it for nothing.
func tooLate(rtt int64, left time.Duration) *WaitError {
	return &WaitError{Wait: time.Duration(rtt), Left: left, Reason: reasonRoundTrip}
}
