package shapes

import (
	"testing"
	"testing/synctest"

	"github.com/tollgate-go/tollgate/adaptive"
)

// TestFitEndsSlowStart runs family draw 104 (fixed 11/1s at +384 ms, 2%
// shed, 503 throttles, 3 callers) on 32 seeds. Its callers back off after
// each throttle (retry.Do: up to a second, then two), so a throttle's
// tests, sent one at a time as callers come back, often arrive in the
// next window and go through: the estimator takes them for strays and
// stays in slow start, which it leaves only on a throttle its tests
// confirm (2–6 of the 32 runs ended there, in each of 6 runs of the
// test, 19.6–23.5% of their settled requests throttled; none in 6 runs
// since). The fit, which sees where the throttles gather, names fixed
// 11/1s within a few seconds; where the estimator has no rule of its own
// yet, a window on the grid the fit names twice, and prefers to every
// rule of another kind by more than chance, is paced by: no run may end
// in slow start.
func TestFitEndsSlowStart(t *testing.T) {
	c := Draw(104)
	for seed := range uint64(32) {
		var r *Result
		synctest.Test(t, func(t *testing.T) { r = Run(c, Options{Seed: 97 + seed}) })
		checkRun(t, r)
		t.Logf("seed %d: %v, %s; settled %.1f%%, %.2f%% throttled", 97+seed, r.Estimate.Phase, estimateString(r), 100*r.SettledGoodput, 100*r.SettledThrottled)
		if r.Estimate.Phase == adaptive.PhaseCold {
			t.Errorf("seed %d: ended in slow start, %.2f%% of the settled requests throttled", 97+seed, 100*r.SettledThrottled)
		}
	}
}
