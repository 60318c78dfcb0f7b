package adaptive

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// line is the tenant's one queue: the callers of Wait that could not be
// admitted at once, in order of first arrival. (A call's retry arrives
// when its first attempt did: see Wait.) Only the first in line, the head,
// asks the gate, the bucket, the window and the caps for its admission;
// the others sleep until they are the head. So a pause, a new estimate or
// a stall of the window shifts the line, and never reorders it: no one
// holds a reserved place that a pause could void.
//
// A caller who finds no one in line is admitted at once if the limits let
// it (the fast path: no lock, no allocation); one who finds others in line
// goes in behind them, or ahead of those who came later than its first
// arrival.
//
// The head says, each time it looks, when it expects to be admitted and
// the interval the bucket paces at; from that each caller in line has an
// estimate of its own admission (the head's plus one interval per caller
// ahead). A caller whose estimate passes its deadline is refused at once,
// rather than at its deadline: when it joins, when one who arrived earlier
// goes in ahead of it, and when the head's estimate moves.
type line struct {
	n  atomic.Int64 // callers in line, read by the fast path without the lock
	mu sync.Mutex
	q  []*queued // the callers in line, head first
	// What the head expects, for the others' estimates: its admission
	// (Unix ns; 0 when unknown, as when it waits for a probe's answer),
	// the bucket's interval then, the round trip, and what holds it back.
	due, interval, rtt int64
	reason             string
	joined             uint64    // callers that joined so far, to order equal arrivals
	free               []*queued // places of callers gone, for the next (see place)
}

// queued is one caller in line.
type queued struct {
	arrived  int64  // first arrival, Unix ns
	seq      uint64 // order of joining, among equal arrivals
	retry    bool   // a retry: its call's first attempt went before
	lead     bool   // goes first, to probe, ahead of the retries (see yieldProbe)
	deadline int64  // Unix ns; 0 for none
	turn     chan struct{}
	out      bool // no longer in line: admitted, refused or gone (guarded by line.mu)
	refused  *WaitError
}

// before reports whether a goes ahead of b.
func (a *queued) before(b *queued) bool {
	if a.lead != b.lead {
		return a.lead
	}
	if a.arrived != b.arrived {
		return a.arrived < b.arrived
	}
	return a.seq < b.seq
}

// lineEmpty reports whether no one waits in l's line.
func (l *Limiter) lineEmpty() bool {
	ln := l.line.Load()
	return ln == nil || ln.n.Load() == 0
}

// queue returns l's line, made at the first caller who waits: a tenant
// whose callers never wait pays nothing for it.
func (l *Limiter) queue() *line {
	if ln := l.line.Load(); ln != nil {
		return ln
	}
	l.line.CompareAndSwap(nil, new(line))
	return l.line.Load()
}

// join puts a caller who arrived first at arrived (Unix ns) in line, in
// order, at now; retry says it is not its call's first attempt. It returns
// the caller's place, or, if its estimated admission passes its deadline,
// the refusal and no place.
func (ln *line) join(now, arrived, deadline int64, retry bool) (*queued, *WaitError) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	w := ln.place()
	w.arrived, w.deadline, w.out, w.refused = arrived, deadline, false, nil
	w.retry, w.lead = retry, false
	ln.joined++
	w.seq = ln.joined
	i, _ := slices.BinarySearchFunc(ln.q, w, func(x, w *queued) int {
		if x.before(w) {
			return -1
		}
		return 1
	})
	if err := ln.late(now, w, i); err != nil {
		ln.free = append(ln.free, w)
		return nil, err
	}
	ln.q = slices.Insert(ln.q, i, w)
	ln.n.Add(1)
	switch {
	case i == 0 && len(ln.q) > 1:
		ln.due = 0      // w says what it expects
		signal(ln.q[1]) // no longer the head: it steps back
	case i < len(ln.q)-1:
		ln.refuseLate(now) // those behind are one place later
	}
	return w, nil
}

