package adaptive

import (
	"math"
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

// Phase is where the learner is in finding a server's quota from its
// throttles alone.
type Phase uint8

// The learner's phases.
const (
	// PhaseCold: nothing learned yet. Slow start: a few requests in
	// flight, one more for each success, until the first throttle.
	PhaseCold Phase = iota
	// PhaseMeasuring: a window at a time. After each refill (the first
	// success after a throttle) the server's window is spent by sending
	// L̂ and one more; the count that got through is L̂, and the time
	// between refills bounds Ŵ.
	PhaseMeasuring
	// PhaseSettled: paced evenly at L̂ per Ŵ, probing now and then.
	PhaseSettled
)

func (p Phase) String() string {
	switch p {
	case PhaseCold:
		return "cold"
	case PhaseMeasuring:
		return "measuring"
	case PhaseSettled:
		return "settled"
	}
	return "Phase(?)"
}

// refill is one refill the estimator found: the server's window started
// in (lo, hi] (arrival times, Unix ns), the n-th window counted from the
// first refill found.
type refill struct {
	n      int64
	lo, hi int64
}

// maxRefills is how many refills the estimator keeps to bound Ŵ.
const maxRefills = 8

// estimator is the learner's state machine (the package doc's phases, in
// full). Times are arrival times at the server, Unix ns. Limiter.mu
// guards it.
//
// Its model of a server that says nothing but "throttled": it grants at
// most L requests per window W, counted where requests arrive, and we
// know neither. It estimates L̂ and bounds W in (Ŵlo, Ŵhi]; the pacer
// then admits L̂ per Ŵ (the bound, or the round value of 1 s, 2 s, 5 s,
// 10 s, 15 s, 20 s, 30 s, 1 min ... 1 h it holds: the fit's grid,
// fit.RoundWindow) plus the spread of arrival delays, evenly.
// Nothing in it assumes a window's length. The estimates are in Snapshot
// (LearnedLimit, LearnedWindow, WindowLow, WindowHigh, Phase).
//
// The signal is the refill: the first success after a throttle. A fixed
// window spent by our requests refills when the next window begins, and
// grants L more. So:
//
//   - Cold (PhaseCold): slow start. Four requests in flight, one more per
//     success while the cap binds (doubling per round trip; one more per
//     round trip after a stray, below), until the first throttle its tests
//     confirm: the successes so far are the first L̂. A herd of callers
//     never hits a fresh tenant at once.
//   - Testing, after any throttle: a count limit predicts that once a
//     window is spent every request is throttled until the refill, so the
//     requests after a throttle test it. One that gets through, in the
//     same window, shows it was a stray (shedding, a cap on requests in
//     flight, a request across a window's edge): nothing changes, and the
//     stray counts in the window. Strays are counted among the answers.
//     Where they are rare, a throttle below L̂ gets one test, sent alone
//     (none at L̂, two in slow start); where they are 1% of the answers,
//     as many as make a run of strays that long rarer than 1%, alone;
//     where they are also a third of the throttles (a server that
//     throttles whatever the rate), as many as make a run of throttles
//     that long rarer than 1e-4, the requests that come anyway, none held
//     back. Four or more requests in flight with the
//     throttle, most of them throttled too, show the window spent. Where
//     the server throttles whatever the rate, a run of strays may still
//     pass for a window's end; while that is the only end ever seen, a
//     count that runs past L̂ with nothing throttled but strays shows it
//     was one, and the estimate is forgotten (the hypothesis test).
//   - Measuring (PhaseMeasuring), a window at a time: after a throttle the
//     gate pauses and one probe seeks the refill. With W unbounded the
//     probes double their spacing from a round trip (about log2(W/round
//     trip) throttled probes, whatever W is), and the boundaries from the
//     Unix epoch of the round lengths (the fit's grid) no longer than the
//     doubling step are probed too, just before and just past each, the
//     earliest first (a probe throttled past one rules out every round
//     length it is a boundary of), and those of a length the newest
//     refill lies on, placed finely, where the window measured from it
//     did not end at L̂ (see gridEdge). Where others spend the same
//     quota, each window is spent soon after it begins, and probes at
//     doubling intervals land after that, window after window (the
//     doubling stops at MaxPause, a whole number of most round windows,
//     and keeps its phase): the matrix's three clients measured for
//     minutes. Once refills bound W, the next refill lies in a predicted
//     interval and each probe halves it.
//     Where a window's count measures the quota and Ŵ is a round length,
//     the refill comes at a boundary of Ŵ's instead (whole windows after
//     a refill placed within the spread of arrivals, else after the Unix
//     epoch, where servers that count per second or per minute start
//     theirs): one probe just before it and one just past it place it
//     within the spread of arrivals (one throttled past it rules it out,
//     and the halving goes on).
//     Each refill k lies in (lo_k, hi_k], between a throttled and a
//     successful arrival; refills i and k, d windows apart, bound W in
//     ((lo_k − hi_i)/d, (hi_k − lo_i)/d]. From a refill, the window's
//     budget is L̂ and one more: the count of successes up to its first
//     throttle is the window's L. The budget holds until the window could
//     end: past W's lower bound and past the stretch the window before
//     outlasted, from the throttle that began the seek to the refill it
//     found, which bounds W from below before two refills do (held for
//     four round trips, it let 32 callers send about 24 more in the first
//     window measured of 200 per 10 s, before the throttle of the one
//     above L̂ was heard). One more succeeding means the quota grew, or
//     that others spend a little less of this window: the budget's step
//     above the count doubles as each step passes (one, two, four more),
//     until a throttle; where nothing bounds the window, so that the
//     count may run into the next, L̂ more go, the count unknown, until
//     a throttle ends a window; a window counted below L̂ twice in a row
//     means it fell (once may be a sliding log or a bucket still
//     refilling). A request that arrived at the refill's instant counts
//     in the window it began.
//   - Settled (PhaseSettled), once a measured window confirmed L̂ and the
//     bounds on W are tight (1.5%) or hold one round value (or, after six
//     windows, at the upper bound; after twelve whose refills fit no fixed
//     window, at the mean time between them): paced evenly
//     at L̂ per Ŵ. A throttle is tested as above; a window spent at c of
//     our requests (the window placed by all the refills kept, the
//     throttle surely in it, however loosely they place its start) sets
//     L̂ to c, still settled: what the server leaves us at our pace, less
//     than L̂ where the quota fell or a consumer we cannot see spends part
//     of it; but to half of L̂ at most, window by window, for where others
//     spend, one window may leave us almost nothing. A throttle in the
//     stretch where the next window's start is uncertain, none of ours
//     through in that window yet, ends the window counted: at c below L̂,
//     L̂ is c (paced at one above the quota, the one above comes last in a
//     window, just there, every window); at L̂, it and a success right
//     after it are a window's end and the next one's refill, which places
//     the windows anew, L̂ standing (a second in a row, or a count
//     otherwise unknown, and the learner measures again).
//
// Probing above L̂, only while callers wait on the pacer: two windows after
// settling (a quota that just changed may change back), then at least one
// window and 200 admissions apart per throttle the failed one before cost,
// so that probing costs about 0.5% of what is sent (a slow tenant, which
// sends fewer than 200 in MaxPause, probes MaxPause apart at the pace, or
// one window, at first, so that a raise is found soon, and twice as far
// apart for each probe failed in a row, up to 200 admissions), one window
// is paced at L̂+1 per the shortest window the bounds allow, aligned to the
// predicted window when the phase is known. A confirmed throttle there means
// the quota is unchanged: the gate pauses to the window's predicted end, and
// probing an unchanged quota costs about one throttle in 200. Paced per the
// upper end of bounds that hold no round length (a window off the grid), a
// throttle late in the window as placed is a window's end like any settled
// one instead: its refill is sought, placing the windows anew and narrowing
// the bounds, so that the pace does not drift off the server's windows. If
// the window goes through, the quota grew, and the probes ramp, paced: L̂
// grows by what the probe sent above it, at the window the probe was paced
// at, and the next probe goes at once with its step doubled. Where a
// window's count measures the quota (a fixed window, the fit's or one the
// refills pin to a round length or within 1.5%), the step grows to L̂ at
// once (the pace doubles), and the first step that fails ends the ramp: the
// count of ours in the window its throttle surely arrived in, less those
// that arrived where the window's start is uncertain (a count too high
// would throttle every window after), is L̂, and the rest of the window
// waits for its refill; where it left some out, the next probe comes a
// window on and steps no further than the count with them. So a failed
// step costs what the pace sends in a round trip before its throttle is
// heard, and nothing is sent unpaced. A throttle where the window's start
// is uncertain has its refill sought, which places the windows anew, and
// the step goes again. Elsewhere (a sliding log's or a bucket's count
// depends on when it is taken, and a burst there costs a throttle for
// each request above the pace) once a step fails, the step halves between
// the level that passed and the one that failed, so a raise of k is found
// in about 2·log2(k) probes of a window each. But only if the callers kept
// up the probe's pace (successes of at least 90% of L̂ per window in it): a
// window that saw L̂ or fewer of ours, because demand fell or a circuit
// breaker held everyone back, says nothing, and the probe is tried again
// later. Idle time teaches nothing.
//
// A Transient answer (e.g. 503) is no quota signal, and in a measured
// window its request may not have counted, so one more may go.
type estimator struct {
	phase    Phase
	fixed    bool    // settled on a fixed window: the refills bound W, not only space it
	followed bool    // settled on the fit's window (see settle): a throttle leaves it to the next fit
	delayed  bool    // delay is the fit's (see lead)
	delay    float64 // the share of a round trip after which the server counts a request
	limit    int64   // L̂; 0 while nothing is learned
	wlo, whi int64   // W lies in (wlo, whi]; whi 0 while unbounded
	win      int64   // Ŵ: a round value within the bounds, or whi; 0 while unbounded

	ref  [maxRefills]refill // the newest refills, a ring
	nref int64              // refills found so far

	// The current server window: begun at start (a refill's hi; 0 if not
	// seen), count successes arrived in it, budget admissions allowed in
	// it while measuring.
	start, count, budget int64
	startLo              int64 // the window began after this
	curFrom              int64 // while settled: when the window count is for began, at the earliest
	early                int64 // of count, those that arrived where that window's start is uncertain
	measured             int   // windows measured since the phase began
	firstHi              int64 // when the first of them began

	// Seeking the refill after a throttle: the window was spent with
	// spent successes (-1 if unknown), lastThr is the latest throttle's
	// arrival, gap the doubling step, tries the seek probes throttled;
	// only admissions from seekSeq on are seek probes.
	seeking bool
	spent   int64
	pending int64 // requests in flight when the window was found spent
	chain   bool  // the window spent began at the newest refill: the next is one window on
	cold    bool  // the window spent is the cold one
	// replaced: settled, the last window's end came where its start was
	// uncertain, and its refill placed the windows anew (see success)
	replaced bool
	low      int64 // the last measured window's count, below L̂; 0 if none
	unsure   bool  // the window's count may include the next window's
	lastThr  int64
	predLo   int64 // the refill is predicted after this; 0 if not
	gap      int64
	tries    int
	tests    int    // of the seek probes, how many go at once to test the throttle (see testsFor)
	thrArr   int64  // the arrival of the throttle tested
	testSeq  uint64 // the first admission after it
	pendOK   int64  // answers to requests in flight when it came: successes
	pendThr  int64  // and throttles
	gated    bool   // the tests go one at a time, the others held back
	seekSeq  uint64
	// logFree: paced by a log, when the oldest of our grants it holds
	// leaves it, where the newest L̂ grants were all ours; 0 if unknown
	// (see nextProbe)
	logFree int64
	// The boundary the seek probes (see boundary): where it lies (0 for
	// none), whether the last probe aimed just before it (else just
	// past), and whether one just past it was throttled, so that the
	// refill is not there and the seek halves the interval instead.
	edge       int64
	edgeBefore bool
	edgeOff    bool
	// The seek with nothing to bound W from above probes the grid's
	// boundaries too (see gridEdge): onGrid says edge is one of those,
	// gridOut which round lengths a probe throttled just past one of
	// their boundaries ruled out in this seek (bit i: fit.Rounds' i-th).
	onGrid  bool
	gridOut uint32
	// outlast: the window spent at the last seek's throttle (thrArr)
	// lasted until the refill the seek found, so W is longer than the
	// stretch between them (see success); 0 if none was found.
	outlast int64

	// The throttle being tested came in slow start, or in a probe above
	// L̂: if a test contradicts it, slow start or the probe goes on; if
	// the tests confirm it, the learner measures, or the probe failed
	// (see confirm).
	coldTest, spanTest bool

	// Stray throttles: the throttles a success right after contradicted,
	// among the answers, and the throttles among them (all decay: see
	// answered).
	strays, answers, thrAnswers int64

	// Probing above L̂ while settled: no probe before probeAt (time) and
	// probeSeq (admission); a span in force until spanEnd, from
	// admission spanSeq; fails counts the probes failed in a row (0
	// again when the learner settles or the quota changes: the first
	// probe then comes sooner, see schedule).
	probeAt, spanEnd  int64
	spanAt            int64 // the span in force from then to spanEnd
	spanN             int64 // successes admitted within the span
	probeSeq          uint64
	spanSeq, spanStop uint64
	stopAt            int64 // the arrival of the throttle that ended the last span (spanStop)
	fails             int

	// The ramp (see raise): a probe that passed raises L̂ by its step,
	// and the next probe goes at once with the step doubled, below ceil,
	// the lowest level a probe of the ramp failed at; a failed one halves
	// the step, or, where a window's count measures the quota, measures
	// it. step is 0 outside a ramp (a probe sends one more), ceil 0 with
	// no fail.
	step, ceil int64
	// measuredRaise: settled, the window whose refill is sought ended a
	// ramp's failed step where a window's count measures the quota (see
	// counts): its count, where above L̂, is L̂ (see throttle). top: an
	// upper bound on the quota that the last such count set (those that
	// arrived where the window's start is uncertain counted too, which
	// L̂ leaves out), above L̂; 0 if none.
	measuredRaise bool
	top           int64

	// depth is the depth of the token bucket the fit named, where the
	// estimator paces by one (see adoptBucket); 0 otherwise.
	depth    int64
	bucketRT int64 // the round trip when the bucket was adopted, ns (see bucketProbe)

	cwnd  int64 // slow start's cap on requests in flight while cold, less initialWindow
	grown int64 // successes since the cap last grew by one, after a stray
}

// initialWindow is slow start's first cap on requests in flight: a herd of
// callers on a fresh tenant never sends more at once.
const initialWindow = 4

// snapSpan is how wide, at most, the bounds on W may be (whi/wlo) for a
// round value within them to be taken as W: at 1.25 no two fit.
const snapSpan = 1.25

// settleSpan is how tight the bounds on W must be (whi/wlo) to settle
// without a round value: pacing at whi then wastes at most 1.5%.
const settleSpan = 1.015

// maxMeasured is how many windows the learner measures at most before it
// settles at the upper bound of W, however loose.
const maxMeasured = 6

// success takes a success that arrived at a (admission number seq); grow
// says slow start's cap on requests in flight was binding. It reports
// whether the success was a refill.
func (e *estimator) success(a int64, seq uint64, grow bool, spread int64) (refilled bool) {
	e.answered(false)
	switch {
	case e.phase == PhaseCold && !e.seeking:
		e.count++
		switch {
		case !grow:
		case e.strays == 0:
			e.cwnd++ // doubling per round trip
		default:
			// After a stray, one more per round trip: a stray may be
			// a token bucket found empty, which more in flight empties
			// faster.
			if e.grown++; e.grown >= e.cwnd+initialWindow {
				e.cwnd, e.grown = e.cwnd+1, 0
			}
		}
		return false
	case !e.seeking && e.phase == PhaseSettled:
		e.countSettled(a, spread)
		return false
	case !e.seeking:
		if e.start != 0 && (a < e.start || e.whi > 0 && a > e.start+e.whi) {
			return false // not in the window begun at start
		}
		e.count++
		if e.phase == PhaseMeasuring && e.count >= e.budget && e.count > e.limit {
			if e.nref <= 1 && e.rateFree() {
				// The hypothesis test. One window's end was ever seen,
				// and the server throttles whatever the rate: a count
				// past it with nothing throttled but strays says that
				// end was a run of strays. There is no quota to pace
				// by: forget it.
				e.forget()
				return false
			}
			if !e.within(a) {
				// Perhaps in the next window already: this window's
				// count is unknown. Only a throttle ends it, and one
				// comes only if more are sent: L̂ more, so that a budget
				// below the quota, with nothing to bound the window,
				// does not hold the learner measuring for good.
				e.unsure = true
				e.budget = e.count + e.limit
				return false
			}
			// The one above L̂ got through: the quota grew, or others
			// spent a little less of this window. Send more, until a
			// throttle says how much: a step above the count that
			// doubles as each passes, as slow start's cap does per round
			// trip, so that what goes past the window's end is about
			// the last step. The budget doubled at once: against an
			// unseen consumer of 20 per 1 s whose share of a window
			// varies by one or two, a count one over L̂ sent 42 more at
			// once into a window with none left (the matrix's cell: 5.6%
			// of the settled requests throttled, 2.6% since).
			e.limit, e.budget = e.count, e.count+2*max(e.budget-e.limit, 1)
		}
		return false
	case e.tries < e.tests && (seq >= e.seekSeq || a > e.thrArr+spread) && e.sameWindow(a, spread) && !e.manyThrottled():
		// A test went through: the window was not spent. A request
		// that arrived after the throttle got through, in the same
		// window (or nothing says it was another, and its count did not
		// run past L̂). That contradicts a count limit: the throttle was
		// a stray (shedding, a concurrency limit, a request that crossed
		// a window's edge), and nothing changes.
		e.seeking, e.coldTest, e.spanTest = false, false, false
		e.stray()
		// The stray arrived in the window and counted there, as
		// shedding after the count does.
		e.count++
		return false
	case a <= e.lastThr || seq < e.seekSeq:
		if seq < e.testSeq {
			e.pendOK++
		}
		// Arrived before the window was spent, or sent before that was
		// known (jitter may bring it after the throttle): it counts in it.
		e.count++
		if e.spent >= 0 {
			e.spent++
		}
		return false
	}
	if e.coldTest || e.spanTest {
		// A refill before the tests were done: the throttle was a
		// window's end after all.
		span := e.spanTest
		e.taken(e.lastThr, seq)
		if span {
			return false // settled: the window after the probe refilled
		}
	}
	wlo, whi, win := e.wlo, e.whi, e.win
	// The window spent at the seek's first throttle lasted until now.
	e.outlast = max(max(e.lastThr, e.predLo)-spread-e.thrArr, 0)
	e.found(max(e.lastThr, e.predLo)-spread, a+spread)
	if e.followed && e.win == 0 {
		// The refills kept contradict each other: the fit's window stands
		// until the next fit says otherwise.
		e.wlo, e.whi, e.win = wlo, whi, win
	}
	if e.phase == PhaseSettled && e.fixed && e.whi > 0 && (e.spent > 0 || e.spent < 0 && !e.replaced) {
		// Paced at L̂ per Ŵ, the window was spent after e.spent of ours:
		// that is what the server leaves us now (the quota fell, or a
		// consumer we cannot see spends the rest). L̂ follows it, window
		// by window, still settled: measuring again would send a burst,
		// which takes more than pacing leaves. It falls by half at most a
		// window: where others spend, what one window left us may be
		// almost nothing (another client measuring sent its L̂+1 at once
		// as the window began, and cut to that, two of the matrix's three
		// clients on 200 per 10 s sat at 1 per 10 s while the probes
		// doubled it back); a quota that fell is reached a window or two
		// later. Where the throttle fell in the stretch where the window's
		// start is uncertain, it and the refill after it are a window's
		// end and the next one's start: the refill places the windows
		// anew, L̂ stands, and the next window's end, placed, says its
		// count (once: a second such throttle in a row measures again).
		switch e.replaced = e.spent < 0; {
		case e.measuredRaise:
			e.limit = max(e.limit, e.spent)
		case !e.replaced && e.spent < e.limit:
			e.limit, e.top = max(e.spent, (e.limit+1)/2), 0
		}
		e.seeking, e.unsure, e.low = false, false, 0
		e.start, e.startLo, e.count = a, e.lastThr-spread, 0
		e.countSettled(a, spread)
		return true
	}
	if e.phase == PhaseSettled && e.followed {
		// Paced by the fit's window (see settle), the throttle was one
		// the fit is left to explain: at its window's edge, where
		// arrivals vary, or someone else's spending. The next fit says
		// whether the rule changed; measuring again would burst. A
		// sliding log's refills follow our own sends: none is kept.
		if !e.fixed {
			e.nref = 0
		}
		e.seeking, e.unsure, e.low = false, false, 0
		e.start, e.startLo, e.count = a, e.lastThr-spread, 0
		e.countSettled(a, spread)
		return true
	}
	confirmed := e.spent > 0 && (e.start != 0 || e.cold)
	switch {
	case !confirmed:
	case e.cold || e.spent >= e.limit:
		// The whole window, from its refill to the throttle and nothing
		// but throttles after: that is the quota. (The cold window's
		// count is a first guess: slow start may have begun in the
		// window before.)
		e.limit, e.low = e.spent, 0
	case e.low > 0:
		// A second window below L̂ in a row: the quota fell.
		e.limit, e.low = max(e.spent, e.low), 0
	default:
		// One window below L̂ may be the tail of a sliding window or a
		// bucket refilling: the next one says.
		e.low = e.spent
	}
	confirmed = confirmed && !e.cold && e.low == 0
	e.seeking, e.cold, e.unsure = false, false, false
	e.start, e.startLo, e.count = a, e.lastThr-spread, 1
	e.budget = e.limit + 1
	e.measured++
	if e.phase == PhaseSettled {
		// Throttled while settled: measure a window again. The server
		// changed: the probes' spacing starts again too.
		e.phase, e.measured, e.fails, e.replaced = PhaseMeasuring, 1, 0, false
	}
	if e.measured == 1 {
		e.firstHi = a
	}
	switch {
	case confirmed && e.whi > 0 && (e.win != e.whi || float64(e.whi) <= settleSpan*float64(e.wlo) || e.measured > maxMeasured):
		e.phase, e.fixed = PhaseSettled, true
	case e.measured > 2*maxMeasured && e.limit > 0:
		// The refills fit no fixed window (a sliding log or a bucket,
		// whose refills follow our own sends): settle at L̂ per the mean
		// time between them, which is at least the server's window.
		e.win = max((a-e.firstHi)/int64(e.measured-1), e.wlo, 1)
		e.wlo, e.whi = min(e.wlo, e.win), max(e.whi, e.win)
		e.phase, e.fixed = PhaseSettled, false
	}
	return true
}

// forget drops the estimate, as if no throttle had come yet; what is known
// of strays stays, and slow start goes on from its cap.
func (e *estimator) forget() {
	*e = estimator{strays: e.strays, answers: e.answers, thrAnswers: e.thrAnswers, cwnd: e.cwnd, delayed: e.delayed, delay: e.delay}
}

// countSettled counts a success that arrived at a in the server window it
// arrived in, as windowOf places it, while settled. One from a window
// before the one counted is not counted: that window's count is over,
// and one answer late (another process's, relayed; one in flight when
// the windows were placed anew) would start it again from nothing, a
// count that a throttle after it would take for the window's.
func (e *estimator) countSettled(a, spread int64) {
	from, unsure, ok := e.windowOf(a)
	if ok && from < e.curFrom-e.win/2 {
		return
	}
	if from != e.curFrom {
		e.curFrom, e.count, e.early = from, 0, 0
	}
	e.count++
	if ok && a-from <= unsure+spread {
		e.early++
	}
}

// windowOf returns when the server window that a request arriving at a
// counts in began, at the earliest, and how late it may have begun after
// that, as all the refills kept place it (each one's interval carried by
// whole windows, and intersected, as predict does); ok is false while
// nothing places it. A request that arrived in the uncertain stretch is
// counted in the later window: a count too high cuts L̂ too little, which
// the next window corrects, where one too low would cut it too far.
func (e *estimator) windowOf(a int64) (from, unsure int64, ok bool) {
	if e.nref == 0 || e.win <= 0 {
		return 0, 0, false
	}
	wlo, whi := e.wlo, e.whi
	if e.win != e.whi {
		wlo, whi = e.win, e.win
	}
	last := e.ref[(e.nref-1)%maxRefills]
	k := (a - last.lo) / e.win
	if a < last.lo {
		k = -ceilDiv(last.lo-a, e.win)
	}
	n := last.n + k
	lo, hi := last.lo+k*wlo, last.hi+k*whi
	if k < 0 {
		lo, hi = last.lo+k*whi, last.hi+k*wlo
	}
	for i := e.nref - 2; i >= max(e.nref-maxRefills, 0); i-- {
		r := e.ref[i%maxRefills]
		d := n - r.n
		l, h := r.lo+d*wlo, r.hi+d*whi
		if d < 0 {
			l, h = r.lo+d*whi, r.hi+d*wlo
		}
		if max(lo, l) >= min(hi, h) {
			continue // this refill's window was miscounted
		}
		lo, hi = max(lo, l), min(hi, h)
	}
	return lo, hi - lo, true
}

// minProbeGap is how many admissions, at least, separate two probes above
// L̂ per throttle the last failed one cost: probing an unchanged quota
// costs about 1/minProbeGap (0.5%) of what is sent, half the goal's 1%.
const minProbeGap = 200

// schedule sets when the next probe above L̂ may start: one window and
// minProbeGap admissions after next (each throttle the probe that just
// failed costs moves it minProbeGap further, see throttle), but no
// further off than the probes' reach (see reach). The first probe after
// the learner settled comes sooner, two windows on: a quota that just
// changed may change again (an incident ending); settling ends a ramp
// (see raise). After a raise measured, where the count left out what
// arrived where the window's start is uncertain (see top), it comes one
// window on, at once. In a ramp, the next probe comes one window after one
// failed: the halving step bounds what its probes cost.
func (e *estimator) schedule(now int64, next uint64, maxPause int64, settled bool) {
	if settled {
		e.step, e.ceil = 0, 0
	}
	if e.step > 0 {
		e.probeAt, e.probeSeq = now+e.win, next
		return
	}
	if settled && e.fails == 0 && e.top > e.limit {
		// A raise measured left out what arrived where the window's
		// start is uncertain: the quota lies up to top, and the next
		// window tells.
		e.probeAt, e.probeSeq = now+e.win, next
		return
	}
	if settled && e.fails == 0 {
		e.probeAt = now + 2*e.win
		e.probeSeq = next + uint64(2*e.limit)
		return
	}
	e.probeAt = now + e.win
	e.probeSeq = next + min(minProbeGap, e.reach(maxPause))
}

// reach returns how many admissions at most separate a failed probe from
// the next: what the pace sends in maxPause (or in one window, if longer),
// doubled for each probe failed in a row. A fast tenant reaches
// minProbeGap admissions well within maxPause, and probes that often,
// which holds probing at about 1/minProbeGap of what it sends. A slow
// one, a few requests a minute, would take an hour or more to send that
// many: it probes within maxPause at first, so that a quota just raised
// is found soon, and less often as its probes keep failing, so that
// probing an unchanged quota comes to cost what it costs a fast tenant
// (at one probe per maxPause, a tenant sending 6 a minute threw one
// request in 7 at throttles). A raise after long at one quota is found
// within minProbeGap admissions, as on a fast tenant.
func (e *estimator) reach(maxPause int64) uint64 {
	n, k := e.paced(maxPause), min(e.fails, 16)
	if n > math.MaxInt64>>k {
		return math.MaxInt64 // far enough, and an admission number plus it does not wrap
	}
	return n << k
}

// paced returns how many admissions the pace sends in maxPause, or in
// one window if longer.
func (e *estimator) paced(maxPause int64) uint64 {
	return uint64(max(1, float64(e.limit)*float64(max(maxPause, e.win))/float64(max(e.win, 1))))
}

// probe moves the probe above L̂ on, at a success admitted at at (Unix ns)
// answered at now, while settled: it starts a span when one is due and
// callers wait on the pacer (demand), and judges a span once a request
// admitted late after its end is answered (late: how long after their
// requests other processes' answers may come, see ObserveRelayed). A
// span whose requests, one more than L̂ per window (the step more, in a
// ramp), all got through means the quota grew, and the probes ramp:
// see raise. It reports whether the pacer must change.
func (e *estimator) probe(now, at int64, next uint64, demand bool, spread, late, maxPause int64) bool {
	if e.phase != PhaseSettled || e.seeking {
		return false
	}
	if e.spanEnd != 0 && at >= e.spanAt && at < e.spanEnd {
		e.spanN++
	}
	switch {
	case e.spanEnd != 0 && at >= e.spanEnd+late:
		// The span tells only if more than L̂ per window went through
		// in it, per the shortest window the bounds allow where the
		// probe paces by it (see paceAt): with fewer (demand fell to
		// about the quota, a circuit breaker held everyone back, the
		// callers' own CPU lagged), no window need have seen more than
		// L̂, and all of them getting through says nothing. Raised on
		// it, L̂ would climb with each probe above a quota the callers
		// never reached.
		kept := float64(e.spanN) > float64(e.limit)*float64(e.spanEnd-e.spanAt)/float64(max(e.probeWin(), 1))
		e.spanEnd = 0
		if next-e.spanSeq <= uint64(e.limit) || !kept {
			// Too few were sent to tell: try again later.
			e.schedule(now, next, maxPause, false)
			return true
		}
		e.fails = 0
		e.raise(now, next, maxPause)
		return true
	case e.spanEnd == 0 && demand && now >= e.probeAt && next >= e.probeSeq:
		e.spanSeq, e.spanStop, e.spanN = next, 0, 0
		if a, b := e.predict(now); e.depth > 0 {
			// A token bucket's: long enough to drain its depth.
			_, span := e.bucketProbe()
			e.spanAt, e.spanEnd = now, now+span+spread
		} else if !e.fixed {
			// A pace with no phase (a sliding log's): a window on,
			// the server's log holds the span's requests alone.
			e.spanAt, e.spanEnd = now, now+e.win+spread
		} else if !e.followed && b > now && b-a < e.win/8 {
			// The phase is known: the span is the next window.
			e.spanAt, e.spanEnd = b, b+e.win+spread
		} else {
			// Two windows and a place: one whole server window,
			// whatever its phase, lies within the span. So too when
			// paced by the fit's window, whose phase is the fit's
			// guess: a span that missed a window of the server's
			// would pass and say nothing.
			e.spanAt = now
			e.spanEnd = now + 2*(e.win+spread) + (e.win+spread)/max(e.limit, 1)
		}
		return true
	}
	return false
}

// counts reports whether a window's count measures the quota: the
// server grants by fixed windows, as the fit named them (the estimator
// follows one), or as the estimator's own refills pin them, a round
// length within their bounds or bounds within settleSpan. A sliding
// log's or a bucket's count depends on when it is taken; and where the
// estimator settled on loose bounds after maxMeasured windows, its
// refills followed our own sends, as a sliding log's do.
func (e *estimator) counts() bool {
	return e.fixed && (e.followed || e.whi > 0 && (e.win != e.whi || float64(e.whi) <= settleSpan*float64(e.wlo)))
}

// raise takes a probe that passed (see probe): L̂ grows by the probe's
// step, what it sent above L̂ per window (less the one more that a probe
// paced by the fit's window sends: see paceAt), and the next probe goes
// at once, its step doubled, but at most halfway to the ramp's ceiling.
// Steps that double find a raise of k in about log2(k) probes; halving
// steps after one failed keep the search between the level that passed
// and the one that failed, and end it at one apart. Where a window's
// count measures the quota (see counts), the step that fails ends the
// search instead: its count is the quota (see throttle), so the step
// may be large, L̂ (the pace doubles), and a raise of k·L̂ is found in
// about log2(k)+1 probes.
func (e *estimator) raise(now int64, next uint64, maxPause int64) {
	if e.depth > 0 {
		// Above a token bucket, a probe that passed proves half its
		// step: had the rate been L̂'s, it would have drained the
		// depth twice over. The next goes at once, its step doubled.
		step, _ := e.bucketProbe()
		e.limit += max(step/2, 1)
		e.step = 2 * step
		e.probeAt, e.probeSeq = now, next
		return
	}
	step := max(e.step, 1)
	e.limit += step
	if !e.counts() {
		// What passed is L̂ per the shortest window the bounds allow
		// (see paceAt): a pace, its window's count no measure.
		e.fixed = false
		if e.wlo > 0 && e.wlo < e.win {
			e.win, e.whi = e.wlo, e.wlo
		}
	}
	step *= 2
	if e.counts() {
		// A window's count measures the quota: the count at a failed
		// step's throttle says it (see throttle), and the step costs
		// only what the pace sent above the quota before that
		// throttle's answer came, at most what it sends in a round
		// trip. So the step grows to L̂ at once, as slow start's cap
		// did: a raise of 60% is found in two probes. Below an upper
		// bound a count set (top), the step goes no further than that.
		// The estimator counts the windows itself from here, as placed.
		e.followed = false
		if e.top > e.limit {
			step = min(step, e.top-e.limit)
		} else {
			e.top = 0
			step = max(step, e.limit)
		}
	}
	if e.ceil > 0 {
		step = min(step, (e.ceil-e.limit)/2)
	}
	if step < 1 {
		e.step, e.ceil = 0, 0
		e.schedule(now, next, maxPause, false)
		return
	}
	e.step = step
	e.probeAt, e.probeSeq = now, next
}

// transient takes an answer that failed for no quota reason: while a
// window is measured, its request may not have counted, so one more may
// go to reach the window's end.
func (e *estimator) transient() bool {
	if e.phase != PhaseMeasuring || e.seeking || e.start == 0 {
		return false
	}
	e.budget++
	return true
}

// strayRisk is the share of answers from which on stray throttles are
// common; and the chance, at most, that a throttle then taken for a
// window's end was a stray.
const strayRisk = 0.01

// runRisk is the chance, at most, that a throttle taken for a window's end
// was a stray, where most throttles are (see rateFree): they come by the
// hundred, so that even a rare run of them must not make a quota.
const runRisk = 1e-4

// maxTests caps the tests of one throttle: a run of ten at 1 in 2 is as
// likely as 1e-3.
const maxTests = 10

// strayHorizon is about how many answers the stray share is measured over:
// both counts halve when the answers reach twice as many.
const strayHorizon = 1024

// testsFor returns how many requests after a throttle, all throttled, show
// the window spent. Where most throttles
// are strays (see rateFree), as many as make a run of throttles that long
// less likely than runRisk, at the share of answers throttled; where
// strays are common, as many as make a run of strays that long less
// likely than strayRisk; else one for a throttle that may not be the
// window's end (below L̂), and none for one that is; in slow start at
// least coldTests.
func (e *estimator) testsFor() int {
	p := e.strayShare()
	k := 0
	switch {
	case e.rateFree():
		q := min(float64(e.thrAnswers)/float64(e.answers), 0.5)
		k = min(int(math.Ceil(math.Log(runRisk)/math.Log(q))), maxTests)
	case p >= strayRisk:
		k = int(math.Ceil(math.Log(strayRisk) / math.Log(min(p, 0.5))))
	case e.belowLimit():
		k = 1
	}
	if e.coldTest {
		// The first throttle: nothing is known of strays yet.
		k = max(k, coldTests)
	}
	return k
}

// coldTests is how many tests a throttle in slow start gets at least: a
// stray taken for a window's end there would make a quota of a server that
// has none, and nothing is known of strays yet. Two in a row are one in 25
// where a fifth of the answers are strays (the matrix's heaviest
// shedding); the strays seen after it raise the tests.
const coldTests = 2

// rateFree reports whether strays are common and a third of the
// throttles at least (the others came with them, in flight at once): the
// server throttles whatever the rate (it sheds load). Then a throttle
// is tested by the requests that come anyway, none held back (see
// nextProbe). A token bucket or a sliding log has strays too (a token
// that came in time, a slot that aged out), but most of their throttles
// are the window's end.
func (e *estimator) rateFree() bool {
	return e.strayShare() >= strayRisk && 3*e.strays >= e.thrAnswers
}

// straysSeen reports whether strays are common enough to look for a cap
// on requests in flight behind them (see flight): 1% of the answers, or
// one throttle in eight.
func (e *estimator) straysSeen() bool {
	return e.strayShare() >= strayRisk || e.strays > 0 && 8*e.strays >= e.thrAnswers
}

// strayShare returns the share of answers that were stray throttles.
func (e *estimator) strayShare() float64 {
	if e.answers == 0 {
		return 0
	}
	return float64(e.strays) / float64(e.answers)
}

// throttledShare returns the share of answers that were throttled.
func (e *estimator) throttledShare() float64 {
	if e.answers == 0 {
		return 0
	}
	return float64(e.thrAnswers) / float64(e.answers)
}

// answered counts an answer, throttled or not, for the stray share.
func (e *estimator) answered(throttled bool) {
	e.answers++
	if throttled {
		e.thrAnswers++
	}
	if e.answers >= 2*strayHorizon {
		e.answers, e.strays, e.thrAnswers = e.answers/2, e.strays/2, e.thrAnswers/2
	}
}

// stray counts a stray throttle.
func (e *estimator) stray() { e.strays = min(e.strays+1, e.answers) }

// belowLimit reports whether the window was found spent below L̂, or at
// an unknown count: even with the answers still due, it may not be the
// window's end.
func (e *estimator) belowLimit() bool {
	return e.spent < 0 || e.spent+e.pending < e.limit
}

// manyThrottled reports whether most of the requests in flight with the
// throttle tested, and at least manyPending of them, were throttled too: a
// window (or a bucket) spent, whatever a test says later. Strays come one
// by one among successes.
func (e *estimator) manyThrottled() bool {
	return e.pendThr >= manyPending && e.pendThr > e.pendOK
}

// manyPending is how many requests in flight with a throttle must be
// throttled too to show the window spent: with fewer in flight, strays
// that frequent would show it too often.
const manyPending = 4

// sameWindow reports whether a request that arrived at a, after the
// throttle tested, may have arrived in the same window as it: whether
// nothing says the window refilled between them. Settled on a fixed
// window the refills place, both must lie within one window as placed,
// by more than the arrivals' spread from either edge and the throttle
// past the stretch where the window's start is uncertain: a throttle
// there and a success just after it are a window's end and the next one's
// refill, however the placement leans (see TestEdgeThrottleRefillPlaces).
func (e *estimator) sameWindow(a, spread int64) bool {
	switch {
	case e.unsure:
		return false // the window's count ran past L̂: the next may have begun
	case e.phase == PhaseSettled && e.fixed:
		from, unsure, ok := e.windowOf(e.thrArr)
		if !ok {
			return true
		}
		w := e.wlo
		if e.win != e.whi {
			w = e.win
		}
		return e.thrArr-from > unsure+spread && a+spread < from+w
	}
	return e.start == 0 || e.wlo == 0 || e.within(a)
}

// within reports whether a request that arrived at a was surely in the
// window begun at the newest refill: before the earliest moment the next
// could begin.
func (e *estimator) within(a int64) bool {
	return e.wlo > 0 && a <= e.startLo+e.wlo
}

// found records a refill in (lo, hi] and narrows the bounds on W with
// every refill kept: refills n_i and n_k apart by d windows give
// (lo_k − hi_i)/d < W ≤ (hi_k − lo_i)/d. Bounds that contradict each other
// mean the server changed (or is no fixed window): start again from this
// refill.
func (e *estimator) found(lo, hi int64) {
	n := int64(1)
	if e.nref > 0 {
		last := e.ref[(e.nref-1)%maxRefills]
		n = last.n + 1
		if !e.chain && e.whi == 0 {
			// Windows may have gone by, and nothing says how many:
			// keep the lower bound, not the refills.
			e.nref = 0
		} else if !e.chain {
			// Windows may have gone by unmeasured (while settled): count
			// them by the bounds, if these leave one count only.
			wlo, whi := e.wlo, e.whi
			if e.win != e.whi {
				wlo, whi = e.win, e.win
			}
			first := last.n + max(1, ceilDiv(lo-last.hi, whi))
			final := last.n + max(1, (hi-last.lo)/max(wlo, 1))
			n = first
			if final != first {
				// Too long ago to tell: keep the bounds, not the refills.
				e.nref = 0
			}
		}
	}
	e.ref[e.nref%maxRefills] = refill{n: n, lo: lo, hi: hi}
	e.nref++
	e.bound()
}

// bound derives the bounds on W from the refills kept, newest first,
// dropping the older ones that contradict the newer (the server changed,
// or its window drifts, as a sliding log's does).
func (e *estimator) bound() {
	newest := e.nref - 1
	oldest := max(e.nref-maxRefills, 0)
	wlo, whi := int64(0), int64(0)
	for j := newest; j > oldest; j-- {
		rj := e.ref[j%maxRefills]
		lo, hi := wlo, whi
		ok := true
		for i := j - 1; i >= oldest && ok; i-- {
			ri := e.ref[i%maxRefills]
			d := rj.n - ri.n
			if d <= 0 {
				continue
			}
			lo = max(lo, (rj.lo-ri.hi)/d)
			if b := (rj.hi - ri.lo) / d; hi == 0 || b < hi {
				hi = b
			}
			if hi > 0 && lo >= hi {
				// Refill i and those before it contradict the newer:
				// keep the newer only.
				ok = false
				oldest = i + 1
			}
		}
		if ok {
			wlo, whi = lo, hi
		}
	}
	if oldest > max(e.nref-maxRefills, 0) {
		// Keep the consistent ones only.
		kept := e.nref - oldest
		var ref [maxRefills]refill
		for k := range kept {
			ref[k] = e.ref[(oldest+k)%maxRefills]
		}
		e.ref, e.nref = ref, kept
	}
	e.wlo, e.whi = wlo, whi
	if e.whi > 0 && e.wlo >= e.whi {
		e.wlo = 0
	}
	e.win = snap(e.wlo, e.whi)
}

// ceilDiv returns a/b rounded up, for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// snap returns the window in force for bounds (wlo, whi]: the round
// length (fit.RoundWindow) within them if they are tight enough to hold
// one only, else whi.
func snap(wlo, whi int64) int64 {
	if whi <= 0 {
		return 0
	}
	if float64(whi) <= snapSpan*float64(max(wlo, 1)) {
		if r, ok := fit.RoundWindow(time.Duration(wlo+1), time.Duration(whi)); ok {
			return int64(r)
		}
	}
	return whi
}

// throttle takes a throttle that arrived at a (admission number seq, next
// the number the next admission gets, pending the requests still in
// flight). It returns until when to pause, as the time the next request
// should arrive at the server (0 for no pause), and whether that request
// is a probe the others wait for.
func (e *estimator) throttle(now, a int64, seq, next uint64, pending, rtt, spread, maxPause int64) (u int64, probe bool) {
	e.answered(true)
	switch {
	case e.phase == PhaseCold && !e.seeking:
		// Tested first: slow start goes on if a request right after it
		// gets through (see confirm).
		e.coldTest = true
		e.begin(e.count, 0, a, next, rtt)
		return e.nextProbe(now, rtt, spread, maxPause), true
	case e.seeking:
		e.lastThr = max(e.lastThr, a)
		if seq < e.seekSeq {
			if seq < e.testSeq {
				e.pendThr++
			}
			if e.tries < e.tests && a > e.thrArr+spread {
				e.tries++ // sent after the throttle: a test, throttled too
				if u, done := e.confirm(a, next); done {
					return u, false
				}
			}
			return 0, false // in flight before the last probe was asked for
		}
		e.tries++
		if u, done := e.confirm(a, next); done {
			return u, false
		}
		e.seekSeq = next
		return e.nextProbe(now, rtt, spread, maxPause), true
	case e.phase == PhaseSettled && e.spanSeq != 0 && seq >= e.spanSeq:
		if e.spanEnd != 0 && e.strayShare() >= strayRisk && e.depth == 0 {
			// Where strays are common, one does not fail the probe:
			// the throttle is tested first (see confirm). Not above a
			// token bucket: it earns a token back within a request or
			// two at the pace, so a test right after the throttle
			// passes whether or not the probe drained it, and a
			// probe that wide would go on for good.
			e.spanTest = true
			e.begin(-1, pending, a, next, rtt)
			return e.nextProbe(now, rtt, spread, maxPause), true
		}
		if e.spanEnd != 0 && e.step > 0 && e.counts() && !e.followed {
			// A ramp's step failed in a window whose count measures
			// the quota.
			if from, unsure, ok := e.windowOf(a); ok && from == e.curFrom {
				e.spanEnd = 0
				if a-from > unsure+spread {
					// Surely in the window counted: that count,
					// with the answers still to come from before
					// the throttle, is the quota (see success). The
					// ramp ends; the rest of the window waits for
					// its refill, as any settled window's end.
					e.step, e.ceil, e.top = 0, 0, e.count
					e.begin(e.count-e.early, pending, a, next, rtt)
					e.measuredRaise = true
				} else {
					// Where the window's start is uncertain: the end
					// of the one before, perhaps. Its refill, sought,
					// places the windows anew, and the step goes
					// again at once, its throttle then surely in the
					// window counted.
					e.probeAt, e.probeSeq = now, next
					e.begin(-1, pending, a, next, rtt)
				}
				return e.nextProbe(now, rtt, spread, maxPause), true
			}
		}
		if e.spanEnd != 0 {
			u := e.spanFailed(a, next)
			if e.drifted(a, spread) {
				// A window's end, as any settled throttle: its
				// refill, sought, places the windows anew and
				// narrows the bounds. The window held L̂: L̂ stands.
				e.begin(e.limit, pending, a, next, rtt)
				return e.nextProbe(now, rtt, spread, maxPause), true
			}
			if u > 0 {
				return u, false
			}
		}
		if seq < e.spanStop {
			// One sent with the failed probe: a throttle more that
			// probe cost, and the next comes that much later (in a
			// ramp, its halving step bounds what it costs).
			if e.step == 0 {
				e.probeSeq = min(e.probeSeq+minProbeGap, e.spanStop+e.reach(maxPause))
			}
			return 0, false
		}
	}
	// The window is spent: below L̂ if this is not the measured window's
	// expected end, which the next request tells. Its count is known if
	// the throttle was surely in the window begun at start.
	spent := int64(-1)
	switch {
	case e.start != 0 && e.phase == PhaseMeasuring && !e.unsure && (e.wlo == 0 || e.within(a)):
		spent = e.count
	case e.phase == PhaseSettled && e.fixed:
		if from, unsure, ok := e.windowOf(a); ok && from == e.curFrom && a-from > unsure+spread {
			// The throttle surely arrived in the window counted, not
			// at the end of the one before, however loosely the
			// refills place its start: a count that took in requests
			// from that stretch is too high, cuts L̂ too little, and
			// the next window cuts it again. (Measuring again instead
			// sends L̂+1 at once.)
			spent = e.count
		} else if ok && from > e.curFrom && from-e.curFrom <= e.win+unsure && a-from <= unsure+spread && e.count < e.limit {
			// Where the next window's start is uncertain, with none of
			// ours through in it yet: the end of the window counted,
			// spent below L̂. Paced at one above the quota, the one
			// above comes last in a window, just there, every window.
			spent = e.count
		}
	}
	e.begin(spent, pending, a, next, rtt)
	return e.nextProbe(now, rtt, spread, maxPause), true
}

// confirm ends the tests of a throttle once they all were throttled too
// (the latest arrived at a): the window is spent. In slow start, what got
// through is L̂, and the learner measures from here; the window spent
// began before it was seen. In a probe above L̂, the probe failed: done
// reports that the seek ends, and u is the pause spanFailed asks for.
// Otherwise the seek for the refill goes on.
func (e *estimator) confirm(a int64, next uint64) (u int64, done bool) {
	if e.tries < e.tests {
		return 0, false
	}
	return e.taken(a, next)
}

// taken gives the throttle tested its meaning, a window's end (see
// confirm).
func (e *estimator) taken(a int64, next uint64) (u int64, done bool) {
	switch {
	case e.coldTest:
		e.coldTest = false
		e.limit = max(e.count, 1)
		e.phase, e.measured = PhaseMeasuring, 0
		e.start, e.cold = 0, e.nref == 0
	case e.spanTest:
		e.spanTest, e.seeking = false, false
		return e.spanFailed(a, next), true
	}
	return 0, false
}

// drifted reports whether a probe above L̂ failed, its throttle arriving
// at a, on the drift of a window off the grid: paced per the upper end of
// bounds that hold no round length, the windows as placed drift a little
// each window from the server's, until a probe fails late in one, where
// the server's may have ended already. Seeking that refill places the
// windows anew and narrows the bounds, where pausing to the predicted end
// keeps both as they were. A probe that failed earlier in the window
// says nothing of the drift, and nor does one where the placement leaves
// no late stretch: where its uncertainty reaches back past the pace's
// last request of the window (a window of one request has none). A
// token bucket read as a window off the grid, often one request per a
// few tens of milliseconds, fails probes anywhere, and a refill sought
// there costs throttles and places nothing.
func (e *estimator) drifted(a, spread int64) bool {
	if !e.fixed || e.followed || e.whi <= 0 || e.win != e.whi || e.step != 0 || e.limit < 1 {
		return false
	}
	from, unsure, ok := e.windowOf(a)
	return ok && unsure+spread < e.wlo-e.win/e.limit && a+unsure+spread >= from+e.wlo
}

// spanFailed ends a probe above L̂ that a throttle arrived at a ended: the
// quota is unchanged, and the server's window is spent. It returns until
// when to pause (0 for none): until the window surely ended. In a ramp,
// the level failed is its ceiling, and the step halves (see raise).
func (e *estimator) spanFailed(a int64, next uint64) int64 {
	e.spanEnd = 0
	if e.depth > 0 {
		// Above a token bucket: the bucket is dry now, and a probe at
		// half the step would find it so. The ramp starts again.
		e.step = 0
	}
	if e.step > 0 {
		// In a ramp: the level failed bounds it, and the next probe
		// goes halfway there.
		e.ceil, e.step = e.limit+e.step, e.step/2
		if e.step == 0 {
			e.ceil = 0
		}
	}
	e.fails = min(e.fails+1, 16)
	e.spanStop, e.stopAt = next, a
	if _, b := e.predict(a); b > a {
		return b
	}
	return 0
}

// begin starts seeking the refill after a throttle arrived at a.
func (e *estimator) begin(spent, pending, a int64, next uint64, rtt int64) {
	e.seeking, e.spent, e.pending, e.lastThr, e.tries, e.seekSeq = true, spent, pending, a, 0, next
	e.measuredRaise = false
	e.thrArr, e.testSeq, e.pendOK, e.pendThr = a, next, 0, 0
	e.gated = !e.rateFree()
	e.tests = e.testsFor()
	e.predLo = 0
	e.chain = e.phase == PhaseMeasuring && e.start != 0 && e.nref > 0
	e.gap = max(rtt, e.wlo/16, int64(time.Millisecond))
	e.edge, e.edgeBefore, e.edgeOff = 0, false, false
	e.onGrid, e.gridOut = false, 0
	e.spanEnd = 0
}

// nextProbe returns when the next seek probe should arrive at the server,
// 0 for no pause.
//
// A throttle is tested first (see testsFor): by one request at a time,
// the others held back, where strays are rare, so that a window's end
// costs one throttle more; by the requests that come anyway where strays
// are common, so that a stray holds no one back.
//
// A throttle that may not be the window's end (one below L̂, with no more
// answers due that could make up the count) is tested at once. Otherwise,
// with W bounded, the next refill lies in a predicted interval and the
// probe goes to its middle (a throttled probe halves it), or, where a
// boundary of the windows counted lies in it (see boundary), just before
// that boundary and then just past it; with W bounded below only, the
// first probe goes where the window could end first, then at intervals
// that double from a sixteenth of that bound (from one round trip with
// nothing known), and where a boundary of a round length no longer than
// the step comes before the next of those (see gridEdge), just before it
// and then just past it. A refill that did not come by the predicted end
// means the model was wrong: the refills are forgotten.
func (e *estimator) nextProbe(now, rtt, spread, maxPause int64) int64 {
	switch {
	case e.tries < e.tests && e.gated:
		return now + e.lead(rtt) // a test, alone
	case e.tries < e.tests:
		return 0 // the next requests test it, unheld
	}
	a, b := e.predict(e.lastThr)
	a = max(a, e.lastThr)
	e.predLo = 0
	if b > e.lastThr {
		e.predLo = a // the refill comes after it, as the model has it
	}
	at, before := e.edge, e.edgeBefore
	if at != 0 && !before && e.lastThr >= at {
		// Throttled just past it: no refill there; on the grid, nor at
		// a boundary of any round length it is one of.
		if !e.onGrid {
			e.edgeOff = true
		} else {
			for i, w := range fit.Rounds() {
				if at%int64(w) == 0 {
					e.gridOut |= 1 << i
				}
			}
		}
	}
	e.edge, e.edgeBefore, e.onGrid = 0, false, false
	// A probe's arrival varies by the spread of arrivals, and, until the
	// fit found where in its round trip the server counts a request (see
	// lead), by as much of the round trip as lies on each side of the
	// arrival assumed: a probe aimed just past a boundary goes past late
	// after it, one aimed just before it early before it.
	past, early := spread, spread
	if !e.delayed {
		past, early = spread+e.lead(rtt), spread+rtt-e.lead(rtt)
	}
	var target int64
	switch {
	case b > e.lastThr:
		if c := e.boundary(a, b, spread); c > 0 {
			// One probe just before the boundary, then one just past
			// it: the first throttled and the second through place the
			// refill within the spread of arrivals.
			e.edge, target = c, c+past
			if (at != c || !before) && c-early > a {
				e.edgeBefore, target = true, c-early
			}
			break
		}
		target = a + (b-a)/2
		if b-a < 2*rtt {
			target = b
		}
	case e.logFree > e.lastThr:
		// Paced by a log, whose refills follow our own sends: the
		// oldest of the L̂ grants it holds leaves it a window after
		// it arrived, where all of them were ours (a burst, say, that
		// filled it). Probed just past that, once: where others spend
		// too, the log frees a place sooner, and the doubling goes on
		// from there.
		target, e.logFree = e.logFree+past, 0
	case b > 0 && e.followed:
		// The fit's window did not refill when it said: seek the refill
		// in steps that double, still paced by it, and let the next fit,
		// which holds these answers, correct it.
		target = e.lastThr + e.gap
		e.gap = min(2*e.gap, maxPause)
	case b > 0:
		// The refill should have come: the model no longer fits. Keep
		// the newest refill and the lower bound on W only.
		e.ref[0], e.nref = e.ref[(e.nref-1)%maxRefills], 1
		e.whi, e.win = 0, 0
		if e.phase == PhaseSettled {
			e.phase, e.measured = PhaseMeasuring, 0
		}
		fallthrough
	default:
		target = a
		if a <= e.lastThr {
			target = e.lastThr + e.gap
		}
		from := max(a, e.lastThr)
		if c := e.gridEdge(from, early+past+2*spread, maxPause); c > 0 && c-early <= target {
			// A boundary of a window on the grid comes first: probed
			// from both sides, as above. Where others spend the same
			// quota, a window is spent soon after it begins, and
			// probes that double their spacing land after that,
			// window after window; one just past the boundary comes
			// before them.
			e.edge, e.onGrid, target = c, true, c+past
			if (at != c || !before) && c-early > e.lastThr {
				e.edgeBefore, target = true, c-early
			}
			break
		}
		if a <= e.lastThr {
			e.gap = min(2*e.gap, maxPause)
		}
	}
	return max(target, now+e.lead(rtt))
}

// gridEdge returns the first boundary after t of a window on the fit's
// grid (fit.Rounds) that begins at a whole number of its lengths from the
// Unix epoch, where servers that count per second or per minute begin
// theirs: of a length that W's lower bound allows, that no probe of this
// seek ruled out, no longer than MaxPause, and no longer than the seek's
// doubling step (so the boundary lies within that of t) unless the newest
// refill predicts it (below); 0 if none.
//
// Longer ones wait for the step: probed as soon as the seek begins, a
// round length's boundary that a sliding log's refill happens to fall
// near is ruled out by a probe that came a moment early, and the next
// length's boundary then comes before the doubling finds the refill, so
// the log's refills look like a fixed window twice its length (50 per
// 2 s for 50 in any 1 s).
//
// But where others spend the same quota, the window after a refill is
// spent soon after it begins, the step reaches W only after the next
// boundary has passed, and the refill found is two windows on, or more:
// three clients on 50 per 1 s settled on 2 s windows, each catching
// every other refill. A refill placed finely on a boundary of a round
// length predicts the next a length on, and that boundary is probed
// whatever the step, where:
//
//   - the refill lies within twice fine (how finely a pair of probes just
//     before and just past a boundary places one: see nextProbe) and
//     within a sixteenth of the length: a log's or a bucket's refill,
//     which follows our own sends, lies on a boundary by chance (placed
//     within about 280 ms, as round trips of 57 ms and their spread
//     place it, on a 1 s boundary one time in four (reckoned): a family
//     draw of two clients on a slow bucket threw 62% of its settled
//     requests at throttles in 3 of 3 runs without this bound, 24–63%
//     over 9 with it, 2–46% over 6 before either);
//   - the window measured from it did not end at L̂ (its count ran past
//     L̂, or a throttle came below it): where it ended at L̂, our own
//     requests spent it, the doubling finds the refill a window on, and
//     the pair only costs a throttle or two each window measured (120
//     per 3 s, whose refills lie on whole seconds, measured for twice as
//     long);
//   - the length is more than a third of the stretch the window before
//     outlasted (from the throttle that began its seek to the refill
//     found, see success): the doubling's step reaches W within twice W
//     of the throttle and a boundary of W's comes within W more, so the
//     refill found lies within three windows of the throttle even where
//     others spend, and a shorter length is no W (a client alone on 200
//     per 10 s, its measured windows a few below L̂, some of its count in
//     flight, threw 6 more at 1 s pairs in its first 30 s).
func (e *estimator) gridEdge(t, fine, maxPause int64) int64 {
	var r refill // the newest refill, where it predicts a boundary
	predicts := e.nref > 0 && e.spent != e.limit
	if predicts {
		r = e.ref[(e.nref-1)%maxRefills]
		predicts = r.hi-r.lo <= 2*fine
	}
	c := int64(0)
	for i, w := range fit.Rounds() {
		g := int64(w)
		if g > maxPause {
			break
		}
		predicted := predicts && 3*g > e.outlast && 16*(r.hi-r.lo) <= g && r.hi/g > r.lo/g
		if e.gridOut&(1<<i) != 0 || g < e.wlo || g > e.gap && !predicted {
			continue
		}
		if x := (t/g + 1) * g; c == 0 || x < c {
			c = x
		}
	}
	return c
}

// boundary returns the boundary in (a, b] (arrival times, Unix ns) where
// the refill sought comes if the server's windows are the ones the
// estimator counts by, 0 if none is or the seek ruled it out: where a
// window's count measures the quota (see counts) and Ŵ is a round length
// (the fit's grid), one whole number of windows after the newest refill
// kept, if that refill is placed within four spreads of arrivals, else
// after the Unix epoch, where servers that count per second or per
// minute start theirs. Probed from both sides (see nextProbe), the
// refill is placed in two probes, one of them throttled, where halving
// the interval the bounds predict takes one probe per halving and places
// it only as finely as the last interval; and a boundary the windows do
// not keep is ruled out by one probe throttled past it.
func (e *estimator) boundary(a, b, spread int64) int64 {
	if e.edgeOff || !e.counts() || !(fit.Rule{Kind: fit.Fixed, Window: time.Duration(e.win)}).OnGrid() {
		return 0
	}
	from := int64(0)
	if r := e.ref[(e.nref+maxRefills-1)%maxRefills]; e.nref > 0 && r.hi-r.lo <= 4*spread {
		from = r.lo + (r.hi-r.lo)/2
	}
	c := from + e.win
	if a >= from {
		c = from + ((a-from)/e.win+1)*e.win
	}
	if c > b {
		return 0
	}
	return c
}

// predict returns where the first refill not yet due at after lies: in
// (a, b], from the refills kept and the bounds on W (W itself if snapped
// to a round value); b is 0 while W is unbounded above, and a too while
// nothing is known.
func (e *estimator) predict(after int64) (a, b int64) {
	if e.nref == 0 || e.wlo <= 0 {
		return 0, 0
	}
	wlo, whi := e.wlo, e.whi
	if e.win != e.whi {
		wlo, whi = e.win, e.win
	}
	last := e.ref[(e.nref-1)%maxRefills]
	n := last.n + 1
	if whi > 0 && after > last.hi+whi {
		n = last.n + (after-last.hi)/whi + 1
	}
	// Newest first: an older refill whose prediction misses the newer
	// ones' (its window was miscounted) is left out.
	for i := e.nref - 1; i >= max(e.nref-maxRefills, 0); i-- {
		r := e.ref[i%maxRefills]
		lo, hi := max(a, r.lo+(n-r.n)*wlo), b
		if whi > 0 {
			if x := r.hi + (n-r.n)*whi; hi == 0 || x < hi {
				hi = x
			}
		}
		if hi > 0 && lo >= hi {
			continue
		}
		a, b = lo, hi
	}
	return a, b
}

// paceAt returns what the learner paces admissions at at by, while
// settled: pace's, or, from the start of a probe above L̂ until it is
// judged, one more per the shortest window the bounds allow (the step
// more, in a ramp: see raise). Paced by the fit's window, whose bounds
// are the fit's, the probe sends one more again: at one more, a window
// of the server's may hold L̂ only, by where the pace falls, and a probe
// that passed would say nothing.
func (e *estimator) paceAt(at, spread int64) (limit, win int64) {
	limit, win = e.pace(spread)
	switch {
	case limit <= 0 || e.spanEnd == 0 || at < e.spanAt:
	case e.depth > 0:
		step, _ := e.bucketProbe()
		limit += step
	case e.followed:
		limit, win = limit+max(e.step, 1)+1, e.win
	default:
		limit, win = limit+max(e.step, 1), e.probeWin()
	}
	return limit, win
}

// probeWin returns the window a probe above L̂ paces by (see paceAt): the
// shortest the bounds allow, unless the fit's window is followed or a
// bucket's depth paces.
func (e *estimator) probeWin() int64 {
	if e.depth == 0 && !e.followed && e.wlo > 0 {
		return min(e.wlo, e.win)
	}
	return e.win
}

// pace returns what the learner paces at: L̂ per ŵ (Ŵ plus the spread of
// arrival delays), 0 if nothing is learned or the window is unknown.
func (e *estimator) pace(spread int64) (limit int64, win int64) {
	if e.limit <= 0 || e.win <= 0 {
		return 0, 0
	}
	return e.limit, e.win + spread
}

// adoptFixed settles on a fixed window of limit per win whose windows begin
// at start + k·win (arrival times, Unix ns, a request arriving delay of
// its round trip after it left): the rule the fit named, where the
// record showed the estimate wrong (see Limiter.followFit). The
// refills kept are the newest maxRefills window starts by now, each as
// uncertain as tol, so the bounds on W, the windows counted and the
// refills predicted are the fit's until a refill found contradicts them.
func (e *estimator) adoptFixed(limit, win, start, tol, now int64, delay float64) {
	e.settle(limit, true, delay)
	k := (now - start) / win
	if now < start {
		k = -ceilDiv(start-now, win)
	}
	for i := range int64(maxRefills) {
		at := start + (k-maxRefills+1+i)*win
		e.ref[i] = refill{n: i + 1, lo: at - tol, hi: at + tol}
	}
	e.nref = maxRefills
	e.bound()
	e.curFrom, _, _ = e.windowOf(now)
}

// adoptSliding settles on a sliding log of limit per win, the rule the
// fit named where the record showed the estimate wrong (see
// Limiter.followFit): a pace with no phase, so no refills are kept, and
// the bounds on W are W.
func (e *estimator) adoptSliding(limit, win int64, delay float64) {
	e.settle(limit, false, delay)
	e.nref, e.wlo, e.whi, e.win = 0, win, win, win
}

// settle is what adoptFixed and adoptSliding share: settled on the
// fit's rule, whatever was sought or measured dropped, the window now
// going on counted as spent (its count before now is not known: a
// throttle in it cuts nothing), and the probes above L̂ begun again.
func (e *estimator) settle(limit int64, fixed bool, delay float64) {
	e.delay, e.delayed = delay, true
	e.phase, e.fixed, e.followed, e.limit, e.depth = PhaseSettled, fixed, true, limit, 0
	e.seeking, e.coldTest, e.spanTest, e.unsure, e.low = false, false, false, false, 0
	e.spanEnd, e.fails, e.measured, e.step, e.ceil, e.top = 0, 0, 0, 0, 0, 0
	e.start, e.startLo, e.curFrom, e.count = 0, 0, 0, limit
}

// lead returns how long after it leaves a request reaches the server,
// for round trip rtt: half of it, until a fit adopted found its delay
// into the round trip; from then on, that (which stays when the estimator
// leaves the fit's window, as the refills it keeps were placed by it).
// A nil estimator (nothing learned yet) takes half.
func (e *estimator) lead(rtt int64) int64 {
	if e == nil || !e.delayed {
		return rtt / 2
	}
	return int64(e.delay * float64(rtt))
}
