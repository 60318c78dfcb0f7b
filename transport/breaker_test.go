package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/breaker"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/internal/loadtest"
	"github.com/tollgate-go/tollgate/internal/logtest"
	"github.com/tollgate-go/tollgate/quota"
)

// breakerLog records a Transport's breaker changes and its sends to the
// server, with their times.
type breakerLog struct {
	mu      sync.Mutex
	changes []BreakerEvent
	sends   []time.Time
	nop
}

func (l *breakerLog) Breaker(ev BreakerEvent) {
	l.mu.Lock()
	l.changes = append(l.changes, ev)
	l.mu.Unlock()
}

// nop is an Observer that does nothing.
type nop struct{}

func (nop) Request(RequestEvent) {}
func (nop) Limits(LimitsEvent)   {}

// counting returns next with every request it is handed recorded in l.
func (l *breakerLog) counting(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.sends = append(l.sends, time.Now())
		l.mu.Unlock()
		return next.RoundTrip(req)
	})
}

// sendsIn returns how many requests were handed on at times in (from, to).
func (l *breakerLog) sendsIn(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.sends {
		if s.After(from) && s.Before(to) {
			n++
		}
	}
	return n
}

// storm runs 32 workers of one account against a fake gateway with a
// quota of 50/s and no rate-limit headers, through a Transport with cfg:
// healthy for 5 s, then failing as faults say (on top of the latency) for
// 5 s, then healthy again until 25 s.
func storm(t *testing.T, cfg Config, faults fakecloud.Faults) (*breakerLog, *fakecloud.Cloud, *load, *loadtest.Meter) {
	const limit = 50
	cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(limit), Faults: latency})
	var log breakerLog
	cfg.Observer = &log
	tr := New(log.counting(cloud.RoundTripper()), cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Second)
	defer cancel()
	var l load
	l.From.Store(math.MaxInt64)
	wg := l.Run(ctx, t, tr, "AK1", workers)
	time.Sleep(5 * time.Second)
	l.From.Store(time.Now().UnixNano())
	stormy := faults
	stormy.LatencyRate, stormy.Latency, stormy.LatencyJitter = latency.LatencyRate, latency.Latency, latency.LatencyJitter
	cloud.SetFaults(stormy)
	before := cloud.Stats().Total
	time.Sleep(5 * time.Second)
	cloud.SetFaults(latency)
	during := cloud.Stats().Total
	t.Logf("during the storm the server saw %d requests, %d answered 503, %d dropped",
		during.Requests-before.Requests, during.Unavailable-before.Unavailable, during.Dropped-before.Dropped)
	time.Sleep(10 * time.Second)
	m := newMeter(cloud, "AK1")
	time.Sleep(5*time.Second - time.Millisecond)
	wg.Wait()
	return &log, cloud, &l, m
}

// TestBreakerStorm is the storm: the breaker opens within its
// window, the server sees no request while it is open and one probe each
// time it half-opens, no caller waits long, and the quota is used in full
// again within two probe intervals of the storm's end.
func TestBreakerStorm(t *testing.T) {
	unavailable := fakecloud.Faults{UnavailableRate: 0.8}
	for _, tc := range []struct {
		name    string
		cfg     breaker.Config
		openFor time.Duration
		faults  fakecloud.Faults
	}{
		{"defaults", breaker.Config{}, breaker.DefaultOpenFor, unavailable},
		// Probes within the storm: most fail, and one in five closes the
		// breaker until the failures open it again.
		{"open for 1s", breaker.Config{OpenFor: time.Second}, time.Second, unavailable},
		// 200s whose connections drop mid-body: only the body shows it.
		{"dropped", breaker.Config{}, breaker.DefaultOpenFor, fakecloud.Faults{DropRate: 0.8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testStorm(t, tc.cfg, tc.openFor, tc.faults) })
		})
	}
}

