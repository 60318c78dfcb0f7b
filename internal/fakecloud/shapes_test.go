package fakecloud

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestLongFixedWindows: fixed windows of 10 s, a minute and an hour admit
// exactly their limit in each window, windows start at multiples of their
// length from the epoch, and a client that starts mid-window gets what is
// left of that window.
func TestLongFixedWindows(t *testing.T) {
	for _, w := range []time.Duration{10 * time.Second, time.Minute, time.Hour} {
		t.Run(w.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit, windows, perWindow = 5, 4, 20
				c := New(Config{Quotas: []Quota{{API: "A", Limit: limit, Window: w}}})
				rt := c.RoundTripper()
				if windowStart(time.Now().UnixNano(), w, 0) != time.Now().UnixNano() {
					t.Fatalf("the bubble starts mid-window of %v", w)
				}
				// Start 37% into the first window; it is counted from its start.
				time.Sleep(w * 37 / 100)
				admitted := map[int64]int{}
				for range windows * perWindow {
					ws := windowStart(time.Now().UnixNano(), w, 0)
					if call(t, rt, "AK", "A").status == http.StatusOK {
						admitted[ws]++
					}
					time.Sleep(w / perWindow)
				}
				if len(admitted) != windows+1 {
					t.Errorf("admissions fell in %d windows, want %d: %v", len(admitted), windows+1, admitted)
				}
				for ws, n := range admitted {
					if n != limit {
						t.Errorf("window at %v admitted %d, want %d", time.Unix(0, ws).UTC(), n, limit)
					}
				}
			})
		})
	}
}

// TestShedding: a shed rate of 20% throttles 20% of admitted requests,
// within noise, deterministically under a seed; shed answers are throttles
// as configured, carry Retry-After only when asked, and spend the quota.
func TestShedding(t *testing.T) {
	const draws = 10_000
	run := func(seed uint64, retryAfter time.Duration) (shed int, header map[string]bool) {
		c := New(Config{Seed: seed, ThrottleStatus: http.StatusTooManyRequests, Faults: Faults{ShedRate: 0.2, ShedRetryAfter: retryAfter}})
		rt := c.RoundTripper()
		header = map[string]bool{}
		for range draws {
			a := call(t, rt, "AK", "A")
			switch {
			case a.status == http.StatusOK:
				header["ok:"+a.header.Get("Retry-After")] = true
			case a.status == http.StatusTooManyRequests && a.code == CodeThrottlingUser:
				shed++
				header["shed:"+a.header.Get("Retry-After")] = true
			default:
				t.Fatalf("answer %d %q", a.status, a.code)
			}
		}
		st := c.Stats().Total
		if st.Shed != int64(shed) || st.Throttled != int64(shed) || st.Admitted != int64(draws-shed) {
			t.Errorf("Stats %+v, counted %d shed", st, shed)
		}
		return shed, header
	}
	// 3σ of a binomial(10 000, 0.2) is 120.
	shed, h := run(7, 0)
	if shed < 1880 || shed > 2120 {
		t.Errorf("shed %d of %d, want 2000 ± 120", shed, draws)
	}
	if again, _ := run(7, 0); again != shed {
		t.Errorf("seed 7 shed %d, then %d: not deterministic", shed, again)
	}
	if !h["ok:"] || !h["shed:"] || len(h) != 2 {
		t.Errorf("Retry-After seen without ShedRetryAfter: %v", h)
	}
	if _, h := run(8, 1500*time.Millisecond); !h["ok:"] || !h["shed:2"] || len(h) != 2 {
		t.Errorf("Retry-After with ShedRetryAfter 1.5s: %v, want 2 on shed answers only", h)
	}

	// Shed requests were admitted first: they spend the quota.
	c := New(Config{Quotas: []Quota{{API: "A", Limit: 3, Window: time.Hour}}, Faults: Faults{ShedRate: 1}})
	for range 5 {
		call(t, c.RoundTripper(), "AK", "A")
	}
	if st := c.Stats().Total; st.Shed != 3 || st.Throttled != 5 {
		t.Errorf("quota 3, all shed: %+v, want 3 shed of 5 throttled", st)
	}
}

// TestShedEvery: ShedEvery sheds exactly every N-th admitted request, with
// the Retry-After asked for, and never one the quotas refused.
func TestShedEvery(t *testing.T) {
	c := New(Config{ThrottleStatus: http.StatusTooManyRequests,
		Quotas: []Quota{{API: "A", Limit: 12, Window: time.Hour}},
		Faults: Faults{ShedEvery: 5, ShedRetryAfter: time.Second}})
	var got []int
	for range 15 {
		a := call(t, c.RoundTripper(), "AK", "A")
		got = append(got, a.status)
		if a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") != "1" && len(got) <= 12 {
			t.Errorf("request %d shed with Retry-After %q, want 1", len(got), a.header.Get("Retry-After"))
		}
	}
	for i, st := range got {
		want := http.StatusOK
		if (i+1)%5 == 0 || i >= 12 {
			want = http.StatusTooManyRequests
		}
		if st != want {
			t.Errorf("request %d answered %d, want %d (all: %v)", i+1, st, want, got)
		}
	}
	if st := c.Stats().Total; st.Shed != 2 || st.Throttled != 5 {
		t.Errorf("Stats %+v, want 2 shed of 5 throttled", st)
	}
}

