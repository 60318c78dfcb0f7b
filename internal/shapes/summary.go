package shapes

import (
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
	slices.SortStableFunc(mid, func(a, b *Result) int { return cmpFloat(a.SettledGoodput, b.SettledGoodput) })
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
	f := func(get func(*Result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)
		}
		slices.SortFunc(xs, cmpFloat)
		return xs[(len(xs)-1)/2]
	}
	d := func(get func(*Result) time.Duration) time.Duration {
		return time.Duration(f(func(r *Result) float64 { return float64(get(r)) }))
	}
	s.ColdThrottles = int64(f(func(r *Result) float64 { return float64(r.ColdThrottles) }))
	s.SettleTime = d(func(r *Result) time.Duration {
		if r.SettleTime < 0 {
			return 1 << 62 // never sorts last
		}
		return r.SettleTime
	})
	if s.SettleTime == 1<<62 {
		s.SettleTime = -1
	}
	s.SettledGoodput = f(func(r *Result) float64 { return r.SettledGoodput })
	s.SettledThrottled = f(func(r *Result) float64 { return r.SettledThrottled })
	s.SettledPerSecond = f(func(r *Result) float64 { return r.SettledPerSecond })
	s.P50 = d(func(r *Result) time.Duration { return r.P50 })
	s.P99 = d(func(r *Result) time.Duration { return r.P99 })
	s.RunGoodput = f(func(r *Result) float64 { return r.RunGoodput })
	s.RunThrottled = f(func(r *Result) float64 { return r.RunThrottled })
	s.UnseenThrottled = f(func(r *Result) float64 { return r.UnseenThrottled })
	s.GoodputRange = [2]float64{mid[0].SettledGoodput, mid[len(mid)-1].SettledGoodput}
	byThrottled := slices.Clone(rs)
	slices.SortFunc(byThrottled, func(a, b *Result) int { return cmpFloat(a.SettledThrottled, b.SettledThrottled) })
	s.ThrottledRange = [2]float64{byThrottled[0].SettledThrottled, byThrottled[len(rs)-1].SettledThrottled}
	return &s
}

// cmpFloat orders floats, NaN first.
func cmpFloat(a, b float64) int {
	switch {
	case a < b || a != a && b == b:
		return -1
	case a > b || b != b && a == a:
		return 1
	}
	return 0
}
