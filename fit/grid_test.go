package fit

import (
	"math"
	"testing"
	"time"
)

func TestRoundWindow(t *testing.T) {
	for _, c := range []struct {
		lo, hi time.Duration
		want   time.Duration
		ok     bool
	}{
		{900 * time.Millisecond, 1100 * time.Millisecond, time.Second, true},
		{time.Second, time.Second, time.Second, true}, // both ends count
		{16 * time.Second, 21 * time.Second, 20 * time.Second, true},
		{3100 * time.Millisecond, 4900 * time.Millisecond, 0, false}, // between 2 s and 5 s
		{0, math.MaxInt64, time.Second, true},                        // the shortest
		{12 * time.Second, 35 * time.Second, 15 * time.Second, true}, // the shortest of several
		{2 * time.Hour, 3 * time.Hour, 0, false},
		{5 * time.Second, 2 * time.Second, 0, false}, // empty bounds
	} {
		if got, ok := RoundWindow(c.lo, c.hi); got != c.want || ok != c.ok {
			t.Errorf("RoundWindow(%v, %v) = %v, %v; want %v, %v", c.lo, c.hi, got, ok, c.want, c.ok)
		}
	}
}

// TestGridApart: no two round lengths lie within 25% of each other, so
// bounds on a window tight to that (adaptive's snapSpan) hold one only.
func TestGridApart(t *testing.T) {
	for i := 1; i < len(grid); i++ {
		if float64(grid[i]) <= 1.25*float64(grid[i-1]) {
			t.Errorf("%v and %v lie within 25%%", grid[i-1], grid[i])
		}
	}
}

// TestShortestRound: the shortest round length is the one RoundWindow
// finds in bounds that hold them all.
func TestShortestRound(t *testing.T) {
	w, ok := RoundWindow(0, time.Duration(math.MaxInt64))
	if !ok || ShortestRound() != w || ShortestRound() != time.Second {
		t.Errorf("ShortestRound() = %v; RoundWindow over all lengths gives %v, %v; want 1s", ShortestRound(), w, ok)
	}
}

// TestRounds: Rounds yields every round length once, shortest first,
// numbered from 0, each the one RoundWindow finds in bounds that hold it
// alone; and it stops when told to.
func TestRounds(t *testing.T) {
	n := 0
	for i, w := range Rounds() {
		if i != n {
			t.Errorf("length %v numbered %d, want %d", w, i, n)
		}
		if got, ok := RoundWindow(w, w); !ok || got != w {
			t.Errorf("Rounds yields %v, which RoundWindow does not find (%v, %v)", w, got, ok)
		}
		if n > 0 && w <= grid[n-1] {
			t.Errorf("%v after %v: not shortest first", w, grid[n-1])
		}
		n++
	}
	if n != len(grid) {
		t.Errorf("Rounds yields %d lengths, want %d", n, len(grid))
	}
	for range Rounds() {
		break // a yield after the loop stops would panic
	}
}
