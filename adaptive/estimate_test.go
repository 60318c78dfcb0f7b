package adaptive

import (
	"math"
	"testing"
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

func TestSnap(t *testing.T) {
	s := func(d time.Duration) int64 { return int64(d) }
	for _, c := range []struct {
		lo, hi, want time.Duration
	}{
		{950 * time.Millisecond, 1050 * time.Millisecond, time.Second},              // one round value within
		{9 * time.Second, 10*time.Second + time.Millisecond, 10 * time.Second},      // at the upper edge
		{2900 * time.Millisecond, 3100 * time.Millisecond, 3100 * time.Millisecond}, // none: the upper bound
		{600 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond},  // too wide to tell
		{time.Second, 1100 * time.Millisecond, 1100 * time.Millisecond},             // 1 s is excluded: W > lo
		{0, 0, 0},
	} {
		if got := snap(s(c.lo), s(c.hi)); got != s(c.want) {
			t.Errorf("snap(%v, %v] = %v, want %v", c.lo, c.hi, time.Duration(got), c.want)
		}
	}
}

// refillsOf feeds e refills of a fixed window of length w starting at
// phase, each found between a throttle jitter before it and a success
// jitter after it, in consecutive windows.
func refillsOf(e *estimator, phase, w, jitter time.Duration, n int) {
	for k := range n {
		b := int64(phase) + int64(k)*int64(w)
		e.chain = k > 0
		e.found(b-int64(jitter), b+int64(jitter))
	}
}

func TestRefillsBoundTheWindow(t *testing.T) {
	var e estimator
	refillsOf(&e, 37*time.Millisecond, 3*time.Second, 5*time.Millisecond, 5)
	lo, hi := time.Duration(e.wlo), time.Duration(e.whi)
	if !(lo < 3*time.Second && 3*time.Second <= hi) {
		t.Fatalf("bounds (%v, %v] do not hold the window, 3s", lo, hi)
	}
	// Five refills 10 ms wide: W within 20 ms / 4 windows each side.
	if hi-lo > 6*time.Millisecond {
		t.Errorf("bounds (%v, %v] wider than the refills allow", lo, hi)
	}
	if e.win != e.whi {
		t.Errorf("snapped to %v with no round value within", time.Duration(e.win))
	}
	a, b := e.predict(e.ref[(e.nref-1)%maxRefills].hi + int64(time.Second))
	next := int64(37*time.Millisecond) + 5*int64(3*time.Second)
	if !(a < next && next <= b) {
		t.Errorf("next refill %v predicted in (%v, %v]", time.Duration(next), time.Duration(a), time.Duration(b))
	}
}

func TestRefillsContradictionKeepsTheNewer(t *testing.T) {
	var e estimator
	refillsOf(&e, 0, time.Second, time.Millisecond, 4)
	if e.win != int64(time.Second) {
		t.Fatalf("1 s refills: window %v, want 1s", time.Duration(e.win))
	}
	// The server's window becomes 2 s: the old refills contradict the new.
	start := int64(3*time.Second) + int64(2*time.Second)
	for k := range 4 {
		b := start + int64(k)*int64(2*time.Second)
		e.chain = true
		e.found(b-int64(time.Millisecond), b+int64(time.Millisecond))
	}
	if e.win != int64(2*time.Second) {
		t.Errorf("after the change: window %v in (%v, %v], want 2s", time.Duration(e.win), time.Duration(e.wlo), time.Duration(e.whi))
	}
}

// TestStrayRunForgotten: the hypothesis test. A run of strays taken for
// the first window's end, on a server that throttles whatever the rate,
// is forgotten once the count runs past it with nothing throttled but
// strays; where strays are rare, the same count only makes the window's
// count unsure.
func TestStrayRunForgotten(t *testing.T) {
	for _, tt := range []struct {
		name   string
		strays int64 // of 1000 answers, 250 throttled
		forget bool
	}{
		{"rate-free", 200, true},
		{"strays rare", 5, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &estimator{phase: PhaseMeasuring, limit: 100, budget: 101, start: 1, nref: 1,
				strays: tt.strays, answers: 1000, thrAnswers: 250, cwnd: 8}
			for i := range 101 {
				e.success(int64(i+2)*int64(time.Millisecond), uint64(i+1), false, 0)
			}
			switch {
			case tt.forget && (e.phase != PhaseCold || e.limit != 0 || e.cwnd != 8 || e.strays != tt.strays):
				t.Errorf("phase %v, L̂ %d, cwnd %d, strays %d; want cold, none, 8, %d", e.phase, e.limit, e.cwnd, e.strays, tt.strays)
			case !tt.forget && (e.phase != PhaseMeasuring || e.limit != 100 || !e.unsure):
				t.Errorf("phase %v, L̂ %d, unsure %v; want measuring, 100, unsure", e.phase, e.limit, e.unsure)
			}
		})
	}
}

