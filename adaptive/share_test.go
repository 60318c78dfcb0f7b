package adaptive

import (
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

func TestPaceFollowsTheRule(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 3}})
	p := l.Fleet().Pace()
	if p.Interval != 100*time.Millisecond || p.Burst != 3 || p.Source != SourceRule || !p.Said() {
		t.Fatalf("Pace() = %+v, want 100ms, burst 3, rule, said", p)
	}
	var zero Limiter
	if p := zero.Fleet().Pace(); p.Interval != 0 || p.Said() {
		t.Fatalf("zero Limiter's Pace() = %+v, want none, not said", p)
	}
}

func TestPaceOfHeadersIsSaid(t *testing.T) {
	l := New(Config{})
	o := ok(time.Now())
	o.Known, o.Limit, o.Window = quota.FieldLimit|quota.FieldWindow, 20, time.Second
	l.Observe(o)
	if p := l.Fleet().Pace(); p.Interval != 50*time.Millisecond || p.Burst != 1 || p.Source != SourceHeaders || !p.Said() {
		t.Fatalf("Pace() = %+v, want 50ms, burst 1, headers, said", p)
	}
}

func TestShareScalesThePace(t *testing.T) {
	l := New(Config{Rule: quota.Rule{Rate: 10, Burst: 1, Limit: 8, Window: time.Second}})
	if s := l.Fleet().Share(); s != 1 {
		t.Fatalf("Share() = %v before SetShare, want 1", s)
	}
	l.Fleet().SetShare(0.25)
	sn := l.Snapshot()
	if sn.Rate != 2.5 || sn.Share != 0.25 || sn.Limit != 2 {
		t.Fatalf("at a share of 0.25: rate %v, share %v, limit %d; want 2.5, 0.25, 2", sn.Rate, sn.Share, sn.Limit)
	}
	if p := l.Fleet().Pace(); p.Interval != 400*time.Millisecond {
		t.Fatalf("Pace().Interval = %v at a share of 0.25, want 400ms", p.Interval)
	}
	for _, bad := range []float64{0, -1, 2, math.NaN(), math.Inf(1), 1} {
		l.Fleet().SetShare(0.5)
		l.Fleet().SetShare(bad)
		if s := l.Snapshot(); s.Share != 1 || s.Rate != 10 {
			t.Fatalf("SetShare(%v): share %v, rate %v; want 1, 10", bad, s.Share, s.Rate)
		}
	}
}

func TestPausedIsTheGate(t *testing.T) {
	l := New(Config{})
	if !l.Fleet().Paused().IsZero() {
		t.Fatalf("Paused() = %v before any pause", l.Fleet().Paused())
	}
	now := time.Now()
	o := throttled(now)
	o.Known, o.ResetAt = quota.FieldReset, now.Add(3*time.Second)
	l.Observe(o)
	if got := l.Fleet().Paused(); !got.Equal(o.ResetAt) {
		t.Fatalf("Paused() = %v after a throttle with a reset at %v", got, o.ResetAt)
	}
}