// leave takes w out of the line (if it is not out already) and, if it was
// the head, wakes the next. w is not used again: no one signals a caller
// out of line, and its place is kept for the next to join.
func (ln *line) leave(w *queued) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if !w.out {
		i := slices.Index(ln.q, w)
		ln.remove(i)
		if i == 0 {
			ln.due = 0 // the next head says what it expects
			if len(ln.q) > 0 {
				signal(ln.q[0])
			}
		}
	}
	if len(ln.free) < maxFree {
		ln.free = append(ln.free, w)
	}
}

// place returns a place for a caller to join: one kept from a caller
// gone, or a new one. Where callers come faster than a turn, every one
// passes through the line, and a new place each would be garbage at that
// rate. (The places are the line's own, not a sync.Pool's: a channel made
// in a testing/synctest bubble must not be used outside it.) ln.mu is
// held.
func (ln *line) place() *queued {
	n := len(ln.free)
	if n == 0 {
		return &queued{turn: make(chan struct{}, 1)}
	}
	w := ln.free[n-1]
	ln.free = ln.free[:n-1]
	select { // a turn signalled as it last left
	case <-w.turn:
	default:
	}
	return w
}

// maxFree bounds the places a line keeps: as many as callers that left it
// at once, which a burst of thousands could make large.
const maxFree = 64

// remove takes out the caller at i. ln.mu is held.
func (ln *line) remove(i int) {
	ln.q[i].out = true
	ln.q = slices.Delete(ln.q, i, i+1)
	ln.n.Add(-1)
}

// yieldProbe hands the probe that the head w would send to the first
// caller in line on its first attempt, if w is a retry: a probe is a test
// that the server may throttle, and a call that goes first at each probe
// because it keeps its place would take every failed probe, one attempt
// each, until it gives up. That caller goes first, to probe; w and the
// retries before it go right after. It reports whether w yielded. A retry
// with none but retries behind it probes itself.
func (ln *line) yieldProbe(w *queued) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.q) == 0 || ln.q[0] != w || !w.retry {
		return false
	}
	j := slices.IndexFunc(ln.q, func(x *queued) bool { return !x.retry })
	if j < 0 {
		return false
	}
	f := ln.q[j]
	f.lead = true
	copy(ln.q[1:j+1], ln.q[:j])
	ln.q[0] = f
	ln.due = 0 // f says what it expects
	signal(f)
	return true
}

// head reports whether w is first in line.
func (ln *line) head(w *queued) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return len(ln.q) > 0 && ln.q[0] == w
}

// expect records what the head w expects at now: admission at due (Unix
// ns; 0 when unknown), the bucket pacing at interval, answers a round trip
// rtt after sending, and what holds it back; and refuses at once the
// callers behind it whose estimates that makes pass their deadlines.
func (ln *line) expect(w *queued, now, due, interval, rtt int64, reason string) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.q) == 0 || ln.q[0] != w {
		return
	}
	ln.due, ln.interval, ln.rtt, ln.reason = due, interval, rtt, reason
	ln.refuseLate(now)
}

// refuseLate refuses the callers behind the head whose estimates pass
// their deadlines, and takes them out of line. ln.mu is held.
func (ln *line) refuseLate(now int64) {
	if ln.due == 0 {
		return
	}
	for i := 1; i < len(ln.q); {
		w := ln.q[i]
		if err := ln.late(now, w, i); err != nil {
			w.refused = err
			ln.remove(i)
			signal(w)
			continue
		}
		i++
	}
}

// late returns the refusal of w, at place i in line, if its estimated
// admission, and a round trip after it, would pass its deadline; else
// nil. ln.mu is held.
func (ln *line) late(now int64, w *queued, i int) *WaitError {
	if w.deadline == 0 || ln.due == 0 || i == 0 {
		return nil
	}
	wait := max(ln.due-now, 0) + int64(i)*ln.interval
	if left := w.deadline - now; wait+ln.rtt > left {
		return &WaitError{Wait: time.Duration(wait), Left: time.Duration(left), Reason: ln.reason}
	}
	return nil
}

// signal wakes w, if it is not awake already.
func signal(w *queued) {
	select {
	case w.turn <- struct{}{}:
	default:
	}
}