// TestEdgeThrottleCountsNothing: settled on a fixed window, a throttle
// that may have arrived at the end of the window before (within how
// loosely the refills place the start) gives no count to follow: it once
// set L̂ to the one success counted in the new window.
func TestEdgeThrottleCountsNothing(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tt := range []struct {
		name         string
		after        int64 // the throttle's arrival after the window's earliest start
		count, spent int64 // successes counted in the window; what the throttle says spent it
	}{
		{"at the edge", 10 * ms, 1, -1},
		{"well inside", 500 * ms, 30, 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &estimator{phase: PhaseSettled, fixed: true, limit: 31,
				wlo: 999 * ms, whi: 1001 * ms, win: 1000 * ms, nref: 1}
			e.ref[0] = refill{n: 1, lo: 990 * ms, hi: 1030 * ms} // the start is 40 ms loose
			from := 4990 * ms
			e.curFrom, e.count = from, tt.count
			a := from + tt.after
			e.throttle(a, a, 100, 101, 0, 20*ms, 2*ms, 1000*ms)
			if e.spent != tt.spent {
				t.Errorf("spent %d, want %d", e.spent, tt.spent)
			}
		})
	}
}

// TestLateAnswerCountsNothing: settled on a fixed window, a success that
// arrived in a window before the one counted (an answer in flight when the
// fit's windows were adopted, 300 ms late) neither counts nor starts that
// window's count again. It did: the late answers counted from nothing, the
// throttle among them read as that window spent at 13 of ours, and L̂ fell
// from 50 to 13 (TestFitPacesFixedWindow's seed 6, a second after the fit
// was adopted).
func TestLateAnswerCountsNothing(t *testing.T) {
	ms := int64(time.Millisecond)
	e := &estimator{phase: PhaseSettled, fixed: true, limit: 50,
		wlo: 1000 * ms, whi: 1000 * ms, win: 1000 * ms, nref: 1}
	e.ref[0] = refill{n: 1, lo: 1000 * ms, hi: 1010 * ms}
	now := 4100 * ms
	e.curFrom, _, _ = e.windowOf(now)
	e.count = 3
	for i := range int64(13) {
		a := 3500*ms + i*20*ms // in the window before
		e.success(a, uint64(100+i), false, 2*ms)
	}
	if from, _, _ := e.windowOf(now); e.curFrom != from || e.count != 3 {
		t.Fatalf("after 13 late answers: counting the window from %v, %d counted; want from %v, 3",
			time.Duration(e.curFrom), e.count, time.Duration(from))
	}
	a := 3900 * ms
	e.throttle(now, a, 113, 114, 0, 300*ms, 2*ms, 1000*ms)
	if e.spent >= 0 && e.spent < 50 {
		t.Errorf("a late throttle after them says the window was spent at %d; want it unknown", e.spent)
	}
}

