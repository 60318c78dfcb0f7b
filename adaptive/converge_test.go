package adaptive

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// bounds a span must meet: at least minGoodput of the quota admitted, at
// most maxThrottled of the requests sent throttled.
type bounds struct {
	minGoodput, maxThrottled float64
}

// The targets of the issue, for a fixed-window server (Alibaba's per-second
// counters): with rate-limit headers on every answer, ≥ 98% of the quota and
// ≤ 1% throttled; with no headers at all, ≥ 95% and ≤ 5%. They are asserted
// as they are.
var (
	withHeaders = bounds{0.98, 0.01}
	noHeaders   = bounds{0.95, 0.05}
)

// Other server algorithms are not the target of the issue, and a client
// cannot reach all of every one of them from the same signals. Their
// scenarios assert what is measured (go test -count=5, with and without
// -race), with margin; the target would be the same as for a fixed window.
var (
	// Sliding window with headers. Target 98% / 1%. Measured 93-98%
	// goodput, 0.5-3.4% throttled: the fake's Reset for a sliding window is
	// when the oldest admission leaves it, so spending Remaining until then
	// runs a little fast.
	slidingHeaders = bounds{0.90, 0.05}
	// Sliding window, no headers. Target 95% / 5%. Measured 90-98%, 3-5%.
	slidingNoHeaders = bounds{0.85, 0.08}
	// Token bucket (burst Limit/10) with headers. Target 98% / 1%.
	// Measured 10%, 0 throttled: the headers' Limit is the burst (5), so
	// the Limiter paces at 5 per window and never sees a throttle to learn
	// from. KNOWN SHORT.
	bucketHeaders = bounds{0.08, 0.01}
	// Token bucket, no headers. Target 95% / 5%. Measured 10-70% goodput,
	// up to 50% throttled: the learner, tuned for windows, does not settle
	// on a bucket with a small burst. KNOWN SHORT; this bound only catches
	// a collapse to nothing.
	bucketNoHeaders = bounds{0.05, 0.60}
)

func (b bounds) check(t *testing.T, s simSpan) {
	t.Helper()
	g, th := s.goodput(), s.throttledShare()
	msg := fmt.Sprintf("%s: goodput %.1f%% of %g/s, %.2f%% throttled (%d ok, %d throttled in %.1fs)",
		s.name, 100*g, s.limit, 100*th, s.ok, s.throttled, s.seconds)
	if g < b.minGoodput || th > b.maxThrottled {
		t.Errorf("%s; want ≥ %.0f%% and ≤ %.0f%%", msg, 100*b.minGoodput, 100*b.maxThrottled)
		return
	}
	t.Log(msg)
	if float64(s.ok) > s.limit*s.seconds*1.001+float64(s.burst) {
		t.Errorf("%s: more than the quota, the meter is wrong", s.name)
	}
}

// scenario is one server setup.
type scenario struct {
	name    string
	policy  fakecloud.Policy
	headers fakecloud.HeaderMode
	b       bounds
}

var scenarios = []scenario{
	{"fixed/alibaba", fakecloud.FixedWindow, fakecloud.HeadersAlibaba, withHeaders},
	{"fixed/ietf", fakecloud.FixedWindow, fakecloud.HeadersIETF, withHeaders},
	{"fixed/none", fakecloud.FixedWindow, fakecloud.HeadersNone, noHeaders},
	{"fixed/retry-after", fakecloud.FixedWindow, fakecloud.HeadersRetryAfter, noHeaders},
	{"sliding/alibaba", fakecloud.SlidingWindow, fakecloud.HeadersAlibaba, slidingHeaders},
	{"sliding/none", fakecloud.SlidingWindow, fakecloud.HeadersNone, slidingNoHeaders},
	{"bucket/alibaba", fakecloud.TokenBucket, fakecloud.HeadersAlibaba, bucketHeaders},
	{"bucket/none", fakecloud.TokenBucket, fakecloud.HeadersNone, bucketNoHeaders},
}

