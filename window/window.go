// Package window counts events in a sliding time window, without locks.
//
// A Window divides time into buckets of equal width (the window divided by
// the number of buckets) and remembers how many events fell into each of the
// last few. Time is always passed in, so the same code serves live traffic
// and tests that step a clock by hand.
//
// The count is conservative: a bucket is dropped only once it is entirely
// older than the window, so Count(now) covers at least the trailing window
// (now-W, now] and at most W plus one bucket width. TryAdd never lets that
// conservative count pass its limit, which guarantees that no interval of
// length W, at any phase, ever holds more than limit events. A client that
// keeps to a Window of L per W therefore never overruns a server that counts
// L per W in fixed windows (at any alignment) or in a sliding window. The
// price is up to one bucket width of capacity: a stream paced at exactly L/W
// is held to about L per W·(1+1/buckets). Choose the resolution accordingly.
package window

import (
	"sync/atomic"
	"time"
)

// Bit layout of a bucket word: the low countBits hold a count, the high
// epochBits hold the bucket's epoch (its start time divided by the width)
// modulo 2^epochBits.
const (
	countBits = 24
	epochBits = 64 - countBits
	countMask = 1<<countBits - 1
	epochMask = 1<<epochBits - 1

	// MaxCount is the largest count one bucket holds. Add saturates at it;
	// TryAdd refuses to go past it.
	MaxCount = countMask

	// MinWidth is the finest bucket width. With it, the 40-bit epoch in each
	// bucket word wraps only after 2^40 ms, about 34 years.
	MinWidth = time.Millisecond
)

// Window is a sliding-window event counter over a ring of buckets.
//
// The newest bucket lives in one atomic word (epoch and count packed
// together); older buckets sit in a ring and are written once, when the
// newest bucket moves on. Every change is a single compare-and-swap of the
// newest word, which makes TryAdd exact under concurrency without a lock: see
// TryAdd. A second word caches the sum of the older buckets, so the common
// case (same bucket as the last event) costs two loads and one CAS.
//
// Calls may pass times slightly out of order (goroutines read the clock at
// different moments). An event timed before the newest bucket is counted in
// the newest bucket, and TryAdd checks it against every bucket from its own
// time's window to the newest, so the guarantee holds for the times the
// callers passed. TryAdd refuses an event timed two or more buckets behind
// the newest (the buckets it would need are gone); Add counts it anyway.
// Times must lie between the years 1678 and 2262 (time.Time.UnixNano).
//
// A Window's resolution is fixed at New. To change the window length (say a
// server announces a new one), build a new Window and carry the old count
// over with Add(now, old.Count(now)): conservative, since those events are then
// remembered for a full window from now.
//
// The zero Window has no buckets: it counts nothing, Count reports 0 and
// TryAdd admits whenever n <= limit. Window is safe for concurrent use and
// must not be copied after first use.
type Window struct {
	width int64 // bucket width in nanoseconds
	n     int64 // buckets that make up the window; the ring holds n+1
	head  atomic.Uint64
	past  atomic.Uint64 // head epoch and the sum of buckets [head-n, head-1]
	ring  []atomic.Uint64
}

// New returns a Window of length window divided into buckets buckets. The
// bucket width is window/buckets, at least MinWidth; buckets below 1 mean 1,
// and a non-positive window means one second.
func New(window time.Duration, buckets int) *Window {
	if window <= 0 {
		window = time.Second
	}
	if buckets < 1 {
		buckets = 1
	}
	width := max(int64(window)/int64(buckets), int64(MinWidth))
	n := (int64(window) + width - 1) / width
	return &Window{width: width, n: n, ring: make([]atomic.Uint64, n+1)}
}

// Len returns the window length: the bucket width times the number of buckets.
func (w *Window) Len() time.Duration { return time.Duration(w.width * w.n) }

// Width returns the width of one bucket, the window's resolution.
func (w *Window) Width() time.Duration { return time.Duration(w.width) }

func pack(epoch int64, count uint64) uint64 {
	return uint64(epoch)<<countBits | count
}

// unpack returns the full epoch of word x, taking the 40-bit epoch in x to be
// the one nearest to ref, and its count.
func unpack(x uint64, ref int64) (epoch int64, count uint64) {
	d := int64((x>>countBits-uint64(ref))&epochMask) << countBits >> countBits // sign-extend 40 bits
	return ref + d, x & countMask
}

func (w *Window) epoch(now time.Time) int64 {
	ns := now.UnixNano()
	e := ns / w.width
	if ns%w.width < 0 {
		e--
	}
	return e
}

// pastSum returns the sum of the buckets [he-n, he-1] while the newest bucket
// is he. It is exact as long as the newest word still has epoch he: those
// buckets are final then (see TryAdd).
func (w *Window) pastSum(he int64) uint64 {
	if p := w.past.Load(); p != 0 {
		if e, s := unpack(p, he); e == he {
			return s
		}
	}
	return w.sumRing(he-w.n, he-1)
}

// sumRing adds the ring buckets whose epochs lie in [lo, hi].
func (w *Window) sumRing(lo, hi int64) uint64 {
	var s uint64
	m := int64(len(w.ring))
	for e := max(lo, hi-m+1); e <= hi; e++ {
		be, c := unpack(w.ring[mod(e, m)].Load(), e)
		if be == e {
			s += c
		}
	}
	return s
}

func mod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// retire records the final count of bucket e in the ring. Counts of one
// bucket only grow, so a late writer holding an older reading never lowers
// the value there, and a writer holding an older epoch never replaces a
// newer bucket.
func (w *Window) retire(e int64, c uint64) {
	slot := &w.ring[mod(e, int64(len(w.ring)))]
	for {
		old := slot.Load()
		oe, oc := unpack(old, e)
		if old != 0 && (oe > e || (oe == e && oc >= c)) {
			// (A zero word is an empty slot: read as an epoch it may
			// seem newer than e.)
			return
		}
		if slot.CompareAndSwap(old, pack(e, c)) {
			return
		}
	}
}

