package adaptive

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-go/tollgate/fit"
	"github.com/tollgate-go/tollgate/internal/fakecloud"
	"github.com/tollgate-go/tollgate/quota"
)

// The learner's model, held against fakecloud in memory with no headers:
// each property the estimator's doc (estimate.go) states, on fixed
// windows of any length.

// modelLatency is the fake's answer time in these tests: 2 ms, as in the
// shape matrix.
var modelLatency = fakecloud.Faults{LatencyRate: 1, Latency: 2 * time.Millisecond}

// fixedCloud is a fake gateway with a fixed window of limit per win,
// stepping to step per win at stepAt if step > 0.
func fixedCloud(limit int, win time.Duration, step int, stepAt time.Duration) *fakecloud.Cloud {
	q := func(l int) fakecloud.Quota {
		return fakecloud.Quota{API: simAction, Limit: l, Window: win}
	}
	cfg := fakecloud.Config{Quotas: []fakecloud.Quota{q(limit)}, Faults: modelLatency, ThrottleStatus: 400}
	if step > 0 {
		cfg.Phases = []fakecloud.Phase{{At: stepAt, Quotas: []fakecloud.Quota{q(step)}}}
	}
	return fakecloud.New(cfg)
}

// drive runs workers callers through a fresh Limiter to rt for d of the
// bubble's clock, sampling its Snapshot every period (never if 0), and
// returns the Limiter and the samples once every caller has stopped.
func drive(t *testing.T, rt http.RoundTripper, d time.Duration, workers int, period time.Duration) (*Limiter, []Snapshot) {
	t.Helper()
	lim := New(Config{})
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var wg sync.WaitGroup
	var snaps []Snapshot // written by the sampler alone until wg.Wait
	if period > 0 {
		wg.Go(func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					snaps = append(snaps, lim.Snapshot())
				}
			}
		})
	}
	simClient(ctx, t, &wg, lim, rt, "AK1", workers)
	wg.Wait()
	return lim, snaps
}

// TestLearnsFixedWindows: on fixed windows of 1 s, 3 s, 10 s and 60 s,
// 32 callers from a cold start; after twelve windows the learner is
// settled, its limit exact and its window within 5% of the truth. Off
// the grid (3 s), its pace is within 4% of the quota's rate, a
// REGRESSION FLOOR: the fit sometimes names a length the refills allow
// that is 12% long (ties go to the longest, the most restrictive), paced
// as a sliding log, and the probes then ramp the count to the rate (135
// per 3.358 s in 11 of 300 runs of this case with a Snapshot sampled
// every 500 ms beside it), which failed the exact limit in 2 of 100 runs;
// and the estimator settles, after six windows measured, at the upper
// bound its refills left, 120 per 3.042 s (1.4% slow) before the seek
// probed the grid's boundaries, 120 per 3.095 s (3.1% slow) since, in
// every run, with and without -race. The refills it finds later narrow
// that (TestOffGridWindowNarrows), and the matrix's 120 per 3 s settled
// at 99.7% of the quota since, 97.4% before.
func TestLearnsFixedWindows(t *testing.T) {
	for _, c := range []struct {
		limit int
		win   time.Duration
	}{{50, time.Second}, {120, 3 * time.Second}, {200, 10 * time.Second}, {600, time.Minute}} {
		t.Run(fmt.Sprintf("%d per %v", c.limit, c.win), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim, _ := drive(t, fixedCloud(c.limit, c.win, 0, 0).RoundTripper(), 12*c.win, 32, 0)
				sn := lim.Snapshot()
				t.Logf("learned %d per %v in (%v, %v]", sn.LearnedLimit, sn.LearnedWindow, sn.WindowLow, sn.WindowHigh)
				if sn.Phase != PhaseSettled || sn.Source != SourceLearned {
					t.Fatalf("phase %v, source %v; want settled, learned", sn.Phase, sn.Source)
				}
				if _, ok := fit.RoundWindow(c.win, c.win); !ok {
					rate := float64(sn.LearnedLimit) / sn.LearnedWindow.Seconds()
					if e := math.Abs(rate*c.win.Seconds()/float64(c.limit) - 1); e > 0.04 {
						t.Errorf("learned %.3g/s, want %.3g/s within 4%%", rate, float64(c.limit)/c.win.Seconds())
					}
					return
				}
				if sn.LearnedLimit != int64(c.limit) {
					t.Errorf("learned limit %d, want %d", sn.LearnedLimit, c.limit)
				}
				if e := math.Abs(sn.LearnedWindow.Seconds()/c.win.Seconds() - 1); e > 0.05 {
					t.Errorf("learned window %v, want %v within 5%%", sn.LearnedWindow, c.win)
				}
			})
		})
	}
}

