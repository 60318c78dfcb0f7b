package adaptive

import (
	"container/heap"
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/quota"
)

// fixedServer counts admissions in fixed one-second windows aligned to t0,
// like Alibaba's per-second counters, with a limit that may change.
type fixedServer struct {
	limit  func(at time.Time) int
	window int64 // index of the current window
	count  int
}

// newFixedServer returns a fixedServer whose limit is before until at (from
// t0), and after from then on.
func newFixedServer(before, after int, at time.Duration) *fixedServer {
	return &fixedServer{limit: func(t time.Time) int {
		if t.Before(t0.Add(at)) {
			return before
		}
		return after
	}, window: -1}
}

// admit reports whether a request arriving at at is within the quota.
func (s *fixedServer) admit(at time.Time) bool {
	w := int64(at.Sub(t0) / time.Second)
	if w != s.window {
		s.window, s.count = w, 0
	}
	s.count++
	return s.count <= s.limit(at)
}

// answer is a Ticket's answer, due at a time.
type answer struct {
	at  time.Time
	tk  Ticket
	obs quota.Observation
}

type answers []answer

func (a answers) Len() int { return len(a) }

func (a answers) Less(i, j int) bool { return a[i].at.Before(a[j].at) }

func (a answers) Swap(i, j int) { a[i], a[j] = a[j], a[i] }

func (a *answers) Push(x any) { *a = append(*a, x.(answer)) }

func (a *answers) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// simTally is what the server did over an interval.
type simTally struct{ ok, throttled int }

// simulate drives l with 32 workers against srv for d, on a clock stepped
// by hand every millisecond: a worker sends as soon as l admits it; the
// request reaches the server after half the round trip, and its answer
// comes back after the whole one. It returns what the server did in each
// second.
func simulate(l *Limiter, srv *fixedServer, d, rtt time.Duration) []simTally {
	return simulateWorkers(l, srv, d, rtt, 32)
}

// simulateWorkers is simulate with the given number of workers.
func simulateWorkers(l *Limiter, srv *fixedServer, d, rtt time.Duration, workers int) []simTally {
	tally := make([]simTally, int(d/time.Second)+1)
	var pending answers
	for now := t0; now.Before(t0.Add(d)); now = now.Add(time.Millisecond) {
		for len(pending) > 0 && !pending[0].at.After(now) {
			a := heap.Pop(&pending).(answer)
			a.tk.Done(a.obs)
		}
		for len(pending) < workers {
			tk, ok := l.ReserveAt(now)
			if !ok {
				break
			}
			arrive := now.Add(rtt / 2)
			sec := int(arrive.Sub(t0) / time.Second)
			obs := quota.Observation{At: now.Add(rtt), Status: 200}
			if srv.admit(arrive) {
				tally[sec].ok++
			} else {
				tally[sec].throttled++
				obs.Status, obs.Throttled = 429, true
			}
			heap.Push(&pending, answer{at: now.Add(rtt), tk: tk, obs: obs})
		}
	}
	return tally
}

func sum(ts []simTally) (t simTally) {
	for _, x := range ts {
		t.ok += x.ok
		t.throttled += x.throttled
	}
	return t
}

// TestLearnFixedWindow checks the no-header learner against a fixed
// window of 10/s on a hand-stepped clock: once settled it gets the quota
// with about one throttle per probe, and its estimate is the quota.
func TestLearnFixedWindow(t *testing.T) {
	const limit = 10
	l := New(Config{})
	srv := newFixedServer(limit, limit, 0)
	tally := simulate(l, srv, 30*time.Second, 20*time.Millisecond)
	s := sum(tally[5:30])
	goodput := float64(s.ok) / (limit * 25)
	share := float64(s.throttled) / float64(s.ok+s.throttled)
	t.Logf("seconds 5-30: %d ok, %d throttled: goodput %.1f%%, %.2f%% throttled", s.ok, s.throttled, 100*goodput, 100*share)
	if goodput < 0.95 || share > 0.05 {
		t.Errorf("goodput %.1f%%, %.2f%% throttled; want ≥ 95%% and ≤ 5%%", 100*goodput, 100*share)
	}
	if est := l.Snapshot().Learned; math.Abs(est-limit) > 1 {
		t.Errorf("learned %.2f/s, want the quota, %d/s", est, limit)
	}
}

// TestLearnQuotaRaised checks that a raised quota is found: 20/s, then
// 80/s from 15 s on, measured from 2 s after the raise. Measured 95.2%
// (the ramp that finds the new quota overshoots it, and the window after
// is partly spent waiting for its requests to leave the learned window);
// the floor catches a regression.
func TestLearnQuotaRaised(t *testing.T) {
	l := New(Config{})
	srv := newFixedServer(20, 80, 15*time.Second)
	tally := simulate(l, srv, 25*time.Second, 20*time.Millisecond)
	s := sum(tally[17:25])
	goodput := float64(s.ok) / (80 * 8)
	share := float64(s.throttled) / float64(s.ok+s.throttled)
	t.Logf("seconds 17-25 at 80/s: %d ok, %d throttled: goodput %.1f%%, %.2f%% throttled", s.ok, s.throttled, 100*goodput, 100*share)
	if goodput < 0.93 || share > 0.05 {
		t.Errorf("goodput %.1f%% of the raised quota, %.2f%% throttled; want ≥ 93%% and ≤ 5%%", 100*goodput, 100*share)
	}
}

// TestLearnSlowRoundTrip checks that the probe still finds a raised quota
// when the round trip is long: the step is timed to a window's end only
// while the round trip leaves room for that, and is a whole one otherwise.
// Measured 88% (300 ms) and 75% (700 ms) of the raised quota: with many
// requests in flight each probe costs more, but a Limiter that never
// probed would stay at 50%.
func TestLearnSlowRoundTrip(t *testing.T) {
	for _, rtt := range []time.Duration{300 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			l := New(Config{})
			srv := newFixedServer(20, 40, 15*time.Second)
			// Enough workers that the round trip does not cap demand.
			tally := simulateWorkers(l, srv, 30*time.Second, rtt, 128)
			before, after := sum(tally[5:15]), sum(tally[20:30])
			t.Logf("seconds 5-15 at 20/s: %d ok, %d throttled; 20-30 at 40/s: %d ok, %d throttled", before.ok, before.throttled, after.ok, after.throttled)
			if g := float64(after.ok) / (40 * 10); g < 0.7 {
				t.Errorf("goodput %.1f%% of the raised quota, want ≥ 70%%: the raise was not found", 100*g)
			}
		})
	}
}
