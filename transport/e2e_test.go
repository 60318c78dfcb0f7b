package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/adaptive"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/loadtest"
	"github.com/tollgate-go/tollgate/quota"
)

const workers = 32

// TestQuotaReached drives 32 workers through one Transport against the fake
// gateway in each header mode and with each throttle status, and checks that
// the account gets its quota with almost no throttled request.
func TestQuotaReached(t *testing.T) {
	const limit = 50 // per second, fixed window, as Alibaba counts
	tests := []struct {
		name    string
		headers fakecloud.HeaderMode
		every   bool // headers on every answer, not only on throttles
		status  int
		b       checker
	}{
		{"none/400", fakecloud.HeadersNone, false, 400, withoutHeaders},
		{"none/429", fakecloud.HeadersNone, false, 429, withoutHeaders},
		{"none/503", fakecloud.HeadersNone, false, 503, withoutHeaders},
		{"retry-after on throttles", fakecloud.HeadersRetryAfter, false, 429, withoutHeaders},
		{"alibaba on throttles", fakecloud.HeadersAlibaba, false, 400, withoutHeaders},
		{"alibaba", fakecloud.HeadersAlibaba, true, 400, withHeaders},
		{"x-ratelimit", fakecloud.HeadersXRateLimit, true, 429, withHeaders},
		{"ietf", fakecloud.HeadersIETF, true, 429, withHeaders},
		{"ietf structured", fakecloud.HeadersIETFStructured, true, 429, withHeaders},
		{"all", fakecloud.HeadersAll, true, 400, withHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:               quotaOf(limit),
					Headers:              tt.headers,
					HeadersOnEveryAnswer: tt.every,
					ThrottleStatus:       tt.status,
					Faults:               latency,
				})
				steady(t, cloud, limit, tt.b)
			})
		})
	}
}

// TestQuotaChangedLive steps the quota down and up while 32 workers run and
// checks that the account is back within bounds 2 s after each step.
func TestQuotaChangedLive(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers fakecloud.HeaderMode
		b       [3]checker // for each step
	}{
		{"none", fakecloud.HeadersNone, [3]checker{withoutHeaders, quotaFell, quotaRaised}},
		{"x-ratelimit", fakecloud.HeadersXRateLimit, [3]checker{withHeaders, withHeaders, withHeaders}},
		{"alibaba", fakecloud.HeadersAlibaba, [3]checker{withHeaders, withHeaders, withHeaders}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:               quotaOf(60),
					Phases:               stepPhases(),
					Headers:              tt.headers,
					HeadersOnEveryAnswer: true,
					Faults:               latency,
				})
				stepped(t, cloud, tt.b)
			})
		})
	}
}

// TestTenantsIsolated sends three accounts with different quotas through one
// Transport: each gets its own quota, and the most throttled one does not
// slow the others.
func TestTenantsIsolated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := map[string]int{"AK1": 10, "AK2": 40, "AK3": 100}
		var quotas []fakecloud.Quota
		for akid, n := range limits {
			quotas = append(quotas, fakecloud.Quota{Account: akid, API: "DescribeInstances", Limit: n, Window: time.Second})
		}
		cloud := fakecloud.New(fakecloud.Config{Quotas: quotas, Faults: latency})
		tr := New(cloud.RoundTripper(), Config{})
		ctx, cancel := context.WithTimeout(t.Context(), 12*time.Second)
		defer cancel()
		meters := map[string]*loadtest.Meter{}
		var waits []interface{ Wait() }
		for akid := range limits {
			meters[akid] = newMeter(cloud, akid)
			var l load
			waits = append(waits, l.Run(ctx, t, tr, akid, workers))
		}
		time.Sleep(2 * time.Second)
		for _, m := range meters {
			m.Mark()
		}
		time.Sleep(10*time.Second - time.Millisecond)
		for akid, m := range meters {
			b := withoutHeaders
			if limits[akid] <= 10 {
				b = lowQuota
			}
			b.check(t, akid, m.Since(), float64(limits[akid]))
		}
		for _, w := range waits {
			w.Wait()
		}
		if n := cloud.Stats().Total.Replays; n != 0 {
			t.Errorf("%d SignatureNonceUsed answers", n)
		}
	})
}

