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
// doubles the step; one that failed keeps the pace and ends the ramp.
// Out of a ramp, the step opens at one request per round trip over the
// pace, at most the pace again, and halves for each probe failed in a
// row down to the least, then opens again (see TestBucketProbeOpens).
func TestBucketProbe(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		depth int64
	}{{30, 60}, {30, 2}, {0.5, 1}, {1000, 5000}, {7, 200}} {
		e := new(estimator)
		e.adoptBucket(c.rate, c.depth, 0.5, int64(50*time.Millisecond))
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

// TestBucketProbeOpens: out of a ramp, a probe above a token bucket's pace
// opens with the widest step whose failure costs about one throttle, one
// request per round trip above the pace (what is sent above the rate in
// the round trip before the first refusal is heard), at most the pace
// again; each probe failed in a row halves it down to the least step,
// after which it opens wide again, so that no raise waits on steps of 1%.
func TestBucketProbeOpens(t *testing.T) {
	const rtt = int64(50 * time.Millisecond)
	for _, c := range []struct {
		rate  float64
		depth int64
	}{{30, 60}, {0.84, 1}, {1000, 5}, {200, 2}} {
		e := new(estimator)
		e.adoptBucket(c.rate, c.depth, 0.5, rtt)
		least := max(ceilDiv(4*c.depth*e.limit, fit.Size), 2) // drains the depth twice in half the record
		open, _ := e.bucketProbe()
		// The step's rate above the pace, a second.
		over := func(step int64) float64 { return float64(step) / time.Duration(e.win).Seconds() }
		perRT := over(open) * time.Duration(rtt).Seconds()
		switch {
		case open > e.limit:
			t.Errorf("%v/s deep %d: opens at %d, above L̂ %d (the pace doubled)", c.rate, c.depth, open, e.limit)
		case perRT > 1.05 && open > least:
			t.Errorf("%v/s deep %d: opens at %.3g over the pace a round trip, want ≤ 1", c.rate, c.depth, perRT)
		case perRT < 0.5 && open < e.limit:
			t.Errorf("%v/s deep %d: opens at %.3g over the pace a round trip, want about 1 (or the pace doubled)", c.rate, c.depth, perRT)
		}
		prev, opened := open, false
		for fail := 1; fail <= 12; fail++ {
			e.spanAt, e.spanEnd = 0, e.win
			e.spanFailed(0, 0)
			step, span := e.bucketProbe()
			if float64(step)*float64(span)/float64(e.win) < float64(2*e.depth)-1 {
				t.Errorf("%v/s deep %d, after %d failed: step %d for %v sends under twice the depth", c.rate, c.depth, fail, step, time.Duration(span))
			}
			switch {
			case prev/2 >= least && step != prev/2:
				t.Errorf("%v/s deep %d, after %d failed: step %d after %d, want it halved", c.rate, c.depth, fail, step, prev)
			case prev/2 < least && step != open:
				t.Errorf("%v/s deep %d, after %d failed: step %d after %d, the least (%d): want it opened again at %d", c.rate, c.depth, fail, step, prev, least, open)
			case prev/2 < least:
				opened = true
			}
			prev = step
		}
		if !opened && open >= 4*least {
			t.Errorf("%v/s deep %d: after 12 failed probes the step never opened again from %d", c.rate, c.depth, open)
		}
		t.Logf("%v/s deep %d: L̂ %d per %v, opens at %d (%.2f a round trip over the pace)", c.rate, c.depth, e.limit, time.Duration(e.win), open, perRT)
	}
}

// TestBucketProbeFailsOnThrottle: above a token bucket, a throttle in the
// probe's span fails the probe at once, even where strays are common. A
// bucket earns a token back within a request or two at the pace, so a
// test sent right after the throttle passes whether or not the probe
// drained it: tested, a probe at twice the pace (draw 113 of the family,
// a bucket of 73/s at 2 ms) took each throttle for a stray and began
// again, 25% of the tenant's requests throttled for good.
func TestBucketProbeFailsOnThrottle(t *testing.T) {
	e := new(estimator)
	e.adoptBucket(73, 20, 0.5, int64(2*time.Millisecond))
	e.strays, e.answers = 5, 100 // strays common
	now, next := int64(time.Hour), uint64(1000)
	_, span := e.bucketProbe()
	e.spanSeq, e.spanAt, e.spanEnd = next, now, now+span
	e.throttle(now+span/2, now+span/2, next+5, next+10, 4, int64(2*time.Millisecond), 0, int64(time.Minute))
	if e.spanEnd != 0 || e.spanTest || e.fails != 1 {
		t.Errorf("a throttle in the probe's span: span in force %v, tested %v, probes failed %d; want it failed at once", e.spanEnd != 0, e.spanTest, e.fails)
	}
}
