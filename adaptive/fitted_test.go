package adaptive

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/tollgate-go/tollgate/fit"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
)

// TestSnapshotFit: 32 workers against a fixed window of 50/1s that says
// nothing but "throttled" (answers 10–40 ms late): the record begins at
// the first throttle, and after 10 s the fit beside the estimate names a
// fixed window of 1 s and 50 within one. Where the server says its limit,
// the learner keeps no record.
func TestSnapshotFit(t *testing.T) {
	for _, c := range []struct {
		name    string
		headers fakecloud.HeaderMode
	}{{"none", fakecloud.HeadersNone}, {"alibaba", fakecloud.HeadersAlibaba}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Config{
					Quotas:               []fakecloud.Quota{{API: simAction, Limit: 50, Window: time.Second}},
					Headers:              c.headers,
					HeadersOnEveryAnswer: true,
					Faults:               simLatency,
				})
				lim := New(Config{})
				if f := lim.Snapshot().Fit; f != (fit.Fit{}) {
					t.Fatalf("fit before any answer: %+v", f)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				var wg sync.WaitGroup
				simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 32)
				wg.Wait()
				f := lim.Snapshot().Fit
				t.Logf("fit %v (score %.3f), then %v (%.3f), Ô %.1f, delay %.2f, %d answers", f.Best, f.Score, f.RunnerUp, f.RunnerUpScore, f.Others, f.Delay, f.Answers)
				if c.headers != fakecloud.HeadersNone {
					if f.Answers != 0 {
						t.Errorf("a record where the server says its limit: %+v", f)
					}
					return
				}
				b := f.Best
				if b.Kind != fit.Fixed || b.Window != time.Second || b.Limit < 49 || b.Limit > 51 {
					t.Errorf("fit %v, want fixed 50/1s", b)
				}
				if f.Answers == 0 || f.Answers > fit.Size {
					t.Errorf("fit on %d answers", f.Answers)
				}
			})
		})
	}
}

// TestFittedSize: a throttled tenant's record, with its fit, stays within
// the 16 KiB the learner may spend on it (#35); a fit's working space is
// pooled, not kept per tenant.
func TestFittedSize(t *testing.T) {
	if n := unsafe.Sizeof(fitted{}); n > 16<<10 {
		t.Errorf("a tenant's record takes %d bytes, want at most 16 KiB", n)
	} else {
		t.Logf("a tenant's record takes %d bytes", n)
	}
}

// seededRun runs 32 callers through a fresh Limiter to a fake serving
// q with faults f, seeded seed, for length of the bubble's clock from a
// cold start, and returns what the fake admitted and throttled from
// `from` to the end, and the Limiter's Snapshot then. It runs in a
// synctest bubble of its own.
func seededRun(t *testing.T, q fakecloud.Quota, f fakecloud.Faults, seed uint64, from, length time.Duration) (s simSpan, sn Snapshot) {
	return simRun(t, fakecloud.Config{Seed: seed, Quotas: []fakecloud.Quota{q}, Faults: f}, 32, from, length)
}

// simRun is seededRun on a fake configured by cfg (its first quota, for
// simAction, the one measured against; its phases change it on cue) with
// workers callers.
func simRun(t *testing.T, cfg fakecloud.Config, workers int, from, length time.Duration) (s simSpan, sn Snapshot) {
	return simDrive(t, cfg, from, length, func(ctx context.Context, t *testing.T, wg *sync.WaitGroup, lim *Limiter, rt http.RoundTripper) {
		simClient(ctx, t, wg, lim, rt, "AK1", workers)
	})
}

// simDrive is simRun with the callers that callers starts for "AK1".
func simDrive(t *testing.T, cfg fakecloud.Config, from, length time.Duration,
	callers func(ctx context.Context, t *testing.T, wg *sync.WaitGroup, lim *Limiter, rt http.RoundTripper)) (s simSpan, sn Snapshot) {
	synctest.Test(t, func(t *testing.T) {
		cfg.Quotas[0].API = simAction
		q := cfg.Quotas[0]
		for i := range cfg.Phases {
			for j := range cfg.Phases[i].Quotas {
				cfg.Phases[i].Quotas[j].API = simAction
				if cfg.Phases[i].At <= from {
					q = cfg.Phases[i].Quotas[j]
				}
			}
		}
		cloud := fakecloud.New(cfg)
		lim := New(Config{})
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), length)
		defer cancel()
		var wg sync.WaitGroup
		callers(ctx, t, &wg, lim, cloud.RoundTripper())
		s = measure(simMeter{cloud, "AK1"}, start, from, length-time.Millisecond, "paced", float64(q.Limit)/q.Window.Seconds())
		sn = lim.Snapshot()
		wg.Wait()
	})
	return s, sn
}