// TestEdgeThrottleRefillPlaces: settled on a fixed window, a throttle
// that may have arrived at the end of the window before, and a success
// right after it, are that window's end and the next one's refill, not a
// stray: the refill is kept (it places the windows anew) and L̂ stands,
// still settled. Booked as a stray, with the windows placed a little early,
// every window's end came at the start of ours, and a count one high
// stood for good (the example's "21/1s" against a quota of 20). A second
// such end in a row measures again.
func TestEdgeThrottleRefillPlaces(t *testing.T) {
	ms := int64(time.Millisecond)
	e := &estimator{phase: PhaseSettled, fixed: true, limit: 21,
		wlo: 999 * ms, whi: 1001 * ms, win: 1000 * ms, nref: 1}
	e.ref[0] = refill{n: 1, lo: 990 * ms, hi: 1030 * ms} // the start is 40 ms loose
	from := 4990 * ms
	e.curFrom, e.count = from, 0
	edge := func(at int64, seq uint64) {
		e.throttle(at, at, seq, seq+1, 0, 20*ms, 2*ms, 1000*ms)
		e.success(at+20*ms, seq+1, false, 2*ms)
	}
	edge(from+10*ms, 100)
	if e.strays != 0 || e.nref != 2 || e.phase != PhaseSettled || e.limit != 21 || e.seeking {
		t.Fatalf("after an edge throttle and a success: strays %d, refills %d, %v at %d, seeking %v; want no stray, 2 refills, settled at 21",
			e.strays, e.nref, e.phase, e.limit, e.seeking)
	}
	from, _, _ = e.windowOf(from + 500*ms)
	e.curFrom, e.count = from, 0
	edge(from+5*ms, 200)
	if e.phase != PhaseMeasuring {
		t.Fatalf("a second edge throttle in a row: %v, want measuring", e.phase)
	}
}

// TestProbeSpacing: a settled tenant's probes above L̂ come one window
// and minProbeGap admissions apart, or sooner where the pace sends fewer
// in MaxPause: that many, doubled for each probe failed in a row, up to
// minProbeGap; and each throttle more that a failed probe cost moves the
// next one minProbeGap further, so that probing costs about
// 1/minProbeGap of what is sent, never further than the reach doubled
// so. The first probe after settling comes two windows on.
func TestProbeSpacing(t *testing.T) {
	const maxPause = int64(time.Minute)
	for _, c := range []struct {
		limit int64
		win   time.Duration
	}{{20, time.Second}, {50, time.Second}, {200, 10 * time.Second}, {600, time.Minute}, {10, time.Hour}} {
		e := estimator{limit: c.limit, win: int64(c.win), phase: PhaseSettled}
		most := uint64(float64(c.limit) * float64(max(maxPause, int64(c.win))) / float64(c.win))
		e.schedule(0, 1, maxPause, true)
		if e.probeAt != 2*int64(c.win) || e.probeSeq != 1+uint64(2*c.limit) {
			t.Errorf("%d/%v settled: first probe at %v, admission %d; want two windows on", c.limit, c.win, time.Duration(e.probeAt), e.probeSeq)
		}
		for _, fails := range []int{1, 2, 5, 16} {
			e.fails = fails
			e.schedule(0, 1, maxPause, false)
			if want := min(minProbeGap, most<<fails); e.probeAt != int64(c.win) || e.probeSeq-1 != want {
				t.Errorf("%d/%v after %d failed: next probe %v and %d admissions on, want one window and %d",
					c.limit, c.win, fails, time.Duration(e.probeAt), e.probeSeq-1, want)
			}
		}
		// The failed probe ended the span when admission 5 was next;
		// three more sent with it are throttled too.
		e.spanSeq, e.spanStop, e.spanEnd = 1, 5, 0
		e.schedule(0, 5, maxPause, false)
		for seq := uint64(2); seq < 5; seq++ {
			e.throttle(0, 0, seq, 5, 0, 0, 0, maxPause)
		}
		if want := min(4*minProbeGap, most<<16); e.probeSeq-5 != want {
			t.Errorf("%d/%v: a failed probe that cost 4 throttles puts the next %d admissions on, want %d", c.limit, c.win, e.probeSeq-5, want)
		}
	}
}

