package fit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// serve answers requests sent at rate a second to a fixed window of
// limit a second, of which others spend a random part of at most
// othersMax at each window's start, and which sheds a share shed of the
// requests at random (a shed request does not count). It returns the
// record of the answers from the first throttle on.
func serve(seed uint64, rate float64, limit int64, othersMax int, shed float64) *Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	rule := Rule{Kind: Fixed, Limit: limit, Window: time.Second}
	m := newMeter(rule, 0)
	at := time.Unix(1e9, 0)
	var r Record
	begun := false
	for k := int64(-1); r.Len() < Size; {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(time.Second) / rate))
		ns := at.UnixNano()
		m.load(ns, 0)
		if m.k != k {
			k = m.k
			for range rng.IntN(othersMax + 1) {
				m.take(ns)
			}
		}
		thr := rng.Float64() < shed || m.load(ns, 0) >= limit
		if !thr {
			m.take(ns)
		}
		begun = begun || thr
		if begun {
			r.Add(Answer{Sent: at, Answered: at, Throttled: thr})
		}
	}
	return &r
}

// TestOthersFromFills: where others spend up to 4 of a window of 10 at
// its start, our count fills early in most windows, and Ô says about
// what they spend there (2 on average; the median fill sets it).
func TestOthersFromFills(t *testing.T) {
	ft := serve(1, 15, 10, 4, 0).Fit()
	t.Logf("best %v, others %.1f", ft.Best, ft.Others)
	if ft.Best.Kind != Fixed || ft.Best.Window != time.Second {
		t.Fatalf("fit %v, want a fixed window of 1s", ft.Best)
	}
	if ft.Best.Limit != 10 || ft.Others < 1 || ft.Others > 3 {
		t.Errorf("L̂ %d, Ô %.1f: want 10, and 1 to 3", ft.Best.Limit, ft.Others)
	}
}

// TestOthersNotFromShedding: shedding 5% of the requests at random, with
// nobody else spending, leaves Ô near nothing: shed throttles stand
// alone, they do not gather where the window fills. The bound, 1 of 10,
// is a regression floor at what the fit reaches (0 on these seeds).
func TestOthersNotFromShedding(t *testing.T) {
	for seed := range uint64(5) {
		ft := serve(seed, 15, 10, 0, 0.05).Fit()
		t.Logf("seed %d: best %v, others %.1f", seed, ft.Best, ft.Others)
		if ft.Best.Kind != Fixed || ft.Best.Limit != 10 || ft.Best.Window != time.Second {
			t.Errorf("seed %d: fit %v, want fixed 10/1s", seed, ft.Best)
		}
		if ft.Others > 1 {
			t.Errorf("seed %d: Ô %.1f, want at most 1", seed, ft.Others)
		}
	}
}