// TestFitPacesFixedWindow: against a fixed window of 50/1s whose answers
// come 300 ± 50 ms after the server counted the request (at arrival, as
// fakecloud does), 32 callers from a cold start, on 12 seeds of the fake.
// The estimator alone miscounts windows at that round trip: on 3 seeds it
// ends off 50 per 1 s, or throttles 10%. Where the record shows its
// window wrong, the pacer takes the fit's (fixed 50/1s). Measured from
// 12 s to 30 s, a seed is good when the tenant ends paced at 50 per 1 s
// with goodput ≥ 92% and ≤ 1.5% throttled; today 11 of 12 are (goodput
// 92.4–96.9%, throttled 0–0.8%, over 15 runs under -race), and that is
// the regression floor. Seed 5 is the miss: the estimator settles on a
// window of 1.66 s at 14 s, 10% throttled meanwhile, and its probes
// ramp from there, paced (see estimator.raise), to 65 per 1.54 s by the
// end (69%, 8% throttled). Every seed must end settled: seed 5 stalled
// measuring, its window unknown, at a budget below the quota that drew
// no throttle (69% goodput) until the budget grew past an unknown
// window's count.
func TestFitPacesFixedWindow(t *testing.T) {
	const seeds, floor = 12, 11
	q := fakecloud.Quota{Limit: 50, Window: time.Second}
	late := fakecloud.Faults{LatencyRate: 1, Latency: 250 * time.Millisecond, LatencyJitter: 100 * time.Millisecond}
	good, byFit := 0, 0
	for seed := range uint64(seeds) {
		s, sn := seededRun(t, q, late, seed+1, 12*time.Second, 30*time.Second)
		if sn.Phase != PhaseSettled {
			t.Errorf("seed %d: ends %v, never settled", seed+1, sn.Phase)
		}
		ok := sn.Phase == PhaseSettled && sn.LearnedLimit == 50 && sn.LearnedWindow == time.Second &&
			s.goodput() >= 0.92 && s.throttledShare() <= 0.015
		if ok {
			good++
		}
		if sn.PacedByFit {
			byFit++
		}
		t.Logf("seed %d: %v %d per %v, paced by the fit %v, fit %v, Ô %.1f; goodput %.1f%%, throttled %.2f%%; good %v",
			seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, sn.Fit.Others, 100*s.goodput(), 100*s.throttledShare(), ok)
	}
	if good < floor {
		t.Errorf("%d of %d seeds good, floor %d", good, seeds, floor)
	}
	if byFit == 0 {
		t.Error("no seed paced by the fit")
	}
}

// TestFitPacesSlidingLog: against a sliding log of 50 in any 1 s, whose
// refills follow our own sends, 32 callers from a cold start on 12 seeds
// of the fake (answers 10–40 ms late), measured from 15 s to 30 s. The
// estimator alone takes the refills for a fixed window's, miscounts, and
// ends measuring about 2 per 60 ms on 11 seeds (goodput 34–82%, up to 37%
// throttled). The fit names sliding 50/1s, and paced by it a throttle
// leaves the pace as it is. A seed is good at the goal, goodput ≥ 98%
// and ≤ 1% throttled; today all 12 are (98.1–99.3%, 0.4–0.54%
// throttled, the probes' cost), in each of 15 runs under -race: the
// fake's draws are seeded but the order in which the bubble runs its
// goroutines is not. Seed 7 is the closest, at 98.1%: the regression
// floor, 11, leaves it that margin. Seeds 5, 7 and 11 settle first on
// the estimator's own window, 1.2–1.4 s long; before the fit was weighed
// between fits too, only their probes' ramp brought them to 47–50 per s
// within the measured stretch (83–84%). Every seed must end settled, and
// no seed throttles more than 1%: a probe that passed on a sliding log
// once sent the learner back to slow start, whose burst threw 2–4.5% of
// a seed's requests at throttles.
func TestFitPacesSlidingLog(t *testing.T) {
	const seeds, floor = 12, 11
	q := fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 50, Window: time.Second}
	good := 0
	for seed := range uint64(seeds) {
		s, sn := seededRun(t, q, simLatency, seed+1, 15*time.Second, 30*time.Second)
		if sn.Phase != PhaseSettled {
			t.Errorf("seed %d: ends %v, never settled", seed+1, sn.Phase)
		}
		ok := s.goodput() >= 0.98 && s.throttledShare() <= 0.01
		if ok {
			good++
		}
		t.Logf("seed %d: %v %d per %v, paced by the fit %v, fit %v; goodput %.1f%%, throttled %.2f%%; good %v",
			seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, 100*s.goodput(), 100*s.throttledShare(), ok)
		if s.throttledShare() > 0.01 {
			t.Errorf("seed %d: %.2f%% throttled from 15 s, want ≤ 1%%: a probe that passed sent a burst", seed+1, 100*s.throttledShare())
		}
	}
	if good < floor {
		t.Errorf("%d of %d seeds good, floor %d", good, seeds, floor)
	}
}

