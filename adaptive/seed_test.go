package adaptive

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
)

func TestSeedTakesEstimate(t *testing.T) {
	l := New(Config{})
	if _, ok := l.Fleet().Learned(); ok {
		t.Fatal("Learned: a cold Limiter has an estimate")
	}
	est := Estimate{Limit: 50, Window: time.Second, WindowLow: 900 * time.Millisecond, WindowHigh: 1100 * time.Millisecond}
	if !l.Fleet().Seed(est) {
		t.Fatal("Seed refused a valid estimate on a fresh Limiter")
	}
	if l.Fleet().Fresh() {
		t.Error("Fresh after Seed")
	}
	sn := l.Snapshot()
	if sn.Phase != PhaseSettled || sn.Source != SourceLearned || sn.LearnedLimit != 50 || sn.LearnedWindow != time.Second {
		t.Errorf("Snapshot after Seed: phase %v, source %v, %d per %v; want settled, learned, 50 per 1s", sn.Phase, sn.Source, sn.LearnedLimit, sn.LearnedWindow)
	}
	if sn.Rate < 45 || sn.Rate > 50 {
		t.Errorf("rate %.1f/s after Seed, want just under 50", sn.Rate)
	}
	if got, ok := l.Fleet().Learned(); !ok || got != est {
		t.Errorf("Learned = %+v, %v; want %+v", got, ok, est)
	}
	if l.Fleet().Seed(est) {
		t.Error("Seed took a second estimate")
	}
}

func TestSeedRefuses(t *testing.T) {
	good := Estimate{Limit: 10, Window: time.Second}
	for _, tc := range []struct {
		name string
		lim  func() *Limiter
		est  Estimate
	}{
		{"zero", func() *Limiter { return New(Config{}) }, Estimate{}},
		{"negative limit", func() *Limiter { return New(Config{}) }, Estimate{Limit: -1, Window: time.Second}},
		{"no window", func() *Limiter { return New(Config{}) }, Estimate{Limit: 10}},
		{"negative window", func() *Limiter { return New(Config{}) }, Estimate{Limit: 10, Window: -time.Second}},
		{"window over a day", func() *Limiter { return New(Config{}) }, Estimate{Limit: 10, Window: 25 * time.Hour}},
		{"limit over 2^40", func() *Limiter { return New(Config{}) }, Estimate{Limit: 1<<40 + 1, Window: time.Second}},
		{"rule", func() *Limiter { return New(Config{Rule: quota.Rule{Rate: 5, Burst: 1}}) }, good},
		{"headers", func() *Limiter {
			l := New(Config{})
			l.Observe(quota.Observation{Known: quota.FieldLimit, Limit: 20, Window: time.Second})
			return l
		}, good},
		{"throttled", func() *Limiter {
			l := New(Config{})
			l.Observe(quota.Observation{Throttled: true})
			return l
		}, good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lim()
			before := l.Snapshot()
			if l.Fleet().Seed(tc.est) {
				t.Fatalf("Seed(%+v) took it", tc.est)
			}
			if after := l.Snapshot(); after.Phase != before.Phase || after.Source != before.Source || after.LearnedLimit != before.LearnedLimit {
				t.Errorf("a refused Seed changed the Limiter: %+v -> %+v", before, after)
			}
		})
	}
}

// TestSeedWidensBounds: bounds that do not hold the window are widened to
// hold it, not taken.
func TestSeedWidensBounds(t *testing.T) {
	l := New(Config{})
	if !l.Fleet().Seed(Estimate{Limit: 10, Window: 2 * time.Second, WindowLow: 5 * time.Second, WindowHigh: time.Second}) {
		t.Fatal("Seed refused")
	}
	sn := l.Snapshot()
	if sn.WindowLow != 0 || sn.WindowHigh != 2*time.Second || sn.LearnedWindow != 2*time.Second {
		t.Errorf("bounds (%v, %v], window %v; want (0, 2s], 2s", sn.WindowLow, sn.WindowHigh, sn.LearnedWindow)
	}
}

// TestSeedSkipsLearning: what one Limiter learned of a server that says
// nothing (50 per fixed second) seeds a fresh one on the same quota, as a
// process restarted would be: its first three seconds are paced at the
// quota, with no throttle, where a fresh one unseeded slow-starts into
// throttles.
func TestSeedSkipsLearning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 50
		cloud := fakecloud.New(fakecloud.Config{
			Quotas:         []fakecloud.Quota{{API: simAction, Limit: limit, Window: time.Second}},
			ThrottleStatus: 429,
			Faults:         simLatency,
		})
		m := simMeter{cloud, "AK1"}
		run := func(lim *Limiter, d time.Duration) simSpan {
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			var wg sync.WaitGroup
			simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
			s := measure(m, start, 0, d-time.Millisecond, "", limit)
			wg.Wait()
			return s
		}

		first := New(Config{})
		var est Estimate
		for i := 0; i < 30; i++ {
			run(first, time.Second)
			var ok bool
			if est, ok = first.Fleet().Learned(); ok {
				break
			}
		}
		if !est.Valid() {
			t.Fatalf("the first Limiter never settled in 30 s: %+v", first.Snapshot())
		}
		t.Logf("learned %+v", est)
		time.Sleep(2 * time.Second) // the process is gone; its windows pass

		seeded := New(Config{})
		if !seeded.Fleet().Seed(est) {
			t.Fatal("Seed refused what Learned gave")
		}
		s := run(seeded, 3*time.Second)
		t.Logf("seeded: %d ok, %d throttled in 3 s", s.ok, s.throttled)
		if s.throttled > 0 || s.goodput() < 0.9 {
			t.Errorf("seeded: %d ok, %d throttled in 3 s (goodput %.1f%%); want none throttled, ≥ 90%%", s.ok, s.throttled, 100*s.goodput())
		}

		time.Sleep(2 * time.Second)
		cold := run(New(Config{}), 3*time.Second)
		t.Logf("unseeded: %d ok, %d throttled in 3 s", cold.ok, cold.throttled)
		if cold.throttled == 0 {
			t.Error("unseeded: no throttle in its first 3 s; this test no longer shows what Seed saves")
		}
	})
}