// TestDeadlineFailsFast checks that a request whose deadline is shorter than
// its wait for quota fails at once, with an error that says so, and never
// reaches the server.
func TestDeadlineFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{})
		var rules quota.Rules
		rules.Set(quota.Key{Product: "ecs"}, quota.Every(1, time.Second))
		tr := New(cloud.RoundTripper(), Config{Rules: &rules})
		send := func(timeout time.Duration) (*http.Response, error) {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			req, err := fakecloud.NewRequest(ctx, endpoint, "AK1", "DescribeInstances")
			if err != nil {
				t.Fatal(err)
			}
			return tr.RoundTrip(req)
		}
		resp, err := send(time.Second)
		if err != nil {
			t.Fatalf("first request: %v", err)
		}
		resp.Body.Close()

		start := time.Now()
		_, err = send(100 * time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second request: err = %v, want context.DeadlineExceeded", err)
		}
		var we *adaptive.WaitError
		if !errors.As(err, &we) || we.Wait < 500*time.Millisecond {
			t.Errorf("err = %v, want a *adaptive.WaitError saying it needed ~1s", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("failing took %v, want no wait at all", d)
		}
		if got := cloud.Stats().Total.Requests; got != 1 {
			t.Errorf("the fake saw %d requests, want 1: the refused request was sent", got)
		}
	})
}

// TestAcrossSeeds runs the no-header scenarios, where the Transport learns
// the quota from throttles alone, over several seeds of the fake gateway's
// latency jitter: the bounds hold for each, not only for the seed the other
// tests use.
func TestAcrossSeeds(t *testing.T) {
	const seeds = 8
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, limit := range []int{10, 100} {
			t.Run(fmt.Sprintf("seed %d/%d per s", seed, limit), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := withoutHeaders
					if limit == 10 {
						b = lowQuota
					}
					steady(t, fakecloud.New(fakecloud.Config{Quotas: quotaOf(limit), Faults: latency, Seed: seed}), limit, b)
				})
			})
		}
		t.Run(fmt.Sprintf("seed %d/changed live", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(60), Phases: stepPhases(), Faults: latency, Seed: seed})
				stepped(t, cloud, [3]checker{withoutHeaders, quotaFell, quotaRaised})
			})
		})
	}
}

// quotaOf is a quota of n DescribeInstances a second, in fixed windows.
func quotaOf(n int) []fakecloud.Quota {
	return []fakecloud.Quota{{API: "DescribeInstances", Limit: n, Window: time.Second}}
}

// steady runs 32 workers of account AK1 through a new Transport to cloud,
// whose quota is limit a second, for 12 s, and checks the last 10 s against
// b: nothing resent, nothing failed inside the Transport.
func steady(t *testing.T, cloud *fakecloud.Cloud, limit int, b checker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Second)
	defer cancel()
	m := newMeter(cloud, "AK1")
	var l load
	wg := l.Run(ctx, t, New(cloud.RoundTripper(), Config{}), "AK1", workers)
	time.Sleep(2 * time.Second)
	warm := m.Since()
	time.Sleep(10*time.Second - time.Millisecond)
	s := m.Since()
	wg.Wait()
	t.Logf("warm-up: %d ok, %d throttled", warm.Admitted, warm.Throttled)
	b.check(t, "steady state", s, float64(limit))
	if n := m.Counters().Replays; n != 0 {
		t.Errorf("%d SignatureNonceUsed answers: a request was resent", n)
	}
	if n := l.Failed.Load(); n != 0 {
		t.Errorf("%d requests failed inside the Transport", n)
	}
}

// steps is the schedule of the quota changed live: 60/s, 20/s from 10 s,
// 80/s from 20 s.
var steps = []struct {
	from  time.Duration
	limit int
}{{0, 60}, {10 * time.Second, 20}, {20 * time.Second, 80}}

// stepPhases returns the fake gateway's phases for steps.
func stepPhases() []fakecloud.Phase {
	var ps []fakecloud.Phase
	for _, st := range steps[1:] {
		ps = append(ps, fakecloud.Phase{At: st.from, Quotas: quotaOf(st.limit)})
	}
	return ps
}

