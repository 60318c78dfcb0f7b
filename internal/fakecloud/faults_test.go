package fakecloud

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestFaultLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Seed: 7, Faults: Faults{LatencyRate: 1, Latency: 200 * time.Millisecond, LatencyJitter: 100 * time.Millisecond}})
		rt := c.RoundTripper()
		var seen []time.Duration
		for range 20 {
			start := time.Now()
			if a := call(t, rt, "AK", "A"); a.status != 200 {
				t.Fatalf("status %d", a.status)
			}
			d := time.Since(start)
			if d < 200*time.Millisecond || d >= 300*time.Millisecond {
				t.Errorf("latency %v outside [200ms, 300ms)", d)
			}
			seen = append(seen, d)
		}
		slices.Sort(seen)
		if seen[0] == seen[len(seen)-1] {
			t.Errorf("no jitter: %v", seen)
		}
		if st := c.Stats().Total; st.Faults != 20 || st.Admitted != 20 {
			t.Errorf("stats %+v", st)
		}

		// The request context ends the wait.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := NewRequest(ctx, "http://x", "AK", "A")
		start := time.Now()
		if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RoundTrip err %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("cancelled after %v", d)
		}
	})
}

// TestFaultArrival: a request sent 50 ms before a fixed window's end,
// 100 ms on its way, is counted in the next window, which then holds no
// more; without the delay it is counted in the window it was sent in.
// One whose context ends on its way is never counted.
func TestFaultArrival(t *testing.T) {
	for _, arrival := range []time.Duration{0, 100 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			c := New(Config{
				Quotas: []Quota{{Limit: 1, Window: time.Second}},
				Faults: Faults{Arrival: arrival, ArrivalJitter: arrival / 10},
			})
			rt := c.RoundTripper()
			t0 := time.Now() // the bubble starts on a window's edge
			time.Sleep(950 * time.Millisecond)
			start := time.Now()
			if a := call(t, rt, "AK", "A"); a.status != 200 {
				t.Fatalf("arrival %v: the first request: status %d", arrival, a.status)
			}
			if d := time.Since(start); d < arrival || d >= arrival+arrival/10+time.Millisecond {
				t.Errorf("arrival %v: answered after %v", arrival, d)
			}
			time.Sleep(time.Until(t0.Add(1500 * time.Millisecond)))
			second := call(t, rt, "AK", "A").status
			want := 200
			if arrival > 0 {
				want = 400 // the window 1–2 s holds the first already
			}
			if second != want {
				t.Errorf("arrival %v: the second request, sent in the next window: status %d, want %d", arrival, second, want)
			}
			if arrival == 0 {
				return
			}
			before := c.Stats().Total
			ctx, cancel := context.WithTimeout(t.Context(), arrival/2)
			defer cancel()
			req, _ := NewRequest(ctx, "http://x", "AK", "A")
			if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("RoundTrip err %v, want deadline exceeded", err)
			}
			if after := c.Stats().Total; after != before {
				t.Errorf("a request given up on its way was counted: %+v, then %+v", before, after)
			}
		})
	}
}

func TestFaultUnavailable(t *testing.T) {
	c := New(Config{Quotas: []Quota{{Limit: 1, Window: time.Hour, Policy: SlidingWindow}}, Faults: Faults{UnavailableRate: 1}})
	rt := c.RoundTripper()
	a := call(t, rt, "AK", "A")
	if a.status != 503 || a.code != CodeServiceUnavailable {
		t.Fatalf("got %d %s", a.status, a.code)
	}
	c.SetFaults(Faults{})
	if a := call(t, rt, "AK", "A"); a.status != 200 {
		t.Errorf("quota spent by a 503: %d %s", a.status, a.code)
	}
	if st := c.Stats().Total; st.Unavailable != 1 || st.Faults != 1 || st.Admitted != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestFaultDropInMemory(t *testing.T) {
	c := New(Config{Faults: Faults{DropRate: 1}})
	req, _ := NewRequest(context.Background(), "http://x", "AK", "DescribeInstances")
	resp, err := c.RoundTripper().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read err %v, want io.ErrUnexpectedEOF", err)
	}
	if len(b) == 0 || int64(len(b)) != resp.ContentLength/2 {
		t.Errorf("read %d bytes of %d", len(b), resp.ContentLength)
	}
	if st := c.Stats().Total; st.Dropped != 1 || st.Admitted != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestFaultDropRecorder: a ResponseRecorder has no Hijacker, so the
// handler aborts with http.ErrAbortHandler.
func TestFaultDropRecorder(t *testing.T) {
	c := New(Config{Faults: Faults{DropRate: 1}})
	req, _ := NewRequest(context.Background(), "http://x", "AK", "A")
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", p)
		}
		if rec.Body.Len() == 0 || rec.Body.Len() >= len(`{"RequestId":"FA4EC10D-0000-0000-0000-000000000001"}`) {
			t.Errorf("partial body %q", rec.Body)
		}
	}()
	c.ServeHTTP(rec, req)
}

