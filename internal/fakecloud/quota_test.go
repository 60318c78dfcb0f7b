package fakecloud

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestFixedWindowExactUnderConcurrency: 64 clients hammering a fixed window
// of L get exactly L admissions in every window.
func TestFixedWindowExactUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, clients, windows = 7, 64, 3
		c := New(Config{Quotas: []Quota{{API: "DescribeInstances", Limit: limit, Window: time.Second}}})
		rt := c.RoundTripper()
		start := time.Now()
		var perWindow [windows]atomic.Int64
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				// Stagger the clients inside each window.
				time.Sleep(time.Duration(i) * time.Millisecond)
				for time.Since(start) < windows*time.Second {
					at := time.Since(start)
					a := call(t, rt, "AKIDconcurrent", "DescribeInstances")
					switch a.status {
					case http.StatusOK:
						perWindow[at/time.Second].Add(1)
					case http.StatusBadRequest:
						if a.code != CodeThrottlingUser {
							t.Errorf("code %q", a.code)
						}
					default:
						t.Errorf("status %d", a.status)
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		for w := range perWindow {
			if got := perWindow[w].Load(); got != limit {
				t.Errorf("window %d admitted %d, want exactly %d", w, got, limit)
			}
		}
		st := c.Stats()
		if st.Total.Admitted != windows*limit {
			t.Errorf("Stats admitted %d, want %d", st.Total.Admitted, windows*limit)
		}
		if st.Total.Admitted+st.Total.Throttled != st.Total.Requests {
			t.Errorf("Stats %+v don't add up", st.Total)
		}
		if got := st.Tenants["AKIDconcurrent"]["DescribeInstances"].Admitted; got != windows*limit {
			t.Errorf("tenant admitted %d", got)
		}
	})
}

// TestSimultaneousBurst: 64 requests at the same instant, every policy.
func TestSimultaneousBurst(t *testing.T) {
	for _, tc := range []struct {
		q    Quota
		want int64
	}{
		{Quota{Limit: 10, Window: time.Second}, 10},
		{Quota{Policy: SlidingWindow, Limit: 10, Window: time.Second}, 10},
		{Quota{Policy: TokenBucket, Limit: 10, Window: time.Second, Burst: 4}, 4},
		{Quota{Policy: TokenBucket, Limit: 10, Window: time.Second}, 10},
		{Quota{Limit: 0}, 0},
	} {
		t.Run(tc.q.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.q.API = "DescribeInstances"
				c := New(Config{Quotas: []Quota{tc.q}})
				rt := c.RoundTripper()
				var ok atomic.Int64
				var wg sync.WaitGroup
				for range 64 {
					wg.Go(func() {
						if call(t, rt, "AK", "DescribeInstances").status == http.StatusOK {
							ok.Add(1)
						}
					})
				}
				wg.Wait()
				if ok.Load() != tc.want {
					t.Errorf("admitted %d, want %d", ok.Load(), tc.want)
				}
			})
		})
	}
}

// TestPolicies steps each policy through time with one client.
func TestPolicies(t *testing.T) {
	type step struct {
		at   time.Duration // offset from an aligned start
		n    int           // requests sent
		want int           // admitted
	}
	for _, tc := range []struct {
		name  string
		q     Quota
		steps []step
	}{
		{"fixed aligned", Quota{Limit: 3, Window: time.Second}, []step{
			{700 * time.Millisecond, 5, 3}, {999 * time.Millisecond, 1, 0}, {time.Second, 5, 3}, {1900 * time.Millisecond, 1, 0}, {2 * time.Second, 1, 1},
		}},
		{"sliding", Quota{Policy: SlidingWindow, Limit: 3, Window: time.Second}, []step{
			{0, 2, 2}, {500 * time.Millisecond, 2, 1}, {999 * time.Millisecond, 1, 0}, {time.Second, 3, 2}, {1500 * time.Millisecond, 1, 1},
		}},
		{"bucket", Quota{Policy: TokenBucket, Limit: 4, Window: time.Second, Burst: 2}, []step{
			{0, 3, 2}, {200 * time.Millisecond, 1, 0}, {250 * time.Millisecond, 2, 1}, {2 * time.Second, 5, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tc.q.API = "DescribeInstances"
				c := New(Config{Quotas: []Quota{tc.q}})
				rt := c.RoundTripper()
				start := time.Now() // the bubble starts at an aligned instant
				if start.UnixNano()%int64(time.Second) != 0 {
					t.Fatalf("bubble start %v not aligned", start)
				}
				for _, s := range tc.steps {
					time.Sleep(s.at - time.Since(start))
					got := 0
					for range s.n {
						if call(t, rt, "AK", "DescribeInstances").status == http.StatusOK {
							got++
						}
					}
					if got != s.want {
						t.Errorf("at %v: admitted %d of %d, want %d", s.at, got, s.n, s.want)
					}
				}
			})
		})
	}
}

