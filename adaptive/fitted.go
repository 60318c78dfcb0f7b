package adaptive

import (
	"math"
	"time"

	"github.com/tollgate-go/tollgate/fit"
)

// fitted is the learner's record of a tenant's answers and the family of
// server rules fitted to it (package fit). It begins at the tenant's first
// throttle while the server says no limit, so a tenant never throttled
// pays nothing for it. Limiter.mu guards it.
//
// The estimator's state machine (estimate.go) is being replaced by the
// fit, in stages (#35). The record (fit.Record) holds the tenant's newest
// answers: when each left and came back, how many were in flight,
// throttled or not; 8 KiB. The Limiter fits the family of server rules to
// it where the answers turn (a first throttle, a refill), at most once per
// 32 answers (paced by the fit's fixed window or sliding log, once per
// window's count: a tenant that sends a few requests a window fits about
// every window): the rule that explains them best, its score, the best of
// another kind, and Ô, what someone we cannot see spends (Snapshot.Fit). A
// fit is replaced by "no quota" only on evidence: not when the record's
// throttles have scrolled out, nor when a quota explains more of them than
// no quota does, by less than chance could.
//
// The fit paces four members of the family so far, the fixed window on or off
// the grid, the sliding log on it or off it, the window opened on first use,
// and the token bucket, and only where the record shows the estimator's wrong:
// when a fit names one, L less Ô per W, that the fit before it named too, with
// throttles between, and that explains the answers better than L̂ per Ŵ by
// more than chance (fit.Record.Prefers, each at its own limit; weighed at each
// fit and, while the estimator is settled, as often between fits), or, where
// the estimator has no rule yet (slow start, or measuring with nothing to
// bound W), a window on the grid that explains them better than the best rule
// of another kind by more than chance, the estimator settles on it
// (Snapshot.PacedByFit): its bounds are the fit's W, its refills a fixed
// window's starts (a sliding log's follow our own sends: none is kept), and a
// request reaches the server where the fit's delay into the round trip puts
// it, so only that share of the round trip's variation widens the pace. Paced
// so, a throttle does not send the learner back to measuring, nor does a
// refill missed where predicted, nor refills that contradict each other: the
// next fit, which holds those answers, says whether the rule changed. A probe
// above a fixed window of the fit's sends two more per window, over two
// windows whatever the fit's phase (one more could fall so that no window of
// the server's holds it); above a sliding log, over one window, which has no
// phase. Settled on the fit's window, a higher count is left to the probes: a
// fit books someone else's spending by its median, which would take from them
// half the time. A sliding log off the grid is taken as one on it where,
// besides, the record prefers it to the best fit of another kind by more than
// chance (a fixed window's bursts, bunched, fit a log shorter than the window
// too): the fit takes its length from the successes, which bound it from
// above, and the estimator's own bounds stay loose where refills follow our
// sends. While the estimator measures, a sliding log that the record prefers
// so is taken whether or not it beats the estimator's rule, a guess that sends
// L̂+1 at once each window, which a log holds against the pace for a whole
// window after. A fixed window off the grid, or one opened on first use, is
// judged as named and paced as a sliding log of its count per its length, the
// most restrictive rule near it, with the checks a log of that length has:
// the estimator keeps the phases of windows on the grid only (early in a
// record, a scan of the refills' spacing finds a length a few percent off, or
// a fraction of the window), and a window opened on first use has no phase but
// our sends'.
//
// A token bucket (rate r, D deep) is taken where, besides the above, the
// record prefers it to the best fit of every other kind too by more than
// chance: a window's burst at its start, read early, looks like a bucket
// as deep as the window's count and as fast as the burst. The pace keeps
// one step under r, as L̂ per Ŵ with L̂ about 100 (one step, 1% of the
// rate, is the resolution of our goals, not a guess at the server), with
// no phase. A bucket grants a burst from its depth whatever its rate, so
// a probe that drains less says nothing: each probe sends, above the
// pace, twice D, within half of what the record holds. Had r been the
// pace's, it would have run dry, so one that passes proves r above the
// pace by half its step: L̂ grows by that, and the next probe goes at
// once, its step doubled. One that fails leaves L̂ and the bucket dry,
// and ends the ramp; the throttle that ended it says when the bucket ran
// dry, and the next fit, whose rate differs from the pace's by more than
// a step, is taken again. Out of a ramp, a probe's step opens as wide as
// a failure costs about one throttle (one request per round trip above
// the pace, at most the pace again) and halves with each probe failed in
// a row, then opens again (see bucketProbe), where steps of 1–2% of the
// pace took minutes to find a raise on a slow bucket (family draw 124,
// 21 per 22.7 s raised fourfold: 33% of its quota settled, 99% with the
// step opened, in one run each). The depth a record shows is only as
// deep as it saw the bucket drained, so fits are alike by rate alone,
// and a passing probe proves less where the bucket is deeper than
// fitted: the ramp, not the fit, climbs that last stretch.
// The cap and no quota pace by the fit in the next stages.
//
// A change point cuts the record. It holds minutes of a tenant that
// sends a few requests a window, and a fit weighs the answers from
// before a change with those after it, so a quota that fell would be
// outvoted until they scroll out. Where the pacer follows the fit, each
// fit first judges the rule it paces by on the newest answers, from the
// first of the newest runs of throttles the rule does not explain and
// at least the newest four (fit.Record.Change); the estimator's own rule
// follows a fall by itself. Where the rule explains them no better than
// no quota does, by more than chance, a copy cut there is fitted, and
// the cut is kept where a rule explains the answers since better than
// the one in force by more than chance: the rule fitted to them, or the
// one in force at a lower limit (fit.Record.Relimit). A quota changes
// its limit far more often than its window or kind, and a few answers
// tell a limit more surely than a window: paced by a sliding log, the
// pacer takes the same log at the lower limit at once; a rule of
// another kind is followed as any fit is. A fixed window we pace by
// follows a fall window by window already, and a bucket's fall is in
// the fit's rate. A higher limit is the probes' to find.
type fitted struct {
	rec   fit.Record
	fit   fit.Fit
	trial trial  // a rule taken where the estimator saw shedding, on trial
	thr   bool   // the last answer recorded was a throttle
	again bool   // the fit in force names the rule the one before it named, with runs of throttles between (see alike)
	since uint64 // answers recorded since the last fit
	heard uint64 // answers recorded since the fit in force was last weighed against the estimate
	runs  uint64 // runs of throttles recorded
	runAt uint64 // runs when the fit in force was made
}

