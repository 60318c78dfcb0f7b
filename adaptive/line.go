package adaptive

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// line is the tenant's one queue: the callers of Wait that could not be
// admitted at once, by class (see Priority), then in order of first
// arrival. (A call's retry arrives when its first attempt did: see Wait.)
// Only the caller whose turn it is, the head, asks the gate, the bucket,
// the window and the caps for its admission; the others sleep until it is
// theirs. So a pause, a new estimate or a stall of the window shifts the
// line, and never reorders it: no one holds a reserved place that a pause
// could void.
//
// The head is the first of the highest class, unless a lower class is
// owed its floor: each class with callers waiting earns the floor share
// (params.floor) of every admission from the line and spends one at each
// of its own; a class whose credit reaches one admission goes next (the
// highest such class). A class with no one waiting earns nothing, so the
// floor it leaves idle goes to the others.
//
// A caller who finds no one in line is admitted at once if the limits let
// it (the fast path: no lock, no allocation); one who finds others in line
// goes in behind those of its class who came before it, ahead of those who
// came later than its first arrival and of every lower class.
//
// The head says, each time it looks, when it expects to be admitted and
// the interval the bucket paces at; from that each caller in line has an
// estimate of its own admission (see late). A caller whose estimate passes
// its deadline is refused at once, rather than at its deadline: when it
// joins, when one goes in ahead of it, and when the head's estimate moves.
type line struct {
	n     atomic.Int64 // callers in line, read by the fast path without the lock
	mu    sync.Mutex
	floor float64   // the floor share of each class (see Config.PriorityFloor)
	q     []*queued // the callers in line, by class, then first arrival
	head  *queued   // whose turn it is; nil when q is empty
	// What the head expects, for the others' estimates: its admission
	// (Unix ns; 0 when unknown, as when it waits for a probe's answer),
	// the bucket's interval then, the round trip, and what holds it back.
	due, interval, rtt int64
	reason             string
	credit             [classes]float64 // admissions each class is owed (see line)
	waiting            [classes]int     // callers in line by class
	admitted, refused  [classes]uint64  // callers by class admitted from the line, and refused in it, so far
	joined             uint64           // callers that joined so far, to order equal arrivals
	free               []*queued        // places of callers gone, for the next (see place)
}

// queued is one caller in line.
type queued struct {
	arrived  int64  // first arrival, Unix ns
	seq      uint64 // order of joining, among equal arrivals
	class    int    // Priority.Index: 0 the highest
	attempts int    // its call's attempts, this one included (1 if unknown)
	lead     bool   // goes first, to probe, ahead of the retries (see yieldProbe)
	deadline int64  // Unix ns; 0 for none
	turn     chan struct{}
	out      bool // no longer in line: admitted, refused or gone (guarded by line.mu)
	refused  *WaitError
}

// before reports whether a goes ahead of b in the line's order.
func (a *queued) before(b *queued) bool {
	switch {
	case a.lead != b.lead:
		return a.lead
	case a.class != b.class:
		return a.class < b.class
	case a.arrived != b.arrived:
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
	l.line.CompareAndSwap(nil, &line{floor: l.params().floor})
	return l.line.Load()
}

// join puts a caller of class p who arrived first at arrived (Unix ns) in
// line, in order, at now, on its call's attempt number attempts.
// It returns the caller's place, or, if its estimated admission passes its
// deadline, the refusal and no place.
func (ln *line) join(now, arrived, deadline int64, p Priority, attempts int) (*queued, *WaitError) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	w := ln.place()
	w.arrived, w.deadline, w.out, w.refused = arrived, deadline, false, nil
	w.class, w.attempts, w.lead = p.Index(), max(attempts, 1), false
	ln.joined++
	w.seq = ln.joined
	i, _ := slices.BinarySearchFunc(ln.q, w, func(x, w *queued) int {
		if x.before(w) {
			return -1
		}
		return 1
	})
	if err := ln.lateAt(now, w, ln.ahead(w, i)); err != nil {
		ln.refused[w.class]++
		ln.free = append(ln.free, w)
		return nil, err
	}
	ln.q = slices.Insert(ln.q, i, w)
	ln.waiting[w.class]++
	ln.n.Add(1)
	ln.pick()
	ln.refuseLate(now) // those behind w are one place later
	return w, nil
}

// leave takes w out of the line (if it is not out already); admitted says
// it goes to the server, which counts against its class's floor. w is not
// used again: no one signals a caller out of line, and its place is kept
// for the next to join.
func (ln *line) leave(w *queued, admitted bool) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if !w.out {
		if admitted {
			ln.admitted[w.class]++
		}
		if admitted && ln.floor > 0 {
			for c := range classes {
				if ln.waiting[c] > 0 {
					// At most one admission owed, and the share of this
					// one: a class whose turn came as this one went.
					ln.credit[c] = min(ln.credit[c]+ln.floor, 1+ln.floor)
				}
			}
			ln.credit[w.class] = max(ln.credit[w.class]-1, -1)
		}
		ln.remove(slices.Index(ln.q, w))
		ln.pick()
	}
	if len(ln.free) < maxFree {
		ln.free = append(ln.free, w)
	}
}