func testStorm(t *testing.T, cfg breaker.Config, openFor time.Duration, faults fakecloud.Faults) {
	{
		start := time.Now()
		stormAt, stormEnd := start.Add(5*time.Second), start.Add(10*time.Second)
		log, cloud, l, m := storm(t, Config{Breaker: &cfg}, faults)
		after := m.Since()

		if len(log.changes) == 0 || log.changes[0].To != breaker.StateOpen {
			t.Fatalf("changes %v: the breaker never opened", log.changes)
		}
		var path string
		for _, c := range log.changes {
			path += fmt.Sprintf(" %v>%v@%v", c.From, c.To, c.At.Sub(start))
		}
		t.Logf("changes:%s", path)
		if at := log.changes[0].At; at.Before(stormAt) || at.After(stormAt.Add(breaker.DefaultWindow)) {
			t.Errorf("opened at %v, want within the window (%v) from the storm at 5s", at.Sub(start), breaker.DefaultWindow)
		}
		probes := 0
		for i, c := range log.changes {
			next := start.Add(time.Hour)
			if i+1 < len(log.changes) {
				next = log.changes[i+1].At
			}
			switch c.To {
			case breaker.StateOpen:
				if !c.Until.Equal(c.At.Add(openFor)) {
					t.Errorf("open at %v until %v, want for %v", c.At.Sub(start), c.Until.Sub(start), openFor)
				}
				if n := log.sendsIn(c.At, next); n != 0 {
					t.Errorf("open from %v to %v: the server saw %d requests", c.At.Sub(start), next.Sub(start), n)
				}
			case breaker.StateHalfOpen:
				probes++
				// The probe goes at once; nothing else until its answer.
				if n := log.sendsIn(c.At.Add(-1), next); n > 1 {
					t.Errorf("half-open from %v to %v: the server saw %d requests, want the one probe", c.At.Sub(start), next.Sub(start), n)
				}
			}
		}
		last := log.changes[len(log.changes)-1]
		if last.To != breaker.StateClosed {
			t.Errorf("the breaker ends %v, want closed", last.To)
		} else if back := stormEnd.Add(2 * openFor); last.At.After(back) {
			t.Errorf("closed at %v, want by %v (two probe intervals after the storm)", last.At.Sub(start), back.Sub(start))
		}
		// No caller is stuck: a refusal is at once, a wait for the probe's
		// answer a round trip, and a wait for quota its pace (32 callers
		// at 50/s wait 0.64 s each, more while the learner measures a
		// window). A regression floor, not a goal: 2.23 s is seen where
		// the storm finds the learner still measuring and the line waits
		// out its probes after it (1.25 s before the line kept its order
		// across pauses, issue 33, which settled that learner a window
		// earlier here).
		if d := time.Duration(l.Longest.Load()); d > 2500*time.Millisecond {
			t.Errorf("a RoundTrip from the storm on took %v", d)
		}
		t.Logf("%d probes; calls: %d ok, %d answered otherwise, %d refused by the breaker; longest RoundTrip from the storm on %v",
			probes, l.OK.Load(), l.Throttled.Load(), l.Open.Load(), time.Duration(l.Longest.Load()))
		// From 20 s, closed for good: the full quota, as without a storm.
		withoutHeaders.check(t, "from 20s to 25s", after, 50)
		if n := cloud.Stats().Total.Replays; n != 0 {
			t.Errorf("%d SignatureNonceUsed answers", n)
		}
	}
}

// TestBreakerOffStorm is the storm with no breaker, for comparison: every
// caller keeps sending at the tenant's pace, and none is refused.
func TestBreakerOffStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, _, l, _ := storm(t, Config{}, fakecloud.Faults{UnavailableRate: 0.8})
		if len(log.changes) != 0 || l.Open.Load() != 0 {
			t.Fatalf("no breaker, but %d changes and %d refusals", len(log.changes), l.Open.Load())
		}
		t.Logf("calls: %d ok, %d answered otherwise", l.OK.Load(), l.Throttled.Load())
	})
}

// TestThrottlesNeverOpen drives 32 workers for 10 s against a gateway that
// throttles 90% of what its quota admits (and its quota too), with each
// throttle status Alibaba uses: the breaker never opens.
func TestThrottlesNeverOpen(t *testing.T) {
	for _, status := range []int{400, 429, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A rule of 500/s against a quota of 50/s: the Transport
				// sends ten times what the server grants, all throttled
				// but the quota.
				cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(50), ThrottleStatus: status, Faults: latency})
				var rules quota.Rules
				rules.Set(quota.Key{Product: "ecs"}, quota.Rule{Rate: 500})
				var log breakerLog
				tr := New(cloud.RoundTripper(), Config{Rules: &rules, Observer: &log, Breaker: &breaker.Config{ConsecutiveFailures: 2}})
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				var l load
				l.Run(ctx, t, tr, "AK1", workers).Wait()
				st := cloud.Stats().Total
				if len(log.changes) != 0 || l.Open.Load() != 0 {
					t.Errorf("%d throttles opened the breaker: %d changes, %d refusals", st.Throttled, len(log.changes), l.Open.Load())
				}
				// Far more than the 2 failures in a row that would open it.
				if st.Throttled < 20 {
					t.Errorf("only %d throttles: no storm", st.Throttled)
				}
				t.Logf("%d throttles, %d admitted", st.Throttled, st.Admitted)
			})
		})
	}
}