// record keeps the answer to ticket t, answered at now, and fits again
// where the answers turn: at the first throttle of a run (a count spent)
// and at the first success after one (a refill, a window's end seen). It
// fits no more often than once per sixteenth of the record, so answers
// that turn at every request (shedding) cost a fit per 32 answers at most;
// paced by the fit's window (paced, a fixed window or a sliding log; None
// where the pacer follows no rule of the fit's), once per window's count
// at most, so that a slow tenant, which sends a few a window, still fits
// every window or so. (A bucket's Limit is its depth, which can be 1 or 2:
// fitting that often would cost a fit per answer or two.) Each fit looks
// for a change point first (see change); kept is the rule to pace by at
// once that a change point left, if any.
//
// The record holds the newest answers (fit.Size): a settled tenant that
// throttles once in hundreds keeps the fit it made while it still held
// throttles. Counts that outlive the ring, so that long windows and rare
// probes keep their evidence, are the next stage's (#35).
//
// Between fits, it says when the fit in force is due to be weighed against
// the estimate again (weigh): as often as it would fit, where the answers
// turn, so that the record's evidence, which grows, is heard.
func (d *fitted) record(t *Ticket, now int64, throttled bool, paced fit.Rule) (refit, weigh bool, kept fit.Rule) {
	d.rec.Add(fit.Answer{
		Sent:      time.Unix(0, t.at),
		Answered:  time.Unix(0, now),
		InFlight:  int(t.level),
		Throttled: throttled,
	})
	d.since++
	d.heard++
	every := uint64(max(d.rec.Len()/16, 1))
	if (paced.Kind == fit.Fixed || paced.Kind == fit.Sliding) && paced.Limit > 0 {
		every = min(every, uint64(paced.Limit))
	}
	if throttled && !d.thr {
		d.runs++
	}
	if throttled != d.thr && d.since >= every {
		f, cut, k := d.change(paced)
		kept = k
		if cut || !d.stands(f) {
			d.again = alike(f.Best, d.fit.Best) && d.runs > d.runAt
			d.fit, d.runAt, refit = f, d.runs, true
		}
		d.since = 0
	}
	d.thr = throttled
	weigh = refit || d.heard >= every
	if weigh {
		d.heard = 0
	}
	return refit, weigh, kept
}

