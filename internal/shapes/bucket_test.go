package shapes

import (
	"testing"
	"testing/synctest"

	"github.com/tollgate-go/tollgate/fit"
)

// TestNoBucketForAWindow runs the matrix's cell "fixed 200/10s, 256
// callers" (shortened) on 8 seeds. Its callers spend each window in a
// burst at its start, and an early record of one burst and its throttles
// is explained by a token bucket as deep as the window's count and as
// fast as the burst (1,000–100,000 a second; the throttles after it go
// unexplained, which is cheap, see package fit). Paced by such a bucket,
// 1–2 seeds in 8 threw 4–38% of their settled requests at throttles and
// failed up to 640 calls, in each of 3 runs of the 8. A bucket is taken
// only where the record prefers it to the best fit of every other kind
// too: no seed may end paced by one, fail a call, or throttle more than
// 1% once settled.
func TestNoBucketForAWindow(t *testing.T) {
	var cell Cell
	for _, c := range Cells() {
		if c.Name == "fixed 200/10s, 256 callers" {
			cell = c
		}
	}
	if cell.Name == "" {
		t.Fatal("no cell fixed 200/10s, 256 callers")
	}
	for seed := range uint64(8) {
		var r *Result
		synctest.Test(t, func(t *testing.T) { r = Run(cell, Options{Seed: seed + 1, Short: true}) })
		checkRun(t, r)
		sn := r.Estimate
		t.Logf("seed %d: %s; settled %.1f%%, %.2f%% throttled, %d failed", seed+1, estimateString(r), 100*r.SettledGoodput, 100*r.SettledThrottled, r.Failed)
		if sn.PacedBy.Kind == fit.Bucket || r.Failed > 0 || r.SettledThrottled > 0.01 {
			t.Errorf("seed %d: paced by %v, %d failed, %.2f%% throttled once settled; want a window, none, ≤ 1%%",
				seed+1, sn.PacedBy, r.Failed, 100*r.SettledThrottled)
		}
	}
}