// TestCancelledCallersNeverOpen cancels every request while the server is
// still working on it: the callers gave up, the service did not fail.
func TestCancelledCallersNeverOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Config{Faults: fakecloud.Faults{LatencyRate: 1, Latency: time.Second}})
		var log breakerLog
		tr := New(cloud.RoundTripper(), Config{Observer: &log, Breaker: &breaker.Config{ConsecutiveFailures: 2}})
		for range 30 {
			ctx, cancel := context.WithCancel(t.Context())
			req, err := fakecloud.NewRequest(ctx, endpoint, "AK1", "DescribeInstances")
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(100*time.Millisecond, cancel)
			if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
				t.Fatalf("RoundTrip = %v, want it cancelled", err)
			}
			cancel()
		}
		if len(log.changes) != 0 {
			t.Errorf("cancelled callers opened the breaker: %v", log.changes)
		}
		key, lim := tr.tenant(mustRequest(t, "AK1"))
		if s := lim.Snapshot(); s.Breaker != breaker.StateClosed {
			t.Errorf("%v: breaker %v", key, s.Breaker)
		}
	})
}

// TestDegradedStaysClosed runs 32 workers for 3 min against a service
// that fails one request in five, a degraded one whose failures retries
// absorb: with the defaults the breaker never opens. (TestBreakerTrips
// measures the settings around it.)
func TestDegradedStaysClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := latency
		f.UnavailableRate = 0.2
		cloud := fakecloud.New(fakecloud.Config{Quotas: quotaOf(50), Faults: f})
		var log breakerLog
		tr := New(cloud.RoundTripper(), Config{Observer: &log, Breaker: &breaker.Config{}})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		var l load
		l.Run(ctx, t, tr, "AK1", workers).Wait()
		st := cloud.Stats().Total
		if len(log.changes) != 0 {
			t.Errorf("one failure in five opened the breaker: %v", log.changes)
		}
		t.Logf("%d requests, %d failed, %d throttled", st.Requests, st.Unavailable, st.Throttled)
	})
}

// TestLogBreaker: one Warn record per change of a breaker, none for the
// requests it refuses; an Observer set beside the Logger hears of the same
// changes.
func TestLogBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		buf := new(bytes.Buffer)
		logs := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		cloud := fakecloud.New(fakecloud.Config{Faults: fakecloud.Faults{UnavailableRate: 1}})
		var log breakerLog
		tr := New(cloud.RoundTripper(), Config{Logger: logs, Observer: &log,
			Breaker: &breaker.Config{ConsecutiveFailures: 3, OpenFor: time.Second}})
		const akid = "AKIDlogbreaker"
		for range 10 {
			st, err := send(t, t.Context(), tr, akid)
			if st == 0 && !errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("RoundTrip = %v", err)
			}
		}
		time.Sleep(time.Second)
		cloud.SetFaults(fakecloud.Faults{})
		if st, err := send(t, t.Context(), tr, akid); st != http.StatusOK {
			t.Fatalf("the probe: %d, %v", st, err)
		}
		recs := logtest.Records(t, buf)
		got := find(recs, msgBreaker)
		if len(got) != 3 || len(recs) != 3 {
			t.Fatalf("%d records, %d of the breaker; want 3, all of it:\n%s", len(recs), len(got), buf)
		}
		for i, want := range []string{"open", "half-open", "closed"} {
			r := got[i]
			if r["level"] != "WARN" || r["state"] != want || !strings.Contains(fmt.Sprint(r["tenant"]), "ecs") {
				t.Errorf("record %d = %v, want state %s at WARN", i, r, want)
			}
		}
		if got[0]["failures"] != 3.0 || got[0]["answers"] != 3.0 || got[0]["probe_in"] != float64(time.Second) {
			t.Errorf("the open record = %v, want 3 failures of 3 answers, probe in 1s", got[0])
		}
		if len(log.changes) != 3 {
			t.Errorf("the Observer heard of %d changes, want 3", len(log.changes))
		}
		if strings.Contains(buf.String(), akid) {
			t.Errorf("the AccessKeyId was logged:\n%s", buf)
		}
	})
}