// change cuts the record at a change point (fit.Record.Change) where
// the newest answers show paced, the fit's rule the pacer follows, wrong.
// While the pacer follows no rule of the fit's, it looks for none: the
// estimator's own rule follows a fall by itself (see estimator.success),
// the flight model a cap's, and a cut made against a rule nothing paces
// by only shortens the record a later fit needs. The cut is taken where,
// on the answers after it alone, a rule explains them better than paced
// by more than chance (fit.Record.Prefers): the rule fitted to them, or
// paced at a lower limit (fit.Record.Relimit). The record's older
// answers, which outnumber the newer, would hold the fit at the rule
// before for as long as they stay in the ring: a quota that fell on a
// tenant that sends a few requests a window, for minutes.
//
// It returns the fit in force then, of the record cut or else of the whole
// (fitted only then: a cut kept costs no fit of the whole, and a refit
// stays within one fit's cost and a little), whether it cut, and kept: a
// sliding log we pace by, at the lower limit the newest answers show,
// where they name no other rule by more than chance. A quota changes its
// limit far more often than its window or kind, and a fit of the few
// answers since tells those less surely than the limit: the pacer takes
// kept at once. Where they name another rule, the pacer follows it as it
// follows any fit, once a later fit names it again (see followFit). A
// fixed window we pace by follows a fall window by window already (the
// estimator counts what each window left us), and a token bucket's fall is
// in its rate, which the fit's bucket gives (see followBucket). A higher
// limit is for the probes to find, paced: answers that a lower one
// forbids, a request placed a little off its arrival, raise none.
func (d *fitted) change(paced fit.Rule) (fit.Fit, bool, fit.Rule) {
	if paced.Kind == fit.None || paced.Limit < 1 {
		return d.rec.Fit(), false, fit.Rule{}
	}
	at, ok := d.rec.Change(paced)
	if !ok {
		return d.rec.Fit(), false, fit.Rule{}
	}
	trial := d.rec
	trial.CutBefore(at)
	g, k := trial.Fit(), trial.Relimit(paced)
	other := g.Best.Kind != fit.None && trial.Prefers(ours(g), k)
	var kept fit.Rule
	switch {
	case other && trial.Prefers(ours(g), paced):
	case !other && k.Limit < paced.Limit && trial.Prefers(k, paced):
		if k.Kind == fit.Sliding {
			kept = k
		}
	default:
		return d.rec.Fit(), false, fit.Rule{}
	}
	d.rec = trial
	return g, true, kept
}

// ours is the rule fit f says we may send by: its best rule, less what
// someone we cannot see spends of its Limit (Ô).
func ours(f fit.Fit) fit.Rule {
	r := f.Best
	r.Limit -= int64(math.Round(f.Others))
	return r
}

// stands reports whether the fit in force stands against a new one f:
// where the record's throttles have all scrolled out (a settled tenant
// probes rarely), it says nothing; where a quota explains more of them
// than no quota does, but by less than chance could (see package fit), it
// does not show the quota gone. Only evidence replaces a quota by none.
func (d *fitted) stands(f fit.Fit) bool {
	if d.fit.Best.Kind == fit.None {
		return false
	}
	if f.Throttles == 0 {
		return true
	}
	return f.Best.Kind == fit.None && f.RunnerUp.Kind != fit.None && f.RunnerUpScore < f.Score
}