// TestSlowStart: a fresh tenant with 256 callers waiting sends at most 4
// requests before its first answer, and never lets a herd through at once.
func TestSlowStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cloud := fixedCloud(50, time.Second, 0, 0)
		var sent, answered atomic.Int64
		var most atomic.Int64 // requests sent when the first answer came
		rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent.Add(1)
			resp, err := cloud.RoundTripper().RoundTrip(req)
			if answered.Add(1) == 1 {
				// Before its ticket is done: nothing more can go yet.
				most.Store(sent.Load())
			}
			return resp, err
		})
		drive(t, rt, 2*time.Second, 256, 0)
		if got := most.Load(); got > initialWindow || got == 0 {
			t.Errorf("%d requests sent before the first answer, want 1 to %d", got, initialWindow)
		}
		if sent.Load() < 100 {
			t.Errorf("only %d requests in 2 s: slow start never grew", sent.Load())
		}
	})
}

// TestMeasuredBudgetHolds: a measured window's budget, L̂ and one more,
// holds until the window could end. Before two refills bound W, the
// window spent at the seek's first throttle bounds it from below: it
// lasted until the refill the seek found. Against a fixed window of 200
// per 10 s, 32 callers from a cold start on 8 seeds of the fake, answered
// in 2 ms and in 10–40 ms, the server's throttles in the first 30 s (slow
// start, the seek, the first measured windows). When the budget held for
// four round trips only, the callers kept sending once they had passed,
// before the throttle of the one above L̂ was heard (about 24 more, in the
// first window measured): 52–71 throttles a run, a mean of 60 in each of
// two runs. Held past the stretch the window before outlasted: 33–48, a
// mean of 38–41 in each of seven runs, five of them under -race (the
// order in which the bubble runs its goroutines moves a seed). Since a
// measured window's budget grows by steps (15ce553), which trades a few
// of these throttles for windows that find a raise: means of 43.1–48.0
// in 25 runs under -race (45.4 on average), and 48.8 once in CI. The
// REGRESSION FLOOR, a mean of 53, leaves that spread a margin of four,
// and the old hold, at 60, fails it.
func TestMeasuredBudgetHolds(t *testing.T) {
	const seeds, floor = 8, 53.0
	q := fakecloud.Quota{Limit: 200, Window: 10 * time.Second}
	var throttled []float64
	for seed := range uint64(seeds) {
		for _, f := range []fakecloud.Faults{modelLatency, simLatency} {
			s, _ := simRun(t, fakecloud.Config{Seed: seed + 1, Quotas: []fakecloud.Quota{q}, Faults: f}, 32, 0, 30*time.Second)
			throttled = append(throttled, float64(s.throttled))
		}
	}
	mean := 0.0
	for _, x := range throttled {
		mean += x / float64(len(throttled))
	}
	t.Logf("throttled in the first 30 s: %v, mean %.1f", throttled, mean)
	if mean > floor {
		t.Errorf("a mean of %.1f throttled in the first 30 s, want ≤ %.0f: the measured budget let more out before the window could end", mean, floor)
	}
}

