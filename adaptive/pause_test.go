package adaptive

import (
	"slices"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// TestShortenedHint checks how a whole-seconds Retry-After is taken: the
// pause ends at the earliest moment the server's wait may end, one request
// probes, and each probe throttled again waits twice as long, up to the
// whole hint.
func TestShortenedHint(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 100, Burst: 1}})
	hint := func(at time.Time) quota.Observation {
		o := throttled(at)
		o.Known, o.RetryAfter, o.RetrySlack = quota.FieldRetryAfter, time.Second, time.Second
		return o
	}
	tk, _ := l.ReserveAt(ms(0))
	tk.Done(hint(ms(20)))
	if got := l.Snapshot().PauseUntil; !got.Equal(ms(20)) {
		t.Fatalf("paused until %v, want %v: Retry-After: 1 may end at once", got, ms(20))
	}
	at := 20
	for _, gap := range []int{100, 200, 400, 800, 1000} {
		probe, ok := l.ReserveAt(ms(at))
		if !ok || !probe.Probe() {
			t.Fatalf("at %d ms: no probe", at)
		}
		if _, ok := l.ReserveAt(ms(at)); ok {
			t.Fatalf("at %d ms: a second request while the probe is out", at)
		}
		probe.Done(hint(ms(at + 20)))
		at += 20 + gap
		if got := l.Snapshot().PauseUntil; !got.Equal(ms(at)) {
			t.Fatalf("after a throttled probe: paused until %v, want %v (a wait of %d ms)", got.Sub(t0), ms(at).Sub(t0), gap)
		}
	}

	// A hint said in milliseconds is taken at its word.
	l = New(Config{})
	o := throttled(ms(0))
	o.Known, o.RetryAfter = quota.FieldRetryAfter, 1500*time.Millisecond
	l.Observe(o)
	if got := l.Snapshot().PauseUntil; !got.Equal(ms(1500)) {
		t.Fatalf("paused until %v, want %v", got, ms(1500))
	}
}

// TestHintsThatHoldPause: a server whose Retry-After does predict
// throttles (every request is throttled, with "Retry-After: 5") keeps
// pausing the tenant. The first hint is taken at its word; the next are
// tested, two throttled requests each, with no pause, until three of them
// have held (trust 4/5); from then on a hint pauses again, untested, until
// the earliest moment its wait may end.
func TestHintsThatHoldPause(t *testing.T) {
	// The server says its limit, so that only the hints pause the tenant
	// (the learner, which tests throttles too, stays out).
	l := New(Config{})
	hint := func(at time.Time) quota.Observation {
		o := throttled(at)
		o.Known = quota.FieldRetryAfter | quota.FieldLimit | quota.FieldWindow
		o.RetryAfter, o.RetrySlack = 5*time.Second, time.Second
		o.Limit, o.Window = 1000, time.Second
		return o
	}
	at := 0
	// send admits one request at the tenant's pace after at, answers it
	// with a hint 1 ms later, and returns the pause the tenant is in then
	// (0 if none).
	send := func() time.Duration {
		t.Helper()
		for range 10_000 {
			if tk, ok := l.ReserveAt(ms(at)); ok {
				at++
				tk.Done(hint(ms(at)))
				if u := l.Snapshot().PauseUntil; u.After(ms(at)) {
					d := u.Sub(ms(at))
					at += int(d / time.Millisecond)
					return d
				}
				return 0
			}
			at++
		}
		t.Fatalf("at %d ms: nothing admitted in 10 s", at)
		return 0
	}
	var got []time.Duration
	for range 16 {
		got = append(got, send())
	}
	ms100 := 100 * time.Millisecond
	want := []time.Duration{
		4 * time.Second,                        // the first hint, at its word, less its slack
		ms100, 2 * ms100, 4 * ms100, 8 * ms100, // its probe throttled: the wait doubles
		5 * time.Second,        // until it reaches the slack: the hint in full
		0, 0, 0, 0, 0, 0, 0, 0, // three hints tested, no pause: two throttled requests each held them
		4 * time.Second, // trusted (4/5): the hint pauses again
		ms100,           // and its probe, throttled, waits as before
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pauses after each hinted answer:\n got %v\nwant %v", got, want)
	}
}

// TestPauseNeverHastens: a pause shorter than the pace does not let the
// next request go before its paced time. The bucket started again at the
// pause's end, so a short pause after a request let the next one go at
// once: a sliding log of 12 per 15 s, paced at 0.8/s from its headers,
// with "Retry-After: 1" on each throttle and short pauses to test it,
// threw 77% of its requests at throttles (the family's draw 4, now 0%).
func TestPauseNeverHastens(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 1, Burst: 1}})
	if !l.AllowAt(ms(0)) {
		t.Fatal("the first request was refused")
	}
	// Spent until 110 ms, the server says: a pause, no probe.
	o := ok(ms(10))
	o.Known, o.Remaining, o.ResetAt = quota.FieldRemaining|quota.FieldReset, 0, ms(110)
	l.Observe(o)
	if l.AllowAt(ms(200)) {
		t.Fatal("admitted at 200 ms, after a pause to 110 ms: the pace says 1 s")
	}
	if !l.AllowAt(ms(1000)) {
		t.Fatal("refused at 1 s, when the pace and the pause allow it")
	}
}

// TestLearnerPauseWithinHint: a server's retry hint bounds the learner's
// own pause. Seeking the end of a window it found spent, the learner
// spaces its probes out, twice as far each time one is throttled; a
// throttle whose hint says to come back sooner than the learner's next
// probe would is taken at its word, and the tenant pauses until the hint
// ends, not past it.
func TestLearnerPauseWithinHint(t *testing.T) {
	l := New(Config{})
	now := ms(0)
	for range 8 { // slow start, answered in 10 ms
		tk, admitted := l.ReserveAt(now)
		if !admitted {
			t.Fatalf("at %v: refused in slow start", now.Sub(t0))
		}
		now = now.Add(10 * time.Millisecond)
		tk.Done(ok(now))
	}
	next := func() Ticket {
		t.Helper()
		if u := l.Snapshot().PauseUntil; u.After(now) {
			now = u
		}
		for range 100 {
			if tk, admitted := l.ReserveAt(now); admitted {
				return tk
			}
			now = now.Add(time.Millisecond)
		}
		t.Fatalf("nothing admitted by %v", now.Sub(t0))
		return Ticket{}
	}
	var gap time.Duration
	for gap < time.Second {
		tk := next()
		now = now.Add(10 * time.Millisecond)
		tk.Done(throttled(now))
		if gap = l.Snapshot().PauseUntil.Sub(now); now.Sub(t0) > time.Minute {
			t.Fatalf("the learner's pause grew to %v only in a minute", gap)
		}
	}
	tk := next()
	now = now.Add(10 * time.Millisecond)
	o := throttled(now)
	o.Known, o.RetryAfter = quota.FieldRetryAfter, 300*time.Millisecond
	tk.Done(o)
	if got, want := l.Snapshot().PauseUntil, now.Add(300*time.Millisecond); got.After(want) {
		t.Errorf("after a pause of %v, a throttle at %v that said 300 ms paused until %v: past the hint by %v",
			gap, now.Sub(t0), got.Sub(t0), got.Sub(want))
	}
}
