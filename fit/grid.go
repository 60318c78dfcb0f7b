package fit

import (
	"iter"
	"time"
)

// grid is the prior on a window's length: the round values servers set
// quotas in. A fixed window off the grid is found from the intervals
// between refills, a sliding log's from the successes (see trailing).
// No two of them lie within 25% of each other.
var grid = [...]time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
	20 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// RoundWindow returns the shortest of the round window lengths servers
// set quotas in (1 s, 2 s, 5 s, 10 s, 15 s, 20 s, 30 s, 1 min, … 1 h) that
// lies within [lo, hi], and whether one does. It is how a window measured
// only within bounds is taken to be the round length among them.
func RoundWindow(lo, hi time.Duration) (time.Duration, bool) {
	for _, w := range grid {
		if w >= lo && w <= hi {
			return w, true
		}
	}
	return 0, false
}

// ShortestRound returns the shortest of the round window lengths (see
// RoundWindow): the least a window said without its length is taken to
// be.
func ShortestRound() time.Duration { return grid[0] }

// Rounds yields the round window lengths (see RoundWindow), shortest
// first: where a learner seeks a window's start before it knows the
// length, the boundaries of these are where one on the grid begins.
func Rounds() iter.Seq2[int, time.Duration] {
	return func(yield func(int, time.Duration) bool) {
		for i, w := range grid {
			if !yield(i, w) {
				return
			}
		}
	}
}