// TestConcurrencyLimit: a limit of 8 in flight never has 9 of the
// account's requests in flight at the server, reaches 8 under load, and
// admits exactly 8 of 32 that arrive together.
func TestConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 8
		c := New(Config{
			Seed:   3,
			Quotas: []Quota{{API: "A", Policy: Concurrency, Limit: limit}},
			Faults: Faults{LatencyRate: 1, Latency: 5 * time.Millisecond, LatencyJitter: 40 * time.Millisecond},
		})
		rt := c.RoundTripper()

		// 32 at once: 8 admitted.
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				a := call(t, rt, "AK", "A")
				mu.Lock()
				statuses[a.status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if statuses[http.StatusOK] != limit || statuses[http.StatusBadRequest] != 32-limit {
			t.Errorf("32 at once: %v, want %d admitted", statuses, limit)
		}

		// 32 callers for 5 s: an admitted request is in flight from its
		// send to the end of its body, which holds its time at the server.
		type span struct{ from, to time.Time }
		var spans []span
		for range 32 {
			wg.Go(func() {
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
					req, err := NewRequest(t.Context(), "http://ecs.aliyuncs.com", "AK", "A")
					if err != nil {
						t.Error(err)
						return
					}
					from := time.Now()
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						mu.Lock()
						spans = append(spans, span{from, time.Now()})
						mu.Unlock()
					} else {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		// The most spans [from, to) holding one instant.
		most := 0
		for _, s := range spans {
			n := 0
			for _, o := range spans {
				if !o.from.After(s.from) && o.to.After(s.from) {
					n++
				}
			}
			most = max(most, n)
		}
		if most != limit {
			t.Errorf("at most %d admitted requests in flight at once, want %d", most, limit)
		}
		if len(spans) < 500 {
			t.Errorf("only %d admitted in 5 s", len(spans))
		}
	})
}

// TestUnseenConsumer: an unseen consumer spends its share of a fixed window
// at evenly spread instants; a client that sends the rest evenly gets all
// of it and leaves the consumer all of its own; a greedy client takes what
// the consumer has not yet spent, and the window never admits more than
// its limit between the two.
func TestUnseenConsumer(t *testing.T) {
	const limit, unseen, windows = 50, 20, 5
	for _, tc := range []struct {
		name      string
		perWindow int // the client's requests, evenly spread over each window
		wantOK    int // the client's admissions per window
	}{
		{"leaves the share", limit - unseen, limit - unseen},
		// At 100/s the window is full at 410 ms: the client has 42 (at 0,
		// 10, …, 410 ms), the consumer 8 (at 25, 75, …, 375 ms).
		{"greedy", 100, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := New(Config{Quotas: []Quota{{API: "A", Limit: limit, Window: time.Second, Unseen: unseen}}})
				rt := c.RoundTripper()
				start := time.Now()
				for w := range windows {
					ok := 0
					for i := range tc.perWindow {
						at := time.Duration(w)*time.Second + time.Duration(i)*time.Second/time.Duration(tc.perWindow)
						time.Sleep(time.Until(start.Add(at)))
						if call(t, rt, "AK", "A").status == http.StatusOK {
							ok++
						}
					}
					if ok != tc.wantOK {
						t.Errorf("window %d: client admitted %d, want %d", w, ok, tc.wantOK)
					}
				}
				st := c.Stats()
				if got := st.Total.Admitted + st.Unseen.Admitted; got > windows*limit {
					t.Errorf("%d admitted in %d windows of %d", got, windows, limit)
				}
				wantUnseen := int64(unseen * windows)
				if tc.perWindow > limit-unseen {
					wantUnseen = int64((limit - tc.wantOK) * windows)
				}
				if st.Unseen.Admitted < wantUnseen-1 || st.Unseen.Admitted > wantUnseen {
					t.Errorf("unseen consumer admitted %d, want %d (the last window's last may be undecided)", st.Unseen.Admitted, wantUnseen)
				}
			})
		})
	}
}

// TestOnRequest: the hook hears every API request once, with the outcome
// Stats counts.
func TestOnRequest(t *testing.T) {
	var mu sync.Mutex
	seen := map[Outcome]int64{}
	c := New(Config{
		Seed:      1,
		Quotas:    []Quota{{API: "A", Limit: 10, Window: time.Hour}},
		Faults:    Faults{ShedRate: 0.2, UnavailableRate: 0.1},
		OnRequest: func(ev Event) { mu.Lock(); seen[ev.Outcome]++; mu.Unlock() },
	})
	for range 40 {
		call(t, c.RoundTripper(), "AK", "A")
	}
	st := c.Stats().Total
	if seen[Admitted] != st.Admitted || seen[Throttled]+seen[Shed] != st.Throttled || seen[Shed] != st.Shed ||
		seen[Unavailable] != st.Unavailable || seen[Shed] == 0 || seen[Unavailable] == 0 {
		t.Errorf("hook heard %v, Stats say %+v", seen, st)
	}
	if Shed.String() != "shed" || !Shed.Throttle() || Admitted.Throttle() {
		t.Errorf("Outcome names: %v %v", Shed, Admitted)
	}
}