// TestThrottlesNeverCutBelowConfirmed: on an unchanged quota, whatever
// throttles come, the learned limit never goes below the count the server
// confirmed (its quota) once the learner has settled.
func TestThrottlesNeverCutBelowConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 50
		_, samples := drive(t, fixedCloud(limit, time.Second, 0, 0).RoundTripper(), 30*time.Second, 32, 50*time.Millisecond)
		settled := false
		for i, sn := range samples {
			settled = settled || sn.Phase == PhaseSettled
			if settled && sn.LearnedLimit < limit {
				t.Fatalf("sample %d: learned limit %d below the confirmed %d: %+v", i, sn.LearnedLimit, limit, sn)
			}
		}
		if !settled {
			t.Fatal("never settled")
		}
	})
}

// TestFollowsQuotaSteps: a fixed 1 s window of 50 steps down to 20 (40%),
// and one of 50 up to 80 (160%). The estimate follows a fall within three
// windows of it (and the answer that shows it: 50 ms). A raise is the
// issue's goal of three windows from the first probe above the old limit;
// the model takes two windows to probe (the phase known too loosely to
// probe one) and, paced at twice the limit, one or two for the window its
// count measures and its refill: three windows. Where one of that
// window's successes arrived where its start is uncertain, the count
// leaves it out (a count too high would throttle every window), reads 79,
// and the next probe, a window on, finds the last one: six windows. Over
// 12 runs, 10 took three windows and 2 six, as the bubble ordered its
// goroutines; slow start again, before, three on 6 runs of 6. The test
// holds that REGRESSION FLOOR, six windows.
func TestFollowsQuotaSteps(t *testing.T) {
	const stepAt = 20 * time.Second
	for _, c := range []struct {
		name   string
		to     int
		within time.Duration
	}{{"down to 40%", 20, 3*time.Second + 50*time.Millisecond}, {"up to 160%", 80, 6*time.Second + 50*time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, samples := drive(t, fixedCloud(50, time.Second, c.to, stepAt).RoundTripper(), stepAt+30*time.Second, 32, 10*time.Millisecond)
				from := stepAt // when the learner may first know
				var followed time.Duration
				for i, sn := range samples {
					at := time.Duration(i+1) * 10 * time.Millisecond
					if at <= stepAt {
						continue
					}
					if c.to > 50 && from == stepAt && sn.Rate > 50*1.001 {
						from = at // the first probe above the old limit
					}
					if sn.Phase == PhaseSettled && sn.LearnedLimit == int64(c.to) {
						followed = at
						break
					}
				}
				if followed == 0 {
					t.Fatalf("the estimate never followed the step to %d", c.to)
				}
				t.Logf("followed at %v, %v after the step, %v after %v", followed, followed-stepAt, followed-from, from)
				if d := followed - from; d > c.within {
					t.Errorf("followed %v after %v, want within %v", d, from, c.within)
				}
			})
		})
	}
}

// TestRaiseFoundPaced: a fixed 1 s window of 20 steps up to 40, the
// example's quota, with 16 callers answered in 20 ± 10 ms. The probe above
// 20 passes, and the learner ramps, paced: the pace doubles, and the
// first window that spends the quota says its count, the rest of it
// paused (see estimator.raise), so only what the pace sends in a round
// trip before the throttle is heard is throttled. Slow start again, as
// before, threw 20-24 requests at throttles in the 20 s after the step
// (median 21); unpaced, earlier still, most of 16 in flight at each
// window's end. Over 8 seeds of the fake's jitter: 3-8 throttled (median
// 5.5, the same on 3 runs), and every seed settled at 40. The REGRESSION
// FLOORS: a median of at most 10 throttled, and 7 seeds of 8 settled at
// 40 (a count that leaves out a success where the window's start is
// uncertain reads one low until the next probe finds it, and halving the
// ramp's first step left one seed at 39).
func TestRaiseFoundPaced(t *testing.T) {
	throttled, followed := stepRuns(t, 20, 40, 20*time.Second, 8)
	if m := median(throttled); m > 10 {
		t.Errorf("median %v throttled in the 20 s after the step, want ≤ 10", m)
	}
	if followed < 7 {
		t.Errorf("%d seeds of 8 settled at 40, want ≥ 7", followed)
	}
}