// alike reports whether two fits name the same rule: of one kind (or of
// kinds that count a steady stream alike: a sliding log and a window
// opened on first use, see fit.CountsAlike), with windows and rates
// within 2% and limits within one of each other (a fixed window's start
// aside; a token bucket's depth aside too, which a record shows only as
// deep as it saw the bucket drained, while its pace is its rate). A fit
// that names what the one before it named, with a run of throttles
// recorded between them, has predicted answers it was not fitted to: a
// rule found by luck in a search over many, on a few throttles, rarely
// does.
func alike(a, b fit.Rule) bool {
	d := a.Window - b.Window
	return fit.CountsAlike(a.Kind, b.Kind) && (a.Kind == fit.Bucket || max(a.Limit-b.Limit, b.Limit-a.Limit) <= 1) &&
		50*max(d, -d) <= max(a.Window, b.Window) && 50*math.Abs(a.Rate-b.Rate) <= max(a.Rate, b.Rate)
}

// learnFit gives the answer to ticket t to the record, while the server
// says no limit: from the first throttle on. It reports whether the
// estimator took the fit's window, so the pacer must change. l.mu is
// held.
func (l *Limiter) learnFit(t *Ticket, now int64, throttled bool) bool {
	s := &l.s
	if !l.learning() {
		return false
	}
	if s.fit == nil {
		if !throttled {
			return false
		}
		s.fit = new(fitted)
	}
	// A rule on trial that pacing refuted: the estimator is as it was
	// before it (see trial).
	refuted := s.fit.trial.answer(t.at, throttled)
	if refuted {
		s.e.forget()
	}
	var paced fit.Rule
	if e := s.e; e != nil && e.phase == PhaseSettled && e.followed && e.limit > 0 && e.win > 0 {
		paced = e.rule()
	}
	refit, weigh, kept := s.fit.record(t, now, throttled, paced)
	if kept.Kind != fit.None && !l.frozen() {
		l.adopt(kept, now)
		return true
	}
	return weigh && l.followFit(now, refit) || refuted
}

