package fit

import (
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestPrefers: on records of bursts to a fixed window, a little over its
// rate, the server's own rule is preferred to a wrong one (a window 5%
// long, a limit 16% high, a limit 20% low, or no quota), never the other
// way round, and never to itself.
func TestPrefers(t *testing.T) {
	q := fakecloud.Quota{Policy: fakecloud.FixedWindow, Limit: 50, Window: time.Second, Offset: 300 * time.Millisecond}
	right := ruleOf(q)
	wrong := []Rule{
		{Kind: Fixed, Limit: 50, Window: 1050 * time.Millisecond, Start: right.Start},
		{Kind: Fixed, Limit: 58, Window: time.Second, Start: right.Start},
		{Kind: Fixed, Limit: 40, Window: time.Second, Start: right.Start},
		{Kind: None},
	}
	for seed := range uint64(4) {
		r := recordOf(burstsTo(t, q, Size+100, 12, q.Window/10, seed+30))
		for _, w := range wrong {
			if !r.Prefers(right, w) {
				t.Errorf("seed %d: %v not preferred to %v", seed, right, w)
			}
			if r.Prefers(w, right) {
				t.Errorf("seed %d: %v preferred to the server's %v", seed, w, right)
			}
		}
		if r.Prefers(right, right) {
			t.Errorf("seed %d: %v preferred to itself", seed, right)
		}
	}
	if new(Record).Prefers(right, Rule{}) {
		t.Error("an empty record prefers a rule")
	}
}

// TestPrefersOddRules: rules no fit would name (a bucket whose rate is
// tiny, huge, zero, negative or not a number; a window of a nanosecond
// or a century) are judged without a panic, and not preferred to the
// server's own.
func TestPrefersOddRules(t *testing.T) {
	q := fakecloud.Quota{Policy: fakecloud.FixedWindow, Limit: 50, Window: time.Second, Offset: 300 * time.Millisecond}
	right := ruleOf(q)
	r := recordOf(burstsTo(t, q, Size+100, 12, q.Window/10, 30))
	for _, odd := range []Rule{
		{Kind: Bucket, Limit: 5, Rate: 1e-300},
		{Kind: Bucket, Limit: 5, Rate: 1e300},
		{Kind: Bucket, Limit: 5, Rate: 0},
		{Kind: Bucket, Limit: 5, Rate: -1},
		{Kind: Bucket, Limit: 5, Rate: math.NaN()},
		{Kind: Bucket, Limit: 5, Rate: math.Inf(1)},
		{Kind: Fixed, Limit: 5, Window: 1},
		{Kind: Sliding, Limit: 5, Window: 100 * 365 * 24 * time.Hour},
		{Kind: Fixed, Limit: math.MaxInt64, Window: time.Second},
	} {
		if r.Prefers(odd, right) {
			t.Errorf("%v preferred to the server's %v", odd, right)
		}
	}
}