// TestFallFollowedSettled: a fixed 1 s window of 40 falls to 20, as in the
// example, with 16 callers answered in 20 ± 10 ms. Settled, the learner
// takes the count of the window the throttle surely arrived in as L̂,
// however loosely the refills place the window's start (a count from that
// stretch, too high, cuts L̂ too little, and the next window cuts it
// again). It used to ask for the start placed within an eighth of the
// window too: placed within 130-180 ms, the fall sent the learner back to
// measuring, L̂+1 at once, twice, about 15 throttles each. Over 8 seeds,
// in the 5 s after the fall: 3 seeds threw 33-34 requests at throttles
// before, the others 3-5; then every seed 3-5. A few seeds end at 21
// (the count of the first window after the fall read one high, and the
// throttle a window that it costs since is taken for a stray). Now over
// 32 seeds, since the seek probes the windows' boundary (see
// estimator.boundary), which moves each seed's timing: 2-8 throttled
// (mean 5.7), 29 settled at 20; before it, 3-9 (mean 5.2) and 30 (on 8
// seeds, 6 and 7). The 3 seeds that ended at 21 did so because at 21
// per 1 s the 21st came last in each window, its throttle fell where the
// next window's start is uncertain, and it was taken for a window's end
// with L̂ standing; it now ends the window counted, at 20 (see
// estimator.throttle): 2-7 throttled (mean 5.5), all 32 settled at 20,
// alike in 3 runs and under -race. The REGRESSION FLOORS: at most 12
// throttled on any seed, and 31 of 32 settled at 20 (a seed's margin for
// the order in which the bubble runs its goroutines).
func TestFallFollowedSettled(t *testing.T) {
	const seeds, floor = 32, 31
	throttled, followed := stepRuns(t, 40, 20, 5*time.Second, seeds)
	if m := slices.Max(throttled); m > 12 {
		t.Errorf("a seed threw %v requests at throttles in the 5 s after the fall, want ≤ 12", m)
	}
	if followed < floor {
		t.Errorf("%d seeds of %d settled at 20, want ≥ %d", followed, seeds, floor)
	}
}

// stepRuns runs 16 callers against a fixed 1 s window of from that steps
// to to at 15 s, answered in 20 ± 10 ms, on seeds seeds of the fake's
// jitter, for after past the step. It returns each seed's throttles in that
// stretch, and how many seeds ended settled at to.
func stepRuns(t *testing.T, from, to int, after time.Duration, seeds int) (throttled []float64, followed int) {
	t.Helper()
	const stepAt = 15 * time.Second
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed ", seed+1), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := func(l int) []fakecloud.Quota {
					return []fakecloud.Quota{{API: simAction, Limit: l, Window: time.Second}}
				}
				cloud := fakecloud.New(fakecloud.Config{
					Seed:           seed + 1,
					Quotas:         q(from),
					Phases:         []fakecloud.Phase{{At: stepAt, Quotas: q(to)}},
					Faults:         fakecloud.Faults{LatencyRate: 1, Latency: 20 * time.Millisecond, LatencyJitter: 10 * time.Millisecond},
					ThrottleStatus: 400,
				})
				lim := New(Config{})
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), stepAt+after)
				defer cancel()
				var wg sync.WaitGroup
				simClient(ctx, t, &wg, lim, cloud.RoundTripper(), "AK1", 16)
				s := measure(simMeter{cloud, "AK1"}, start, stepAt, stepAt+after-time.Millisecond, "after the step", float64(to))
				sn := lim.Snapshot()
				wg.Wait()
				t.Logf("%d throttled in the %v after the step; ends %v at %d per %v", s.throttled, after, sn.Phase, sn.LearnedLimit, sn.LearnedWindow)
				throttled = append(throttled, float64(s.throttled))
				if sn.Phase == PhaseSettled && sn.LearnedLimit == int64(to) {
					followed++
				}
			})
		})
	}
	return throttled, followed
}