// TestFitFollowsSlidingWhileMeasuring: against a sliding log of 50 in any
// 1 s, answers 1–3 ms late, 32 callers from a cold start on 12 seeds of
// the fake, 8 s in: how many seeds the fit's log paces. While the
// estimator measures, its rule is a guess, and each window it sends L̂+1
// at once, which a log holds against the pace for a whole window after.
// Required to explain the answers better than that guess by more than
// chance, the fit's log, named twice, paced 6 seeds of 12; followed where
// it explains them better than the best rule of another kind (the guard an
// off-grid log has always had), 8, in each of 5 runs. Under -race with the
// CPUs busy, the order in which the bubble runs its goroutines moves a
// seed: 7 or 8 over 20 runs (before, 5 or 6 over 12). With the fit's
// window opened on first use, which counts a steady stream as the log
// does, the fits may name the one and then the other: taken as naming
// different rules, they paced 6 or 7 seeds over 24 runs under -race (7 or
// 8 at 958560c: 22 runs at 8); taken as naming the same one, 7 to 9 (16
// at 9, 2 at 7). The regression floor, 7, leaves that margin. A seed that misses
// measures on: on seed 1 the estimator's bursts come about 2 s apart, and
// a record of them fits a fixed window of 50 per 2 s as well as the log,
// or better.
func TestFitFollowsSlidingWhileMeasuring(t *testing.T) {
	const seeds, floor = 12, 7
	q := fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 50, Window: time.Second}
	quick := fakecloud.Faults{LatencyRate: 1, Latency: time.Millisecond, LatencyJitter: 2 * time.Millisecond}
	paced := 0
	for seed := range uint64(seeds) {
		s, sn := seededRun(t, q, quick, seed+1, 4*time.Second, 8*time.Second)
		if sn.PacedByFit {
			paced++
		}
		t.Logf("seed %d: %v %d per %v, paced by the fit %v, fit %v, then %v; goodput %.1f%%, throttled %.2f%% from 4 s",
			seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, sn.Fit.RunnerUp, 100*s.goodput(), 100*s.throttledShare())
	}
	if paced < floor {
		t.Errorf("%d of %d seeds paced by the fit at 8 s, floor %d", paced, seeds, floor)
	}
}

// TestFitPacesOffGridSliding: against sliding logs of 27 in any 1.4 s
// and any 3.3 s, lengths off the grid, 32 callers from a cold start on 8
// seeds each (answers 10–40 ms late), measured from 20 windows to 60.
// The estimator's own bounds stay loose on a sliding log (its refills
// follow our sends), and it snapped them to a round length, or the fit
// named a fixed window of 27 per 1 s and paced by it: on 4 seeds a
// length, 4 of the 8 runs threw 6.5–12.6% of their requests at
// throttles, and 2 more ran at 83–89% of the quota. The fit now takes a
// sliding log's length from the successes (the longest they allow) and
// paces by it.
//
// The order in which the bubble runs its goroutines, which the seeds do
// not fix, sometimes still lets the fit name a fixed window (27 per 1 s,
// 39 per 5 s) for good, or a bucket with bursts. Under -race beside two
// other race-built test binaries, over 20 runs, 11–15 of the 16 runs
// reached ≥ 94% of the quota (mean 12.7; 3.3 s seeds 6 and 7 failed in
// 20 and 19 of them, 1.4 s seed 1 in 14, 3.3 s seeds 1 and 5 in 6, the
// rest at most once), and none throttled more than 5%; 12–14 since a
// fixed window off the grid is paced as a log. A clean clone's
// CI, loaded, had 4 of the first 4 seeds' 8 runs fail, two of them on
// seeds that fail at most once here, and so broke the floor of 5 those
// 8 runs had. The regression floors leave that spread its margin: at
// least 10 runs good, at most 3 above 5% throttled.
func TestFitPacesOffGridSliding(t *testing.T) {
	const goodFloor, overCeiling = 10, 3
	good, over, runs := 0, 0, 0
	for _, w := range []time.Duration{1400 * time.Millisecond, 3300 * time.Millisecond} {
		q := fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 27, Window: w}
		for seed := range uint64(8) {
			s, sn := seededRun(t, q, simLatency, seed+1, 20*w, 60*w)
			runs++
			ok := s.goodput() >= 0.94
			if ok {
				good++
			}
			if s.throttledShare() > 0.05 {
				over++
			}
			t.Logf("%v, seed %d: %v %d per %v, paced by the fit %v, fit %v; goodput %.1f%%, throttled %.2f%%; good %v",
				w, seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, 100*s.goodput(), 100*s.throttledShare(), ok)
		}
	}
	if good < goodFloor {
		t.Errorf("%d of %d runs good (≥ 94%% of the quota), floor %d", good, runs, goodFloor)
	}
	if over > overCeiling {
		t.Errorf("%d of %d runs throttled more than 5%%, at most %d: paced faster than the log allows", over, runs, overCeiling)
	}
}

