// Package loadtest drives workers through an http.RoundTripper against the
// fake gateway (internal/fakecloud) and measures what comes back, for the
// end-to-end tests of packages transport and redisquota.
package loadtest

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

// Endpoint is the Alibaba-shaped address the load sends to; the fake
// answers it in memory (fakecloud.Cloud.RoundTripper).
const Endpoint = "http://ecs.cn-hangzhou.aliyuncs.com"

// Load drives workers goroutines that each send DescribeInstances through
// a RoundTripper until a context ends, and counts what comes back. A
// refusal of an open circuit breaker is waited out as retry.Do would (its
// Wait, at least 1 ms); a wait that would pass the context's deadline ends
// the worker; any other error counts as failed, fails the test, and the
// worker goes on 10 ms later.
type Load struct {
	OK, Throttled, Failed atomic.Int64 // answered 200, answered otherwise, no answer
	Open                  atomic.Int64 // refused by an open circuit breaker
	From                  atomic.Int64 // Unix ns from which Longest is measured (0: from the start)
	Longest               atomic.Int64 // ns, the longest RoundTrip begun at or after From
}

// Run starts workers goroutines sending through rt as the AccessKeyId akid
// until ctx ends, and returns the group to wait for them.
func (l *Load) Run(ctx context.Context, t testing.TB, rt http.RoundTripper, akid string, workers int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := fakecloud.NewRequest(ctx, Endpoint, akid, "DescribeInstances")
				if err != nil {
					t.Error(err)
					return
				}
				start := time.Now()
				resp, err := rt.RoundTrip(req)
				l.took(start)
				var oe *breaker.OpenError
				switch {
				case errors.Is(err, context.DeadlineExceeded):
					// The run ends before this worker's turn would come.
					<-ctx.Done()
					return
				case errors.As(err, &oe):
					l.Open.Add(1)
					if !errors.Is(err, breaker.ErrOpen) {
						t.Errorf("refusal %v does not match breaker.ErrOpen", err)
					}
					Sleep(ctx, max(oe.Wait, time.Millisecond))
				case err != nil:
					if ctx.Err() == nil {
						l.Failed.Add(1)
						t.Errorf("RoundTrip: %v", err)
						Sleep(ctx, 10*time.Millisecond) // never spin
					}
				default:
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						l.OK.Add(1)
					} else {
						l.Throttled.Add(1)
					}
				}
			}
		})
	}
	return &wg
}

// took records a RoundTrip begun at start and ended now in Longest.
func (l *Load) took(start time.Time) {
	if start.UnixNano() < l.From.Load() {
		return
	}
	d := int64(time.Since(start))
	for m := l.Longest.Load(); d > m && !l.Longest.CompareAndSwap(m, d); m = l.Longest.Load() {
	}
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Span is what the fake admitted and throttled between two moments of a
// run.
type Span struct {
	Admitted, Throttled int64
	Seconds             float64
}

// Goodput is the share of a quota of limitPerSecond that was admitted.
func (s Span) Goodput(limitPerSecond float64) float64 {
	return float64(s.Admitted) / (limitPerSecond * s.Seconds)
}

// ThrottledShare is the share of the requests answered that were
// throttled.
func (s Span) ThrottledShare() float64 {
	if s.Admitted+s.Throttled == 0 {
		return 0
	}
	return float64(s.Throttled) / float64(s.Admitted+s.Throttled)
}

// Meter samples the fake's counters of one account, or of all.
type Meter struct {
	cloud   *fakecloud.Cloud
	account string // "" for all
	at      time.Time
	c       fakecloud.Counters
}

// NewMeter returns a Meter of account's counters on cloud ("" for all the
// accounts'), marked now.
func NewMeter(cloud *fakecloud.Cloud, account string) *Meter {
	m := &Meter{cloud: cloud, account: account}
	m.Mark()
	return m
}

// Counters returns the counters now.
func (m *Meter) Counters() fakecloud.Counters {
	st := m.cloud.Stats()
	if m.account == "" {
		return st.Total
	}
	var c fakecloud.Counters
	for _, a := range st.Tenants[m.account] {
		c.Admitted += a.Admitted
		c.Throttled += a.Throttled
		c.Replays += a.Replays
	}
	return c
}

// Mark starts a new span now.
func (m *Meter) Mark() {
	m.at, m.c = time.Now(), m.Counters()
}

// Since returns the span from the last mark to now, and starts a new one.
func (m *Meter) Since() Span {
	c, now := m.Counters(), time.Now()
	s := Span{
		Admitted:  c.Admitted - m.c.Admitted,
		Throttled: c.Throttled - m.c.Throttled,
		Seconds:   now.Sub(m.at).Seconds(),
	}
	m.at, m.c = now, c
	return s
}
