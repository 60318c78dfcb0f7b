package adaptive

import (
	"time"

	"github.com/tollgate-go/tollgate/fit"
	"github.com/tollgate-go/tollgate/quota"
)

// learnState is what a Limiter knows and has learned; Limiter.mu guards it.
type learnState struct {
	// The server's headers.
	hLimit  int64      // limit per hWindow; 0 if never said, or forgotten (see LimitTTL)
	hWindow int64      // ns
	hLimAt  int64      // when hLimit was last said, Unix ns
	hRem    int64      // remaining, as the server counted at admission hRemSeq
	hRemSeq uint64     // admissions up to this one are counted in hRem
	hReset  int64      // when Remaining refills at the latest, Unix ns
	hEarly  int64      // when it may refill at the earliest (hReset − ResetSlack)
	hRemAt  int64      // when Remaining and reset were last said; 0 if never
	hWake   int64      // when a pause for Remaining spent ends: hEarly plus the slack, up to wakeSlack
	said    *saidShare // our share of the limit said, where others spend it; nil until a throttle

	// Learned from the answers.
	e        *estimator // the learner's model of a server that says nothing; nil until its first throttle
	f        *flight    // its model of a cap on requests in flight; nil until strays are common
	fit      *fitted    // the record of answers and the family fitted to it; nil until the first throttle
	coldOK   int64      // successes before the first throttle
	coldCwnd int64      // slow start's cap before the first throttle, less initialWindow
	coldAt   int64      // Unix ns when a leader of a fleet was first asked to hold it (see Holding)
	holdAt   int64      // Unix ns when the hold of its followers in force began; 0 if none
	rtt      int64      // smoothed round trip of tickets, ns
	rttDev   int64      // smoothed mean deviation of the round trip, ns
	relayLag int64      // how late, lately, other processes' answers came (see ObserveRelayed), ns
	hintEnd  int64      // Unix ns when the last pause shortened by a hint's slack ended
	hintSeq  uint64     // the first admission after the last hint was acted on
	hintGap  int64      // the last wait added after a throttled probe, ns
	hintTest uint64     // the admission whose answer tests the last hint; 0 if none
	hints    uint64     // hints seen

	// The pacer in force, as derived by recompute.
	wlim      int64         // window limit in force
	wlen      time.Duration // its window
	rateNow   float64       // the rate in force
	winNeeded int64         // Unix ns when the window was last needed

	// The small fields, packed together (a Limiter per tenant, see
	// TestMemoryPerTenant).
	hintFails uint32 // answers since hintTest, all throttled
	hintTests uint16 // tests of hints, decayed (see hintTrust): below 2·hintHorizon
	hintHeld  uint16 // of them, those the hint held
	burstNow  int32  // the burst in force
	hintProbe bool   // the probe now due or out ends a hint's pause
	fresh     bool   // a measured window begins: its budget starts empty
	src       Source // where the rate in force came from
	stale     bool   // Remaining is older than HeaderTTL
}

// Observe learns from an answer not tied to a Ticket (for one tied to a
// Ticket, call the Ticket's Done instead, which also ties it to its
// admission). obs.At is taken as the time of the answer (time.Now if zero).
//
// What it learns, in order: fresh headers replace the limit, window,
// remaining and reset; a retry hint, or the reset of a throttle, closes the
// gate until then (capped by MaxPause) and one request probes first; with
// no limit in the headers, the answer goes to the learner (see the package
// doc); when what is left of Remaining is spent, the gate closes until the
// earliest moment the reset may come (no probe). A Transient answer
// teaches nothing. Callers already waiting see the result as the Limiter
// doc describes.
func (l *Limiter) Observe(obs quota.Observation) { l.observe(obs, nil) }