// TestFixedWindowAlignedToEpoch: a window starts at a multiple of W since
// the Unix epoch, not at the first request.
func TestFixedWindowAlignedToEpoch(t *testing.T) {
	var clk clock
	clk.Set(time.Unix(1_700_000_007, 900_000_000)) // 7.9 s into a 10 s window
	c := New(Config{Now: clk.Now, Quotas: []Quota{{API: "A", Limit: 1, Window: 10 * time.Second}}})
	rt := c.RoundTripper()
	req := func() int {
		r := rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK"})
		return send(t, rt, r).status
	}
	if s := req(); s != 200 {
		t.Fatalf("first: %d", s)
	}
	clk.Set(time.Unix(1_700_000_009, 999_999_999))
	if s := req(); s != 400 {
		t.Fatalf("same window: %d", s)
	}
	clk.Set(time.Unix(1_700_000_010, 0)) // 2.1 s after the first request: a new window
	if s := req(); s != 200 {
		t.Fatalf("next window: %d", s)
	}
}

// TestFixedWindowAlignment pins where windows start: at an offset from
// the epoch's grid, or at the first request after the last window ended;
// and that the headers' reset counts to that start.
func TestFixedWindowAlignment(t *testing.T) {
	base := time.Unix(1_700_000_000, 0) // a multiple of 10 s
	for _, tc := range []struct {
		name string
		q    Quota
		// at: offsets from base of requests, each with the status it
		// must get and the TimeLeft (ms) of the answer's window.
		at     []time.Duration
		status []int
		left   []int64
	}{{
		name: "offset 2.5s",
		q:    Quota{API: "A", Limit: 1, Window: 10 * time.Second, Offset: 2500 * time.Millisecond},
		// Windows [−7.5 s, 2.5 s), [2.5 s, 12.5 s), [12.5 s, 22.5 s).
		at:     []time.Duration{0, 2499 * time.Millisecond, 2500 * time.Millisecond, 12499 * time.Millisecond, 12500 * time.Millisecond},
		status: []int{200, 400, 200, 400, 200},
		left:   []int64{2500, 1, 10000, 1, 10000},
	}, {
		name:   "offset past the window",
		q:      Quota{API: "A", Limit: 1, Window: 10 * time.Second, Offset: 32500 * time.Millisecond}, // 2.5 s modulo 10 s
		at:     []time.Duration{0, 2500 * time.Millisecond},
		status: []int{200, 200},
		left:   []int64{2500, 10000},
	}, {
		name: "first request",
		q:    Quota{API: "A", Limit: 2, Window: 10 * time.Second, Align: AlignFirst},
		// The first request at 3 s opens [3 s, 13 s), the one at 13 s
		// opens [13 s, 23 s); none comes then until 30 s, which opens
		// [30 s, 40 s).
		at:     []time.Duration{3 * time.Second, 12 * time.Second, 12999 * time.Millisecond, 13 * time.Second, 20 * time.Second, 22999 * time.Millisecond, 30 * time.Second},
		status: []int{200, 200, 400, 200, 200, 400, 200},
		left:   []int64{10000, 1000, 1, 10000, 3000, 1, 10000},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var clk clock
			c := New(Config{Now: clk.Now, Quotas: []Quota{tc.q}, Headers: HeadersAlibaba, HeadersOnEveryAnswer: true})
			rt := c.RoundTripper()
			for i, at := range tc.at {
				clk.Set(base.Add(at))
				r := rpcRequest(t, map[string]string{"Action": "A", "AccessKeyId": "AK"})
				a := send(t, rt, r)
				want := fmt.Sprintf("TimeLeft:%d,", tc.left[i])
				if a.status != tc.status[i] || !strings.Contains(a.header.Get("x-ratelimit-user-api"), want) {
					t.Errorf("request at %v: status %d, %q; want %d, %s", at, a.status, a.header.Get("x-ratelimit-user-api"), tc.status[i], want)
				}
			}
		})
	}
}