// stepped runs 32 workers of account AK1 through a new Transport to cloud,
// whose quota follows steps, and checks each step from 2 s after it to the
// next against its checker: nothing resent.
func stepped(t *testing.T, cloud *fakecloud.Cloud, b [3]checker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	m := newMeter(cloud, "AK1")
	var l load
	wg := l.Run(ctx, t, New(cloud.RoundTripper(), Config{}), "AK1", workers)
	for i, st := range steps {
		time.Sleep(2 * time.Second)
		m.Since()
		time.Sleep(8*time.Second - time.Millisecond)
		b[i].check(t, "quota "+st.from.String()+" in", m.Since(), float64(st.limit))
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if n := m.Counters().Replays; n != 0 {
		t.Errorf("%d SignatureNonceUsed answers", n)
	}
}

// TestInFlightCapFound runs 32 workers against a server that works on at
// most 8 requests of the account at once and has no rate quota: the
// Transport finds the cap, sends no more than it, and gets nearly all of
// what the same workers get over the bare transport (where three in four
// requests are throttled), with almost no throttle.
func TestInFlightCapFound(t *testing.T) {
	const capacity = 8
	run := func(t *testing.T, through func(http.RoundTripper) http.RoundTripper) span {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas: []fakecloud.Quota{{API: "DescribeInstances", Policy: fakecloud.Concurrency, Limit: capacity}},
			Faults: latency,
		})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		m := newMeter(cloud, "AK1")
		var l load
		w := l.Run(ctx, t, through(cloud.RoundTripper()), "AK1", workers)
		time.Sleep(5 * time.Second)
		m.Mark()
		time.Sleep(5*time.Second - time.Millisecond)
		s := m.Since()
		w.Wait()
		return s
	}
	var bare, got span
	synctest.Test(t, func(t *testing.T) {
		bare = run(t, func(rt http.RoundTripper) http.RoundTripper { return rt })
	})
	synctest.Test(t, func(t *testing.T) {
		var tr *Transport
		got = run(t, func(rt http.RoundTripper) http.RoundTripper {
			tr = New(rt, Config{})
			return tr
		})
		tr.Range(func(_ quota.Key, l *adaptive.Limiter) bool {
			if n := l.Snapshot().InFlightLimit; n != capacity {
				t.Errorf("learned cap %d in flight, want %d", n, capacity)
			}
			return false
		})
	})
	ratio := float64(got.Admitted) / float64(max(bare.Admitted, 1))
	t.Logf("%d successes (bare %d: %.1f%%), %.2f%% throttled (bare %.1f%%)",
		got.Admitted, bare.Admitted, 100*ratio, 100*got.ThrottledShare(), 100*bare.ThrottledShare())
	if ratio < 0.9 {
		t.Errorf("%.1f%% of the bare transport's successes, want ≥ 90%%", 100*ratio)
	}
	if th := got.ThrottledShare(); th > 0.01 {
		t.Errorf("%.2f%% throttled, want ≤ 1%%", 100*th)
	}
}

// TestClientDeadline checks the plain net/http path as the README shows
// it, an http.Client over a Transport, against a quota of 1 per 5 s that
// the gateway tells on every answer: a request given 500 ms returns at
// once, unsent, with an error matching context.DeadlineExceeded. It is a
// regression test of what the v1 SDK path was made to match.
func TestClientDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:  []fakecloud.Quota{{API: "DescribeInstances", Limit: 1, Window: 5 * time.Second}},
			Headers: fakecloud.HeadersAlibaba, HeadersOnEveryAnswer: true,
		})
		client := &http.Client{Transport: New(cloud.RoundTripper(), Config{})}
		get := func(ctx context.Context) error {
			req, err := fakecloud.NewRequest(ctx, endpoint, "AK1", "DescribeInstances")
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
		if err := get(t.Context()); err != nil {
			t.Fatalf("first request: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := get(ctx)
		if took := time.Since(start); took > 600*time.Millisecond {
			t.Errorf("the request took %v, want ≤ 600 ms: its deadline was 500 ms", took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want one matching context.DeadlineExceeded", err)
		}
		time.Sleep(10 * time.Second)
		if got := cloud.Stats().Total.Requests; got != 1 {
			t.Errorf("the gateway saw %d requests, want 1: the refused one was sent", got)
		}
	})
}