// TestSettlesOnInstantAnswers: against a fixed window of 50/1s whose
// answers come at the instant of sending (an in-memory server; on a
// clock as coarse as the bubble's, every request of a refill's burst
// arrives at the refill's instant), 32 callers from a cold start settle
// at 50 per 1 s and get ≥ 95% of the quota from 5 s to 30 s. Requests
// that arrived at the instant the measured window began were left out
// of its count, which then read 1: the learner measured at 1 per window
// and, with nothing throttled, never learned otherwise (4.5% goodput).
func TestSettlesOnInstantAnswers(t *testing.T) {
	s, sn := seededRun(t, fakecloud.Quota{Limit: 50, Window: time.Second}, fakecloud.Faults{}, 1, 5*time.Second, 30*time.Second)
	t.Logf("%v %d per %v; goodput %.1f%%, throttled %.2f%%", sn.Phase, sn.LearnedLimit, sn.LearnedWindow, 100*s.goodput(), 100*s.throttledShare())
	if sn.Phase != PhaseSettled || sn.LearnedLimit != 50 || sn.LearnedWindow != time.Second {
		t.Errorf("ends %v at %d per %v, want settled at 50 per 1s", sn.Phase, sn.LearnedLimit, sn.LearnedWindow)
	}
	if g := s.goodput(); g < 0.95 {
		t.Errorf("goodput %.1f%% from 5 s to 30 s, want ≥ 95%%", 100*g)
	}
}

// TestFitPacesTokenBucket: against a token bucket of 30 a second, 60
// deep, answering in 2 ms (the matrix's cell), 32 callers from a cold
// start on 12 seeds of the fake, measured from 20 s to 30 s. The
// estimator alone cannot name a bucket: it paces about 1 per 33 ms, and
// its probes' ramps spend the depth in bursts (the matrix's cell threw
// 10.6% of its settled requests at throttles, median of 8 runs). Where
// the record prefers the bucket the fit names, over our rule and over
// the best of every other kind, the pacer takes it, 1% under its rate,
// and probes above it (see adoptBucket). A seed is good with ≤ 1%
// throttled. Over 20 runs under -race, 9–12 seeds were good and 6–11
// ended paced by the fit (the fake's draws are seeded, the order in
// which the bubble runs goroutines is not); a seed the fit took late,
// at 25 s, throttled 10% before, and a clean clone's CI, loaded, had 4
// such of the first 8. The regression floor, 4, leaves that spread its
// margin. Goodput is logged, not asserted: the fit's rate comes out
// 3–10% under the bucket's, and the probes climb it back a step at a
// time (the goal is 98%, #35).
func TestFitPacesTokenBucket(t *testing.T) {
	const seeds, floor = 12, 4
	q := fakecloud.Quota{Policy: fakecloud.TokenBucket, Limit: 30, Window: time.Second, Burst: 60}
	fast := fakecloud.Faults{LatencyRate: 1, Latency: 2 * time.Millisecond}
	good, byFit := 0, 0
	for seed := range uint64(seeds) {
		s, sn := seededRun(t, q, fast, seed+1, 20*time.Second, 30*time.Second)
		ok := s.throttledShare() <= 0.01
		if ok {
			good++
		}
		if sn.PacedByFit {
			byFit++
		}
		t.Logf("seed %d: %v %d per %v, paced by the fit %v, fit %v; goodput %.1f%%, throttled %.2f%%; good %v",
			seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, 100*s.goodput(), 100*s.throttledShare(), ok)
	}
	if good < floor {
		t.Errorf("%d of %d seeds good, floor %d", good, seeds, floor)
	}
	if byFit == 0 {
		t.Error("no seed paced by the fit")
	}
}

