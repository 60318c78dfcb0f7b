package shapes

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Summarize folds several runs of one cell (each with its own seed) into
// one Result: the median of each measured column, failed calls and reused
// nonces summed, the spread of settled goodput and throttled share kept,
// and the picture and the learner's estimate taken from the run whose
// settled goodput is the median. The learner's behaviour varies from run
// to run (the order in which callers wake at one instant, retry jitter),
// so one run is an anecdote; the median of several is a figure. rs must
// not be empty.
func Summarize(rs []*Result) *Result {
	mid := slices.Clone(rs)
	slices.SortStableFunc(mid, func(a, b *Result) int { return cmp.Compare(a.SettledGoodput, b.SettledGoodput) })
	s := *mid[(len(mid)-1)/2]
	s.Runs = len(rs)
	s.Failures = map[string]int{}
	s.Failed, s.Replays, s.Calls = 0, 0, 0
	for _, r := range rs {
		s.Failed += r.Failed
		s.Replays += r.Replays
		s.Calls += r.Calls
		s.Cut = s.Cut || r.Cut
		for k, n := range r.Failures {
			s.Failures[k] += n
		}
	}
	// sorted returns a column over the runs, in order (NaN first).
	sorted := func(get func(*Result) float64) []float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)
		}
		slices.SortFunc(xs, cmp.Compare[float64])
		return xs
	}
	median := func(get func(*Result) float64) float64 { xs := sorted(get); return xs[(len(xs)-1)/2] }
	medianDuration := func(get func(*Result) time.Duration) time.Duration {
		return time.Duration(median(func(r *Result) float64 { return float64(get(r)) }))
	}

	s.ColdThrottles = int64(median(func(r *Result) float64 { return float64(r.ColdThrottles) }))
	s.ColdShed = int64(median(func(r *Result) float64 { return float64(r.ColdShed) }))
	// A run that never settled counts as the longest.
	settle := median(func(r *Result) float64 {
		if r.SettleTime < 0 {
			return math.Inf(1)
		}
		return float64(r.SettleTime)
	})
	s.SettleTime = -1
	if !math.IsInf(settle, 1) {
		s.SettleTime = time.Duration(settle)
	}
	s.SettledGoodput = median(func(r *Result) float64 { return r.SettledGoodput })
	s.SettledThrottled = median(func(r *Result) float64 { return r.SettledThrottled })
	s.SettledShed = median(func(r *Result) float64 { return r.SettledShed })
	s.SettledPerSecond = median(func(r *Result) float64 { return r.SettledPerSecond })
	s.Took = medianDuration(func(r *Result) time.Duration { return r.Took })
	s.P50 = medianDuration(func(r *Result) time.Duration { return r.P50 })
	s.P99 = medianDuration(func(r *Result) time.Duration { return r.P99 })
	s.RunGoodput = median(func(r *Result) float64 { return r.RunGoodput })
	s.RunThrottled = median(func(r *Result) float64 { return r.RunThrottled })
	s.UnseenThrottled = median(func(r *Result) float64 { return r.UnseenThrottled })
	s.Classes = nil
	for i, cr := range rs[0].Classes {
		class := func(r *Result) ClassResult { return r.Classes[i] }
		cr.P50 = medianDuration(func(r *Result) time.Duration { return class(r).P50 })
		cr.P99 = medianDuration(func(r *Result) time.Duration { return class(r).P99 })
		cr.Share = median(func(r *Result) float64 { return class(r).Share })
		cr.Failed = 0
		for _, r := range rs {
			cr.Failed += class(r).Failed
		}
		s.Classes = append(s.Classes, cr)
	}
	g := sorted(func(r *Result) float64 { return r.SettledGoodput })
	th := sorted(func(r *Result) float64 { return r.SettledThrottled })
	s.GoodputRange = [2]float64{g[0], g[len(g)-1]}
	s.ThrottledRange = [2]float64{th[0], th[len(th)-1]}
	return &s
}
