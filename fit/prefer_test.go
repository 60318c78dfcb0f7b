package fit

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestPrefers: on records of bursts to a fixed window, a little over its
// rate, the server's own rule is preferred to a wrong one (a window 10%
// long, a limit 16% high, a limit 20% low, or no quota), never the other
// way round, and never to itself. A window 5% long was told apart only
// while Prefers left its start unplaced (see TestPrefersItsOwnRecord):
// placed at its best on seed 33's record, five refills long, it
// explains every answer, as the server's own rule does.
func TestPrefers(t *testing.T) {
	q := fakecloud.Quota{Policy: fakecloud.FixedWindow, Limit: 50, Window: time.Second, Offset: 300 * time.Millisecond}
	right := ruleOf(q)
	wrong := []Rule{
		{Kind: Fixed, Limit: 50, Window: 1100 * time.Millisecond, Start: right.Start},
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

// TestPrefersItsOwnRecord: Prefers judges a record by that record alone.
// It places a fixed window's start by the refills, and once read them
// from whatever record the pooled fitter last fitted: on 7 of 300
// records the verdict on a new fitter and on one another tenant's Fit
// had left differed.
func TestPrefersItsOwnRecord(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		r := serve(seed, 12+rng.Float64()*10, 10, rng.IntN(4), 0)
		other := serve(seed+1000, 5+rng.Float64()*30, 20, rng.IntN(8), 0.05)
		a := Rule{Kind: Fixed, Limit: 10, Window: time.Second}
		b := Rule{Kind: Sliding, Limit: 10 + rng.Int64N(4), Window: time.Second}
		fresh, used := new(fitter), new(fitter)
		used.samples(other, other.delay())
		used.begin()
		used.refills()
		if v, w := fresh.prefers(r, a, b), used.prefers(r, a, b); v != w {
			t.Errorf("seed %d: Prefers(%v, %v) is %v on a new fitter, %v on one that fitted another record", seed, a, b, v, w)
		}
	}
}

// TestPrefersOddRules: rules no fit would name (a bucket whose rate is
// tiny, huge, zero, negative or not a number; a window of a nanosecond,
// a century, none or less; a kind the family does not have) are judged
// without a panic, either way round, and not preferred to the server's
// own; Grants, asked of them, does not panic either, and a window of no
// length, or a kind not of the family, grants nothing.
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
		{Kind: Fixed, Limit: 5},
		{Kind: Fixed, Limit: 5, Window: -time.Second},
		{Kind: Sliding, Limit: 5},
		{Kind: Sliding, Limit: 5, Window: -time.Second},
		{Kind: Cap, Limit: -1},
		{Kind: Kind(9), Limit: 5, Window: time.Second},
	} {
		if r.Prefers(odd, right) {
			t.Errorf("%v preferred to the server's %v", odd, right)
		}
		if !odd.wellFormed() && r.Prefers(right, odd) {
			t.Errorf("the server's %v preferred to %v, which lacks what its kind needs", right, odd)
		}
		g := odd.Grants([]Request{{At: time.Unix(0, 0)}, {At: time.Unix(0, 1)}, {At: time.Unix(-5, 0)}})
		if !odd.wellFormed() && slices.Contains(g, true) {
			t.Errorf("%v grants %v", odd, g)
		}
	}
}