// remove takes out the caller at i. ln.mu is held.
func (ln *line) remove(i int) {
	w := ln.q[i]
	w.out = true
	ln.q = slices.Delete(ln.q, i, i+1)
	ln.n.Add(-1)
	if ln.waiting[w.class]--; ln.waiting[w.class] == 0 {
		ln.credit[w.class] = 0 // an idle class's floor goes to the others
	}
}

// pick makes the caller whose turn it is the head, and wakes it if it was
// not: the first in line, unless a lower class is owed its floor (see
// line). The head before it, if still in line, is woken to step back.
// ln.mu is held.
func (ln *line) pick() {
	var next *queued
	if len(ln.q) > 0 {
		next = ln.q[0]
		if !next.lead {
			for c := range classes {
				if c > next.class && ln.waiting[c] > 0 && ln.credit[c] >= owed {
					next = ln.q[slices.IndexFunc(ln.q, func(x *queued) bool { return x.class == c })]
					break
				}
			}
		}
	}
	if next == ln.head {
		return
	}
	if ln.head != nil && !ln.head.out {
		signal(ln.head) // no longer the head: it steps back
	}
	ln.head, ln.due = next, 0 // next says what it expects
	if next != nil {
		signal(next)
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

// owed is the credit at which a class is owed an admission: one, less
// what adding up tenths in floating point loses.
const owed = 1 - 1e-9

// maxFree bounds the places a line keeps: as many as callers that left it
// at once, which a burst of thousands could make large.
const maxFree = 64

// yieldProbe hands the probe that the head w would send to the caller
// who should take it, if that is not w: the caller in line whose call has
// made the fewest attempts, then of the lowest class, then first in line.
// A probe is a test that the server may throttle, and its caller pays for
// a throttle with a retry's wait. So it goes to a first attempt before a
// retry: a call that went first at each probe because it keeps its place
// would take every failed probe, one attempt each, until it gave up. And
// where every caller in line is a retry (a cold start's burst throttled
// them all), to one that has taken fewer than the others: each failed
// probe adds an attempt to the call that took it, so the next goes to
// another. Among equals, the class that can wait takes the risk. That
// caller goes first, to probe; w and those before it go right after. It
// reports whether w yielded.
func (ln *line) yieldProbe(w *queued) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.head != w {
		return false
	}
	f := w
	for _, x := range ln.q {
		if x.attempts < f.attempts || x.attempts == f.attempts && x.class > f.class {
			f = x
		}
	}
	if f == w {
		return false
	}
	j := slices.Index(ln.q, f)
	f.lead = true
	ln.q = slices.Delete(ln.q, j, j+1)
	ln.q = slices.Insert(ln.q, 0, f)
	ln.pick()
	return true
}

// isHead reports whether it is w's turn.
func (ln *line) isHead(w *queued) bool {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.head == w
}

// expect records what the head w expects at now: admission at due (Unix
// ns; 0 when unknown), the bucket pacing at interval, answers a round trip
// rtt after sending, and what holds it back; and refuses at once the
// callers whose estimates that makes pass their deadlines.
func (ln *line) expect(w *queued, now, due, interval, rtt int64, reason string) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.head != w {
		return
	}
	ln.due, ln.interval, ln.rtt, ln.reason = due, interval, rtt, reason
	ln.refuseLate(now)
}

// refuseLate refuses the callers whose estimates pass their deadlines, and
// takes them out of line. ln.mu is held.
func (ln *line) refuseLate(now int64) {
	if ln.due == 0 {
		return
	}
	for i := 0; i < len(ln.q); {
		w := ln.q[i]
		if w != ln.head {
			if err := ln.lateAt(now, w, ln.ahead(w, i)); err != nil {
				w.refused = err
				ln.refused[w.class]++
				ln.remove(i)
				signal(w)
				continue
			}
		}
		i++
	}
	ln.pick()
}

// ahead returns how many admissions from the line come before w's, were
// it at place i of the line: those ahead of it in order, or, sooner, its
// class's floor's turn for it (a lower class goes once per 1/floor
// admissions at least). ln.mu is held.
func (ln *line) ahead(w *queued, i int) int64 {
	n := int64(i)
	if ln.floor > 0 && w.class > 0 && !w.lead {
		k := 0 // of its class ahead of it
		for _, x := range ln.q[:i] {
			if x.class == w.class {
				k++
			}
		}
		n = min(n, int64(float64(k+1)/ln.floor))
	}
	return n
}

// lateAt returns the refusal of w, with n admissions before its own, if
// its estimated admission, and a round trip after it, would pass its
// deadline; else nil. ln.mu is held.
func (ln *line) lateAt(now int64, w *queued, n int64) *WaitError {
	if w.deadline == 0 || ln.due == 0 || w == ln.head {
		return nil
	}
	wait := max(ln.due-now, 0) + n*ln.interval
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
