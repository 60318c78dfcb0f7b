package adaptive

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
)

// The convergence tests drive Limiters against internal/fakecloud in memory
// (its RoundTripper, under testing/synctest), reading every answer with
// quota.Parse: the same fake gateway and parser the transport's end-to-end
// tests use, without the transport in between.

const (
	simEndpoint = "http://ecs.cn-hangzhou.aliyuncs.com"
	simAction   = "DescribeInstances"
)

// simLatency is the fake's answer time: 10-40 ms after admission (the fake
// spends quota at arrival), so requests are really in flight while others
// are admitted.
var simLatency = fakecloud.Faults{LatencyRate: 1, Latency: 10 * time.Millisecond, LatencyJitter: 30 * time.Millisecond}

// seededFixedCloud is a fake gateway with a fixed window of limit per
// window, answering 10–20 ms after it counted a request, its draws
// seeded.
func seededFixedCloud(seed uint64, limit int, window time.Duration) *fakecloud.Cloud {
	return fakecloud.New(fakecloud.Config{Seed: seed,
		Quotas: []fakecloud.Quota{{API: simAction, Limit: limit, Window: window}},
		Faults: fakecloud.Faults{LatencyRate: 1, Latency: 10 * time.Millisecond, LatencyJitter: 10 * time.Millisecond},
	})
}

// simClient runs workers goroutines that each send simAction for akid
// through lim to rt until ctx is done: wait, send, read the answer with
// quota.Parse, report it on the ticket.
func simClient(ctx context.Context, t *testing.T, wg *sync.WaitGroup, lim *Limiter, rt http.RoundTripper, akid string, workers int) {
	var parser quota.Parser
	for range workers {
		wg.Go(func() {
			for {
				tk, err := lim.Wait(ctx)
				if err != nil || !simSend(ctx, t, tk, rt, akid, &parser) {
					return
				}
			}
		})
	}
}

// tickedClient runs workers callers through lim that each send one
// request for akid every interval on a clock of their own (their demand,
// open loop, whatever the pacer allows), until ctx ends.
func tickedClient(ctx context.Context, t *testing.T, wg *sync.WaitGroup, lim *Limiter, rt http.RoundTripper, akid string, workers int, every time.Duration) {
	var parser quota.Parser
	for w := range workers {
		wg.Go(func() {
			time.Sleep(every * time.Duration(w) / time.Duration(workers))
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				tk, err := lim.Wait(ctx)
				if err != nil || !simSend(ctx, t, tk, rt, akid, &parser) {
					return
				}
			}
		})
	}
}

// simSend sends simAction for akid through rt on ticket tk, reads the
// answer with parser and reports it on tk. It reports false where its
// caller stops: ctx ended, or no request could be made.
func simSend(ctx context.Context, t *testing.T, tk Ticket, rt http.RoundTripper, akid string, parser *quota.Parser) bool {
	req, err := fakecloud.NewRequest(ctx, simEndpoint, akid, simAction)
	if err != nil {
		t.Error(err)
		tk.Cancel()
		return false
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		tk.Done(quota.Observation{At: time.Now(), Transient: true})
		if ctx.Err() != nil {
			return false
		}
		t.Errorf("RoundTrip: %v", err)
		return true
	}
	obs := parser.Parse(resp, time.Now())
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	tk.Done(obs)
	return true
}

// simMeter samples the fake's counters for one account.
type simMeter struct {
	cloud   *fakecloud.Cloud
	account string
}

// counts returns what the fake admitted and throttled for the account so
// far.
func (m simMeter) counts() (ok, throttled int64) {
	for _, c := range m.cloud.Stats().Tenants[m.account] {
		ok += c.Admitted
		throttled += c.Throttled
	}
	return ok, throttled
}

// simSpan is what the fake admitted and throttled for an account over an
// interval of the run.
type simSpan struct {
	name          string
	ok, throttled int64
	seconds       float64
	limit         float64 // the quota, per second
	burst         int64   // what the server may admit beyond limit·seconds (a token bucket's burst)
}

func (s simSpan) goodput() float64 { return float64(s.ok) / (s.limit * s.seconds) }

func (s simSpan) throttledShare() float64 {
	if s.ok+s.throttled == 0 {
		return 0
	}
	return float64(s.throttled) / float64(s.ok+s.throttled)
}

// measure returns the span of m over [from, to) of the bubble's clock,
// counted from start; it sleeps until to.
func measure(m simMeter, start time.Time, from, to time.Duration, name string, limit float64) simSpan {
	time.Sleep(time.Until(start.Add(from)))
	ok0, th0 := m.counts()
	time.Sleep(time.Until(start.Add(to)))
	ok1, th1 := m.counts()
	return simSpan{name: name, ok: ok1 - ok0, throttled: th1 - th0, seconds: (to - from).Seconds(), limit: limit}
}