// TestFitFollowsFall: a sliding log of 20 per 10 s, paced by the fit,
// falls to 8 per 10 s at 2 min; 8 callers from a cold start, on 4 seeds of
// the fake (answers 10–40 ms late), measured from 3 min to 6 min. A tenant
// that sends 2 a second keeps more than 4 min of answers: a fit of them
// all, most from before the fall, still named 20 per 10 s, and paced by
// the fit the estimator leaves a throttle to it (a sliding log's count
// does not show the fall). Before the change point, every seed went on at
// 20 per 10 s to the end: 38–60% of its requests throttled, 72–94% of the
// quota. Now the fit cuts its record where the newest runs of throttles
// began that 20 does not explain, and the pacer takes 8 per 10 s at once:
// 3 seeds of 4 reach ≥ 97.9% of the quota with 2.1% throttled (the probes'
// cost; 98.6–99.3% and 0.7–1.4% at f83dbd1, where a slow tenant's failed
// probes space out). Seed 1 is the miss: it settled on a fixed window of
// 20 per 15 s before the fall, and reaches 84% with 8.3% throttled (89.6%
// and 3.7% since the record takes tied answers successes first). The
// regression floors leave a seed's margin for the order in which the
// bubble runs its goroutines: at least 2 seeds good (≥ 95%, ≤ 3%
// throttled), and none throttled above 20%.
func TestFitFollowsFall(t *testing.T) {
	const seeds, floor, ceiling = 4, 2, 0.20
	good := 0
	for seed := range uint64(seeds) {
		q := fakecloud.Quota{Policy: fakecloud.SlidingWindow, Limit: 20, Window: 10 * time.Second}
		fell := q
		fell.Limit = 8
		cfg := fakecloud.Config{Seed: seed + 1, Quotas: []fakecloud.Quota{q}, Faults: simLatency,
			Phases: []fakecloud.Phase{{At: 2 * time.Minute, Quotas: []fakecloud.Quota{fell}}}}
		s, sn := simRun(t, cfg, 8, 3*time.Minute, 6*time.Minute)
		ok := s.goodput() >= 0.95 && s.throttledShare() <= 0.03
		if ok {
			good++
		}
		t.Logf("seed %d: %v %d per %v, paced by the fit %v, fit %v; goodput %.1f%%, throttled %.2f%%; good %v",
			seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, 100*s.goodput(), 100*s.throttledShare(), ok)
		if s.throttledShare() > ceiling {
			t.Errorf("seed %d: %.1f%% throttled after the fall, want ≤ %.0f%%: paced at the quota before it", seed+1, 100*s.throttledShare(), 100*ceiling)
		}
	}
	if good < floor {
		t.Errorf("%d of %d seeds good, floor %d", good, seeds, floor)
	}
}