// TestAccountsAndTotals: keys of one account share its quotas; the account
// total spans actions; a specific account's quota overrides the default.
func TestAccountsAndTotals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{
			Accounts: map[string]string{"AK1": "acme", "AK2": "acme"},
			Quotas: []Quota{
				{API: "DescribeInstances", Limit: 2, Window: time.Minute},
				{API: "DescribeInstances", Account: "vip", Limit: 5, Window: time.Minute},
				{Limit: 3, Window: time.Minute}, // every account's total
			},
		})
		rt := c.RoundTripper()
		status := func(ak, action string) int { return call(t, rt, ak, action).status }
		// acme: the API quota (2) binds first, across both keys.
		if s := [3]int{status("AK1", "DescribeInstances"), status("AK2", "DescribeInstances"), status("AK1", "DescribeInstances")}; s != [3]int{200, 200, 400} {
			t.Errorf("acme DescribeInstances: %v", s)
		}
		// acme's total is 3: one more call of another action, then nothing.
		if s := [2]int{status("AK2", "DescribeRegions"), status("AK1", "DescribeZones")}; s != [2]int{200, 400} {
			t.Errorf("acme total: %v", s)
		}
		// Another account has its own counters.
		if s := status("AK3", "DescribeInstances"); s != 200 {
			t.Errorf("AK3: %d", s)
		}
		// vip: its own API quota (5), but still the total of 3.
		got := 0
		for range 5 {
			if status("vip", "DescribeInstances") == 200 {
				got++
			}
		}
		if got != 3 {
			t.Errorf("vip admitted %d, want 3 (total)", got)
		}
		st := c.Stats()
		if a := st.Accounts["acme"]; a.Admitted != 3 || a.Throttled != 2 {
			t.Errorf("acme stats %+v", a)
		}
		if a := st.Actions["DescribeInstances"]; a.Admitted != 6 {
			t.Errorf("DescribeInstances stats %+v", a)
		}
		// A throttle by the total does not spend the API quota.
		c.SetQuota(Quota{Limit: Unlimited})
		if s := status("AK3", "DescribeInstances"); s != 200 {
			t.Errorf("AK3 second call after total removed: %d", s)
		}
	})
}

// TestSetQuota changes a quota at run time, keeping the window's count.
func TestSetQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{})
		rt := c.RoundTripper()
		for range 20 {
			if s := call(t, rt, "AK", "A").status; s != 200 {
				t.Fatalf("unlimited by default: %d", s)
			}
		}
		c.SetQuota(Quota{API: "A", Limit: 5, Window: time.Minute})
		if got := admitted(t, rt, 10); got != 5 {
			t.Errorf("after SetQuota 5: %d", got)
		}
		c.SetQuota(Quota{API: "A", Limit: 8, Window: time.Minute}) // same window: 3 more
		if got := admitted(t, rt, 10); got != 3 {
			t.Errorf("after raising to 8: %d", got)
		}
		c.SetQuota(Quota{API: "A", Limit: Unlimited})
		if got := admitted(t, rt, 10); got != 10 {
			t.Errorf("after removal: %d", got)
		}
		if len(c.Quotas()) != 0 {
			t.Errorf("Quotas() = %v", c.Quotas())
		}
	})
}

func admitted(t *testing.T, rt http.RoundTripper, n int) int {
	t.Helper()
	got := 0
	for range n {
		if call(t, rt, "AK", "A").status == 200 {
			got++
		}
	}
	return got
}

// TestPhases: quotas step down and up at the scheduled offsets.
func TestPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{
			Quotas: []Quota{{API: "A", Limit: 10, Window: time.Second}},
			Phases: []Phase{
				{At: 4 * time.Second, Quotas: []Quota{{API: "A", Limit: 8, Window: time.Second}}},
				{At: 2 * time.Second, Quotas: []Quota{{API: "A", Limit: 3, Window: time.Second}}},
				{At: 6 * time.Second, Quotas: []Quota{{API: "A", Limit: Unlimited}}},
			},
		})
		rt := c.RoundTripper()
		start := time.Now()
		for _, s := range []struct {
			at   time.Duration
			want int
		}{
			{0, 10},
			{time.Second, 10},
			{1999 * time.Millisecond, 0},
			{2 * time.Second, 3},
			{3 * time.Second, 3},
			{3999 * time.Millisecond, 0},
			{4 * time.Second, 8},
			{5 * time.Second, 8},
			{6 * time.Second, 20},
		} {
			time.Sleep(s.at - time.Since(start))
			if got := admitted(t, rt, 20); got != s.want {
				t.Errorf("at %v: admitted %d, want %d", s.at, got, s.want)
			}
		}
	})
}