// TestRampBisects: where a window's count does not measure the quota (a
// sliding log's pace), a probe that passes raises L̂ by what it sent
// above it and the next goes at once with the step doubled; once one
// fails, the search halves the step between the level that passed and
// the one that failed. From L̂ = 50 against a server that grants q per
// window, the ramp ends at q exactly, within 2·⌈log2(q − 49)⌉ + 2
// probes, none above 50 + 2·(q − 50) + 1, and the probes after it are
// spaced as an unchanged quota's are (see TestProbeSpacing).
func TestRampBisects(t *testing.T) {
	const maxPause = int64(time.Minute)
	win := int64(time.Second)
	for _, q := range []int64{50, 51, 53, 60, 80, 100, 177, 1000} {
		e := estimator{limit: 50, win: win, wlo: win, whi: win, phase: PhaseSettled}
		if e.counts() {
			t.Fatalf("a pace with no phase counts: the ramp is not taken")
		}
		probes, top := 0, int64(0)
		next := uint64(1)
		for {
			e.spanAt, e.spanEnd = 0, 1
			level, _ := e.paceAt(0, 0)
			probes++
			top = max(top, level)
			next += uint64(level)
			if level <= q {
				e.spanEnd = 0
				e.raise(0, next, maxPause)
			} else {
				e.spanFailed(0, next)
				e.schedule(0, next, maxPause, false)
			}
			if e.step == 0 || probes > 64 {
				break
			}
		}
		most := 2*int(math.Ceil(math.Log2(float64(q-49)))) + 2
		if e.limit != q || probes > most || top > 50+2*(q-50)+1 {
			t.Errorf("q = %d: the ramp ends at L̂ = %d after %d probes, the highest at %d; want %d within %d probes, none above %d",
				q, e.limit, probes, top, q, most, 50+2*(q-50)+1)
		}
		if e.ceil != 0 || e.probeSeq-next != min(minProbeGap, e.paced(maxPause)) {
			t.Errorf("q = %d: after the ramp, ceiling %d and the next probe %d admissions on; want none and %d",
				q, e.ceil, e.probeSeq-next, min(minProbeGap, e.paced(maxPause)))
		}
	}
}

// TestSeekProbesBoundary: settled on a fixed 1 s window whose refills
// place its start loosely (400 ms), the seek for the refill after a
// throttle probes the boundary of the windows counted, from the Unix
// epoch: just before it (the spread of arrivals and the share of the round
// trip that may lie before the arrival assumed), then just past it. A
// probe throttled past it rules it out, and the seek halves the
// predicted interval as before. Before, the first probe went to the
// interval's middle, 100 ms past the refill.
func TestSeekProbesBoundary(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second) // a whole second from the epoch
	const rtt, spread = 20 * time.Millisecond, 2 * time.Millisecond
	e := &estimator{phase: PhaseSettled, fixed: true, limit: 50,
		wlo: 999 * ms, whi: 1001 * ms, win: 1000 * ms, nref: 1}
	e.ref[0] = refill{n: 1, lo: base + 900*ms, hi: base + 1300*ms}
	if !e.counts() {
		t.Fatal("the window's count does not measure the quota")
	}
	seek := func(thr int64) int64 {
		e.lastThr = thr
		return e.nextProbe(thr, int64(rtt), int64(spread), int64(time.Minute))
	}
	e.begin(-1, 0, base+5500*ms, 100, int64(rtt))
	e.tests = 0
	edge := base + 6000*ms
	early, past := int64(spread+rtt/2), int64(spread+rtt/2)
	if got := seek(base + 5500*ms); got != edge-early {
		t.Fatalf("first probe at %v past the boundary, want %v", time.Duration(got-edge), -time.Duration(early))
	}
	if got := seek(edge - early); got != edge+past {
		t.Fatalf("after it was throttled, the probe at %v past the boundary, want %v", time.Duration(got-edge), time.Duration(past))
	}
	a, b := e.predict(edge + past)
	if got := seek(edge + past); got != max(a, edge+past)+(b-max(a, edge+past))/2 {
		t.Errorf("throttled past the boundary too: the probe at %v past it, want the predicted interval's middle", time.Duration(got-edge))
	}
}