func (l *Limiter) observe(o quota.Observation, t *Ticket) {
	p := l.params()
	now := time.Now().UnixNano()
	if !o.At.IsZero() {
		now = o.At.UnixNano()
	}
	wake := false
	l.mu.Lock()
	s := &l.s
	if t != nil && t.relayed {
		// The latest relayed answers came this late: a verdict on what
		// the fleet sent waits as long for them. The lag decays by an
		// eighth per answer.
		lag := time.Now().UnixNano() - now
		s.relayLag = max(lag, s.relayLag-s.relayLag/8, 0)
	}
	if t != nil && !t.relayed && now > t.at {
		d := now - t.at
		if s.rtt == 0 {
			s.rtt, s.rttDev = d, d/2
		} else {
			dev := d - s.rtt
			s.rtt += dev / 8
			s.rttDev += (max(dev, -dev) - s.rttDev) / 4
		}
		l.rtt.Store(s.rtt)
	}
	learned := false // the learner's estimate changed
	switch {
	case o.Transient:
		// Not a quota signal. A probe that met one hands the probe on.
		if t != nil && t.probe != 0 {
			wake = l.g.release(t.probe)
		}
		learned = l.learning() && s.e != nil && s.e.transient()
	default:
		l.readHeaders(&o, now, t)
		// A pause the server said, where the tenant takes it, bounds the
		// learner's own: a seek whose probes have spread out asks again
		// when the server said to, not when its next probe was due.
		said := now + p.maxPause
		if u, short := l.pauseUntil(&o, t); u > now || short {
			said = min(max(u, now), said)
			wake = l.pause(now, said, true, false) || wake
		}
		if o.Throttled {
			u, probe, changed := l.learnThrottle(now, t)
			learned = changed
			if u > 0 {
				wake = l.pause(now, min(u, said), probe, true) || wake
			}
			if (u == 0 || !probe) && t != nil && t.probe != 0 && l.g.release(t.probe) {
				wake = true // a throttled probe without a new one asked for: probe again
			}
		} else {
			l.hintWeighed(t)
			learned = l.learnSuccess(now, t)
			if t != nil && t.probe != 0 {
				wake = l.g.resolve(t.probe) || wake
			} else if t == nil {
				if pr := l.g.probe.Load(); pr > 0 {
					wake = l.g.resolve(pr) || wake
				}
			}
		}
	}
	if t != nil && !o.Transient {
		l.learnFlight(t, o.Throttled)
		learned = l.learnFit(t, now, o.Throttled) || learned
	}
	// A success that says nothing and changes no estimate is the common
	// case: it is spared deriving the limits again.
	quiet := o.Known == 0 && !o.Throttled && !learned && s.hLimit == 0 && s.hRemAt == 0
	if !quiet && l.recompute(now) {
		wake = true
	}
	// Spend Remaining evenly: when what is left is already spent, pause
	// until the earliest moment the reset may come (and its slack, if fine:
	// see wakeSlack).
	if s.hRemAt > 0 && now-s.hRemAt < p.headerTTL && s.hWake > now && l.left() <= 0 {
		wake = l.pause(now, min(s.hWake, now+p.maxPause), false, false) || wake
	}
	if c := l.inflightCap(); c > 0 && l.inflight.Load() < c {
		wake = true // a place in slow start's window is free
	}
	l.mu.Unlock()
	if wake {
		l.notify()
	}
}

// learning reports whether the learner is in charge: the server has not
// said its limit. l.mu is held.
func (l *Limiter) learning() bool { return l.s.hLimit == 0 }

// spread is the margin for the spread of arrival delays: twice the round
// trip's mean deviation, and schedSlack. Where the fit found how far into
// its round trip the server counts a request (see estimator.lead), only
// that part of it varies: a server that counts a request as it leaves
// us sees it arrive when sent, however its answer varies. l.mu is held.
func (l *Limiter) spread() int64 {
	dev := 2 * l.s.rttDev
	if e := l.s.e; e != nil && e.delayed {
		dev = int64(float64(dev) * min(2*e.delay, 1))
	}
	return dev + schedSlack
}

// schedSlack is how late, besides the round trip's own variation, a
// request may leave after its admission: our scheduler's, not the server's.
const schedSlack = int64(time.Millisecond)

// frozen reports whether the learner learns nothing from the answers: it
// has settled, and this process spends only a share of the quota (see
// SetShare), where the count of a window spent would be its share's, not
// the quota's. It paces at its share of the estimate until the share is
// whole again. l.mu is held.
func (l *Limiter) frozen() bool {
	e := l.s.e
	return l.shareNow() < 1 && e != nil && e.phase == PhaseSettled && !e.seeking
}

