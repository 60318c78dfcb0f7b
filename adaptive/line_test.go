package adaptive

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/call"
	"github.com/tollgate-go/tollgate/quota"
)

// result is what one caller of Wait got, and when (since the test's
// start).
type result struct {
	name string
	at   time.Duration
	tk   Ticket
	err  error
}

// queueUp starts a caller of l.Wait for each name, with ctxs[name] (the
// test's context if none), one after another 1 ms apart, each in line
// before the next comes, and returns their results in order of admission
// (or refusal) on the channel.
func queueUp(t *testing.T, l *Limiter, start time.Time, ctxs map[string]context.Context, names ...string) <-chan result {
	t.Helper()
	out := make(chan result, len(names))
	for _, n := range names {
		ctx := ctxs[n]
		if ctx == nil {
			ctx = t.Context()
		}
		go func() {
			tk, err := l.Wait(ctx)
			out <- result{n, time.Since(start), tk, err}
		}()
		synctest.Wait() // n is in line, asleep
		time.Sleep(time.Millisecond)
	}
	return out
}

// admittedOrder returns the names of the next n results on out, which must
// all be admissions.
func admittedOrder(t *testing.T, out <-chan result, n int) []string {
	t.Helper()
	var order []string
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		order = append(order, r.name)
	}
	return order
}

// TestLineOrderAcrossPause: callers in line are admitted in the order
// they arrived, though a throttle pauses the tenant while they wait, its
// probe goes, and a new estimate (the server's headers) changes the pace
// under them. (Before the line, a pause voided every place held and the
// waiters raced back in wake-up order.)
func TestLineOrderAcrossPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1}})
		start := time.Now()
		if tk, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		} else {
			tk.Done(ok(time.Now()))
		}
		names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
		out := queueUp(t, l, start, nil, names...)

		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Go(func() {
			for range names {
				r := <-out
				if r.err != nil {
					t.Errorf("%s: %v", r.name, r.err)
					continue
				}
				mu.Lock()
				order = append(order, r.name)
				n := len(order)
				mu.Unlock()
				if r.tk.Probe() {
					time.Sleep(20 * time.Millisecond) // the probe's round trip
				}
				switch n {
				case 3:
					// The third is throttled, with Retry-After: the tenant
					// pauses for a second, then one probe goes.
					o := throttled(time.Now())
					o.Known, o.RetryAfter = quota.FieldRetryAfter, time.Second
					r.tk.Done(o)
				case 6:
					// The server says its limit: a new pace, 20/s.
					o := ok(time.Now())
					o.Known, o.Limit, o.Window = quota.FieldLimit|quota.FieldWindow, 20, time.Second
					r.tk.Done(o)
				default:
					r.tk.Done(ok(time.Now()))
				}
			}
		})
		wg.Wait()
		if !slices.Equal(order, names) {
			t.Fatalf("admitted in the order %v, want the order of arrival %v", order, names)
		}
		if sn := l.Snapshot(); sn.PauseUntil.IsZero() || sn.Source != SourceHeaders {
			t.Fatalf("no pause or no new estimate happened: %+v", sn)
		}
	})
}

// TestLineRetryKeepsPlace: a retry, whose call began before the callers
// in line arrived (call.New, as retry.Do makes it), goes ahead of them:
// next after the head, which steps back for it, not behind everyone who
// came since.
func TestLineRetryKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1}})
		start := time.Now()
		if _, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		retried := call.With(t.Context(), call.New(start))
		out := queueUp(t, l, start, map[string]context.Context{"retry": retried}, "a", "b", "c", "retry")
		order := admittedOrder(t, out, 4)
		if want := []string{"retry", "a", "b", "c"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v: the retry arrived first", order, want)
		}
	})
}