func TestParseQuota(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Quota
		err  bool
	}{
		{in: "DescribeInstances=20/1s", want: Quota{API: "DescribeInstances", Limit: 20, Window: time.Second}},
		{in: "acme/*=100/1m:sliding", want: Quota{Account: "acme", Policy: SlidingWindow, Limit: 100, Window: time.Minute}},
		{in: "Run=5/1s:bucket,burst=10", want: Quota{API: "Run", Policy: TokenBucket, Limit: 5, Window: time.Second, Burst: 10}},
		{in: "A=unlimited/1s", want: Quota{API: "A", Limit: Unlimited, Window: time.Second}},
		{in: "A=50/1s,unseen=20", want: Quota{API: "A", Limit: 50, Window: time.Second, Unseen: 20}},
		{in: "A=5/1s:bucket,burst=10,unseen=2", want: Quota{API: "A", Policy: TokenBucket, Limit: 5, Window: time.Second, Burst: 10, Unseen: 2}},
		{in: "A=8/1s:concurrency", want: Quota{API: "A", Policy: Concurrency, Limit: 8, Window: time.Second}},
		{in: "A=8/1s:inflight,unseen=3", want: Quota{API: "A", Policy: Concurrency, Limit: 8, Window: time.Second}},
		{in: "A=5/1s,unseen=x", err: true},
		{in: "A=5/100h", want: Quota{API: "A", Limit: 5, Window: 24 * time.Hour}},
		{in: "A", err: true},
		{in: "A=5", err: true},
		{in: "A=x/1s", err: true},
		{in: "A=5/1q", err: true},
		{in: "A=5/1s:leaky", err: true},
		{in: "A=5/1s:bucket,burst=-1", err: true},
		{in: "A=100/1m,align=first", want: Quota{API: "A", Limit: 100, Window: time.Minute, Align: AlignFirst}},
		{in: "A=7/7s,offset=9.5s", want: Quota{API: "A", Limit: 7, Window: 7 * time.Second, Offset: 2500 * time.Millisecond}},
		{in: "A=7/7s:sliding,offset=2s", want: Quota{API: "A", Policy: SlidingWindow, Limit: 7, Window: 7 * time.Second}},
		{in: "A=7/7s,align=first,offset=2s", want: Quota{API: "A", Limit: 7, Window: 7 * time.Second, Align: AlignFirst}},
		{in: "A=7/7s,align=last", err: true},
		{in: "A=7/7s,offset=-1s", err: true},
	} {
		got, err := ParseQuota(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseQuota(%q) = %+v, %v; want %+v, err %v", tc.in, got, err, tc.want, tc.err)
		}
		if !tc.err {
			if again, err := ParseQuota(got.String()); err != nil || again != got {
				t.Errorf("round trip %q: %+v, %v", got.String(), again, err)
			}
		}
	}
}

// TestLimiterTableBounded: past MaxTenants, idle limiters are forgotten.
func TestLimiterTableBounded(t *testing.T) {
	var clk clock
	clk.Set(time.Unix(1_700_000_000, 0))
	c := New(Config{Now: clk.Now, MaxTenants: 8, Quotas: []Quota{{Limit: 1, Window: time.Second}}})
	rt := c.RoundTripper()
	for i := range 100 {
		clk.Set(time.Unix(1_700_000_000+int64(i), 0))
		call(t, rt, "AK"+hexUint(uint64(i)), "A")
	}
	c.lims.mu.Lock()
	n := len(c.lims.m)
	c.lims.mu.Unlock()
	if n > 8 {
		t.Errorf("%d limiters, want ≤ 8", n)
	}
	if st := c.Stats(); len(st.Accounts) > 9 || st.Accounts[otherName].Requests == 0 {
		t.Errorf("accounts not bounded: %d", len(st.Accounts))
	}
}