// followFit hands a window the fit names, fixed, sliding or opened on
// first use, or a token bucket (see followBucket), to the estimator, to
// pace by, where the record shows the estimator's own wrong: the fit's
// rule, its Limit less Ô (what we may send), explains the answers better
// than L̂ per Ŵ does by more than chance (fit.Record.Prefers). The fit
// must have named it before, with throttles between (see alike). A fixed
// window on the grid is paced with its phase; one off the grid, or one
// opened on first use, as a sliding log of its count per its length (early
// in a record, a search of refills' spacing off the grid finds lengths a
// few percent off, or a fraction of the window, whose phase would
// mislead). A window off the grid must also explain the answers better
// than the fit's best rule of another kind by more than chance: the fit
// takes its length from the successes, which bound it from above (the
// longest length they allow, of equals), and a sliding log's refills,
// which follow our own sends, leave the estimator's own bounds loose; but
// a fixed window's bursts, bunched, fit a log shorter than the window too.
// While the estimator measures, a sliding log or a window opened on first
// use that does so is taken without beating the estimator's rule, a guess
// that bursts each window. Where the estimator has no rule yet (blind:
// slow start, or measuring with nothing to bound W), it sends unpaced, and
// a window on the grid that explains the answers better than the best rule
// of another kind by more than chance is taken; one off the grid is not (a
// search over many lengths finds one that explains a few strays by luck,
// where a server sheds load whatever the rate). Where the estimator,
// blind, takes the throttles for shedding besides (strays common, see
// estimator.rateFree), slow start never ends, and it would send unpaced
// for good: there any rule of the family but a cap that explains the
// answers better than the best rule of another kind and than no quota,
// by more than chance, a window on the grid or off it, or a token
// bucket, is taken on trial (see trial), unless a trial refuted one as
// fast. A cap, no quota, or a token bucket while blind otherwise leaves
// the estimator as it is: those pace by the fit in the next stages (#35).
//
// It weighs at each fit (fresh) and between fits, while the estimator
// is settled: the record's evidence grows. While the estimator measures
// after a probe passed, the record still holds the quota before the
// raise, and the fit made on it is stale. l.mu is held.
func (l *Limiter) followFit(now int64, fresh bool) bool {
	s := &l.s
	e, d := s.e, s.fit
	b := d.fit.Best
	if e == nil || !d.again || l.frozen() || !fresh && (e.phase != PhaseSettled || e.seeking) {
		return false
	}
	// blind: the estimator has no rule yet (in slow start, or measuring
	// with no bound on W), so none to weigh the fit's against.
	blind := e.limit <= 0 || e.win <= 0
	// shed: the estimator takes the throttles for shedding, and has no
	// rule; a rule of the family the fit names is taken on trial (see
	// trial), unless one was refuted.
	shed := blind && e.rateFree() && d.trial.allows(ours(d.fit).PerSecond())
	switch {
	case b.Kind == fit.Bucket && shed:
		if b.Rate <= 0 || !d.rec.Prefers(b, d.fit.RunnerUp) || !d.rec.Prefers(b, fit.Rule{}) {
			return false
		}
		e.adoptBucket(b.Rate, b.Limit, d.fit.Delay, s.rtt)
		e.schedule(now, l.seq.Load()+1, l.params().maxPause, false)
		s.fresh = false
		d.trial.begin(now, e.throttledShare(), b.Rate)
		return true
	case b.Kind == fit.Bucket && !blind:
		return l.followBucket(now, fresh)
	case b.Kind != fit.Fixed && b.Kind != fit.Sliding && b.Kind != fit.FirstUse:
		return false
	}
	ours := ours(d.fit)
	mine := e.rule()
	pace := ours
	if b.Kind == fit.Fixed && !b.OnGrid() || b.Kind == fit.FirstUse {
		// A fixed window off the grid, or one opened on first use, is
		// judged as named, and paced as the most restrictive rule
		// near it: a sliding log of its limit per its window, which
		// no fixed window of that length holds more of, wherever it
		// begins. (The estimator keeps the phases of windows on the
		// grid only; a window opened on first use has none but our
		// sends'.)
		pace.Kind, pace.Start = fit.Sliding, time.Time{}
	}
	switch {
	case ours.Limit < 1:
		return false
	case blind:
		// With no rule of its own, the estimator sends unpaced: slow
		// start's bursts, or a measured window's L̂+1 at once, and it
		// leaves slow start only on a throttle its tests confirm,
		// which tests that come late, past a refill, contradict. A
		// window on the grid the fit named twice that explains the
		// answers better than the best rule of another kind by more
		// than chance is paced by; not a length off it (a search over
		// many lengths finds one that explains a few strays by luck,
		// where the server sheds load whatever the rate), but where
		// the estimator takes the throttles for shedding, one that
		// explains them better than no quota too, on trial.
		grid := ours.OnGrid()
		if !(grid || shed) || !d.rec.Prefers(b, d.fit.RunnerUp) {
			return false
		}
		if !grid {
			if !d.rec.Prefers(b, fit.Rule{}) {
				return false
			}
			d.trial.begin(now, e.throttledShare(), ours.PerSecond())
		}
	case e.phase == PhaseSettled && pace.Kind == mine.Kind && pace.Window == mine.Window && (pace.Limit >= mine.Limit || !fresh):
		// Settled on the fit's window, the estimator's count is what
		// the server left us lately (or the fit's own); a higher one is
		// for its probes to find, paced, not for a fit that books
		// someone else's spending by its median. Between fits, a lower
		// one is Ô as the record had it before: one fit on a record
		// that spans a change books the count before it to others.
		return false
	case !ours.OnGrid() && !d.rec.Prefers(b, d.fit.RunnerUp):
		// A sliding log off the grid must explain the answers better
		// than the best rule of another kind by more than chance too:
		// a fixed window's bursts, bunched, fit a log shorter than the
		// window as well, which would pace too fast.
		return false
	case e.phase == PhaseMeasuring && (ours.Kind == fit.Sliding || ours.Kind == fit.FirstUse) && d.rec.Prefers(b, d.fit.RunnerUp):
		// While the estimator measures, its rule is a guess, and each
		// window it sends L̂+1 at once, which a log holds against the
		// pace for a whole window after (and a window opened on first
		// use drifts from any the guess places): a rule of either that
		// explains the answers better than every rule of another kind
		// is taken, whether or not it beats the guess by more than
		// chance.
	case !d.rec.Prefers(ours, mine):
		return false
	}
	l.adopt(pace, now)
	return true
}

