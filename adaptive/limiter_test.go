package adaptive

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func ok(at time.Time) quota.Observation { return quota.Observation{At: at, Status: 200} }

func throttled(at time.Time) quota.Observation {
	return quota.Observation{At: at, Status: 429, Throttled: true}
}

func TestZeroLimiterUnlimited(t *testing.T) {
	var l Limiter
	for i := range 1000 {
		if !l.AllowAt(ms(0)) {
			t.Fatalf("zero Limiter refused request %d", i)
		}
	}
	var tk Ticket // zero Ticket: no-ops
	tk.Done(ok(ms(0)))
	tk.Cancel()
	if s := l.Snapshot(); s.Rate != 0 || s.Source != SourceNone {
		t.Fatalf("zero Limiter snapshot %+v", s)
	}
}

func TestBucketPacing(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 3}})
	steps := []struct {
		at   int
		want bool
	}{
		{0, true}, {0, true}, {0, true}, {0, false}, // burst of 3
		{99, false}, {100, true}, {100, false},
		{150, false}, {200, true},
		{1000, true}, {1000, true}, {1000, true}, {1000, false}, // refilled to 3
	}
	for i, s := range steps {
		if got := l.AllowAt(ms(s.at)); got != s.want {
			t.Fatalf("step %d at %d ms: got %v, want %v", i, s.at, got, s.want)
		}
	}
	if s := l.Snapshot(); s.Rate != 10 || s.Burst != 3 || s.Source != SourceRule {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestRuleWindow(t *testing.T) {
	// Rate 100/s with a burst of 10 would allow 110 in the first second;
	// the window holds it to 20 per second.
	l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 10, Limit: 20, Window: time.Second}})
	n := 0
	for i := 0; i < 1000; i++ {
		if l.AllowAt(ms(i)) {
			n++
		}
	}
	if n != 20 {
		t.Fatalf("admitted %d in the first second, want 20", n)
	}
}

func TestHeadersPacingAndRemaining(t *testing.T) {
	l := New(Config{})
	h := ok(ms(0))
	h.Known = quota.FieldLimit | quota.FieldWindow | quota.FieldRemaining | quota.FieldReset
	h.Limit, h.Window, h.Remaining, h.ResetAt = 10, time.Second, 5, ms(1000)
	l.Observe(h)
	s := l.Snapshot()
	// 5 left for 1 s: spend them evenly, slower than 10/s.
	if s.Source != SourceHeaders || s.Rate < 4.9 || s.Rate > 5.1 || s.Limit != 10 || s.Remaining != 5 {
		t.Fatalf("after headers: %+v", s)
	}
	// Remaining 0: pause until the reset, no probe.
	h.Remaining, h.At = 0, ms(500)
	l.Observe(h)
	if l.AllowAt(ms(600)) || l.AllowAt(ms(999)) {
		t.Fatal("admitted while Remaining was 0")
	}
	if !l.AllowAt(ms(1000)) {
		t.Fatal("refused after the reset")
	}
	if s := l.Snapshot(); s.Probing || s.Rate != 10 {
		t.Fatalf("after the reset: %+v", s)
	}
}

