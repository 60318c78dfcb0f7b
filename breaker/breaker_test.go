package breaker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// changeLog records a Breaker's changes.
type changeLog struct {
	mu sync.Mutex
	cs []Change
}

func (l *changeLog) add(c Change) {
	l.mu.Lock()
	l.cs = append(l.cs, c)
	l.mu.Unlock()
}

// path returns the states the changes went through, e.g.
// "closed>open>half-open".
func (l *changeLog) path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cs) == 0 {
		return ""
	}
	s := l.cs[0].From.String()
	for _, c := range l.cs {
		s += ">" + c.To.String()
	}
	return s
}

// answer lets a request through b at now and reports o; it fails the test
// if b refuses.
func answer(t *testing.T, b *Breaker, o Outcome) {
	t.Helper()
	p, err := b.Allow(time.Now())
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	p.Done(o)
}

func TestOpensOnFailureRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		b := New(Config{ConsecutiveFailures: -1}, log.add)
		// 19 answers, all failed: under MinRequests, still closed.
		for range 19 {
			answer(t, b, Failure)
		}
		if b.State() != StateClosed {
			t.Fatalf("state after 19 failures = %v, want closed (MinRequests 20)", b.State())
		}
		answer(t, b, Success) // 19 of 20 failed
		if b.State() != StateClosed {
			t.Fatalf("state after a success = %v, want closed: a success never opens", b.State())
		}
		answer(t, b, Failure) // 20 of 21 failed
		if b.State() != StateOpen {
			t.Fatalf("state after 20 failures of 21 = %v, want open", b.State())
		}
		err := b.Check(time.Now())
		var oe *OpenError
		if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) || oe.Wait != DefaultOpenFor || oe.Probing {
			t.Fatalf("Check = %v, want an *OpenError matching ErrOpen with Wait %v", err, DefaultOpenFor)
		}
		if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow while open = %v, want ErrOpen", err)
		}
		if got := log.path(); got != "closed>open" {
			t.Fatalf("changes = %q, want closed>open", got)
		}
		c := log.cs[0]
		if c.Failures != 20 || c.Answers != 21 || !c.Until.Equal(c.At.Add(DefaultOpenFor)) {
			t.Fatalf("change = %+v, want 20 failures of 21 answers, open for %v", c, DefaultOpenFor)
		}
	})
}

func TestStaysClosedUnderRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{}, nil)
		// One failure in three, in a fixed rhythm, for long: never half.
		for i := range 3000 {
			o := Success
			if i%3 == 0 {
				o = Failure
			}
			answer(t, b, o)
			if i%30 == 0 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if b.State() != StateClosed {
			t.Fatalf("state = %v after one failure in three, want closed", b.State())
		}
	})
}

func TestOpensOnConsecutiveFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{ConsecutiveFailures: 3}, nil)
		for range 50 {
			answer(t, b, Success)
		}
		answer(t, b, Failure)
		answer(t, b, Failure)
		answer(t, b, Ignored) // a throttle between breaks the row
		answer(t, b, Failure)
		answer(t, b, Failure)
		if b.State() != StateClosed {
			t.Fatalf("state after 2 failures in a row = %v, want closed", b.State())
		}
		answer(t, b, Failure)
		if b.State() != StateOpen {
			t.Fatalf("state after 3 failures in a row = %v, want open", b.State())
		}
	})
}

func TestIgnoredNeverOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{}, nil)
		for i := range 10_000 {
			answer(t, b, Ignored)
			if i%100 == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if b.State() != StateClosed {
			t.Fatalf("state after 10000 throttles = %v, want closed", b.State())
		}
	})
}

func TestWindowSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{ConsecutiveFailures: -1, Window: 10 * time.Second}, nil)
		for range 19 {
			answer(t, b, Failure)
		}
		time.Sleep(11 * time.Second) // the 19 age out
		answer(t, b, Failure)
		if b.State() != StateClosed {
			t.Fatalf("state = %v: failures older than the window counted", b.State())
		}
		for range 19 {
			answer(t, b, Failure)
		}
		if b.State() != StateOpen {
			t.Fatalf("state = %v after 20 failures within the window, want open", b.State())
		}
	})
}

// open returns a Breaker with cfg that has just opened.
func open(t *testing.T, cfg Config, log *changeLog) *Breaker {
	t.Helper()
	var b *Breaker
	if log != nil {
		b = New(cfg, log.add)
	} else {
		b = New(cfg, nil)
	}
	for b.State() != StateOpen {
		answer(t, b, Failure)
	}
	return b
}

func TestHalfOpenOneProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		b := open(t, Config{OpenFor: 2 * time.Second}, &log)
		time.Sleep(1999 * time.Millisecond)
		if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow before OpenFor = %v, want ErrOpen", err)
		}
		time.Sleep(time.Millisecond)
		p, err := b.Allow(time.Now())
		if err != nil || !p.Probe() {
			t.Fatalf("Allow after OpenFor = %v (probe %v), want the probe", err, p.Probe())
		}
		for range 3 {
			var oe *OpenError
			err := b.Check(time.Now())
			if !errors.As(err, &oe) || !oe.Probing || oe.Wait != DefaultProbeTimeout {
				t.Fatalf("Check with the probe out = %v, want Probing with Wait %v", err, DefaultProbeTimeout)
			}
			if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) {
				t.Fatalf("second Allow while probing = %v, want ErrOpen", err)
			}
		}
		p.Done(Success)
		if b.State() != StateClosed {
			t.Fatalf("state after the probe's success = %v, want closed", b.State())
		}
		answer(t, b, Success)
		if got := log.path(); got != "closed>open>half-open>closed" {
			t.Fatalf("changes = %q", got)
		}
	})
}

func TestProbeFailsReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := open(t, Config{OpenFor: time.Second}, nil)
		time.Sleep(time.Second)
		p, err := b.Allow(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Failure)
		if b.State() != StateOpen || b.Check(time.Now()) == nil {
			t.Fatalf("state after a failed probe = %v, want open", b.State())
		}
		if got := time.Until(b.OpenUntil()); got != time.Second {
			t.Fatalf("open for %v more, want 1s", got)
		}
	})
}

func TestProbeTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log changeLog
		b := open(t, Config{OpenFor: time.Second, ProbeTimeout: 3 * time.Second}, &log)
		time.Sleep(time.Second)
		p, err := b.Allow(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // no answer
		if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow after the probe timed out = %v, want ErrOpen (open again)", err)
		}
		if b.State() != StateOpen {
			t.Fatalf("state = %v, want open", b.State())
		}
		p.Done(Success) // too late: counts for nothing
		if b.State() != StateOpen {
			t.Fatalf("a late answer changed the state to %v", b.State())
		}
		time.Sleep(time.Second)
		answer(t, b, Success) // the next probe
		if got := log.path(); got != "closed>open>half-open>open>half-open>closed" {
			t.Fatalf("changes = %q", got)
		}
	})
}

func TestIgnoredProbeHandsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := open(t, Config{}, nil)
		time.Sleep(DefaultOpenFor)
		p, err := b.Allow(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p.Done(Ignored) // a throttle
		p2, err := b.Allow(time.Now())
		if err != nil || !p2.Probe() {
			t.Fatalf("Allow after an ignored probe = %v, want the next probe", err)
		}
		p2.Done(Success)
		if b.State() != StateClosed {
			t.Fatalf("state = %v, want closed", b.State())
		}
	})
}

// TestOneProbeUnderConcurrency has many goroutines call a half-open
// breaker at once: one probe at a time is ever out.
func TestOneProbeUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := open(t, Config{OpenFor: 100 * time.Millisecond}, nil)
		var out, most, probes atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 200 {
					p, err := b.Allow(time.Now())
					if err == nil {
						if p.Probe() {
							probes.Add(1)
							n := out.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							time.Sleep(time.Millisecond)
							out.Add(-1)
						}
						o := Failure // keep it failing, so it keeps probing
						if (g+i)%7 == 0 {
							o = Ignored
						}
						p.Done(o)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if most.Load() != 1 || probes.Load() < 5 {
			t.Fatalf("%d probes, at most %d out at once; want several, one at a time", probes.Load(), most.Load())
		}
	})
}

// TestChangeHookCallsBack: the hook may call the Breaker (gobreaker's own
// hook, called under its lock, would deadlock).
func TestChangeHookCallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Breaker
		var seen []string
		b = New(Config{ConsecutiveFailures: 2}, func(c Change) {
			_ = b.Check(time.Now())
			if p, err := b.Allow(time.Now()); err == nil {
				p.Done(Ignored)
			}
			seen = append(seen, fmt.Sprintf("%v>%v now %v", c.From, c.To, b.State()))
		})
		answer(t, b, Failure)
		answer(t, b, Failure)
		if len(seen) != 1 || seen[0] != "closed>open now open" {
			t.Fatalf("hook saw %q", seen)
		}
	})
}

