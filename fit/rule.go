package fit

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Kind names a member of the family of server rules.
type Kind uint8

// The family. Each member grants a request by a count of what it already
// granted, and a limit on that count.
const (
	// None: no quota. Refusals do not depend on how much is sent (the
	// server sheds load), so no count explains them.
	None Kind = iota
	// Fixed: at most Limit in each window [Start + k·Window, Start +
	// (k+1)·Window), for every integer k.
	Fixed
	// Sliding: at most Limit in any trailing Window (a log of grants).
	Sliding
	// Bucket: a token bucket of depth Limit that refills Rate tokens a
	// second; a grant takes a token.
	Bucket
	// Cap: at most Limit requests in flight at once.
	Cap
	// FirstUse: at most Limit in each window of length Window that the
	// first request after the last window ended opens: a counter made on
	// first use that expires a Window later (a Redis INCR with an
	// EXPIRE). Its windows follow our own sends, so they have no phase
	// of their own.
	FirstUse
)

var kindNames = [...]string{None: "none", Fixed: "fixed", Sliding: "sliding", Bucket: "bucket", Cap: "cap", FirstUse: "first-use"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// CountsAlike reports whether rules of kinds a and b count a steady
// stream of requests alike: of one kind, or a sliding log and a window
// opened on first use (at a steady pace, the first request after a
// window ended comes as the oldest grant leaves the log). Kinds alike
// are never a Fit's best and runner-up both (see Fit.RunnerUp): a
// runner-up is a rule that tells the answers otherwise.
func CountsAlike(a, b Kind) bool {
	return a == b || a == Sliding && b == FirstUse || a == FirstUse && b == Sliding
}

// Rule is one member of the family with its parameters: a guess at the
// rule by which a server grants requests. The zero Rule is None.
type Rule struct {
	Kind   Kind
	Limit  int64         // grants per window (Fixed, Sliding, FirstUse), the bucket's depth (Bucket), requests in flight (Cap)
	Window time.Duration // Fixed, Sliding, FirstUse
	Start  time.Time     // Fixed: a window begins here (the zero Time: the Unix epoch)
	Rate   float64       // Bucket: tokens a second
}

// OnGrid reports whether the rule's window is one of the round lengths
// servers set quotas in (1 s, 2 s, 5 s, 10 s, … 1 h): a window the fit
// tries first, where one off the grid it searched for. A rule without a
// window is on no grid.
func (r Rule) OnGrid() bool {
	return r.windowed() && slices.Contains(grid[:], r.Window)
}

// windowed reports whether r's kind counts grants in a window of length
// Window: a fixed window, a sliding log, or one opened on first use.
func (r Rule) windowed() bool {
	return r.Kind == Fixed || r.Kind == Sliding || r.Kind == FirstUse
}

// PerSecond returns the long-run rate the rule grants, in requests a
// second: Limit per Window, or Rate. It is 0 for Cap and None, which
// bound no rate.
func (r Rule) PerSecond() float64 {
	switch r.Kind {
	case Fixed, Sliding, FirstUse:
		if r.Window > 0 {
			return float64(r.Limit) / r.Window.Seconds()
		}
	case Bucket:
		return r.Rate
	}
	return 0
}

// String formats the rule, e.g. "fixed 100/1s at 12:00:00.250", "sliding
// 50/2s", "first-use 8/2s", "bucket 20/s, 10 deep", "cap 8 in flight" or
// "none".
func (r Rule) String() string {
	switch r.Kind {
	case None:
		return "none"
	case Fixed:
		s := fmt.Sprintf("fixed %d/%v", r.Limit, r.Window)
		if !r.Start.IsZero() {
			s += " at " + r.Start.UTC().Format("15:04:05.000")
		}
		return s
	case Sliding:
		return fmt.Sprintf("sliding %d/%v", r.Limit, r.Window)
	case FirstUse:
		return fmt.Sprintf("first-use %d/%v", r.Limit, r.Window)
	case Bucket:
		return fmt.Sprintf("bucket %.3g/s, %d deep", r.Rate, r.Limit)
	case Cap:
		return fmt.Sprintf("cap %d in flight", r.Limit)
	}
	return r.Kind.String()
}

// Request is one request as a rule sees it: when it reached the server,
// and how many requests were in flight there then, itself included (Cap
// counts them; the others ignore it).
type Request struct {
	At       time.Time
	InFlight int
}

// Grants returns, for requests in order of arrival, which of them the
// rule grants, from a state with nothing granted before the first: a
// fresh window or log, a full bucket. None grants every request. The
// rule's Limit and time parameters must be set: a Rule whose Limit is
// below 1 grants nothing (but None), nor does one without what its kind
// needs (see wellFormed).
func (r Rule) Grants(reqs []Request) []bool {
	out := make([]bool, len(reqs))
	switch {
	case r.Kind == None:
		for i := range out {
			out[i] = true
		}
		return out
	case !r.wellFormed():
		return out
	}
	base := int64(0)
	if len(reqs) > 0 {
		base = reqs[0].At.UnixNano()
	}
	m := newMeter(r, base)
	for i, q := range reqs {
		at := q.At.UnixNano()
		if m.load(at, int32(min(q.InFlight, math.MaxInt32))) < r.Limit {
			out[i] = true
			m.take(at)
		}
	}
	return out
}

// wellFormed reports whether r has what its kind needs: a kind of the
// family, and for a fixed window or a sliding log a window longer than
// zero. (A bucket whose rate is not above zero, or not a number, is well
// formed too: it grants nothing.)
func (r Rule) wellFormed() bool {
	switch r.Kind {
	case None, Bucket, Cap:
		return true
	case Fixed, Sliding, FirstUse:
		return r.Window > 0
	}
	return false
}

// meter counts, for one rule's time parameters, what the rule has granted
// that stands against the next request: its load. The rule grants a
// request whose load is below its Limit. Times are Unix ns, nondecreasing.
type meter struct {
	kind  Kind
	win   int64 // ns: Fixed, Sliding, FirstUse
	start int64 // Fixed: a window's start, Unix ns
	// Fixed, FirstUse: the window counted (Fixed: its index), where the
	// next begins, and the grants in it.
	k, next, count int64
	// Sliding: the grants' arrivals, oldest first from head.
	log  []int64
	head int
	// Bucket: the theoretical arrival time of the next token, ns after
	// base (GCRA), and the time one token takes.
	base      int64
	tat, tick float64
	perNs     float64 // tokens a ns
}

// newMeter returns a meter for r's time parameters, its times counted
// from base.
func newMeter(r Rule, base int64) meter {
	m := meter{kind: r.Kind, win: int64(r.Window), k: math.MinInt64, next: math.MinInt64, base: base}
	if !r.Start.IsZero() {
		m.start = r.Start.UnixNano()
	}
	if r.Kind == Bucket && r.Rate > 0 {
		m.tick, m.perNs = 1e9/r.Rate, r.Rate/1e9
	}
	return m
}

// load returns what stands against a request arriving at at with level
// requests in flight (itself included).
func (m *meter) load(at int64, level int32) int64 {
	switch m.kind {
	case Fixed:
		if at >= m.next {
			m.k, m.count = floorDiv(at-m.start, m.win), 0
			m.next = m.start + (m.k+1)*m.win
		}
		return m.count
	case FirstUse:
		if at >= m.next {
			m.next, m.count = at+min(m.win, math.MaxInt64-max(at, 0)), 0
		}
		return m.count
	case Sliding:
		cut := at - m.win
		for m.head < len(m.log) && m.log[m.head] <= cut {
			m.head++
		}
		if m.head > 0 && m.head*2 >= len(m.log) {
			n := copy(m.log, m.log[m.head:])
			m.log, m.head = m.log[:n], 0
		}
		return int64(len(m.log) - m.head)
	case Bucket:
		if m.tick == 0 {
			return math.MaxInt64
		}
		// The tokens owed at at: a grant needs at most Limit−1 owed.
		debt := (m.tat - float64(at-m.base)) * m.perNs
		if debt <= 1e-9 {
			return 0
		}
		return tokens(debt)
	case Cap:
		return int64(level) - 1
	}
	return 0
}

// take counts a grant at at.
func (m *meter) take(at int64) {
	switch m.kind {
	case Fixed, FirstUse:
		m.count++
	case Sliding:
		m.log = append(m.log, at)
	case Bucket:
		m.tat = max(m.tat, float64(at-m.base)) + m.tick
	}
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