func (sc scenario) quota(limit int) fakecloud.Quota {
	q := fakecloud.Quota{API: simAction, Policy: sc.policy, Limit: limit, Window: time.Second}
	if sc.policy == fakecloud.TokenBucket {
		q.Burst = max(limit/10, 1)
	}
	return q
}

func (sc scenario) cloud(phases []fakecloud.Phase, quotas ...fakecloud.Quota) *fakecloud.Cloud {
	// Retry-After comes on throttles alone; the other families on every
	// answer.
	return fakecloud.New(fakecloud.Config{
		Quotas:               quotas,
		Phases:               phases,
		Headers:              sc.headers,
		HeadersOnEveryAnswer: sc.headers != fakecloud.HeadersRetryAfter,
		ThrottleStatus:       429,
		Faults:               simLatency,
	})
}

// TestConvergeSteady: 32 workers against a quota of 50/s; measured from 2 s
// to 10 s.
func TestConvergeSteady(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit = 50
				cloud := sc.cloud(nil, sc.quota(limit))
				lim := New(Config{})
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				var wg sync.WaitGroup
				simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
				s := measure(simMeter{cloud, "AK1"}, start, 2*time.Second, 10*time.Second-time.Millisecond, "steady", limit)
				wg.Wait()
				s.burst = int64(sc.quota(limit).Burst)
				sc.b.check(t, s)
				t.Logf("snapshot: %+v", lim.Snapshot())
			})
		})
	}
}

// TestConvergeSteps steps the quota 100/s → 40/s at 6 s → 100/s at 12 s
// while 32 workers run, and measures from 2 s after each step to the next.
func TestConvergeSteps(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := sc.cloud([]fakecloud.Phase{
					{At: 6 * time.Second, Quotas: []fakecloud.Quota{sc.quota(40)}},
					{At: 12 * time.Second, Quotas: []fakecloud.Quota{sc.quota(100)}},
				}, sc.quota(100))
				lim := New(Config{})
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 18*time.Second)
				defer cancel()
				var wg sync.WaitGroup
				simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
				m := simMeter{cloud, "AK1"}
				spans := []simSpan{
					measure(m, start, 2*time.Second, 6*time.Second-time.Millisecond, "100/s", 100),
					measure(m, start, 8*time.Second, 12*time.Second-time.Millisecond, "down to 40/s", 40),
					measure(m, start, 14*time.Second, 18*time.Second-time.Millisecond, "up to 100/s", 100),
				}
				wg.Wait()
				for _, s := range spans {
					s.burst = int64(sc.quota(100).Burst)
					sc.b.check(t, s)
				}
			})
		})
	}
}

// TestConvergeTenants runs three accounts with quotas of 10, 50 and 200/s
// (fixed windows, no headers) through one Registry: each must reach its own
// quota, whatever the others do.
func TestConvergeTenants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := []int{10, 50, 200}
		var quotas []fakecloud.Quota
		for i, l := range limits {
			quotas = append(quotas, fakecloud.Quota{Account: fmt.Sprint("AK", i), API: simAction, Limit: l, Window: time.Second})
		}
		cloud := fakecloud.New(fakecloud.Config{Quotas: quotas, Faults: simLatency})
		reg := NewRegistry(RegistryConfig{})
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range limits {
			simClient(ctx, t, &wg, reg.Get(tenantKey(i)), cloud.RoundTripper(), fmt.Sprint("AK", i), 32)
		}
		spans := make([]simSpan, len(limits))
		var mwg sync.WaitGroup
		for i, l := range limits {
			mwg.Go(func() {
				spans[i] = measure(simMeter{cloud, fmt.Sprint("AK", i)}, start, 2*time.Second, 10*time.Second-time.Millisecond, fmt.Sprintf("tenant %d/s", l), float64(l))
			})
		}
		mwg.Wait()
		wg.Wait()
		for _, s := range spans {
			noHeaders.check(t, s)
		}
	})
}