func TestFaultDropLoopback(t *testing.T) {
	srv := NewServer(t, Config{Faults: Faults{DropRate: 1}})
	req, _ := NewRequest(context.Background(), srv.URL, "AK", "DescribeInstances")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("the status and headers should arrive: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read err %v, want unexpected EOF", err)
	}
}

func TestFaultMalformedHeaders(t *testing.T) {
	c := New(Config{Seed: 3, Faults: Faults{MalformedHeadersRate: 1}})
	rt := c.RoundTripper()
	seen := map[string]bool{}
	for range 30 {
		a := call(t, rt, "AK", "A")
		if a.status != 200 {
			t.Fatalf("status %d", a.status)
		}
		for _, k := range malformedHeaders {
			vs, ok := a.header[http.CanonicalHeaderKey(k)]
			if !ok {
				t.Fatalf("header %s missing", k)
			}
			if !slices.Contains(garbage, vs[0]) {
				t.Errorf("%s = %q, not garbage", k, vs[0])
			}
			seen[vs[0]] = true
		}
	}
	for _, g := range []string{"-5", "99999999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "garbage"} {
		if !seen[g] {
			t.Errorf("never sent %q", g)
		}
	}
}

func TestFaultSlowBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Faults: Faults{SlowBodyRate: 1, SlowBodyChunk: 10, SlowBodyDelay: 100 * time.Millisecond}})
		req, _ := NewRequest(context.Background(), "http://x", "AK", "DescribeInstances")
		start := time.Now()
		resp, err := c.RoundTripper().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if d := time.Since(start); d != 0 {
			t.Errorf("headers after %v", d)
		}
		var reads int
		buf := make([]byte, 1000)
		var got []byte
		for {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if n > 0 {
				reads++
				if n > 10 {
					t.Errorf("chunk of %d bytes", n)
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		chunks := (len(got) + 9) / 10
		if reads != chunks || int64(len(got)) != resp.ContentLength {
			t.Errorf("%d reads for %d bytes (Content-Length %d)", reads, len(got), resp.ContentLength)
		}
		if d, want := time.Since(start), time.Duration(chunks-1)*100*time.Millisecond; d != want {
			t.Errorf("body took %v, want %v", d, want)
		}
		mustContain(t, string(got), `"Status":"Running"`)
	})
}

// TestFaultRatesSeeded: a rate injects about that share, reproducibly.
func TestFaultRatesSeeded(t *testing.T) {
	run := func(seed uint64) []int {
		c := New(Config{Seed: seed, Faults: Faults{UnavailableRate: 0.3}})
		rt := c.RoundTripper()
		var statuses []int
		for range 200 {
			statuses = append(statuses, call(t, rt, "AK", "A").status)
		}
		return statuses
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Error("same seed, different faults")
	}
	n := 0
	for _, s := range a {
		if s == 503 {
			n++
		}
	}
	if n < 40 || n > 80 {
		t.Errorf("%d of 200 unavailable at rate 0.3", n)
	}
	if slices.Equal(a, run(43)) {
		t.Error("different seeds, same faults")
	}
}
