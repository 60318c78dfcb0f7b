package fit

import (
	"testing"
	"time"
)

// TestGranted: the n-th newest success, placed in its round trip as the
// record places arrivals (the middle, before any fit), throttles
// skipped; none where fewer are held, or n is below 1, and the newest of
// a full ring after it wrapped.
func TestGranted(t *testing.T) {
	var r Record
	t0 := time.Unix(1e9, 0)
	for i := range Size + 10 {
		sent := t0.Add(time.Duration(i) * time.Second)
		r.Add(Answer{Sent: sent, Answered: sent.Add(100 * time.Millisecond), Throttled: i%3 == 2})
	}
	// The newest answers: 521 a throttle (521 % 3 == 2), 520 and 519
	// successes, 518 a throttle, 517 a success.
	for _, c := range []struct {
		n    int
		want int // the answer's index; -1 for none
	}{
		{1, 520},
		{2, 519},
		{3, 517},
		{0, -1},    // no n-th
		{Size, -1}, // a third of the ring is throttles
	} {
		at, ok := r.Granted(c.n)
		switch {
		case c.want < 0 && ok:
			t.Errorf("Granted(%d) = %v, want none", c.n, at)
		case c.want >= 0 && (!ok || !at.Equal(t0.Add(time.Duration(c.want)*time.Second+50*time.Millisecond))):
			t.Errorf("Granted(%d) = %v %v, want answer %d's arrival", c.n, at.Sub(t0), ok, c.want)
		}
	}
}