// learnSuccess gives a success to the learner. It reports whether the
// pacer must change. l.mu is held.
func (l *Limiter) learnSuccess(now int64, t *Ticket) bool {
	s := &l.s
	if !l.learning() || l.frozen() {
		return false
	}
	// Slow start: one more in flight per success, while the cap binds.
	c := l.inflightCap()
	grow := c > 0 && (t == nil || !t.relayed) && l.inflight.Load()+1 >= c
	e := s.e
	if e == nil {
		// Cold, and never throttled: only slow start's count is kept.
		s.coldOK++
		if grow {
			s.coldCwnd++
		}
		return grow
	}
	seq, at := l.seq.Load(), now
	if t != nil {
		seq, at = t.seq, t.at
		if t.relayed {
			seq = l.relayedSeq(t)
		}
	}
	was, limit, budget := e.phase, e.limit, e.budget
	refilled := e.success(l.arrival(now, t), seq, grow, l.spread())
	next := l.seq.Load() + 1
	if refilled {
		s.fresh = true
		if e.phase == PhaseSettled && (was != PhaseSettled || e.limit != limit) {
			// Settled, or the quota changed: probe above L̂ soon.
			e.fails = 0
			e.schedule(now, next, l.params().maxPause, true)
		}
	}
	interval := l.b.interval.Load()
	demand := l.held(now, max(2*interval, s.rtt, int64(time.Millisecond)))
	probed := e.probe(now, at, next, demand, l.spread(), s.relayLag, l.params().maxPause)
	return refilled || probed || e.phase != was || e.limit != limit || e.budget != budget || grow && e.phase == PhaseCold
}

// learnThrottle gives a throttle to the learner. It returns until when to
// pause (0 for no pause) and whether a probe goes first, and whether the
// pacer must change. l.mu is held.
func (l *Limiter) learnThrottle(now int64, t *Ticket) (u int64, probe, changed bool) {
	s := &l.s
	if !l.learning() || l.frozen() {
		return 0, false, false
	}
	if s.e == nil {
		// The first throttle: the model begins, from slow start's count.
		s.e = &estimator{count: s.coldOK, cwnd: s.coldCwnd}
	}
	e := s.e
	seq := l.seq.Load()
	if t != nil {
		seq = t.seq
		if t.relayed {
			if e.start != 0 && l.arrival(now, t) <= e.start {
				// Relayed after the window it arrived in refilled:
				// that window's end is known already.
				e.answered(true)
				return 0, false, false
			}
			seq = l.relayedSeq(t)
		}
	}
	p := l.params()
	next := l.seq.Load() + 1
	fails := e.fails
	e.logFree = l.logFree()
	arrive, probe := e.throttle(now, l.arrival(now, t), seq, next, max(l.inflight.Load(), 0), s.rtt, l.spread(), p.maxPause)
	if e.fails != fails {
		e.schedule(now, next, p.maxPause, false)
	}
	if arrive == 0 {
		return 0, false, e.fails != fails
	}
	return max(arrive-e.lead(s.rtt), now), probe, true
}

// learnFlight gives the answer to ticket t to the model of a cap on
// requests in flight, once the learner has found stray throttles common,
// and installs the cap it finds. Once begun, the model goes on if the
// server starts to say its rate: a cap found stays probed. l.mu is held.
func (l *Limiter) learnFlight(t *Ticket, throttled bool) {
	s := &l.s
	if t.level == 0 || s.e == nil {
		return
	}
	strays := s.e.straysSeen()
	if s.f == nil {
		if !strays || !l.learning() {
			return
		}
		s.f = &flight{}
	}
	if !s.f.answer(t.at, int64(t.level), throttled, strays) {
		return
	}
	l.sent.setCap(s.f.cap())
}

// left returns how much of the server's Remaining is left: Remaining less
// the requests admitted since those it counted. l.mu is held.
func (l *Limiter) left() int64 {
	return l.s.hRem - int64(l.seq.Load()-l.s.hRemSeq)
}

