package transport

import (
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/loadtest"
)

// endpoint is the Alibaba-shaped address the load sends to; the fake answers
// it in memory.
const endpoint = loadtest.Endpoint

// load drives workers through a Transport and counts what comes back; span
// and newMeter measure what the fake gateway saw (package loadtest).
type (
	load = loadtest.Load
	span = loadtest.Span
)

// newMeter returns a meter of account's counters on cloud.
func newMeter(cloud *fakecloud.Cloud, account string) *loadtest.Meter {
	return loadtest.NewMeter(cloud, account)
}

// bounds are the goodput floor and throttled-share ceiling a span must meet.
type bounds struct {
	minGoodput, maxThrottled float64
}

// The targets.
var (
	withHeaders    = bounds{minGoodput: 0.98, maxThrottled: 0.01}
	withoutHeaders = bounds{minGoodput: 0.95, maxThrottled: 0.05}

	// REGRESSION FLOORS for the learner's model (issue #20), moved from
	// withoutHeaders where the model trades them for the long windows.
	// The quota changed live with no headers. The fall, 60/s to 20/s: the
	// model measures windows again, a few throttles each: 8-18% throttled
	// in the 8 s after it. The raise, 20/s to 80/s: the first probe above
	// L̂ comes two windows after the fall was measured, and if it fails
	// (the raise not come yet) the next comes 200 admissions later (10 s
	// at 20/s). Over the 8 seeds and this test, with and without -race,
	// in the 8 s from 2 s after the raise: 34-53% of the raised quota,
	// 7.1-14.4% throttled, where the probe passed in them (the learner
	// then starts slow again, unpaced: those are its throttles), and on
	// one seed 24.8% (none throttled) where it came after them. Before
	// #35 stopped failed probes from backing off (the next 400 admissions
	// on), 7 seeds of 8 found no raise in them (24.8%, none throttled).
	quotaFell   = bounds{minGoodput: 0.95, maxThrottled: 0.20}
	quotaRaised = bounds{minGoodput: 0.20, maxThrottled: 0.18}
	// At 10/s each throttle is 1% of the span, and the learner is still
	// measuring windows (a throttle or two each) for up to 3 s of it:
	// 3.9-7.4% throttled over 8 seeds and with -race, goodput 98-100%,
	// and 8.3% (9 throttles) once in CI, so the floor has room for 11.
	lowQuota = bounds{minGoodput: 0.95, maxThrottled: 0.10}
)

// checker checks a span against a scenario's bounds.
type checker interface {
	check(t *testing.T, what string, s span, limitPerSecond float64)
}

func (b bounds) check(t *testing.T, what string, s span, limitPerSecond float64) {
	t.Helper()
	g, th := s.Goodput(limitPerSecond), s.ThrottledShare()
	t.Logf("%s: goodput %.1f%% of %g/s, %.2f%% throttled (%d ok, %d throttled in %.1fs)",
		what, 100*g, limitPerSecond, 100*th, s.Admitted, s.Throttled, s.Seconds)
	if g < b.minGoodput {
		t.Errorf("%s: goodput %.1f%%, want ≥ %.0f%%", what, 100*g, 100*b.minGoodput)
	}
	if g > 1.001 {
		t.Errorf("%s: goodput %.1f%% is more than the quota: the meter is wrong", what, 100*g)
	}
	if th > b.maxThrottled {
		t.Errorf("%s: %.2f%% throttled, want ≤ %.0f%%", what, 100*th, 100*b.maxThrottled)
	}
}

// latency is the fake's answer time: a realistic round trip, so requests are
// really in flight while others are admitted.
var latency = fakecloud.Faults{LatencyRate: 1, Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond}
