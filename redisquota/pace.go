package redisquota

import (
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
)

// Bounds of the numbers the scripts get. Lua numbers are doubles: Unix
// times in microseconds (about 2^50.6 in 2026) and these spans added to
// them stay exact integers, below 2^53.
const (
	// maxSpan bounds an interval, a burst's span (Burst-1 intervals) and a
	// window; longer ones are cut to it.
	maxSpan = 10 * 365 * 24 * time.Hour
	// maxPause bounds a pause; a longer one is cut to it.
	maxPause = time.Hour
	// maxLog bounds the entries of a window log; see reserveArgsOf.
	maxLog = 10000
	// maxWaitMicros stands for a maxWait too long to matter.
	maxWaitMicros = 1<<53 - 1
)

// reserveArgs are the reserve script's numeric arguments, in microseconds
// but for logLimit, a count.
type reserveArgs struct {
	interval  int64 // at least 1; 0 for the pace in force (a zero Pace)
	tau       int64 // the span of a burst: (Burst-1) intervals
	maxWait   int64 // -1 if nothing is due within it
	logLimit  int64 // 0 for no window log
	logWindow int64
}

// reserveArgsOf turns pace p and maxWait into the reserve script's
// arguments. Durations are rounded to microseconds towards the slower
// pace: intervals and windows up, maxWait down.
//
// A window limit above maxLog is kept as the same limit over a shorter
// window: with m = ceil(Limit/maxLog) parts, at most floor(Limit/m) in any
// Window/m (rounded up) lets at most m*floor(Limit/m) <= Limit through in
// any Window, and loses less than m admissions per Window to the cut.
func reserveArgsOf(p adaptive.Pace, maxWait time.Duration) reserveArgs {
	span := micros(maxSpan)
	a := reserveArgs{maxWait: maxWaitOf(maxWait)}
	if p.Interval <= 0 {
		return a // no pace: the script takes the one in force
	}
	a.interval = min(max(micros(p.Interval), 1), span)
	if b := int64(p.Burst) - 1; b > 0 {
		a.tau = span
		if b <= span/a.interval {
			a.tau = min(b*a.interval, span)
		}
	}
	if p.Limit > 0 && p.Window > 0 {
		m := (p.Limit + maxLog - 1) / maxLog
		a.logLimit = p.Limit / m
		w := min(micros(p.Window), span)
		a.logWindow = (w + m - 1) / m
	}
	return a
}

// maxWaitOf returns maxWait in microseconds, rounded down, at most
// maxWaitMicros; -1 if it is negative: nothing is due within it.
func maxWaitOf(maxWait time.Duration) int64 {
	if maxWait < 0 {
		return -1
	}
	return min(int64(maxWait/time.Microsecond), maxWaitMicros)
}

// micros returns d in microseconds, rounded up; 0 if d is not positive.
func micros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}