// TestFollowedLogShownWrong: a tenant paces by a sliding log of 20 per
// 348 ms the fit named (as a real-time test's fit did from a record its
// starved CPU skewed), against a fixed window of 20 per 500 ms, off the
// grid; 16 callers, 8 seeds of the fake, 30 s. The record soon prefers a
// fixed window of about 20 per 500 ms to the rule in force, but the
// pacer took only fixed windows on the grid, whose phases the estimator
// keeps, and the estimator, following the fit's rule, cut L̂ to 19 and no
// further: 15–17% of the requests were throttled from 10 s to 30 s on
// every seed. A fixed window off the grid is now paced as the sliding log
// of its limit per its window, the most restrictive rule near it: 0.8–
// 1.6% throttled from 10 s to 30 s (one run of the 8 seeds). A seed that
// throttles more than 4% there fails.
func TestFollowedLogShownWrong(t *testing.T) {
	const limit, window = 20, 500 * time.Millisecond
	for seed := range uint64(8) {
		synctest.Test(t, func(t *testing.T) {
			cloud := seededFixedCloud(seed+1, limit, window)
			lim := New(Config{})
			now := time.Now().UnixNano()
			lim.mu.Lock()
			e := &estimator{}
			e.adoptSliding(limit, int64(348*time.Millisecond), 0.5)
			e.schedule(now, lim.seq.Load()+1, lim.params().maxPause, false)
			lim.s.e = e
			lim.recompute(now)
			lim.mu.Unlock()
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 16)
			rate := float64(limit) / window.Seconds()
			m := simMeter{cloud, "AK1"}
			first := measure(m, start, 0, 10*time.Second, "first", rate)
			then := measure(m, start, 10*time.Second, 30*time.Second-time.Millisecond, "then", rate)
			sn := lim.Snapshot()
			t.Logf("seed %d: to 10 s %.1f%% throttled; from 10 s to 30 s goodput %.1f%%, throttled %.1f%%; paced by %v, fit %v",
				seed+1, 100*first.throttledShare(), 100*then.goodput(), 100*then.throttledShare(), sn.PacedBy, sn.Fit.Best)
			if then.throttledShare() > 0.04 {
				t.Errorf("seed %d: %.1f%% throttled from 10 s to 30 s, want ≤ 4%%: the rule in force stayed", seed+1, 100*then.throttledShare())
			}
			wg.Wait()
		})
	}
}

// TestFitPacesFirstUseWindow: against fixed windows opened by the first
// request after the last one ended (a counter made on first use, a Redis
// INCR with an EXPIRE), 8 per 2 s and 50 per 1 s, 32 callers from a cold
// start on 8 seeds each (answers 10–40 ms late), measured from 10 windows
// to 40. Such windows follow our own sends: the fit, which had no member
// for them, named a fixed window on the grid, a sliding log, a token
// bucket or a cap. It now names the server's rule (its limit within one,
// its length within 2%) first in 7 of the 16 runs and second in 5 more
// (a sliding log, which counts a steady stream alike, is named first in
// 4 of the rest), and where it names it first, the pacer follows it as a
// log of its count per its length. 12 runs reach ≥ 95% of the quota with
// ≤ 1% throttled, 13 before: 8 per 2 s seed 6 now follows the first-use
// window and throws 1.7% at throttles (0.8% before, paced by a bucket the
// fit named). The same in each of 4 runs, 3 of them under -race. The
// regression floors leave a margin: the fit names it in 9 runs, first in
// 6, and 11 runs are good. (Seed 7 of 8 per 2 s fits a cap of 7 in
// flight, and throws 7.4% at throttles, before and since.)
func TestFitPacesFirstUseWindow(t *testing.T) {
	const namedFloor, bestFloor, goodFloor = 9, 6, 11
	named, best, good := 0, 0, 0
	for _, q := range []fakecloud.Quota{
		{Limit: 8, Window: 2 * time.Second, Align: fakecloud.AlignFirst},
		{Limit: 50, Window: time.Second, Align: fakecloud.AlignFirst},
	} {
		is := func(r fit.Rule) bool { // the server's rule: its limit within one, its window within 2%
			d := r.Window - q.Window
			return r.Kind == fit.FirstUse && r.Limit >= int64(q.Limit)-1 && r.Limit <= int64(q.Limit)+1 && 50*max(d, -d) <= q.Window
		}
		for seed := range uint64(8) {
			s, sn := seededRun(t, q, simLatency, seed+1, 10*q.Window, 40*q.Window)
			if is(sn.Fit.Best) {
				best++
			}
			if is(sn.Fit.Best) || is(sn.Fit.RunnerUp) {
				named++
			}
			if s.goodput() >= 0.95 && s.throttledShare() <= 0.01 {
				good++
			}
			t.Logf("%d/%v, seed %d: %v %d per %v, paced by the fit %v, fit %v, then %v; goodput %.1f%%, throttled %.2f%%",
				q.Limit, q.Window, seed+1, sn.Phase, sn.LearnedLimit, sn.LearnedWindow, sn.PacedByFit, sn.Fit.Best, sn.Fit.RunnerUp, 100*s.goodput(), 100*s.throttledShare())
		}
	}
	t.Logf("the fit named the server's rule in %d runs, first in %d; %d runs good", named, best, good)
	if named < namedFloor || best < bestFloor {
		t.Errorf("the fit named the server's rule in %d runs, first in %d; floors %d and %d", named, best, namedFloor, bestFloor)
	}
	if good < goodFloor {
		t.Errorf("%d runs reached ≥ 95%% of the quota with ≤ 1%% throttled, floor %d", good, goodFloor)
	}
}