// readHeaders takes the limit, window, remaining and reset the answer
// carries. Remaining counts the requests the server had seen when it
// answered: with a ticket, those admitted up to the ticket's; without, all
// but those in flight. l.mu is held.
func (l *Limiter) readHeaders(o *quota.Observation, now int64, t *Ticket) {
	s := &l.s
	if o.Has(quota.FieldLimit) && o.Limit > 0 {
		w := int64(o.Window)
		if !o.Has(quota.FieldWindow) || w <= 0 {
			// A limit said without its window (Alibaba's headers, the
			// X-RateLimit and RateLimit-* trios): see resetWindow. At
			// least the user's rule's window, else the shortest round
			// one: a first reset said late in a window says little of
			// its length.
			w = s.hWindow
			if o.Has(quota.FieldReset) && !o.ResetAt.IsZero() {
				w = max(w, l.resetWindow(resetSaid(o).UnixNano()-l.arrival(now, t), int64(max(o.ResetSlack, 0))))
			}
			_, _, _, rw := ruleLimits(l.rule)
			w = max(w, int64(max(rw, fit.ShortestRound())))
		}
		s.hLimit, s.hWindow, s.hLimAt = o.Limit, w, now
	}
	if o.Has(quota.FieldRemaining|quota.FieldReset) && !o.ResetAt.IsZero() {
		// The reset may come as early as ResetSlack before it is said to,
		// and earlier still by the answer's time in transit if the server
		// said it as a delay: the server counted it from the request's
		// arrival, at the earliest our admission. What is left lasts
		// until the reset as said, however far off (the pause once it is
		// spent is capped by MaxPause).
		seq := l.seq.Load() - uint64(max(l.inflight.Load(), 0))
		reset := resetSaid(o).UnixNano()
		slack := int64(max(o.ResetSlack, 0))
		early := reset - slack
		if t != nil {
			seq = t.seq
			early -= max(now-t.at, 0)
		}
		// A reset later by more than half a window than the last one
		// said: a new window began (or the log emptied).
		began := s.hRemAt > 0 && reset-s.hReset > s.hWindow/2
		s.hRem, s.hRemSeq, s.hReset, s.hEarly, s.hRemAt = o.Remaining, seq, reset, early, now
		s.hWake = early + min(slack, wakeSlack)
		l.shareSaid(o, t, began)
	}
}

// resetSaid returns the reset o says, as the server said it: ResetSaid,
// beyond the parser's MaxHint, where o has one (the parser's, within its
// Horizon), else ResetAt (a budget's reset beyond the Horizon, capped; or
// an Observation made by hand).
func resetSaid(o *quota.Observation) time.Time {
	if !o.ResetSaid.IsZero() {
		return o.ResetSaid
	}
	return o.ResetAt
}

// shareSaid gives the answer to our ticket t, if it says Remaining, to
// the estimate of our share of the limit said (see saidShare), which
// begins at the first throttle; began says the answer is the first in a
// new window. l.mu is held.
func (l *Limiter) shareSaid(o *quota.Observation, t *Ticket, began bool) {
	s := &l.s
	if s.hLimit <= 0 || !o.Has(quota.FieldRemaining) || t == nil || t.relayed {
		return
	}
	if s.said == nil {
		if !o.Throttled {
			return
		}
		s.said = newSaidShare()
	}
	h := s.said
	if began {
		h.from = t.at
	}
	if o.Throttled {
		// Not counted; and its Remaining of 0 says only that the count
		// is at the limit, not what it is.
		h.throttled(t.seq)
	} else {
		h.update(t.at, t.seq, s.hLimit-o.Remaining, s.hWindow)
	}
	h.sample(t.at, t.seq, s.hWindow)
}

// resetWindow returns the window that a reset said late after the
// request was counted (ns, at the latest; as early as slack before it, a
// reset said in whole seconds being rounded up) says a limit said without
// its window is per. readHeaders keeps the longest any reset said: a
// fixed window's first request is told about a whole window, a sliding
// log's first in a while too, and a token bucket's reset, when it is dry,
// is the time to fill it, so that the limit (its depth) per that is its
// rate. A quota that steps changes its limit, not its window: the longest
// is kept across limits, until the limit is forgotten (LimitTTL). A reset
// bounds the window only as finely as it is said and as a round trip
// places it (the server stamps it somewhere between the request's arrival
// and the answer's leaving, and a relative one is read on the answer's
// arrival), so a round length within those bounds is taken to be it.
// l.mu is held.
func (l *Limiter) resetWindow(late, slack int64) int64 {
	if r, ok := fit.RoundWindow(time.Duration(late-slack-l.s.rtt), time.Duration(late+l.s.rtt)); ok {
		return int64(r)
	}
	return late
}

// arrival estimates when the request of ticket t, answered at now,
// reached the server: the estimator's lead after it was sent (half a
// round trip, until a fit finds the delay). l.mu is held.
func (l *Limiter) arrival(now int64, t *Ticket) int64 {
	lead := l.s.e.lead(l.s.rtt)
	if t != nil {
		return t.at + lead
	}
	return now - (l.s.rtt - lead)
}
