package adaptive

import (
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