// TestSeekProbesGrid: where others spend the same quota, each fixed
// window is spent soon after it begins (here within 50 ms, by a client
// that found the refill first), and a seek whose probes double their
// spacing lands after that, window after window: in the matrix's three
// clients on 200 per 10 s, the clients measured for minutes. With nothing
// to bound W, the seek also probes the boundaries (from the Unix epoch)
// of the round lengths no longer than its doubling step, just before and
// just past each, and one throttled past a boundary rules out every round
// length it is a boundary of. The refill of a window on the grid is then
// found at its boundary once the step reaches W: within three windows of
// the throttle, after about log2(W/round trip) probes of the doubling and
// two for each round length up to W (1 s: by the 8th probe, 1.7 s after
// the throttle; 10 s: the 12th, 9.7 s; 60 s: the 22nd, 119.7 s). Before,
// none of 64 probes found it on any of the three: the doubling stops at
// MaxPause, a whole number of each of these windows, so its probes kept
// the phase at which they had missed.
func TestSeekProbesGrid(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_699_999_980 * time.Second) // a whole minute from the epoch
	const rtt, spread, spent = 20 * time.Millisecond, 2 * time.Millisecond, 50 * time.Millisecond
	for _, w := range []time.Duration{time.Second, 10 * time.Second, time.Minute} {
		W := int64(w)
		e := &estimator{phase: PhaseMeasuring}
		seek := func(thr int64) int64 {
			e.lastThr = thr
			return e.nextProbe(thr, int64(rtt), int64(spread), int64(time.Minute))
		}
		thr := base + 300*ms
		e.begin(-1, 0, thr, 100, int64(rtt))
		e.tests = 0
		rounds := 0
		for _, g := range fit.Rounds() {
			if g <= w {
				rounds++
			}
		}
		most := int(math.Ceil(math.Log2(float64(w/rtt)))) + 2*rounds
		probes, at := 1, seek(thr)
		for ; at%W >= int64(spent) && probes <= 64; probes++ {
			at = seek(at)
		}
		switch {
		case probes > 64:
			t.Errorf("W %v: no refill in 64 probes, the last %v after the throttle", w, time.Duration(at-thr))
		case at-thr > 3*W || probes > most:
			t.Errorf("W %v: the refill found %v after the throttle, by probe %d; want within %v and %d probes", w, time.Duration(at-thr), probes, 3*w, most)
		}
	}
}