// median returns the median of xs, the lower middle for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// TestNoProbeWhileIdle: a settled learner whose callers do not wait on it
// never sends more than its limit per window, however long it runs.
func TestNoProbeWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 20
		cloud := fixedCloud(limit, time.Second, 0, 0)
		lim, _ := drive(t, cloud.RoundTripper(), 10*time.Second, 32, 0)
		sn := lim.Snapshot()
		if sn.Phase != PhaseSettled || sn.LearnedLimit != limit {
			t.Fatalf("not settled at the quota: %+v", sn)
		}
		// Now one caller, at half the quota: never held back.
		m := simMeter{cloud, "AK1"}
		_, th0 := m.counts()
		var parser quota.Parser
		for range 600 {
			time.Sleep(100 * time.Millisecond)
			tk, err := lim.Wait(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if tk.Waited() {
				t.Fatalf("a caller at half the quota waited: %+v", lim.Snapshot())
			}
			req, err := fakecloud.NewRequest(t.Context(), simEndpoint, "AK1", simAction)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cloud.RoundTripper().RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			tk.Done(parser.Parse(resp, time.Now()))
			resp.Body.Close()
		}
		if _, th1 := m.counts(); th1 != th0 {
			t.Errorf("%d throttles in a minute idle: the learner probed without demand", th1-th0)
		}
		if got := lim.Snapshot(); got.LearnedLimit != limit || got.Rate > sn.Rate {
			t.Errorf("grew while idle: %+v, was %+v", got, sn)
		}
	})
}

// roundTripFunc is an http.RoundTripper in a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestOffGridWindowNarrows: against a fixed window off the grid, 120 per
// 3 s, the bounds on Ŵ hold no round length, and the learner paces per
// their upper end, a little slower than the server's windows, whose
// placement it drifts from until a probe above L̂ fails on the drift. Such
// a throttle is a window's end like any settled one: its refill, sought,
// places the windows anew and narrows the bounds. Before, the learner
// paused to the predicted end and kept the bounds that settling left it
// (2.958–3.042 s), and each failed probe cost up to half a second of
// sending. Measured from 45 s to 90 s with 32 callers, over 20 runs:
// bounds 2.995–3.004 s at the end, goodput 99.6–99.7%, 0.3% throttled
// (before: 2.958–3.042 s, 92.8%, 0.3%). Since the seek probes the grid's
// boundaries (see TestSeekProbesGrid), on 12 seeds of the fake: bounds
// 2.998–3.002 s, goodput 98.7%, 0.3% throttled on each (the measured
// windows' refills differ, and so does the settled pace's drift). The
// test asserts the bounds narrowed to within 1% of 3 s, and the
// REGRESSION FLOOR of 98% goodput.
func TestOffGridWindowNarrows(t *testing.T) {
	s, sn := seededRun(t, fakecloud.Quota{Limit: 120, Window: 3 * time.Second}, modelLatency, 0, 45*time.Second, 90*time.Second)
	t.Logf("bounds %v–%v, Ŵ %v, L̂ %d; goodput %.1f%%, %.1f%% throttled", sn.WindowLow, sn.WindowHigh, sn.LearnedWindow, sn.LearnedLimit, 100*s.goodput(), 100*s.throttledShare())
	if sn.WindowLow < 2970*time.Millisecond || sn.WindowHigh > 3030*time.Millisecond {
		t.Errorf("bounds on Ŵ %v–%v, want within 1%% of 3s", sn.WindowLow, sn.WindowHigh)
	}
	if g := s.goodput(); g < 0.98 {
		t.Errorf("goodput %.1f%%, want ≥ 98%%", 100*g)
	}
}
