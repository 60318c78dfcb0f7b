package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// endpoint is the Alibaba-shaped address the load sends to; the fake answers
// it in memory.
const endpoint = "http://ecs.cn-hangzhou.aliyuncs.com"

// load drives workers goroutines that each send DescribeInstances through rt
// for the given AccessKeyId until ctx ends, and counts what comes back. A
// refusal of an open circuit breaker is waited out as retry.Do would (its
// Wait, at least 1 ms).
type load struct {
	ok, throttled, failed atomic.Int64 // answered 200, answered otherwise, no answer
	open                  atomic.Int64 // refused by an open circuit breaker
	from                  atomic.Int64 // Unix ns from which longest is measured (0: from the start)
	longest               atomic.Int64 // ns, the longest RoundTrip begun at or after from
}

func (l *load) run(ctx context.Context, t *testing.T, rt http.RoundTripper, akid string, workers int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := fakecloud.NewRequest(ctx, endpoint, akid, "DescribeInstances")
				if err != nil {
					t.Error(err)
					return
				}
				start := time.Now()
				resp, err := rt.RoundTrip(req)
				l.took(start)
				var oe *breaker.OpenError
				switch {
				case errors.Is(err, ErrDeadline):
					// The run ends before this worker's turn would come.
					<-ctx.Done()
					return
				case errors.As(err, &oe):
					l.open.Add(1)
					if !errors.Is(err, ErrCircuitOpen) {
						t.Errorf("refusal %v does not match ErrCircuitOpen", err)
					}
					sleep(ctx, max(oe.Wait, time.Millisecond))
				case err != nil:
					if ctx.Err() == nil {
						l.failed.Add(1)
						t.Errorf("RoundTrip: %v", err)
						sleep(ctx, 10*time.Millisecond) // never spin
					}
				default:
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						l.ok.Add(1)
					} else {
						l.throttled.Add(1)
					}
				}
			}
		})
	}
	return &wg
}

// took records a RoundTrip begun at start and ended now in longest.
func (l *load) took(start time.Time) {
	if start.UnixNano() < l.from.Load() {
		return
	}
	d := int64(time.Since(start))
	for m := l.longest.Load(); d > m && !l.longest.CompareAndSwap(m, d); m = l.longest.Load() {
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// span is what the fake admitted and throttled for one account between two
// moments of a run.
type span struct {
	admitted, throttled int64
	seconds             float64
}

func (s span) goodput(limitPerSecond float64) float64 {
	return float64(s.admitted) / (limitPerSecond * s.seconds)
}

func (s span) throttledShare() float64 {
	if s.admitted+s.throttled == 0 {
		return 0
	}
	return float64(s.throttled) / float64(s.admitted+s.throttled)
}

// meter samples the fake's counters of one account.
type meter struct {
	cloud   *fakecloud.Cloud
	account string
	at      time.Time
	c       fakecloud.Counters
}

func newMeter(cloud *fakecloud.Cloud, account string) *meter {
	m := &meter{cloud: cloud, account: account}
	m.mark()
	return m
}

func (m *meter) counters() fakecloud.Counters {
	var c fakecloud.Counters
	for _, a := range m.cloud.Stats().Tenants[m.account] {
		c.Admitted += a.Admitted
		c.Throttled += a.Throttled
		c.Replays += a.Replays
	}
	return c
}

// mark starts a new span now.
func (m *meter) mark() {
	m.at, m.c = time.Now(), m.counters()
}

// since returns the span from the last mark to now, and starts a new one.
func (m *meter) since() span {
	c, now := m.counters(), time.Now()
	s := span{
		admitted:  c.Admitted - m.c.Admitted,
		throttled: c.Throttled - m.c.Throttled,
		seconds:   now.Sub(m.at).Seconds(),
	}
	m.at, m.c = now, c
	return s
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
	// (the raise not come yet) the next comes 400 admissions later (20 s
	// at 20/s): 25% of the raised quota in the 8 s after it when that
	// happened, 62-71% (5.4-6.8% throttled) when the probe came after it.
	quotaFell   = bounds{minGoodput: 0.95, maxThrottled: 0.20}
	quotaRaised = bounds{minGoodput: 0.20, maxThrottled: 0.09}
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
	g, th := s.goodput(limitPerSecond), s.throttledShare()
	t.Logf("%s: goodput %.1f%% of %g/s, %.2f%% throttled (%d ok, %d throttled in %.1fs)",
		what, 100*g, limitPerSecond, 100*th, s.admitted, s.throttled, s.seconds)
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