// TestSeekProbesRefillsBoundary: where others spend the same quota, the
// window after a refill is spent soon after it begins, and the seek that
// follows its throttle doubles its step from a round trip: the step
// reaches W only after the next boundary has passed, and the refill it
// finds is two windows on. So the matrix's three clients on 50 per 1 s
// settled on 2 s windows, each client catching every other refill. A
// refill placed as finely as a pair of probes places one, on a boundary
// of a round length, predicts the next a length on: where the window
// measured from it did not end at L̂ (its count ran past L̂, or a
// throttle came below it), the seek probes that boundary, just before
// and just past, whatever its step. Not where the refill lies within
// more than a sixteenth of the length (as round trips of 200 ms place
// one): a log's or a bucket's refill lies on a boundary so by chance
// too often. Where the window ended at L̂, our own requests spent it,
// and the seek goes on as before: probed every seek, such a pair cost
// the matrix's 120 per 3 s a throttle or two in each window measured
// (its refills lie on whole seconds) and kept it measuring. Nor where
// the window before outlasted three of the length: the seek finds a
// refill within three windows, whoever spends, and a client alone on
// 200 per 10 s, its windows measured a few below L̂, paid 1 s pairs
// (TestMeasuredBudgetHolds: a mean of 44–48 throttles in its first
// 30 s, against 42).
func TestSeekProbesRefillsBoundary(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second) // a whole second from the epoch
	const spread = 2 * time.Millisecond
	edge := base + 1000*ms
	for _, c := range []struct {
		name    string
		spent   int64 // the window's count at the throttle; -1 if unknown
		outlast time.Duration
		rtt     time.Duration // a pair places the refill within rtt+4·spread
		early   bool
	}{
		{"count ran past L̂", -1, 1600 * time.Millisecond, 20 * time.Millisecond, true},
		{"throttled below L̂", 12, 1600 * time.Millisecond, 20 * time.Millisecond, true},
		{"ended at L̂", 17, 1600 * time.Millisecond, 20 * time.Millisecond, false},
		{"outlasted three", 12, 3100 * time.Millisecond, 20 * time.Millisecond, false},
		{"placed loosely", 12, 1600 * time.Millisecond, 200 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rtt := int64(c.rtt)
			past := int64(spread) + rtt/2
			e := &estimator{phase: PhaseMeasuring, limit: 17, nref: 1, outlast: int64(c.outlast)}
			half := (rtt + 4*int64(spread)) / 2 // as a pair places it
			e.ref[0] = refill{n: 1, lo: base - half, hi: base + half}
			thr := base + 50*ms
			e.begin(c.spent, 0, thr, 100, rtt)
			e.tests = 0
			at := thr
			for range 16 {
				e.lastThr = at
				if at = e.nextProbe(at, rtt, int64(spread), int64(time.Minute)); at > edge {
					break
				}
			}
			if got := at == edge+past; got != c.early {
				t.Errorf("the first probe past the boundary at %v past it; want just past it (%v): %v",
					time.Duration(at-edge), time.Duration(past), c.early)
			}
		})
	}
}

// TestCutHalvesAtMost: settled on a fixed window, a window spent below L̂
// cuts L̂ to the count of ours in it, but to no less than half of L̂ a
// window. Where others spend the same quota, the count is what one
// window left us, and one window may leave us almost nothing: another
// client measuring sends its L̂+1 at once as the window begins. Cut to
// that count, the matrix's three clients on 200 per 10 s left two of
// them at 1 per 10 s while the third took the rest (traced with the
// seek's first form, c6938e9, whose cell's p99 was 13× Little's wait
// over 8 runs, 3.8× with the halving). A count within half of L̂ is L̂
// at once, as before; below it, L̂ halves each window until it gets
// there.
func TestCutHalvesAtMost(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second) // a whole second from the epoch
	e := &estimator{phase: PhaseSettled, fixed: true, limit: 34,
		wlo: 999 * ms, whi: 1001 * ms, win: 1000 * ms, nref: 1}
	e.ref[0] = refill{n: 1, lo: base - ms, hi: base + ms}
	seq := uint64(100)
	at := base + 5500*ms // in the middle of a window
	for _, c := range []struct {
		count, want int64
	}{
		{1, 17},  // what one window left us: half of L̂ at most
		{12, 12}, // within half: the count
		{3, 6},   // and again
	} {
		e.curFrom, _, _ = e.windowOf(at)
		e.count = c.count
		e.throttle(at, at, seq, seq+1, 0, 20*ms, 2*ms, int64(time.Minute))
		e.tests = 0 // no test of the throttle: the window is spent
		// The seek's probes, just before the next window and just past
		// its start: the refill.
		edge := at - 500*ms + 1000*ms
		e.throttle(edge-10*ms, edge-10*ms, seq+1, seq+2, 0, 20*ms, 2*ms, int64(time.Minute))
		e.success(edge+10*ms, seq+2, false, 2*ms)
		if e.limit != c.want || e.phase != PhaseSettled || e.seeking {
			t.Fatalf("a window spent at %d of ours: L̂ %d, %v, seeking %v; want %d, settled", c.count, e.limit, e.phase, e.seeking, c.want)
		}
		seq += 3
		at += 2000 * ms
	}
}