// TestLineCancelLeaves: a caller whose context is cancelled leaves the
// line at once, and those behind it move up: its place is not kept.
func TestLineCancelLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
		start := time.Now()
		if _, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		out := queueUp(t, l, start, map[string]context.Context{"b": ctx}, "a", "b", "c")
		at := time.Since(start)
		cancel()
		r := <-out
		if r.name != "b" || !errors.Is(r.err, context.Canceled) || r.at != at {
			t.Fatalf("after the cancel at %v: %s at %v, %v; want b at once, cancelled", at, r.name, r.at, r.err)
		}
		if n := l.Snapshot().Waiting; n != 2 {
			t.Fatalf("%d in line, want 2", n)
		}
		for _, want := range []struct {
			name string
			at   time.Duration
		}{{"a", time.Second}, {"c", 2 * time.Second}} {
			if r := <-out; r.name != want.name || r.at != want.at || r.err != nil {
				t.Fatalf("%s at %v (%v), want %s at %v", r.name, r.at, r.err, want.name, want.at)
			}
		}
	})
}

// TestLineRefusesOvertaken: a caller in line whose deadline its place
// could still meet is refused as soon as it cannot: here when two retries
// that arrived before it go in ahead. The refusal says how long the wait
// would have been.
func TestLineRefusesOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
		start := time.Now()
		if _, err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		early := func() context.Context { return call.With(t.Context(), call.New(start)) }
		time.Sleep(10 * time.Millisecond) // the retries' calls began before a came
		short, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel()
		out := queueUp(t, l, start, map[string]context.Context{"a": short}, "a") // due at 1 s: in time
		out2 := queueUp(t, l, start, map[string]context.Context{"r1": early()}, "r1")
		select {
		case r := <-out:
			t.Fatalf("a refused with one ahead (due at 2 s, deadline 2.5 s): %v at %v", r.err, r.at)
		default:
		}
		joined := time.Since(start)
		out3 := queueUp(t, l, start, map[string]context.Context{"r2": early()}, "r2")
		r := <-out
		var we *WaitError
		if !errors.As(r.err, &we) || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("a: %v, want a *WaitError", r.err)
		}
		if r.at != joined {
			t.Fatalf("a refused at %v, want at once when r2 went ahead at %v", r.at, joined)
		}
		if we.Wait < 2*time.Second || we.Left > 2500*time.Millisecond {
			t.Fatalf("refusal %+v, want a wait of 2 s or more, under 2.5 s left", we)
		}
		for _, c := range []<-chan result{out2, out3} {
			if r := <-c; r.err != nil {
				t.Fatalf("%s: %v", r.name, r.err)
			}
		}
	})
}

// TestLineNoneLostOrTwice: many callers, some cancelled, some with short
// deadlines, through pauses: each Wait returns exactly once, the admitted
// go in order of arrival, and the line ends empty with nothing in flight.
func TestLineNoneLostOrTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(33, 1))
		l := New(Config{Rule: quota.Rule{Rate: 50, Burst: 1}})
		start := time.Now()
		const callers = 200
		type ret struct {
			i   int
			tk  Ticket
			err error
		}
		out := make(chan ret, callers)
		// The answers: each admitted request is answered 5 ms later.
		seen := map[int]bool{}
		var admitted []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Go(func() {
			for range callers {
				r := <-out
				mu.Lock()
				if seen[r.i] {
					t.Errorf("caller %d returned twice", r.i)
				}
				seen[r.i] = true
				if r.err == nil {
					admitted = append(admitted, r.i)
				}
				mu.Unlock()
				if r.err == nil {
					go func() {
						time.Sleep(5 * time.Millisecond)
						r.tk.Done(ok(time.Now()))
					}()
				}
			}
		})
		var cancels []context.CancelFunc
		defer func() {
			for _, c := range cancels {
				c()
			}
		}()
		for i := range callers {
			ctx := t.Context()
			switch rng.IntN(4) {
			case 0:
				c, cancel := context.WithCancel(ctx)
				cancels = append(cancels, cancel)
				ctx = c
			case 1:
				c, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(3000))*time.Millisecond)
				cancels = append(cancels, cancel)
				ctx = c
			}
			go func() {
				tk, err := l.Wait(ctx)
				out <- ret{i, tk, err}
			}()
			synctest.Wait()
			time.Sleep(time.Millisecond)
			if i%50 == 25 {
				o := throttled(time.Now())
				o.Known, o.RetryAfter = quota.FieldRetryAfter, 300*time.Millisecond
				l.Observe(o)
			}
			if len(cancels) > 0 && rng.IntN(8) == 0 {
				cancels[rng.IntN(len(cancels))]()
			}
		}
		wg.Wait()
		time.Sleep(10 * time.Millisecond) // the last answers
		select {
		case r := <-out:
			t.Fatalf("caller %d returned twice", r.i)
		default:
		}
		if len(admitted) == 0 || len(admitted) == callers {
			t.Fatalf("%d of %d admitted: the test needs both admissions and refusals", len(admitted), callers)
		}
		// Those that waited went in order of arrival. (The first went at
		// once, and those after a pause's probe may follow it: the probe
		// is whoever is first in line then, which is in order too.)
		if !slices.IsSorted(admitted) {
			t.Fatalf("admitted out of arrival order: %v", admitted)
		}
		if n := l.Snapshot().Waiting; n != 0 {
			t.Fatalf("%d left in line", n)
		}
		if n := l.Snapshot().InFlight; n != 0 {
			t.Fatalf("%d in flight after every answer", n)
		}
		t.Logf("%d admitted of %d in %v", len(admitted), callers, time.Since(start))
	})
}

