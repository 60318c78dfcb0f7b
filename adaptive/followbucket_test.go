package adaptive

import (
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

// TestBucketProbe: paced by a token bucket the fit named, the estimator
// keeps 1% under its rate; a probe above it sends, over the pace, twice
// the depth, so that at a rate no higher than the pace's it would drain
// the bucket; one that passed raises the pace by half its step and
// doubles the step; one that failed keeps the pace and starts the ramp
// again from the smallest step.
func TestBucketProbe(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		depth int64
	}{{30, 60}, {30, 2}, {0.5, 1}, {1000, 5000}, {7, 200}} {
		e := new(estimator)
		e.adoptBucket(c.rate, c.depth, 0.5)
		r := e.rule()
		if r.Kind != fit.Bucket || r.Limit != c.depth || math.Abs(r.Rate-c.rate) > 0.001*c.rate {
			t.Errorf("%v deep %d: paces by %v, want the bucket adopted", c.rate, c.depth, r)
		}
		if pace := float64(e.limit) / time.Duration(e.win).Seconds(); math.Abs(pace-0.99*c.rate) > 0.001*c.rate {
			t.Errorf("%v deep %d: paces at %.4g/s, want 99%% of the rate", c.rate, c.depth, pace)
		}
		if e.phase != PhaseSettled || e.fixed {
			t.Errorf("%v deep %d: %v, fixed %v; want settled with no phase", c.rate, c.depth, e.phase, e.fixed)
		}
		now, next := int64(time.Hour), uint64(1000)
		for pass := range 4 {
			step, span := e.bucketProbe()
			if span < e.win {
				t.Errorf("%v deep %d, probe %d: span %v under the pace's window %v", c.rate, c.depth, pass, time.Duration(span), time.Duration(e.win))
			}
			if over := float64(step) * float64(span) / float64(e.win); over < float64(2*e.depth)-1 {
				t.Errorf("%v deep %d, probe %d: step %d for %v sends %.1f over the pace, want ≥ twice the depth %d",
					c.rate, c.depth, pass, step, time.Duration(span), over, e.depth)
			}
			if step < 1 || step > e.limit {
				t.Errorf("%v deep %d, probe %d: step %d, want 1 to L̂ %d", c.rate, c.depth, pass, step, e.limit)
			}
			if paced, _ := e.paceAt(now, 0); paced != e.limit {
				t.Errorf("%v deep %d, probe %d: paces %d before the span, want L̂ %d", c.rate, c.depth, pass, paced, e.limit)
			}
			e.spanAt, e.spanEnd = now, now+span
			if paced, _ := e.paceAt(now, 0); paced != e.limit+step {
				t.Errorf("%v deep %d, probe %d: paces %d in the span, want L̂+step %d", c.rate, c.depth, pass, paced, e.limit+step)
			}
			limit := e.limit
			e.spanEnd = 0
			e.raise(now, next, int64(time.Minute))
			if e.limit != limit+max(step/2, 1) || e.step != 2*step || e.probeAt != now || e.probeSeq != next {
				t.Errorf("%v deep %d, probe %d passed: L̂ %d → %d, step %d → %d, next at %d/%d; want +%d, doubled, at once",
					c.rate, c.depth, pass, limit, e.limit, step, e.step, e.probeAt-now, e.probeSeq, max(step/2, 1))
			}
		}
		limit := e.limit
		e.spanAt, e.spanEnd = now, now+e.win
		if u := e.spanFailed(now, next); u != 0 || e.limit != limit || e.step != 0 {
			t.Errorf("%v deep %d, probe failed: pause %d, L̂ %d → %d, step %d; want no pause, L̂ kept, the ramp begun again", c.rate, c.depth, u, limit, e.limit, e.step)
		}
	}
}