// TestHeadersWindowFromReset: a limit said without its window (Alibaba's
// headers, the X-RateLimit and RateLimit-* trios) is taken to be per the
// longest time to the reset said with it: 12 per 15 s here, where the
// window used to be taken as 1 s, a pace of 12/s that Remaining alone
// held back (in the family draws with headers, 2.7% throttled at the
// median and 14,947 calls failed, against 2.1% and 5,321 now). A shorter
// reset later (the window's end nearing) does not shorten it, nor does a
// new limit (a quota that steps keeps its window), and a window said
// outright stands. A first reset said late in a window, shorter than the
// shortest round window, says little of its length: the window is taken
// to be at least that (1 s), as it was before any reset was read.
func TestHeadersWindowFromReset(t *testing.T) {
	l := New(Config{HeaderTTL: time.Millisecond}) // Remaining goes stale at once: the limit alone paces
	say := func(at int, limit int64, reset, window time.Duration) Snapshot {
		h := ok(ms(at))
		h.Known = quota.FieldLimit | quota.FieldRemaining | quota.FieldReset
		h.Limit, h.Remaining, h.ResetAt = limit, 1, ms(at).Add(reset)
		if window > 0 {
			h.Known |= quota.FieldWindow
			h.Window = window
		}
		l.Observe(h)
		l.AllowAt(ms(at + 1)) // past HeaderTTL: Remaining is stale
		return l.Snapshot()
	}
	if sn := say(0, 12, 300*time.Millisecond, 0); sn.Window != time.Second {
		t.Errorf("a first reset in 300 ms: window %v, want 1s", sn.Window)
	}
	for _, c := range []struct {
		at     int
		limit  int64
		reset  time.Duration
		window time.Duration // said; 0 for none
		want   time.Duration
	}{
		{50, 12, 15 * time.Second, 0, 15 * time.Second},
		{100, 12, 3 * time.Second, 0, 15 * time.Second},       // the longest so far
		{200, 30, 2 * time.Second, 0, 15 * time.Second},       // a new limit, the same window
		{300, 30, 60 * time.Second, time.Second, time.Second}, // said
	} {
		sn := say(c.at, c.limit, c.reset, c.window)
		want := float64(c.limit) / c.want.Seconds()
		if sn.Source != SourceHeaders || sn.Window != c.want || math.Abs(sn.Rate-want) > 1e-6*want {
			t.Errorf("limit %d, reset in %v, window said %v: paced at %.4g/s, window %v, source %v; want %.4g/s per %v",
				c.limit, c.reset, c.window, sn.Rate, sn.Window, sn.Source, want, c.want)
		}
	}
}

// TestHeadersWindowBeyondMaxHint: a reset further off than the parser's
// MaxHint (1 min) tells the window as the server said it, not as capped:
// X-RateLimit's trio says 39 per 5 minutes here, and what is left lasts
// until that reset. Read from the capped reset, the window was a minute,
// the pace five times the quota; in the family, the draws of windows from
// 3 to 10 minutes with headers threw up to 26% of their requests at
// throttles and failed hundreds of calls (draw 120, fixed 39 per 5 min,
// three clients: 26.4% throttled, 109 failed, against 3.2% and none now;
// the closing note of #35 has the rest). A pause stays capped by MaxPause.
func TestHeadersWindowBeyondMaxHint(t *testing.T) {
	l := New(Config{HeaderTTL: time.Second}) // then Remaining goes stale: the limit alone paces
	h := http.Header{"X-Ratelimit-Limit": {"39"}, "X-Ratelimit-Remaining": {"38"}, "X-Ratelimit-Reset": {"300"}}
	o := new(quota.Parser).ParseParts(http.StatusOK, h, nil, ms(0))
	if !o.ResetAt.Equal(ms(0).Add(quota.DefaultMaxHint)) {
		t.Fatalf("ResetAt %v from now, want capped at %v", o.ResetAt.Sub(ms(0)), quota.DefaultMaxHint)
	}
	l.Observe(o)
	sn := l.Snapshot()
	if !sn.ResetAt.Equal(ms(300_000)) || sn.Rate > 38.0/298 || sn.Rate < 38.0/300 {
		t.Errorf("38 left until the reset in %v: paced at %.4g/s; want until 5m0s, about 38 per 299 s", sn.ResetAt.Sub(ms(0)), sn.Rate)
	}
	l.AllowAt(ms(2000)) // Remaining is stale
	if sn := l.Snapshot(); sn.Source != SourceHeaders || math.Abs(sn.Rate-39.0/300) > 1e-9 {
		t.Errorf("the limit alone: paced at %.4g/s from %v, want 39 per 5 min, %.4g/s", sn.Rate, sn.Source, 39.0/300)
	}
	// Spent: the pause lasts MaxPause at most, whatever the reset.
	h = http.Header{"X-Ratelimit-Limit": {"39"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"290"}}
	l.Observe(new(quota.Parser).ParseParts(http.StatusTooManyRequests, h, nil, ms(10_000)))
	if u := l.Snapshot().PauseUntil; u.After(ms(10_000).Add(time.Minute)) {
		t.Errorf("paused for %v, past MaxPause", u.Sub(ms(10_000)))
	}
}