// TestLineRetryDoesNotProbe: after a pause, the probe is sent by the first
// caller in line on its first attempt, not by a retry ahead of it (which
// would take every failed probe, one attempt each); the retry goes right
// after the probe's answer, ahead of the callers that came after it.
func TestLineRetryDoesNotProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, start := pausedForProbe()
		rec := call.New(start.Add(-time.Second))
		rec.Attempt()
		rec.Attempt() // the call's second attempt
		retried := call.With(t.Context(), rec)
		out := queueUp(t, l, start, map[string]context.Context{"retry": retried}, "a", "b", "retry")
		order := admitEach(t, out, 3, "a")
		if want := []string{"a", "retry", "b"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
		}
	})
}

// TestLineProbeSpreadsOverRetries: where every caller in line is a retry
// (a cold start's burst throttled them all), the probe goes to the call
// that has made the fewest attempts, not to the first in line: a call that
// took each failed probe because it keeps its place gave up after five
// attempts in the example's test (TestDemo, seed 0, in CI). The others go
// in their order after the probe's answer.
func TestLineProbeSpreadsOverRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, start := pausedForProbe()
		recs := map[context.Context]*call.Record{}
		retry := func(attempts int, first time.Duration) context.Context {
			rec := call.New(start.Add(first))
			for range attempts {
				rec.Attempt()
			}
			ctx := call.With(t.Context(), rec)
			recs[ctx] = rec
			return ctx
		}
		ctxs := map[string]context.Context{
			"a": retry(3, -3*time.Second), // first in line, two probes failed already
			"b": retry(2, -2*time.Second),
			"c": retry(2, -time.Second),
		}
		out := queueUp(t, l, start, ctxs, "a", "b", "c")
		order := admitEach(t, out, 3, "b")
		if want := []string{"b", "a", "c"}; !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
		}
		// The call's record says its attempt went as the probe, so that
		// package retry does not count the probe's throttle.
		for name, ctx := range ctxs {
			if got := recs[ctx].Probe(); got != (name == "b") {
				t.Errorf("%s's record says probe %v", name, got)
			}
		}
	})
}

// pausedForProbe returns a limiter at 10/s paused for a second by a
// throttle with Retry-After, after which it sends one probe.
func pausedForProbe() (*Limiter, time.Time) {
	l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1}})
	start := time.Now()
	o := throttled(start)
	o.Known, o.RetryAfter = quota.FieldRetryAfter, time.Second
	l.Observe(o)
	return l, start
}

// admitEach takes n admissions from out, in order, each answered ok 20 ms
// after it, and checks that prober's, and only prober's, is the probe.
func admitEach(t *testing.T, out <-chan result, n int, prober string) []string {
	t.Helper()
	var order []string
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		if r.tk.Probe() != (r.name == prober) {
			t.Fatalf("%s admitted at %v, probe %v: want %s to probe", r.name, r.at, r.tk.Probe(), prober)
		}
		order = append(order, r.name)
		time.Sleep(20 * time.Millisecond)
		r.tk.Done(ok(time.Now()))
	}
	return order
}
