package adaptive

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// TestHoldingIsBounded: a leader holds its followers while it learns
// alone, but not for longer than maxHold, however long it learns.
func TestHoldingIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{})
		if !l.Fleet().Holding() {
			t.Fatal("a leader in its first slow start does not hold its followers")
		}
		l.Observe(quota.Observation{Throttled: true}) // a throttle to test, whose answer never comes
		time.Sleep(time.Second)
		if !l.Fleet().Holding() {
			t.Fatalf("a leader testing a throttle does not hold its followers: %+v", l.Snapshot())
		}
		time.Sleep(maxHold)
		if l.Fleet().Holding() {
			t.Errorf("a leader still holds its followers %v on: %+v", maxHold+time.Second, l.Snapshot())
		}
	})
}

// TestLearnedPace: the pace a settled learner shares is L̂ per Ŵ and the
// spread, evenly; none before it settles, and none where a rule paces.
func TestLearnedPace(t *testing.T) {
	l := New(Config{})
	if p := l.Fleet().LearnedPace(0); p != (Pace{}) {
		t.Errorf("a cold Limiter shares %+v, want nothing", p)
	}
	l.Fleet().Seed(Estimate{Limit: 50, Window: time.Second})
	p := l.Fleet().LearnedPace(0)
	if p.Interval < 20*time.Millisecond || p.Interval > 20*time.Millisecond*101/100 || p.Burst != 1 || p.Source != SourceLearned {
		t.Errorf("settled at 50 per 1s, it shares %+v; want one at a time, 20 ms apart or a little more", p)
	}
	if l.Fleet().Holding() {
		t.Error("a settled Limiter holds its followers")
	}
	ruled := New(Config{Rule: quota.Rule{Rate: 5, Burst: 1}})
	if p := ruled.Fleet().LearnedPace(0); p != (Pace{}) || ruled.Fleet().Holding() {
		t.Errorf("a Limiter a rule paces shares %+v, holding %v; want nothing", p, ruled.Fleet().Holding())
	}
}

// TestObserveRelayed: another process's answers count as this learner's
// own: ten successes, then a throttle its tests confirm (requests sent
// after it, throttled too), make a first L̂ of ten, as in slow start; none
// of them is in flight here.
func TestObserveRelayed(t *testing.T) {
	l := New(Config{})
	now := time.Now()
	ms := func(n int) time.Time { return now.Add(time.Duration(n) * time.Millisecond) }
	for i := range 10 {
		l.Fleet().ObserveRelayed(quota.Observation{At: ms(i + 10)}, ms(i))
	}
	for i := range 4 {
		l.Fleet().ObserveRelayed(quota.Observation{At: ms(100*i + 30), Throttled: true}, ms(100*i+20))
	}
	sn := l.Snapshot()
	if sn.LearnedLimit != 10 || sn.Phase != PhaseMeasuring || sn.InFlight != 0 {
		t.Errorf("after relayed answers: L̂ %d, %v, %d in flight; want 10, measuring, none", sn.LearnedLimit, sn.Phase, sn.InFlight)
	}
}