func TestStaleHeadersKeepLimit(t *testing.T) {
	l := New(Config{HeaderTTL: 10 * time.Second})
	h := ok(ms(0))
	h.Known = quota.FieldLimit | quota.FieldWindow | quota.FieldRemaining | quota.FieldReset
	h.Limit, h.Window, h.Remaining, h.ResetAt = 20, time.Second, 1, ms(60_000)
	l.Observe(h)
	if s := l.Snapshot(); s.Rate > 1 {
		t.Fatalf("fresh Remaining 1 for a minute should slow to ~1/60 s: %+v", s)
	}
	// Past the TTL, the stale Remaining is ignored; the limit stays.
	l.AllowAt(ms(10_001))
	s := l.Snapshot()
	if !s.Stale || s.Rate != 20 || s.Source != SourceHeaders {
		t.Fatalf("stale: %+v", s)
	}
}

func TestRetryHintPauseAndProbe(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
	o := throttled(ms(0))
	o.Known, o.RetryAfter = quota.FieldRetryAfter, 2*time.Second
	l.Observe(o)
	if l.AllowAt(ms(1999)) {
		t.Fatal("admitted during the pause")
	}
	probe, okp := l.ReserveAt(ms(2000))
	if !okp || !probe.Probe() {
		t.Fatal("first request after the pause is not the probe")
	}
	if _, ok2 := l.ReserveAt(ms(2001)); ok2 {
		t.Fatal("admitted a second request while the probe is out")
	}
	probe.Done(ok(ms(2020)))
	tk, ok3 := l.ReserveAt(ms(2021))
	if !ok3 || tk.Probe() {
		t.Fatal("not released after the probe's success")
	}
	tk.Cancel()
}

func TestPauseCapped(t *testing.T) {
	l := New(Config{MaxPause: time.Second})
	o := throttled(ms(0))
	o.Known, o.RetryAfter = quota.FieldRetryAfter, time.Hour
	l.Observe(o)
	if !l.Snapshot().PauseUntil.Equal(ms(1000)) {
		t.Fatalf("pause not capped: %v", l.Snapshot().PauseUntil)
	}
}

func TestProbeTimeout(t *testing.T) {
	l := New(Config{ProbeTimeout: 500 * time.Millisecond, Rule: quota.Rule{Rate: 100, Burst: 1}})
	o := throttled(ms(0))
	o.Known, o.RetryAfter = quota.FieldRetryAfter, time.Second
	l.Observe(o)
	p, _ := l.ReserveAt(ms(1000))
	if !p.Probe() {
		t.Fatal("no probe")
	}
	if l.AllowAt(ms(1499)) {
		t.Fatal("released before the probe timeout")
	}
	if !l.AllowAt(ms(1500)) {
		t.Fatal("not released at the probe timeout")
	}
}
func TestTransientIsNoSignal(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 10}})
	tk, _ := l.ReserveAt(ms(0))
	tk.Done(quota.Observation{At: ms(10), Status: 503, Transient: true})
	if s := l.Snapshot(); s.Source != SourceRule || s.Rate != 10 || s.InFlight != 0 {
		t.Fatalf("transient changed the limiter: %+v", s)
	}
}
func TestWaitDeadlineFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
		if _, err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := l.Wait(ctx)
		var we *WaitError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) {
			t.Fatalf("err = %v", err)
		}
		if time.Since(start) != 0 || we.Wait != time.Second || we.Reason != "rate" {
			t.Fatalf("waited %v, error %+v", time.Since(start), we)
		}
		if !strings.Contains(err.Error(), "1s") {
			t.Fatalf("message does not say how long: %q", err)
		}
		// The failed wait took no token: one second later one is there.
		time.Sleep(time.Second)
		if !l.Allow() {
			t.Fatal("token lost to a failed wait")
		}
	})
}

