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
	changed   atomic.Int64  // Unix ns from which the last change of interval rescaled the queue
	restarted atomic.Int64  // Unix ns of the end of the last pause (see restart)
	epoch     atomic.Uint64 // moves on when a pause voids the reservations
	slowest   atomic.Int64  // the longest interval since set last reported a change
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

// reserve takes the next token, now or in the future, unless it would come
// later than now+maxWait. It returns the time the token is due and its mark
// (for giveBack); ok is false (and nothing taken) when that is past
// now+maxWait.
func (b *bucket) reserve(now, maxWait int64) (due, mark int64, ok bool) {
	for {
		t := b.interval.Load()
		if t == 0 {
			return now, 0, true
		}
		tat := b.tat.Load()
		due = max(now, tat-b.tau.Load())
		if due-now > maxWait {
			return due, 0, false
		}
		if mark = max(tat, now) + t; b.tat.CompareAndSwap(tat, mark) {
			return due, mark, true
		}
	}
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

// restart empties the queue at a pause ending at u: the first token after
// it is due at u, the next ones paced after it (no burst), and the places
// already reserved are void (epoch moves on; their holders reserve again).
func (b *bucket) restart(u int64) {
	b.epoch.Add(1)
	b.startAt(u)
}

// startAt makes the first token after u due at u, the next ones paced after
// it.
func (b *bucket) startAt(u int64) {
	b.restarted.Store(u)
	b.tat.Store(u + b.tau.Load())
}

// stall restarts the queue at u, when the window will have room, unless it
// was restarted since epoch (then the caller's place is void already): the
// places reserved are void and their holders reserve again, the first due
// at u, the rest paced after it. It reports whether it restarted the queue.
func (b *bucket) stall(u int64, epoch uint64) bool {
	if !b.epoch.CompareAndSwap(epoch, epoch+1) {
		return false
	}
	b.startAt(u)
	return true
}

// set changes rate and burst at now. The debt already queued (TAT beyond
// now) is rescaled to the new interval, so the requests it stands for keep
// their place in line at the new pace. It reports whether waiters should
// re-check: pacing turned on or off, or the interval 0.5% or more shorter
// than the longest since the last report, which a waiter may still sleep
// on. A waiter rescales its due time only when it wakes: one that sleeps
// past a due time moved earlier goes late, right before the next place in
// line, and two requests go closer together than the pace. A slower rate
// needs no report: the waiters wake early, rescale, and sleep again.
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
	b.changed.Store(from)
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