// TestMeasuredStepDoubles: in a window measured, where W's lower bound
// places every success in it, one more than L̂ getting through means the
// quota grew, or that others spent a little less of this window: the
// budget's step above the count doubles as each step passes, one, two,
// four more, as slow start's cap does per round trip. The budget doubled
// at once before: a count one over L̂ sent L̂ more into a window that an
// unseen consumer had left nothing of.
func TestMeasuredStepDoubles(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second)
	e := &estimator{phase: PhaseMeasuring, limit: 42, budget: 43, start: base, startLo: base - ms, wlo: 500 * ms}
	seq := uint64(100)
	for _, want := range []struct{ count, limit, budget int64 }{
		{43, 43, 45},
		{45, 45, 49},
		{49, 49, 57},
	} {
		for e.count < want.count {
			e.success(base+e.count*ms, seq, false, ms)
			seq++
		}
		if e.limit != want.limit || e.budget != want.budget {
			t.Errorf("%d through: L̂ %d, budget %d; want %d, %d", e.count, e.limit, e.budget, want.limit, want.budget)
		}
	}
}

// TestSeekProbesWhereLogFrees: paced by a sliding log, a throttle's seek
// probes just past where the oldest of the log's grants leaves it, where
// the newest L̂ grants were all ours (a burst of the measuring window
// before the log was followed, say), instead of doubling its step from a
// sixteenth of the window: the matrix's sliding 50/1s found that place
// by probes at 62, 125, 250, 500 ms, the last a quarter of a second
// early, and waited for the next (traced; 95.2% → 95.5% of its quota
// settled, the first-use cell 95.0% → 95.5%, 8 runs each). Where that
// place has passed (others spend in the log too), the doubling goes on
// as before.
func TestSeekProbesWhereLogFrees(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second)
	const spread = 2 * time.Millisecond
	for _, c := range []struct {
		name string
		free int64 // logFree, after the throttle at base
		want int64 // the first probe
	}{
		{"ours filled it", base + 990*ms, base + 990*ms + int64(spread)},
		{"others spend too", base - 10*ms, base + 1000*ms/16},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &estimator{}
			e.adoptSliding(50, 1000*ms, 0.5)
			e.followed = true
			e.begin(-1, 0, base, 100, 20*ms)
			e.tests, e.logFree = 0, c.free
			if got := e.nextProbe(base, 20*ms, int64(spread), int64(time.Minute)); got != c.want {
				t.Errorf("first probe %v after the throttle, want %v", time.Duration(got-base), time.Duration(c.want-base))
			}
		})
	}
}

// TestSeekDropsModelThenDoubles: where the refill the model predicted did
// not come by its end, the model is dropped (the newest refill and W's
// lower bound kept) and the seek doubles its step from the throttle, as
// with nothing known: not at once, nor anywhere a log paced by the fit
// would put it (a case of that seek's, placed between the two, once took
// the model's fall-through and probed at once).
func TestSeekDropsModelThenDoubles(t *testing.T) {
	ms := int64(time.Millisecond)
	base := int64(1_700_000_000 * time.Second)
	const spread = 2 * time.Millisecond
	rtt := 20 * ms
	e := &estimator{phase: PhaseMeasuring, limit: 17, wlo: 1000 * ms, whi: 1000 * ms, win: 1000 * ms, nref: 1}
	e.ref[0] = refill{n: 1, lo: base - ms, hi: base + ms}
	thr := base + 1001*ms // the predicted refill's interval ends here
	e.begin(-1, 0, thr, 100, rtt)
	e.tests = 0
	got := e.nextProbe(thr, rtt, int64(spread), int64(time.Minute))
	if e.nref != 1 || e.win != 0 {
		t.Errorf("the model stands: %d refills, W %v", e.nref, time.Duration(e.win))
	}
	if want := thr + 1000*ms/16; got != want {
		t.Errorf("first probe %v after the throttle, want %v (a sixteenth of W's lower bound)", time.Duration(got-thr), time.Duration(want-thr))
	}
}