// adopt hands r, a fixed window or a sliding log, to the estimator to
// pace by. From then on the estimator takes a request to arrive where
// the fit does: the fit's delay into its round trip. Fixed windows begin
// where r places them, give or take the stretch the refills leave, or
// the spread of arrivals if wider. l.mu is held.
func (l *Limiter) adopt(r fit.Rule, now int64) {
	s := &l.s
	e, d := s.e, s.fit
	if r.Kind == fit.Fixed {
		e.adoptFixed(r.Limit, int64(r.Window), r.Start.UnixNano(), max(l.spread(), int64(d.fit.StartWithin)), now, d.fit.Delay)
	} else {
		e.adoptSliding(r.Limit, int64(r.Window), d.fit.Delay)
	}
	e.schedule(now, l.seq.Load()+1, l.params().maxPause, true)
	s.fresh = false
}

// followBucket hands the token bucket the fit names to the estimator, to
// pace by, where the record shows the estimator's own rule wrong (see
// followFit) and prefers the bucket to the best fit of every other kind
// too: a fixed window spent in a burst at its start reads, early, as a
// bucket as deep as its count and as fast as the burst, and paced so,
// the window's throttles would all come back. Paced by a bucket
// already, it takes a fit's rate that differs by more than the pace's
// step (see paceSteps), on a fresh fit: between fits the record is the
// one the rule in force was weighed on. l.mu is held.
func (l *Limiter) followBucket(now int64, fresh bool) bool {
	s := &l.s
	e, d := s.e, s.fit
	ours, mine := d.fit.Best, e.rule()
	if e.depth > 0 && (!fresh || math.Abs(ours.Rate-mine.Rate)*paceSteps <= mine.Rate) {
		return false
	}
	if ours.Rate <= 0 || !d.rec.Prefers(ours, mine) || !d.rec.Prefers(ours, d.fit.RunnerUp) {
		return false
	}
	e.adoptBucket(ours.Rate, ours.Limit, d.fit.Delay, s.rtt)
	e.schedule(now, l.seq.Load()+1, l.params().maxPause, false)
	s.fresh = false
	return true
}

// logFree returns, paced by a log the fit names (or a window opened on
// first use, whose count a log of its length bounds), when the oldest of
// the newest L̂ grants the record holds leaves the log: a window after it
// arrived. Where those grants were all ours, the log frees a place there
// (see estimator.nextProbe). 0 otherwise, and for a fixed window off the
// grid paced as a log: its refill comes at its boundary, which our grants
// do not place. l.mu is held.
func (l *Limiter) logFree() int64 {
	s := &l.s
	e, d := s.e, s.fit
	if e == nil || d == nil || !e.followed || e.fixed || e.depth > 0 || e.limit <= 0 || e.limit > fit.Size {
		return 0
	}
	if k := d.fit.Best.Kind; k != fit.Sliding && k != fit.FirstUse {
		return 0
	}
	at, ok := d.rec.Granted(int(e.limit))
	if !ok {
		return 0
	}
	return at.UnixNano() + e.win
}

// rule is the rule the estimator paces by, as the fit would name it, in
// the estimator's own frame (see arrival): the token bucket it adopted,
// whose rate is one step above the pace (see adoptBucket); else a fixed
// window, but where it settled on refills no fixed window fits (a
// sliding log's). A fixed one begins where its refills put it, and the
// fit places it anew (Prefers).
func (e *estimator) rule() fit.Rule {
	if e.depth > 0 {
		return fit.Rule{Kind: fit.Bucket, Rate: float64(e.limit+1) * 1e9 / float64(e.win), Limit: e.depth}
	}
	r := fit.Rule{Kind: fit.Sliding, Limit: e.limit, Window: time.Duration(e.win)}
	if e.fixed || e.phase != PhaseSettled {
		r.Kind = fit.Fixed
		if e.nref > 0 {
			last := e.ref[(e.nref-1)%maxRefills]
			r.Start = time.Unix(0, (last.lo+last.hi)/2)
		}
	}
	return r
}