// TestWaitRoundTripLeft: once answers have shown the round trip, Wait
// refuses a request with less than a round trip left before its deadline
// (its answer would come too late, and the server would count it), and
// takes nothing from the limiter doing so.
func TestWaitRoundTripLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{})
		tk, err := l.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the round trip
		tk.Done(ok(time.Now()))

		short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = l.Wait(short)
		var we *WaitError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Reason != "round trip" {
			t.Fatalf("with 20 ms left and a 50 ms round trip: err = %v", err)
		}
		if we.Wait != 50*time.Millisecond || we.Left != 20*time.Millisecond {
			t.Errorf("error %+v, want Wait 50ms (the round trip), Left 20ms", we)
		}
		if !strings.Contains(err.Error(), "less than a round trip") {
			t.Errorf("message does not say why: %q", err)
		}
		if n := l.Snapshot().InFlight; n != 0 {
			t.Errorf("%d in flight after a refused wait", n)
		}

		long, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel2()
		tk, err = l.Wait(long)
		if err != nil {
			t.Fatalf("with 100 ms left: %v", err)
		}
		tk.Cancel()
	})
}

func TestWaitPauseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{})
		o := throttled(time.Now())
		o.Known, o.RetryAfter = quota.FieldRetryAfter, 5*time.Second
		l.Observe(o)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := l.Wait(ctx)
		var we *WaitError
		if !errors.As(err, &we) || we.Reason != "pause" || we.Wait != 5*time.Second {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestWaitCancelReturnsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
		tk, _ := l.Wait(context.Background()) // empties the bucket
		tk.Cancel()                           // never sent: token back
		if !l.Allow() {
			t.Fatal("Cancel did not return the token")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := l.Wait(ctx) // queued for 1 s
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		// The cancelled waiter's token is back: due at 1 s, not 2 s.
		time.Sleep(700 * time.Millisecond)
		if !l.Allow() {
			t.Fatal("cancelled wait kept its token")
		}
	})
}

func TestWaitPacesAndWakesAfterProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1}})
		start := time.Now()
		o := throttled(start)
		o.Known, o.RetryAfter = quota.FieldRetryAfter, time.Second
		l.Observe(o) // the learner measures, paced by the rule's 10/s
		var mu sync.Mutex
		var admitted []time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				tk, err := l.Wait(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				admitted = append(admitted, time.Since(start))
				mu.Unlock()
				if tk.Probe() {
					time.Sleep(50 * time.Millisecond)
				}
				tk.Done(ok(time.Now()))
			})
		}
		wg.Wait()
		if admitted[0] != time.Second {
			t.Fatalf("probe at %v, want 1s", admitted[0])
		}
		if admitted[1] < 1050*time.Millisecond {
			t.Fatalf("a waiter went before the probe's answer: %v", admitted)
		}
		for i := 2; i < len(admitted); i++ {
			if d := admitted[i] - admitted[i-1]; d < 99*time.Millisecond {
				t.Fatalf("not paced at the rule's 10/s: %v", admitted)
			}
		}
		t.Logf("admitted at %v", admitted)
	})
}

func TestHotUpdateWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 0.5, Burst: 1}})
		l.Allow()
		done := make(chan time.Duration)
		start := time.Now()
		go func() {
			tk, _ := l.Wait(context.Background()) // due in 2 s at 0.5/s
			done <- time.Since(start)
			tk.Cancel()
		}()
		time.Sleep(100 * time.Millisecond)
		h := ok(time.Now()) // the server says 100/s
		h.Known, h.Limit, h.Window = quota.FieldLimit|quota.FieldWindow, 100, time.Second
		l.Observe(h)
		if got := <-done; got > 200*time.Millisecond {
			t.Fatalf("waiter not re-placed after the rate went up: admitted at %v", got)
		}
	})
}

func TestNoGoroutineLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 5, Burst: 1}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for {
					tk, err := l.Wait(ctx)
					if err != nil {
						return
					}
					tk.Done(ok(time.Now()))
				}
			})
		}
		wg.Wait()
		// synctest.Test fails if any goroutine of the bubble is left.
	})
}