// Add counts n events at now unconditionally, saturating at MaxCount per
// bucket. A negative n is ignored.
func (w *Window) Add(now time.Time, n int) {
	w.add(now, n, -1)
}

// TryAdd counts n events at now if that keeps the window's count at or below
// limit, and reports whether it did. It is exact under any number of
// concurrent callers: the count never passes limit.
//
// Why it is exact without a lock: every change of the window is a
// compare-and-swap of the newest word, whose value only ever grows (epoch
// first, then count), so a successful CAS proves that the newest word did not
// change since it was read. While the newest word holds epoch e, the older
// buckets [e-n, e-1] are final: their counts were written to the ring by the
// caller that moved the newest word past them, before its CAS. So the sum read
// between the load and the CAS is the true count at the instant of the CAS:
// a check-then-add that re-validates itself. A caller that loses the race
// reads again; some caller always wins, so the scheme is lock-free.
func (w *Window) TryAdd(now time.Time, n int, limit int64) bool {
	if n < 0 {
		return false
	}
	if int64(n) > limit {
		return false
	}
	return w.add(now, n, limit)
}

// add adds n at now; limit < 0 means no limit (saturate instead).
func (w *Window) add(now time.Time, n int, limit int64) bool {
	if n <= 0 || len(w.ring) == 0 {
		// Nothing to add (and the newest word never holds a zero count, so
		// a zero word always means an empty window).
		return n >= 0 && (limit < 0 || int64(n) <= limit && (n > 0 || w.Count(now) <= limit))
	}
	e := w.epoch(now)
	un := uint64(n)
	for {
		h := w.head.Load()
		he, hc := unpack(h, e)
		if h == 0 {
			he, hc = e-w.n-1, 0 // an empty window: nothing live
		}
		if e <= he {
			// Same bucket, or an event timed before it: count it in the
			// newest bucket.
			past := w.pastSum(he)
			if e < he && limit >= 0 {
				// The window to check is [e-n, he]. One bucket behind, the
				// extra bucket he-n-1 is still in the ring (its slot is
				// the newest bucket's, not yet reused) and final; further
				// behind it is gone, so refuse rather than guess.
				if e < he-1 {
					return false
				}
				past += w.bucket(he - w.n - 1)
			}
			c := hc + un
			if limit >= 0 && (past+c > uint64(limit) || c > MaxCount) {
				return false
			}
			c = min(c, MaxCount)
			if w.head.CompareAndSwap(h, pack(he, c)) {
				return true
			}
			continue
		}
		// Move the newest bucket to e. The window [e-n, e] then holds the
		// ring buckets [e-n, he-1] and the retiring bucket he.
		var past uint64
		if he >= e-w.n {
			past = w.sumRing(e-w.n, he-1) + hc
		}
		if limit >= 0 && (past+un > uint64(limit) || un > MaxCount) {
			return false
		}
		if h != 0 {
			w.retire(he, hc)
		}
		if w.head.CompareAndSwap(h, pack(e, min(un, MaxCount))) {
			w.past.Store(pack(e, min(past, MaxCount)))
			return true
		}
	}
}

// Count returns the number of events in the window at now, conservatively:
// every bucket that overlaps the trailing window (now-W, now] counts in full,
// and so do events timed after now.
func (w *Window) Count(now time.Time) int64 {
	if len(w.ring) == 0 {
		return 0
	}
	e := w.epoch(now)
	for {
		h := w.head.Load()
		if h == 0 {
			return 0
		}
		he, hc := unpack(h, e)
		var s uint64
		switch {
		case he < e-w.n:
			return 0
		case he <= e:
			s = w.sumRing(e-w.n, he-1) + hc
		default:
			s = w.pastSum(he) + hc // now is behind the newest bucket
		}
		if w.head.Load() == h {
			return int64(s)
		}
	}
}

// NextFree returns the earliest time, not before now, at which n more events
// would fit under limit if nothing else were added: when enough old buckets
// have left the window. If n exceeds limit it returns the time the window will
// be empty; TryAdd would still refuse then.
func (w *Window) NextFree(now time.Time, n int, limit int64) time.Time {
	if len(w.ring) == 0 {
		return now
	}
	e := w.epoch(now)
	for {
		h := w.head.Load()
		if h == 0 {
			return now
		}
		he, hc := unpack(h, e)
		if he < e-w.n {
			return now
		}
		ref := max(he, e)
		// Bucket counts from the oldest live bucket to the newest.
		total := int64(hc)
		lo := ref - w.n
		for b := lo; b < he; b++ {
			total += int64(w.bucket(b))
		}
		need := total + int64(n) - limit
		at := now
		if need > 0 {
			// Drop buckets oldest first until enough have gone. Bucket b
			// leaves the window when the newest bucket is b+n+1.
			var freed int64
			drop := he // if the older buckets are not enough, all must go
			for b := lo; b < he; b++ {
				freed += int64(w.bucket(b))
				if freed >= need {
					drop = b
					break
				}
			}
			at = time.Unix(0, (drop+w.n+1)*w.width)
			if at.Before(now) {
				at = now
			}
		}
		if w.head.Load() == h {
			return at
		}
	}
}

// bucket returns the ring count of bucket e, 0 if the ring holds another.
func (w *Window) bucket(e int64) uint64 {
	be, c := unpack(w.ring[mod(e, int64(len(w.ring)))].Load(), e)
	if be != e {
		return 0
	}
	return c
}