func TestNilBreaker(t *testing.T) {
	var b *Breaker
	if err := b.Check(time.Now()); err != nil {
		t.Fatal(err)
	}
	p, err := b.Allow(time.Now())
	if err != nil || p.Probe() {
		t.Fatal(err)
	}
	p.Done(Failure)
	if b.State() != StateClosed || !b.OpenUntil().IsZero() {
		t.Fatal("nil breaker not closed")
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		o    quota.Observation
		want Outcome
	}{
		{quota.Observation{Status: 200}, Success},
		{quota.Observation{Status: 404}, Success},
		{quota.Observation{Status: 400, Code: "InvalidParameter"}, Success},
		{quota.Observation{Status: 400, Code: "Throttling.User", Throttled: true}, Ignored},
		{quota.Observation{Status: 503, Code: "Throttling", Throttled: true}, Ignored},
		{quota.Observation{Status: 429, Throttled: true}, Ignored},
		{quota.Observation{Status: 503, Code: "ServiceUnavailable", Transient: true}, Failure},
		{quota.Observation{Status: 500, Code: "InternalError"}, Failure},
		{quota.Observation{Status: 504, Transient: true}, Failure},
		{quota.Observation{Status: 0, Transient: true}, Failure},
	} {
		if got := Judge(tc.o); got != tc.want {
			t.Errorf("Judge(%d %s) = %v, want %v", tc.o.Status, tc.o.Code, got, tc.want)
		}
	}
	// The parser's verdict on a real 503 throttle body.
	p := new(quota.Parser)
	o := p.ParseParts(http.StatusServiceUnavailable, nil, []byte(`{"Code":"Throttling.User"}`), time.Now())
	if Judge(o) != Ignored {
		t.Errorf("a 503 Throttling.User answer is %v, want ignored", Judge(o))
	}
}

func TestJudgeError(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(1, 0))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want Outcome
	}{
		{"refused connection", live, errors.New("dial tcp: connection refused"), Failure},
		{"caller cancelled", cancelled, context.Canceled, Ignored},
		{"cancel wrapped", live, fmt.Errorf("Post: %w", context.Canceled), Ignored},
		{"timeout", expired, context.DeadlineExceeded, Failure},
	} {
		if got := JudgeError(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: JudgeError = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAwaitProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome Outcome
		want    error
	}{
		{"probe succeeds", Success, nil},
		{"probe fails", Failure, ErrOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := open(t, Config{}, nil)
				if err := b.Await(t.Context()); !errors.Is(err, ErrOpen) {
					t.Fatalf("Await while open = %v, want ErrOpen at once", err)
				}
				time.Sleep(DefaultOpenFor)
				p, err := b.Allow(time.Now())
				if err != nil {
					t.Fatal(err)
				}
				time.AfterFunc(30*time.Millisecond, func() { p.Done(tc.outcome) })
				start := time.Now()
				err = b.Await(t.Context())
				if waited := time.Since(start); waited != 30*time.Millisecond {
					t.Errorf("Await waited %v, want the probe's 30ms", waited)
				}
				if !errors.Is(err, tc.want) && err != tc.want {
					t.Errorf("Await = %v, want %v", err, tc.want)
				}
			})
		})
	}
	t.Run("probe times out", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := open(t, Config{ProbeTimeout: time.Second}, nil)
			time.Sleep(DefaultOpenFor)
			if _, err := b.Allow(time.Now()); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := b.Await(t.Context())
			if waited := time.Since(start); waited != time.Second {
				t.Errorf("Await waited %v, want the probe timeout", waited)
			}
			// At the timeout Check lets the next request try Allow,
			// which counts the silent probe as failed.
			if err != nil {
				t.Fatalf("Await = %v, want nil at the probe's timeout", err)
			}
			if _, err := b.Allow(time.Now()); !errors.Is(err, ErrOpen) || b.State() != StateOpen {
				t.Fatalf("Allow after the timeout = %v, state %v; want open", err, b.State())
			}
		})
	})
	t.Run("context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := open(t, Config{}, nil)
			time.Sleep(DefaultOpenFor)
			if _, err := b.Allow(time.Now()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if err := b.Await(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Await = %v, want the context's error", err)
			}
		})
	})
}
