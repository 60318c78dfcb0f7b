package fit

import (
	"math"
	"time"
)

// Size is how many answers a Record keeps: the newest, 16 bytes each.
const Size = 512

// Answer is one request and what the server answered.
type Answer struct {
	Sent      time.Time // when the request left
	Answered  time.Time // when its answer came; the server saw it in between
	InFlight  int       // our requests in flight when it left, itself included; 0 if not counted
	Throttled bool      // refused for quota
}

// entry is an Answer kept: 16 bytes.
type entry struct {
	sent  int64  // Unix ns
	rt    uint32 // the round trip, µs
	level uint16 // requests in flight at sending, itself included; 0 if not counted
	thr   bool
}

// Record is a bounded record of a tenant's answers, the newest Size of
// them, in the order they were added (the order answers came). The zero
// Record is empty and ready to use. A Record is not safe for simultaneous
// use.
type Record struct {
	ring [Size]entry
	n    int // entries held
	next int // where the next one goes

	// delayQ is the forward delay the last Fit found, in steps of a
	// round trip (see delaySteps), plus one; 0 before any.
	delayQ uint8
}

// delaySteps is how finely a round trip is cut to find when the server
// counted a request: in quarters.
const delaySteps = 4

// delay returns the forward delay to fit at, in steps: the last fit's,
// or the middle of the round trip.
func (r *Record) delay() int {
	if r.delayQ == 0 {
		return delaySteps / 2
	}
	return int(r.delayQ) - 1
}

// Add keeps a, dropping the oldest answer when the Record is full. A
// round trip that is negative counts as none; one over 71 minutes as 71
// minutes.
func (r *Record) Add(a Answer) {
	rt := a.Answered.Sub(a.Sent).Microseconds()
	r.ring[r.next] = entry{
		sent:  a.Sent.UnixNano(),
		rt:    uint32(min(max(rt, 0), math.MaxUint32)),
		level: uint16(min(max(a.InFlight, 0), math.MaxUint16)),
		thr:   a.Throttled,
	}
	r.next = (r.next + 1) % Size
	r.n = min(r.n+1, Size)
}

// Granted returns when the n-th newest success the Record holds reached
// the server, as the last Fit placed arrivals (Fit.Delay; the middle of
// the round trip before any), newest as answered; false where it holds
// fewer than n successes, or n is below 1.
func (r *Record) Granted(n int) (time.Time, bool) {
	if n < 1 {
		return time.Time{}, false
	}
	q := int64(r.delay())
	for i := range r.n {
		e := r.ring[(r.next-1-i+2*Size)%Size]
		if e.thr {
			continue
		}
		if n--; n == 0 {
			return time.Unix(0, e.sent+int64(e.rt)*1000*q/delaySteps), true
		}
	}
	return time.Time{}, false
}

// Len returns how many answers the Record holds.
func (r *Record) Len() int { return r.n }

// meanRT returns the mean round trip of the answers held, ns.
func (r *Record) meanRT() int64 {
	var sum int64
	r.each(func(e entry) { sum += int64(e.rt) * 1000 })
	return sum / int64(max(r.n, 1))
}

// each calls f for the answers held, oldest first.
func (r *Record) each(f func(entry)) {
	start := (r.next - r.n + Size) % Size
	for i := range r.n {
		f(r.ring[(start+i)%Size])
	}
}
