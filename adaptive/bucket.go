package adaptive

import (
	"math"
	"sync/atomic"
)

// bucket is a token bucket in GCRA form: one atomic word holds the
// theoretical arrival time (TAT) of the next request, in Unix nanoseconds. A
// request at t conforms when t >= TAT - tau, and then moves TAT to
// max(TAT, t) + interval. interval is 1/rate; tau is (burst-1)·interval. An
// interval of 0 means no pacing.
//
// The parameters live in their own words and are read without a lock: a
// decision may use a parameter a few nanoseconds stale, which is no worse than
// deciding just before the update.
//
// GCRA on one word was measured against the same bucket behind a mutex
// (bucket_mutex_test.go): see the package benchmarks.
type bucket struct {
	tat       atomic.Int64
	interval  atomic.Int64
	tau       atomic.Int64
	restarted atomic.Int64 // Unix ns from which the bucket last started again (see startAt)
	slowest   atomic.Int64 // the longest interval since set last reported a change
}

// take takes one token at now if one is there. It returns 0 and the token's
// mark (for giveBack) on success, otherwise how long until one would be
// (> 0).
func (b *bucket) take(now int64) (wait, mark int64) {
	for {
		t := b.interval.Load()
		if t == 0 {
			return 0, 0
		}
		tat := b.tat.Load()
		if free := tat - b.tau.Load(); now < free {
			return free - now, 0
		}
		if mark = max(tat, now) + t; b.tat.CompareAndSwap(tat, mark) {
			return 0, mark
		}
	}
}

// due returns how long from now until a token is there; 0 if one is.
func (b *bucket) due(now int64) int64 {
	if b.interval.Load() == 0 {
		return 0
	}
	return max(b.tat.Load()-b.tau.Load()-now, 0)
}

// force takes one token at now whether or not one is there: the bucket goes
// into debt. The probe after a pause uses it to jump the queue (everyone
// else waits for its answer anyway). It returns the token's mark.
func (b *bucket) force(now int64) (mark int64) {
	for {
		t := b.interval.Load()
		tat := b.tat.Load()
		if t == 0 {
			return 0
		}
		if mark = max(tat, now) + t; b.tat.CompareAndSwap(tat, mark) {
			return mark
		}
	}
}

// giveBack returns the token with the given mark, if it is still the last
// one taken (TAT is still its mark): TAT moves back one interval. A token
// with a later one taken after it is not given back: its place in the
// queue is lost, since moving TAT back would hand out a place that a later
// reservation already holds, letting two requests go together.
func (b *bucket) giveBack(mark int64) {
	if t := b.interval.Load(); t > 0 && mark != 0 {
		b.tat.CompareAndSwap(mark, mark-t)
	}
}

// startAt makes the first token after u due at u, the next ones paced after
// it: a pause that ends at u, or a refill, starts the bucket again there.
func (b *bucket) startAt(u int64) {
	b.restarted.Store(u)
	b.tat.Store(u + b.tau.Load())
}

// stall makes the first token due no earlier than u, when a full window
// will have room, the next ones paced after it.
func (b *bucket) stall(u int64) {
	for {
		tat := b.tat.Load()
		if u+b.tau.Load() <= tat {
			return
		}
		if b.tat.CompareAndSwap(tat, u+b.tau.Load()) {
			b.restarted.Store(u)
			return
		}
	}
}

// set changes rate and burst at now. The debt already taken (TAT beyond
// now) is rescaled to the new interval, so that the next token comes at
// the new pace. It reports whether the line's head should look again:
// pacing turned on or off, or the interval 0.5% or more shorter than the
// longest since the last report, which the head may still sleep on (it
// would go late). A slower rate needs no report: the head wakes early,
// finds the token not yet due, and sleeps again.
func (b *bucket) set(now int64, rate float64, burst int) (big bool) {
	var t int64
	if rate > 0 {
		t = int64(math.Min(1e9/rate, math.MaxInt64/4))
		t = max(t, 1)
	}
	old := b.interval.Load()
	if t == old {
		b.tau.Store(int64(max(burst-1, 0)) * t)
		return false
	}
	// The queue starts at now, or at the end of the pause the bucket was
	// restarted for: the pause itself is not rescaled.
	from := max(now, b.restarted.Load())
	for {
		tat := b.tat.Load()
		next := tat
		if old > 0 && t > 0 && tat > from {
			next = from + int64(float64(tat-from)*float64(t)/float64(old))
		}
		if b.tat.CompareAndSwap(tat, next) {
			break
		}
	}
	b.tau.Store(int64(max(burst-1, 0)) * t)
	b.interval.Store(t)
	slowest := b.slowest.Load()
	switch {
	case old == 0 || t == 0 || slowest == 0:
		b.slowest.Store(t)
		return true
	case float64(t)*1.005 <= float64(slowest):
		b.slowest.Store(t)
		return true
	case t > slowest:
		b.slowest.Store(t)
	}
	return false
}
